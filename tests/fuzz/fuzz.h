/* fuzz.h - what the fuzz targets share: a memory limit on the allocations
 * of perceptrond's own code, a scratch directory, and the entry points
 * libFuzzer calls (replay.c calls them without libFuzzer, so the normal
 * build replays the regression inputs too).
 *
 * The memory limit: every target is linked with -Wl,--wrap for malloc,
 * calloc, realloc, free, strdup and strndup, so the allocations made by
 * lib/, proto/, daemon/ and the harness go through alloc.c.  Between
 * fz_begin() and fz_end() an allocation that would take the bytes live
 * since fz_begin() past the limit returns NULL, as malloc does under a
 * memory limit: a 2^28-weight model asked for in a few bytes becomes the
 * code's out-of-memory path instead of a 2 GiB allocation that stops the
 * fuzzer (libFuzzer's -malloc_limit_mb would report it as a crash).
 * fz_fail_at(n) makes the n-th allocation from then on fail, to walk the
 * out-of-memory paths that a limit alone rarely reaches. */
#ifndef PCD_FUZZ_H
#define PCD_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The default limit: 128 MiB live, under scripts/fuzz's -rss_limit_mb=256
 * with the sanitizers' own overhead. */
#define FZ_MEM_LIMIT ((size_t)128 << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Arms the limit (limit bytes live from now on); no injected failure. */
void fz_begin(size_t limit);
/* Disarms it: allocations are plain again. */
void fz_end(void);
/* Fails the n-th allocation counted from now (n >= 1); 0 cancels. */
void fz_fail_at(unsigned long n);
/* Allocations attempted since fz_begin() (for choosing a fz_fail_at). */
unsigned long fz_allocations(void);
/* True once an allocation was refused since fz_begin() (by the limit or an
 * injected failure): results after that may be out-of-memory errors. */
bool fz_refused(void);

/* A fresh private directory under $TMPDIR (or /tmp), removed at exit;
 * the path lives as long as the process.  Aborts when none can be made. */
const char *fz_tmpdir(void);
/* Removes every entry of dir (not dir itself; one level, as the targets
 * only make files). */
void fz_clear_dir(const char *dir);
/* Writes data to dir/name (aborts when it cannot: the harness, not the
 * code under test, failed). */
void fz_write_file(const char *dir, const char *name, const uint8_t *data, size_t size);

/* The daemon's clock in milliseconds (pcd_now_ms, wrapped by clock.c): it
 * reads this and nothing else, so a harness sets the time.  It starts at
 * FZ_CLOCK_START_MS (2023-11-14). */
#define FZ_CLOCK_START_MS INT64_C(1700000000000)
extern int64_t fz_clock_ms;

/* A failed property: prints what and aborts (a crash to libFuzzer, a
 * failed test to replay.c). */
#define FZ_ASSERT(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: assertion failed: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
