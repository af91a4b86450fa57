/* wstore.h - dim doubles (and optionally a second array beside them), kept
 * dense or sparse: the storage under every weight vector (wvec.h) and under
 * Winnow's weights.
 *
 * Dense: a calloc'd array of dim entries (untouched pages cost no memory, but
 * a model whose hashed features are spread over the range touches most of
 * them: 8 bytes x dim).  Sparse: an open-addressing hash table of the indices
 * ever written (linear probing, Fibonacci hashing, at most 3/4 full, doubled
 * when it would pass that), so memory follows what the vector has seen.
 * Auto: sparse until the doubled table would take as many bytes as the
 * dense array (16 bytes a slot against 8 a weight: when about 3/16 of dim has
 * been touched), then dense for good.
 *
 * Both read an absent entry as +0.0 and apply the same floating-point
 * operations to the same entries, so a vector holds bit-identical values
 * whatever its storage: entries that return to 0 stay in the table (no
 * deletion: a weight that was touched once is likely touched again), and only
 * a reset (pc_wstore_clear) empties it.
 *
 * Every table operation is O(1) expected; growth is amortised O(1) per new
 * index.  Adds never allocate unless pc_wstore_reserve said so first: a
 * caller that must not fail mid-update reserves, then writes.
 */
#ifndef PC_WSTORE_H
#define PC_WSTORE_H

#include "lib/perceptron.h"
#include "lib/bytes.h"

#define PC_WSTORE_EMPTY UINT32_MAX /* no valid index: dim <= PC_DIM_MAX + 1 */

typedef struct pc_wslot {
    uint32_t key;                  /* the index, or PC_WSTORE_EMPTY */
    double v;
} pc_wslot;

typedef struct pc_wstore {
    uint32_t dim;
    pc_storage kind;               /* as configured (auto stays auto when dense) */
    bool with_avg;                 /* the second array exists */
    double *v, *avg;               /* dense: dim entries each; NULL while sparse */
    pc_wslot *slots;               /* sparse: cap slots */
    double *savg;                  /* sparse with_avg: slot k's second value */
    uint32_t cap, count, shift;    /* cap = 2^(32 - shift); count used slots */
} pc_wstore;

pc_status pc_wstore_init(pc_wstore *s, uint32_t dim, pc_storage kind, bool with_avg);
void pc_wstore_free(pc_wstore *s);

static inline uint32_t pc_wstore_home(const pc_wstore *s, uint32_t i)
{
    return (uint32_t)(i * 2654435769u) >> s->shift; /* Knuth's multiplicative hash */
}

/* The slot holding i, or PC_WSTORE_EMPTY (sparse only). */
static inline uint32_t pc_wstore_find(const pc_wstore *s, uint32_t i)
{
    uint32_t m = s->cap - 1;
    for (uint32_t h = pc_wstore_home(s, i);; h = (h + 1) & m) {
        uint32_t k = s->slots[h].key;
        if (k == i)
            return h;
        if (k == PC_WSTORE_EMPTY)
            return PC_WSTORE_EMPTY;
    }
}

static inline double pc_wstore_get(const pc_wstore *s, uint32_t i)
{
    if (s->v)
        return s->v[i];
    uint32_t h = pc_wstore_find(s, i);
    return h == PC_WSTORE_EMPTY ? 0 : s->slots[h].v;
}

static inline double pc_wstore_get_avg(const pc_wstore *s, uint32_t i)
{
    if (s->v)
        return s->avg[i];
    uint32_t h = pc_wstore_find(s, i);
    return h == PC_WSTORE_EMPTY ? 0 : s->savg[h];
}

/* Room for n more indices without allocating in pc_wstore_slot; may turn an
 * auto store dense.  false: out of memory, the store unchanged. */
bool pc_wstore_reserve(pc_wstore *s, uint32_t n);

/* The slot of i in a sparse store, inserted (+0, avg +0) when absent; the
 * room was reserved. */
static inline uint32_t pc_wstore_slot(pc_wstore *s, uint32_t i)
{
    uint32_t m = s->cap - 1;
    for (uint32_t h = pc_wstore_home(s, i);; h = (h + 1) & m) {
        uint32_t k = s->slots[h].key;
        if (k == i)
            return h;
        if (k == PC_WSTORE_EMPTY) {
            s->slots[h].key = i;
            s->slots[h].v = 0;
            if (s->savg)
                s->savg[h] = 0;
            s->count++;
            return h;
        }
    }
}

/* A writable reference to entry i (dense, or sparse after a reserve). */
static inline double *pc_wstore_ref(pc_wstore *s, uint32_t i)
{
    return s->v ? &s->v[i] : &s->slots[pc_wstore_slot(s, i)].v;
}

/* Every entry (and avg) to +0: dense O(dim), sparse O(table), shrinking a
 * table much larger than what it held so the next clear is cheap too. */
void pc_wstore_clear(pc_wstore *s);
/* v[i] *= c for every non-zero entry (not avg). */
void pc_wstore_scale(pc_wstore *s, double c);
/* v[i] = ldexp(v[i], e), and avg alike: exact rescaling by 2^e. */
void pc_wstore_ldexp(pc_wstore *s, int e);
/* Calls fn for every entry with v != 0, in increasing index, as a dense loop
 * would: sums taken this way round exactly as dense storage's.  false when
 * sorting the table's indices found no memory and the order was the table's. */
bool pc_wstore_visit(const pc_wstore *s, void (*fn)(void *arg, uint32_t i, double v), void *arg);
/* Heap bytes held. */
size_t pc_wstore_bytes(const pc_wstore *s);
/* v (avg = false) or avg as pc_writer_f64_array writes a dense array: the
 * same bytes whatever the storage. */
void pc_wstore_encode(const pc_wstore *s, bool avg, pc_writer *w);
/* Reads what pc_wstore_encode wrote into a cleared store of the same dim. */
bool pc_wstore_decode(pc_wstore *s, bool avg, pc_reader *r);

#endif
