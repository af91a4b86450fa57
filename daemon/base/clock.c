/* clock.c - wall and monotonic time for the daemon, and the test hooks' sleeps (see clock.h). */
#include "daemon/base/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* 5 us to 1 s: a predict is microseconds, a big batch, a save or a load
 * from rest milliseconds. */
const double pcd_latency_bounds[PCD_LATENCY_BUCKETS] = {
    5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1,
};

int64_t pcd_now(void)
{
    return (int64_t)time(NULL);
}

double pcd_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t pcd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void pcd_test_delay(const char *hook)
{
    const char *v = getenv(hook);
    long ms = v ? strtol(v, NULL, 10) : 0;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}
