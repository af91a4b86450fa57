/* curve.h - `replay --curve FILE.png|.svg`: the progressive mistake rate
 * against the examples seen, drawn by gnuplot (Debian's gnuplot-nox, run as
 * a child process; no plotter of our own).
 *
 * The points are thinned as they come: at most CTL_CURVE_POINTS are kept,
 * every `step`-th example, the step doubling (and every other point dropped)
 * when the array is full, so any stream length fits in a few KiB. */
#ifndef CTL_CURVE_H
#define CTL_CURVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_CURVE_POINTS 4096

typedef struct ctl_curve {
    uint64_t n, mistakes, step;
    size_t npts;
    double x[CTL_CURVE_POINTS], y[CTL_CURVE_POINTS];
} ctl_curve;

/* true when path ends in .png or .svg (what ctl_curve_plot can draw). */
bool ctl_curve_path_ok(const char *path);
void ctl_curve_init(ctl_curve *c);
void ctl_curve_add(ctl_curve *c, bool mistake);
/* Draws the curve into path with gnuplot.  Returns 0, or -1 with err set. */
int ctl_curve_plot(const ctl_curve *c, const char *path, const char *title, char *err,
                   size_t errlen);

#endif
