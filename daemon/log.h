/* log.h - the daemon's log: one line per event, to stderr, with a level.
 *
 * Under systemd (JOURNAL_STREAM set) each line starts with a syslog priority
 * prefix "<N>" that journald turns into the entry's priority; elsewhere it
 * starts with a timestamp and the level's name.  Only daemon/ logs. */
#ifndef PCD_LOG_H
#define PCD_LOG_H

#include <stdbool.h>

typedef enum pcd_level { PCD_DEBUG = 7, PCD_INFO = 6, PCD_WARNING = 4, PCD_ERROR = 3 } pcd_level;

/* "debug", "info", "warning", "error"; false when the name is unknown. */
bool pcd_log_set_level(const char *name);
bool pcd_log_enabled(pcd_level level);
void pcd_log(pcd_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pcd_debug(...) do { if (pcd_log_enabled(PCD_DEBUG)) pcd_log(PCD_DEBUG, __VA_ARGS__); } while (0)
#define pcd_info(...) pcd_log(PCD_INFO, __VA_ARGS__)
#define pcd_warn(...) pcd_log(PCD_WARNING, __VA_ARGS__)
#define pcd_error(...) pcd_log(PCD_ERROR, __VA_ARGS__)

#endif
