/* clock.h - the daemon's two clocks, in a file of their own so that any part
 * of daemon/ can read the time without depending on the server's life cycle. */
#ifndef PCD_CLOCK_H
#define PCD_CLOCK_H

#include <stdint.h>

/* Unix time in seconds: what snapshots record and `info` reports ages from. */
int64_t pcd_now(void);
/* Unix time in milliseconds: when events were predicted and joined. */
int64_t pcd_now_ms(void);
/* Seconds on CLOCK_MONOTONIC: for durations (snapshot jobs, busy polling). */
double pcd_monotonic(void);

#endif
