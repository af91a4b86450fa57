/* bench.h - what the benchmark programs share: their clocks and their
 * random streams (header only: each benchmark is one file and one program).
 * Each program keeps its own generator state and seed, so its examples are
 * the ones it always drew. */
#ifndef PCD_BENCH_H
#define PCD_BENCH_H

#include <stdint.h>
#include <time.h>

static inline double bench_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wall time for durations. */
static inline double bench_now(void)
{
    return bench_clock(CLOCK_MONOTONIC);
}

/* The process's CPU time (user + system, page faults included): on a shared
 * machine the wall clock also counts the time other processes held the CPU. */
static inline double bench_cpu(void)
{
    return bench_clock(CLOCK_PROCESS_CPUTIME_ID);
}

/* xorshift64: the next number of the stream whose state is *s (not 0). */
static inline uint64_t bench_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* splitmix64's finaliser: a well-mixed 64-bit function of z (a hashed
 * feature index, a model's own hyperplane). */
static inline uint64_t bench_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
