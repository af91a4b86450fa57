/* wstore.h - dim doubles (and optionally a second array beside them), kept
 * dense or sparse: the storage under every weight vector (wvec.h) and under
 * Winnow's weights.
 *
 * Dense: a calloc'd array of dim entries (untouched pages cost no memory, but
 * a model whose hashed features are spread over the range touches most of
 * them: 8 bytes x dim).  Dense float32 (pc_weights): the same array of
 * floats, 4 bytes x dim, each entry rounded to float when it is written
 * (arithmetic stays double); the only storage that is not exact.  Sparse: an open-addressing hash table of the indices
 * ever written (linear probing over groups of four slots, one cache line
 * each, Fibonacci hashing, at most 3/4 full, doubled when it would pass
 * that), so memory follows what the vector has seen.
 * Auto: sparse until the doubled table would take as many bytes as the
 * dense array (16 bytes a slot against 8 a weight: when about 3/16 of dim has
 * been touched), then dense for good.
 *
 * Both read an absent entry as +0.0 and apply the same floating-point
 * operations to the same entries, so a float64 vector holds bit-identical
 * values whatever its storage: entries that return to 0 stay in the table (no
 * deletion: a weight that was touched once is likely touched again), and only
 * a reset (pc_wstore_clear) empties it.
 *
 * Every table operation is O(1) expected; growth is amortised O(1) per new
 * index.  Adds never allocate unless pc_wstore_reserve said so first: a
 * caller that must not fail mid-update reserves, then writes.
 */
#ifndef PC_WSTORE_H
#define PC_WSTORE_H

#include "lib/bytes.h"
#include "lib/perceptron.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define PC_WSTORE_EMPTY UINT32_MAX /* no valid index: dim <= PC_DIM_MAX + 1 */
#define PC_WSTORE_GROUP 4          /* slots per group */

/* Four slots in one 64-byte cache line (the table is allocated line-aligned),
 * keys side by side: a lookup reads one line and compares its four keys at
 * once (pc_wstore_match), instead of a load and a branch per slot that
 * linear probing over {key, value} pairs took: those branches depend on keys
 * that are cache misses, and each misprediction stalled the dot product until
 * the miss came back (measured: the dot at 2^20 ran at a third of the dense
 * array's speed).  v[PC_WSTORE_GROUP] is always +0, what an absent index
 * reads: a lookup picks v[j] with j = 4 when no key matched, without a branch
 * on whether the index is there (pc_wstore_lookup).  `passed`, a 32-bit
 * Bloom filter of the indices that overflowed from the group, ends the search
 * of an absent index at its full home group unless its bit is set: about 1
 * group in 8 is full at half load, and searching on costs a cache miss that
 * was not prefetched (measured: with a flag instead of the filter about 1
 * absent index in 20 searched on, a third of Winnow's score at 2^20).  16
 * bytes a slot, as {u32 key, double v} pairs took. */
typedef struct pc_wgroup {
    uint32_t key[PC_WSTORE_GROUP]; /* the index, or PC_WSTORE_EMPTY */
    double v[PC_WSTORE_GROUP + 1]; /* the last one +0, never written */
    uint32_t passed;               /* bit pc_wstore_tag(i) for each i that found it full, went on */
    uint32_t spare;                /* to a line's 64 bytes */
} pc_wgroup;
_Static_assert(sizeof(pc_wgroup) == 64, "a group is one cache line");

typedef struct pc_wstore {
    uint32_t dim;
    pc_storage kind;               /* as configured (auto stays auto when dense) */
    pc_weights width;              /* float32: dense entries are f and favg, not v and avg */
    bool with_avg;                 /* the second array exists */
    double *v, *avg;               /* dense float64: dim entries each; else NULL */
    float *f, *favg;               /* dense float32: dim entries each; else NULL */
    pc_wgroup *groups;             /* sparse: cap / PC_WSTORE_GROUP groups */
    double *savg;                  /* sparse with_avg: slot h's second value */
    uint32_t cap, count, shift;    /* cap slots = 2^(34 - shift); count used */
} pc_wstore;

/* width applies to dense arrays (storage dense, or auto once dense): a
 * sparse table keeps doubles. */
pc_status pc_wstore_init(pc_wstore *s, uint32_t dim, pc_storage kind, pc_weights width,
                         bool with_avg);
void pc_wstore_free(pc_wstore *s);

/* i's home group: the top bits of Knuth's multiplicative hash (the number of
 * groups is a power of two). */
static inline uint32_t pc_wstore_home(const pc_wstore *s, uint32_t i)
{
    return (uint32_t)(i * 2654435769u) >> s->shift;
}

/* Bit j set when g->key[j] == key, without a branch. */
static inline unsigned pc_wstore_match(const pc_wgroup *g, uint32_t key)
{
#ifdef __SSE2__
    __m128i k = _mm_load_si128((const __m128i *)(const void *)g->key);
    __m128i e = _mm_cmpeq_epi32(k, _mm_set1_epi32((int)key));
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(e));
#else
    unsigned m = 0;
    for (unsigned j = 0; j < PC_WSTORE_GROUP; j++)
        m |= (unsigned)(g->key[j] == key) << j;
    return m;
#endif
}

/* Slot h (of cap): group h / 4, place h % 4. */
static inline uint32_t pc_wstore_key(const pc_wstore *s, uint32_t h)
{
    return s->groups[h / PC_WSTORE_GROUP].key[h % PC_WSTORE_GROUP];
}

static inline double *pc_wstore_val(const pc_wstore *s, uint32_t h)
{
    return &s->groups[h / PC_WSTORE_GROUP].v[h % PC_WSTORE_GROUP];
}

/* Linear probing a group at a time: an index went into the first empty slot
 * at or after the start of its home group, setting its tag in each full group
 * it passed, and nothing but a clear empties a slot or a tag: so the search
 * ends at the index, at a group with an empty slot, or at a group whose
 * `passed` lacks the index's tag. */

/* i's bit in a group's `passed`: its low 5 bits, which the indices of one
 * home group do not share (the home is the top bits of their hash).  Indices
 * that do (multiples of 32) only make the filter weaker, never wrong. */
static inline uint32_t pc_wstore_tag(uint32_t i)
{
    return 1u << (i & 31);
}

/* The slot holding i, or PC_WSTORE_EMPTY (sparse only). */
static inline uint32_t pc_wstore_find(const pc_wstore *s, uint32_t i)
{
    uint32_t m = s->cap / PC_WSTORE_GROUP - 1;
    for (uint32_t g = pc_wstore_home(s, i);; g = (g + 1) & m) {
        const pc_wgroup *gr = &s->groups[g];
        unsigned hit = pc_wstore_match(gr, i);
        if (__builtin_expect((hit | pc_wstore_match(gr, PC_WSTORE_EMPTY)) != 0, 1))
            return hit ? g * PC_WSTORE_GROUP + (uint32_t)__builtin_ctz(hit) : PC_WSTORE_EMPTY;
        if (!(gr->passed & pc_wstore_tag(i)))
            return PC_WSTORE_EMPTY;
    }
}

/* i's entry in a sparse store, +0 when absent.  Settled in its home group
 * (found; or absent: an empty slot there, or its tag not in `passed`), as
 * nearly always below 3/4 full, it costs no branch that depends on the keys:
 * present or absent, the value is v[j] with j the matching slot, or the
 * group's +0 after its four.  (The tag test costs a few instructions on
 * every lookup; measured, it pays where many indices are absent, Winnow's
 * untouched weights, and costs a few per cent where all are present.) */
static inline double pc_wstore_lookup(const pc_wstore *s, uint32_t i)
{
    uint32_t m = s->cap / PC_WSTORE_GROUP - 1;
    for (uint32_t g = pc_wstore_home(s, i);; g = (g + 1) & m) {
        const pc_wgroup *gr = &s->groups[g];
        unsigned hit = pc_wstore_match(gr, i);
        unsigned stop = hit | pc_wstore_match(gr, PC_WSTORE_EMPTY) |
                        (unsigned)((gr->passed & pc_wstore_tag(i)) == 0) << PC_WSTORE_GROUP;
        if (__builtin_expect(stop != 0, 1))
            return gr->v[__builtin_ctz(hit | 1u << PC_WSTORE_GROUP)];
    }
}

/* Asks for the home groups of all of x's indices (sparse; dense: nothing)
 * before a pass that reads them: a table's groups not used lately are cache
 * misses, fetched side by side this way rather than one after the other. */
static inline void pc_wstore_prefetch(const pc_wstore *s, const pc_svec *x)
{
    if (!s->groups)
        return;
    for (uint32_t k = 0; k < x->n; k++)
        __builtin_prefetch(&s->groups[pc_wstore_home(s, x->idx[k])]);
}

static inline double pc_wstore_get(const pc_wstore *s, uint32_t i)
{
    return s->v ? s->v[i] : s->f ? s->f[i] : pc_wstore_lookup(s, i);
}

static inline double pc_wstore_get_avg(const pc_wstore *s, uint32_t i)
{
    if (s->v)
        return s->avg[i];
    if (s->f)
        return s->favg[i];
    uint32_t h = pc_wstore_find(s, i);
    return h == PC_WSTORE_EMPTY ? 0 : s->savg[h];
}

/* Room for n more indices without allocating in pc_wstore_slot; may turn an
 * auto store dense (a float32 one rounds its entries to float then).  false:
 * out of memory, the store unchanged. */
bool pc_wstore_reserve(pc_wstore *s, uint32_t n);

/* The slot of i in a sparse store, inserted (+0, avg +0) when absent; the
 * room was reserved. */
static inline uint32_t pc_wstore_slot(pc_wstore *s, uint32_t i)
{
    uint32_t m = s->cap / PC_WSTORE_GROUP - 1;
    for (uint32_t g = pc_wstore_home(s, i);; g = (g + 1) & m) {
        pc_wgroup *gr = &s->groups[g];
        unsigned hit = pc_wstore_match(gr, i);
        if (__builtin_expect(hit != 0, 1))
            return g * PC_WSTORE_GROUP + (uint32_t)__builtin_ctz(hit);
        unsigned empty = pc_wstore_match(gr, PC_WSTORE_EMPTY);
        if (empty) {
            unsigned j = (unsigned)__builtin_ctz(empty);
            uint32_t h = g * PC_WSTORE_GROUP + j;
            gr->key[j] = i;
            gr->v[j] = 0;
            if (s->savg)
                s->savg[h] = 0;
            s->count++;
            return h;
        }
        gr->passed |= pc_wstore_tag(i);
    }
}

/* A writable reference to entry i (dense float64, or sparse after a
 * reserve): for float64 stores only (Winnow's, PC_RULE_FLOAT64_ONLY). */
static inline double *pc_wstore_ref(pc_wstore *s, uint32_t i)
{
    return s->v ? &s->v[i] : pc_wstore_val(s, pc_wstore_slot(s, i));
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
/* A table's stored indices (whatever their values), increasing: a new array
 * of *n (the caller frees it); NULL for dense arrays, or out of memory.  What
 * an O(stored) walk of every index that may be non-zero reads. */
uint32_t *pc_wstore_keys(const pc_wstore *s, uint32_t *n);
/* Heap bytes held. */
size_t pc_wstore_bytes(const pc_wstore *s);
/* v (avg = false) or avg as pc_writer_f64_array writes a dense array: the
 * same bytes whatever the storage. */
void pc_wstore_encode(const pc_wstore *s, bool avg, pc_writer *w);
/* Reads what pc_wstore_encode wrote into a cleared store of the same dim.
 * Into float32 entries, a value that is not exactly a float is refused (false,
 * as malformed): a snapshot of a float32 store holds floats only, and reading
 * it must give back the same bytes. */
bool pc_wstore_decode(pc_wstore *s, bool avg, pc_reader *r);
/* The same, summing into *sq the squares of the weights the entries stand
 * for, as they are read (O(entries), not O(dim)): scale v_i, or with avg
 * (read after v) the averaged weight scale v_i - avg_i/tick of each entry
 * whose avg_i is stored (0 when tick <= 0).  For the bound decoders keep. */
bool pc_wstore_decode_sq(pc_wstore *s, bool avg, pc_reader *r, double scale, double tick,
                         double *sq);

#endif
