/* clock.h - the daemon's two clocks, in a file of their own so that any part
 * of daemon/ can read the time without depending on the server's life cycle,
 * and the histogram of durations measured with them. */
#ifndef PCD_CLOCK_H
#define PCD_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Unix time in seconds: what snapshots record and `info` reports ages from. */
int64_t pcd_now(void);
/* Unix time in milliseconds: when events were predicted and joined. */
int64_t pcd_now_ms(void);
/* Seconds on CLOCK_MONOTONIC: for durations (snapshot jobs, busy polling). */
double pcd_monotonic(void);
/* Test hooks (docs/persistence.md, "Test hooks"): sleeps the milliseconds
 * environment variable `hook` says (PCD_TEST_SNAPSHOT_DELAY_MS, ...), so
 * that a test can act while a job surely runs.  Unset: returns at once. */
void pcd_test_delay(const char *hook);

/* Latency buckets of the request and load histograms (metrics.c prints
 * them), seconds. */
#define PCD_LATENCY_BUCKETS 14
extern const double pcd_latency_bounds[PCD_LATENCY_BUCKETS];

/* A histogram of durations: counts per bucket (cumulated when printed; the
 * last is +Inf) and their sum. */
typedef struct pcd_latency {
    uint64_t le[PCD_LATENCY_BUCKETS + 1];
    double seconds;
} pcd_latency;

static inline void pcd_latency_add(pcd_latency *h, double s)
{
    size_t b = 0;
    while (b < PCD_LATENCY_BUCKETS && s > pcd_latency_bounds[b])
        b++;
    h->le[b]++;
    h->seconds += s;
}

#endif
