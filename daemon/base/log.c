/* log.c - levelled log lines on stderr (see log.h). */
#include "daemon/base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/clock.h"

static pcd_level threshold = PCD_INFO;
static int journal = -1; /* unknown until the first line */

bool pcd_log_set_level(const char *name)
{
    static const struct { const char *name; pcd_level level; } levels[] = {
        {"debug", PCD_DEBUG}, {"info", PCD_INFO}, {"warning", PCD_WARNING}, {"error", PCD_ERROR},
    };
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
        if (strcmp(name, levels[i].name) == 0) {
            threshold = levels[i].level;
            return true;
        }
    return false;
}

bool pcd_log_enabled(pcd_level level)
{
    return level <= threshold;
}

void pcd_log(pcd_level level, const char *fmt, ...)
{
    if (!pcd_log_enabled(level))
        return;
    if (journal < 0)
        journal = getenv("JOURNAL_STREAM") != NULL;
    char line[1024];
    int n;
    if (journal) {
        n = snprintf(line, sizeof line, "<%d>", (int)level);
    } else {
        static const char *names[8] = {"", "", "", "error", "warning", "", "info", "debug"};
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-7s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    /* One write(2) per line: lines from the daemon and a snapshot child never interleave. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

bool pcd_log_limit_ok(pcd_log_limit *l, double period, unsigned long long *skipped)
{
    double now = pcd_monotonic();
    if (l->last != 0 && now - l->last < period) {
        l->unlogged++;
        return false;
    }
    l->last = now;
    *skipped = l->unlogged;
    l->unlogged = 0;
    return true;
}
