/* clock.c - the wall clock in milliseconds the fuzz targets set (fuzz.h).
 * Every target is linked with -Wl,--wrap=pcd_now_ms, so daemon/'s reads of
 * the time (an event's prediction and join times, label_event's `delay`)
 * see fz_clock_ms: an input gives the same answers at every run, and the
 * request target's two servers, handed one message at one time, answer it
 * with the same bytes. */
#include "tests/fuzz/fuzz.h"

int64_t fz_clock_ms = FZ_CLOCK_START_MS;

int64_t __wrap_pcd_now_ms(void);

int64_t __wrap_pcd_now_ms(void)
{
    return fz_clock_ms;
}
