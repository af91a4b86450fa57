/* curve.c - the progressive mistake rate drawn by gnuplot (curve.h). */
#include "clients/ctl/curve.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

static const char *ext(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot : "";
}

bool ctl_curve_path_ok(const char *path)
{
    return strcmp(ext(path), ".png") == 0 || strcmp(ext(path), ".svg") == 0;
}

void ctl_curve_init(ctl_curve *c)
{
    memset(c, 0, sizeof *c);
    c->step = 1;
}

void ctl_curve_add(ctl_curve *c, bool mistake)
{
    c->n++;
    c->mistakes += mistake;
    if (c->n % c->step != 0)
        return;
    if (c->npts == CTL_CURVE_POINTS) { /* keep every other point, sample half as often */
        for (size_t i = 1; i < CTL_CURVE_POINTS; i += 2) {
            c->x[i / 2] = c->x[i];
            c->y[i / 2] = c->y[i];
        }
        c->npts = CTL_CURVE_POINTS / 2;
        c->step *= 2;
        if (c->n % c->step != 0)
            return;
    }
    c->x[c->npts] = (double)c->n;
    c->y[c->npts++] = (double)c->mistakes / (double)c->n;
}

/* gnuplot's single-quoted strings: '' stands for a quote. */
static void quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        if (*s != '\n')
            fputc(*s, f);
    }
    fputc('\'', f);
}

int ctl_curve_plot(const ctl_curve *c, const char *path, const char *title, char *err,
                   size_t errlen)
{
    if (c->npts == 0) {
        snprintf(err, errlen, "no examples: no curve drawn");
        return -1;
    }
    /* gnuplot's own messages go to our stderr; its stdout is not used */
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        snprintf(err, errlen, "cannot run gnuplot: %s (Debian: apt-get install gnuplot-nox)",
                 strerror(errno));
        return -1;
    }
    bool svg = strcmp(ext(path), ".svg") == 0;
    fprintf(g, "set terminal %s size 800,500\n", svg ? "svg" : "pngcairo");
    fputs("set output ", g);
    quoted(g, path);
    fputs("\nset xlabel 'examples'\nset ylabel 'mistake rate (progressive)'\n"
          "set grid\nset key top right\nset format y '%.0f%%'\nset yrange [0:*]\n",
          g);
    fputs("plot '-' using 1:($2*100) with lines linewidth 2 title ", g);
    quoted(g, title);
    fputc('\n', g);
    for (size_t i = 0; i < c->npts; i++)
        fprintf(g, "%.0f %.17g\n", c->x[i], c->y[i]);
    fputs("e\n", g);
    int st = pclose(g);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "gnuplot failed drawing %s (exit status %d%s)", path,
                 st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                 st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 127
                     ? ": is gnuplot installed? Debian: apt-get install gnuplot-nox"
                     : "");
        return -1;
    }
    return 0;
}
