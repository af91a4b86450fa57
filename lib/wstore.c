/* wstore.c - dense array (of doubles or floats) or open-addressing table of
 * doubles (see wstore.h). */
#include "lib/wstore.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BITS 4 /* 16 slots: 4 groups */

/* An empty table of 2^bits slots (bits >= MIN_BITS) in t (groups, savg,
 * cap, shift, count). */
static bool table_alloc(pc_wstore *t, unsigned bits, bool with_avg)
{
    uint32_t cap = 1u << bits, ngroups = cap / PC_WSTORE_GROUP;
    /* Line-aligned, so a group is one cache line. */
    pc_wgroup *g = aligned_alloc(sizeof *g, (size_t)ngroups * sizeof *g);
    double *sa = with_avg ? calloc(cap, sizeof *sa) : NULL;
    if (!g || (with_avg && !sa)) {
        free(g);
        free(sa);
        return false;
    }
    /* Every key PC_WSTORE_EMPTY (all ones), the rest zero (passed, and the
     * +0 that absent indices read). */
    memset(g, 0, (size_t)ngroups * sizeof *g);
    for (uint32_t k = 0; k < ngroups; k++)
        memset(g[k].key, 0xff, sizeof g[k].key);
    t->groups = g;
    t->savg = sa;
    t->cap = cap;
    t->shift = 32 - (bits - 2); /* 2^(bits - 2) groups */
    t->count = 0;
    return true;
}

static unsigned bits_of(uint32_t cap)
{
    unsigned b = 0;
    while ((1u << b) < cap)
        b++;
    return b;
}

/* Bytes of one dense entry. */
static size_t entry_size(const pc_wstore *s)
{
    return s->width == PC_WEIGHTS_FLOAT32 ? sizeof(float) : sizeof(double);
}

/* The dense arrays (v and avg, or f and favg), zeroed; false: out of memory,
 * none allocated.  calloc of a large block maps zero pages lazily: a 2^28
 * model that sees few features only pays for the pages it touches. */
static bool dense_alloc(pc_wstore *s)
{
    size_t n = s->dim ? s->dim : 1;
    void *a = calloc(n, entry_size(s));
    void *b = s->with_avg ? calloc(n, entry_size(s)) : NULL;
    if (!a || (s->with_avg && !b)) {
        free(a);
        free(b);
        return false;
    }
    if (s->width == PC_WEIGHTS_FLOAT32)
        s->f = a, s->favg = b;
    else
        s->v = a, s->avg = b;
    return true;
}

pc_status pc_wstore_init(pc_wstore *s, uint32_t dim, pc_storage kind, pc_weights width,
                         bool with_avg)
{
    memset(s, 0, sizeof *s);
    s->dim = dim;
    s->kind = kind;
    s->width = width;
    s->with_avg = with_avg;
    if (kind == PC_STORAGE_DENSE)
        return dense_alloc(s) ? PC_OK : PC_ENOMEM;
    return table_alloc(s, MIN_BITS, with_avg) ? PC_OK : PC_ENOMEM;
}

void pc_wstore_free(pc_wstore *s)
{
    if (!s)
        return;
    free(s->v);
    free(s->avg);
    free(s->f);
    free(s->favg);
    free(s->groups);
    free(s->savg);
    s->v = s->avg = s->savg = NULL;
    s->f = s->favg = NULL;
    s->groups = NULL;
    s->cap = s->count = 0;
}

static size_t dense_bytes(const pc_wstore *s)
{
    return (size_t)(s->dim ? s->dim : 1) * entry_size(s) * (s->with_avg ? 2 : 1);
}

static size_t table_bytes(uint64_t cap, bool with_avg)
{
    return (size_t)cap * (sizeof(pc_wgroup) / PC_WSTORE_GROUP + (with_avg ? sizeof(double) : 0));
}

size_t pc_wstore_bytes(const pc_wstore *s)
{
    return s->groups ? table_bytes(s->cap, s->with_avg) : dense_bytes(s);
}

/* v rounded to float, saturated at float's range rather than infinite. */
static float narrow(double v)
{
    return (float)fmax(-FLT_MAX, fmin(FLT_MAX, v));
}

/* Sparse -> dense, for good (auto); float32 entries are rounded here. */
static bool densify(pc_wstore *s)
{
    pc_wstore d = *s;
    if (!dense_alloc(&d))
        return false;
    for (uint32_t k = 0; k < s->cap; k++) {
        uint32_t i = pc_wstore_key(s, k);
        if (i == PC_WSTORE_EMPTY)
            continue;
        if (d.f) {
            d.f[i] = narrow(*pc_wstore_val(s, k));
            if (d.favg)
                d.favg[i] = narrow(s->savg[k]);
        } else {
            d.v[i] = *pc_wstore_val(s, k);
            if (d.avg)
                d.avg[i] = s->savg[k];
        }
    }
    free(s->groups);
    free(s->savg);
    d.groups = NULL;
    d.savg = NULL;
    d.cap = d.count = 0;
    *s = d;
    return true;
}

/* Moves every entry into a table of 2^bits slots. */
static bool rehash(pc_wstore *s, unsigned bits)
{
    pc_wstore t = *s;
    if (!table_alloc(&t, bits, s->with_avg))
        return false;
    for (uint32_t k = 0; k < s->cap; k++) {
        uint32_t i = pc_wstore_key(s, k);
        if (i == PC_WSTORE_EMPTY)
            continue;
        uint32_t h = pc_wstore_slot(&t, i);
        *pc_wstore_val(&t, h) = *pc_wstore_val(s, k);
        if (t.savg)
            t.savg[h] = s->savg[k];
    }
    free(s->groups);
    free(s->savg);
    *s = t;
    return true;
}

bool pc_wstore_reserve(pc_wstore *s, uint32_t n)
{
    if (!s->groups)
        return true;
    uint64_t need = (uint64_t)s->count + n;
    if (need * 4 <= (uint64_t)s->cap * 3)
        return true;
    uint64_t cap = s->cap;
    while (need * 4 > cap * 3)
        cap *= 2;
    /* Auto: a table as large as the dense array buys nothing; dense is faster. */
    if (s->kind == PC_STORAGE_AUTO && table_bytes(cap, s->with_avg) >= dense_bytes(s))
        return densify(s);
    if (cap > (1u << 31)) /* more slots than indices: cannot happen below PC_DIM_MAX */
        return false;
    return rehash(s, bits_of((uint32_t)cap));
}

void pc_wstore_clear(pc_wstore *s)
{
    if (s->v) {
        memset(s->v, 0, (size_t)s->dim * sizeof *s->v);
        if (s->avg)
            memset(s->avg, 0, (size_t)s->dim * sizeof *s->avg);
        return;
    }
    if (s->f) {
        memset(s->f, 0, (size_t)s->dim * sizeof *s->f);
        if (s->favg)
            memset(s->favg, 0, (size_t)s->dim * sizeof *s->favg);
        return;
    }
    /* Rules that reset often (OMM, the ROMMA family) would otherwise pay the
     * largest table they ever had on every reset: past 8 times what was held
     * since the last one, start again small (the next fill regrows it,
     * amortised against its adds). */
    if (s->cap > (1u << MIN_BITS) && (uint64_t)s->count * 8 < s->cap) {
        pc_wstore t = *s;
        unsigned bits = bits_of(s->count * 2 > (1u << MIN_BITS) ? s->count * 2 : 1u << MIN_BITS);
        if (table_alloc(&t, bits, s->with_avg)) {
            free(s->groups);
            free(s->savg);
            *s = t;
            return;
        }
    }
    for (uint32_t k = 0; k < s->cap / PC_WSTORE_GROUP; k++) {
        memset(s->groups[k].key, 0xff, sizeof s->groups[k].key);
        s->groups[k].passed = 0;
    }
    if (s->savg)
        memset(s->savg, 0, (size_t)s->cap * sizeof *s->savg);
    s->count = 0;
}

void pc_wstore_scale(pc_wstore *s, double c)
{
    if (s->v) {
        for (uint32_t i = 0; i < s->dim; i++)
            if (s->v[i] != 0) /* untouched +0 stays +0, as in a table */
                s->v[i] *= c;
        return;
    }
    if (s->f) { /* saturated at float's range rather than infinite (wvec folds
                   its scale in at 2^+-40, so only a weight past 1e38 gets here) */
        for (uint32_t i = 0; i < s->dim; i++)
            if (s->f[i] != 0)
                s->f[i] = narrow(s->f[i] * c);
        return;
    }
    for (uint32_t k = 0; k < s->cap; k++)
        if (pc_wstore_key(s, k) != PC_WSTORE_EMPTY && *pc_wstore_val(s, k) != 0)
            *pc_wstore_val(s, k) *= c;
}

void pc_wstore_ldexp(pc_wstore *s, int e)
{
    if (s->v) {
        for (uint32_t i = 0; i < s->dim; i++)
            s->v[i] = ldexp(s->v[i], e);
        if (s->avg)
            for (uint32_t i = 0; i < s->dim; i++)
                s->avg[i] = ldexp(s->avg[i], e);
        return;
    }
    if (s->f) { /* exact while the result stays a normal float (the callers keep it so) */
        for (uint32_t i = 0; i < s->dim; i++)
            s->f[i] = ldexpf(s->f[i], e);
        if (s->favg)
            for (uint32_t i = 0; i < s->dim; i++)
                s->favg[i] = ldexpf(s->favg[i], e);
        return;
    }
    for (uint32_t k = 0; k < s->cap; k++)
        if (pc_wstore_key(s, k) != PC_WSTORE_EMPTY) {
            *pc_wstore_val(s, k) = ldexp(*pc_wstore_val(s, k), e);
            if (s->savg)
                s->savg[k] = ldexp(s->savg[k], e);
        }
}

/* Sorts a[0..n) ascending, tmp holding n more: least significant byte
 * first, a pass per byte in which the keys differ (indices below 2^24 take
 * three).  Every snapshot of a sparse model sorts its tables' keys, and a
 * model put to rest is serialized in the loop: qsort's comparisons through
 * a pointer were a tenth of the daemon's time under a stream that evicts a
 * model every few labels (perf, bench_zipf). */
static void sort_u32(uint32_t *a, uint32_t *tmp, uint32_t n)
{
    uint32_t differ = 0;
    for (uint32_t i = 1; i < n; i++)
        differ |= a[i] ^ a[0];
    for (unsigned shift = 0; shift < 32; shift += 8) {
        if (!((differ >> shift) & 0xff))
            continue; /* one value of this byte: the order stands */
        uint32_t start[257] = {0};
        for (uint32_t i = 0; i < n; i++)
            start[((a[i] >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            start[b + 1] += start[b];
        for (uint32_t i = 0; i < n; i++)
            tmp[start[(a[i] >> shift) & 0xff]++] = a[i];
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

/* Which stored indices sorted_keys gives: those whose v is non-zero; whose
 * v, or avg, is non-zero or -0 (as the encoding keeps them); every one. */
typedef enum keys_of { KEYS_V, KEYS_V_ZEROS, KEYS_AVG_ZEROS, KEYS_ALL } keys_of;

/* The stored indices `which` names, sorted: a new array, NULL when out of
 * memory. */
static uint32_t *sorted_keys(const pc_wstore *s, keys_of which, uint32_t *n)
{
    uint32_t c = 0;
    /* the keys, then room for the sort's second copy */
    uint32_t *ks = malloc(2 * (size_t)(s->count ? s->count : 1) * sizeof *ks);
    if (!ks) {
        *n = UINT32_MAX;
        return NULL;
    }
    for (uint32_t k = 0; k < s->cap; k++) {
        if (pc_wstore_key(s, k) == PC_WSTORE_EMPTY)
            continue;
        double v = which == KEYS_AVG_ZEROS ? s->savg[k] : *pc_wstore_val(s, k);
        bool zeros = which == KEYS_AVG_ZEROS || which == KEYS_V_ZEROS;
        if (which == KEYS_ALL || v != 0 || (zeros && signbit(v)))
            ks[c++] = pc_wstore_key(s, k);
    }
    sort_u32(ks, ks + (s->count ? s->count : 1), c);
    *n = c;
    return ks;
}

uint32_t *pc_wstore_keys(const pc_wstore *s, uint32_t *n)
{
    if (!s->groups) {
        *n = UINT32_MAX;
        return NULL;
    }
    return sorted_keys(s, KEYS_ALL, n);
}

bool pc_wstore_visit(const pc_wstore *s, void (*fn)(void *arg, uint32_t i, double v), void *arg)
{
    if (s->v) {
        for (uint32_t i = 0; i < s->dim; i++)
            if (s->v[i] != 0)
                fn(arg, i, s->v[i]);
        return true;
    }
    if (s->f) {
        for (uint32_t i = 0; i < s->dim; i++)
            if (s->f[i] != 0)
                fn(arg, i, s->f[i]);
        return true;
    }
    uint32_t n;
    uint32_t *ks = sorted_keys(s, KEYS_V, &n);
    if (!ks) { /* out of memory: the table's order, rounding may differ from dense */
        for (uint32_t k = 0; k < s->cap; k++)
            if (pc_wstore_key(s, k) != PC_WSTORE_EMPTY && *pc_wstore_val(s, k) != 0)
                fn(arg, pc_wstore_key(s, k), *pc_wstore_val(s, k));
        return false;
    }
    for (uint32_t k = 0; k < n; k++)
        fn(arg, ks[k], pc_wstore_get(s, ks[k]));
    free(ks);
    return true;
}

static double at_v(const void *arg, uint32_t i)
{
    return pc_wstore_get(arg, i);
}

static double at_avg(const void *arg, uint32_t i)
{
    return pc_wstore_get_avg(arg, i);
}

/* The non-zero entries (and -0) of a dense float array, in index order. */
static uint32_t *float_keys(const float *a, uint32_t dim, uint32_t *n)
{
    uint32_t c = 0, cap = 64;
    uint32_t *ks = malloc(cap * sizeof *ks);
    for (uint32_t i = 0; ks && i < dim; i++) {
        if (a[i] == 0 && !signbit(a[i]))
            continue;
        if (c == cap) {
            uint32_t *g = realloc(ks, (size_t)(cap *= 2) * sizeof *ks);
            if (!g) {
                free(ks);
                ks = NULL;
                break;
            }
            ks = g;
        }
        ks[c++] = i;
    }
    *n = c;
    return ks;
}

void pc_wstore_encode(const pc_wstore *s, bool avg, pc_writer *w)
{
    if (s->v) {
        pc_writer_f64_array(w, avg ? s->avg : s->v, s->dim);
        return;
    }
    uint32_t n;
    if (s->f) { /* the same bytes as a double array holding these floats */
        uint32_t *ks = float_keys(avg ? s->favg : s->f, s->dim, &n);
        if (!ks) {
            w->failed = true;
            return;
        }
        pc_writer_f64_sparse(w, s->dim, ks, n, avg ? at_avg : at_v, s);
        free(ks);
        return;
    }
    uint32_t *ks = sorted_keys(s, avg ? KEYS_AVG_ZEROS : KEYS_V_ZEROS, &n);
    if (!ks) {
        w->failed = true; /* reported as out of memory by the codec */
        return;
    }
    pc_writer_f64_sparse(w, s->dim, ks, n, avg ? at_avg : at_v, s);
    free(ks);
}

typedef struct put_ctx {
    pc_wstore *s;
    bool avg;
    double scale, tick, sq; /* pc_wstore_decode_sq */
} put_ctx;

/* Adds the square of the weight entry i now stands for (put has stored v). */
static void add_square(put_ctx *c, uint32_t i, double v)
{
    double e = !c->avg ? c->scale * v
               : c->tick > 0 ? c->scale * pc_wstore_get(c->s, i) - v / c->tick : 0;
    c->sq += e * e;
}

static bool put(void *arg, uint32_t i, double v)
{
    put_ctx *c = arg;
    if (c->s->v) {
        (c->avg ? c->s->avg : c->s->v)[i] = v;
        add_square(c, i, v);
        return true;
    }
    if (c->s->f) {
        if (isnan(v) || (double)(float)v != v)
            return false; /* not a float: no float32 store wrote it */
        (c->avg ? c->s->favg : c->s->f)[i] = (float)v;
        add_square(c, i, v);
        return true;
    }
    if (!pc_wstore_reserve(c->s, 1))
        return false;
    if (!c->s->groups) /* auto turned dense */
        return put(arg, i, v);
    uint32_t h = pc_wstore_slot(c->s, i);
    if (c->avg)
        c->s->savg[h] = v;
    else
        *pc_wstore_val(c->s, h) = v;
    add_square(c, i, v);
    return true;
}

bool pc_wstore_decode(pc_wstore *s, bool avg, pc_reader *r)
{
    double sq;
    return pc_wstore_decode_sq(s, avg, r, 1, 0, &sq);
}

bool pc_wstore_decode_sq(pc_wstore *s, bool avg, pc_reader *r, double scale, double tick,
                         double *sq)
{
    put_ctx c = {s, avg, scale, tick, 0};
    bool ok = pc_reader_f64_entries(r, s->dim, put, &c);
    *sq = c.sq;
    return ok;
}
