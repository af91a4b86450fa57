/* clock.c - wall and monotonic time for the daemon (see clock.h). */
#include "daemon/base/clock.h"

#include <time.h>

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
