/* alloc.c - the fuzz targets' memory limit and out-of-memory injection
 * (see fuzz.h).  The wrapped references are those of the objects linked
 * into the target (lib/, proto/, daemon/, the harness); msgpack-c and
 * libyaml are shared libraries and keep the plain allocator, their
 * allocations being bounded by the input (proto's scanner frames every
 * message before msgpack-c sees it).
 *
 * Live bytes are counted with malloc_usable_size on both sides, so a block
 * freed here that was allocated elsewhere (or before fz_begin) can only
 * lower the count, which is clamped at zero. */
#include "tests/fuzz/fuzz.h"

#include <malloc.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static bool armed, refused;
static size_t live, limit;
static unsigned long count, fail_at;

void fz_begin(size_t lim)
{
    armed = true;
    refused = false;
    live = 0;
    limit = lim;
    count = 0;
    fail_at = 0;
}

void fz_end(void)
{
    armed = false;
    fail_at = 0;
}

void fz_fail_at(unsigned long n)
{
    fail_at = n ? count + n : 0;
}

unsigned long fz_allocations(void)
{
    return count;
}

bool fz_refused(void)
{
    return refused;
}

/* Whether n more bytes may be allocated now. */
static bool allow(size_t n)
{
    if (!armed)
        return true;
    count++;
    if ((fail_at && count == fail_at) || n > limit || live > limit - n) {
        refused = true;
        return false;
    }
    return true;
}

static void charge(void *p)
{
    if (p && armed)
        live += malloc_usable_size(p);
}

static void release(void *p)
{
    if (!p || !armed)
        return;
    size_t n = malloc_usable_size(p);
    live = n < live ? live - n : 0;
}

void *__wrap_malloc(size_t n)
{
    if (!allow(n))
        return NULL;
    void *p = __real_malloc(n);
    charge(p);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        total = SIZE_MAX;
    if (!allow(total))
        return NULL;
    void *p = __real_calloc(n, size);
    charge(p);
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (!p)
        return __wrap_malloc(n);
    size_t old = malloc_usable_size(p);
    if (n > old && !allow(n - old))
        return NULL;
    release(p);
    void *q = __real_realloc(p, n);
    charge(q ? q : (n ? p : NULL)); /* a failed realloc keeps p */
    return q;
}

void __wrap_free(void *p)
{
    /* free(NULL) does nothing, but ASan's free records a stack trace before
     * it looks at the pointer: the daemon's loops over mostly empty slots
     * (names tables, svecs) cost the request target a fifth of its time. */
    if (!p)
        return;
    release(p);
    __real_free(p);
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = __wrap_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

char *__wrap_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = __wrap_malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = 0;
    }
    return d;
}
