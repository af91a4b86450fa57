/* log.h - the daemon's log: one line per event, to stderr, with a level.
 *
 * Under systemd (JOURNAL_STREAM set) each line starts with a syslog priority
 * prefix "<N>" that journald turns into the entry's priority; elsewhere it
 * starts with a timestamp and the level's name.  Only daemon/ logs. */
#ifndef PCD_LOG_H
#define PCD_LOG_H

#include <stdbool.h>
#include <stdint.h>

typedef enum pcd_level { PCD_DEBUG = 7, PCD_INFO = 6, PCD_WARNING = 4, PCD_ERROR = 3 } pcd_level;

/* "debug", "info", "warning", "error"; false when the name is unknown. */
bool pcd_log_set_level(const char *name);
bool pcd_log_enabled(pcd_level level);
void pcd_log(pcd_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line a flood would repeat (a refused connection, a failed accept): logged
 * once per period at most, saying how many were left out meanwhile. */
typedef struct pcd_log_limit {
    double last;       /* monotonic time of the last line logged; 0: none yet */
    uint64_t unlogged; /* left out since */
} pcd_log_limit;

/* True when the line may be logged now: *skipped is then how many were left
 * out since the last one (and counting starts again); false counts one more. */
bool pcd_log_limit_ok(pcd_log_limit *l, double period, unsigned long long *skipped);

#define pcd_debug(...) do { if (pcd_log_enabled(PCD_DEBUG)) pcd_log(PCD_DEBUG, __VA_ARGS__); } while (0)
#define pcd_info(...) pcd_log(PCD_INFO, __VA_ARGS__)
#define pcd_warn(...) pcd_log(PCD_WARNING, __VA_ARGS__)
#define pcd_error(...) pcd_log(PCD_ERROR, __VA_ARGS__)

#endif
