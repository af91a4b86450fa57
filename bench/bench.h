/* bench.h - what the benchmark programs share: their clocks and their
 * random streams (header only: each benchmark is one file and one program).
 * Each program keeps its own generator state and seed, so its examples are
 * the ones it always drew. */
#ifndef PCD_BENCH_H
#define PCD_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* Another process's CPU seconds so far (user + system), from /proc: the
 * daemon's cost, less sensitive than wall time to the other processes of a
 * busy machine and to the client's own work.  0 when unreadable. */
static inline double bench_cpu_of(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
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
