/* scaler.c - online per-feature scaling (see scaler.h). */
#include "lib/scaler.h"

#include <math.h>
#include <string.h>

pc_status pc_scaler_init(pc_scaler *sc, pc_scale mode, uint32_t dim, pc_storage storage)
{
    memset(sc, 0, sizeof *sc);
    sc->mode = mode;
    sc->dim = dim;
    if (mode == PC_SCALE_NONE)
        return PC_OK;
    bool std = mode == PC_SCALE_STD;
    pc_status st = pc_wstore_init(&sc->stat, dim, storage, PC_WEIGHTS_FLOAT64, std);
    if (st == PC_OK && std)
        st = pc_wstore_init(&sc->count, dim, storage, PC_WEIGHTS_FLOAT64, false);
    if (st != PC_OK)
        pc_scaler_free(sc);
    return st;
}

void pc_scaler_free(pc_scaler *sc)
{
    if (sc->mode == PC_SCALE_NONE)
        return;
    pc_wstore_free(&sc->stat);
    if (sc->mode == PC_SCALE_STD)
        pc_wstore_free(&sc->count);
    memset(sc, 0, sizeof *sc);
}

void pc_scaler_clear(pc_scaler *sc)
{
    if (sc->mode == PC_SCALE_NONE)
        return;
    pc_wstore_clear(&sc->stat);
    if (sc->mode == PC_SCALE_STD)
        pc_wstore_clear(&sc->count);
    sc->examples = 0;
}

size_t pc_scaler_bytes(const pc_scaler *sc)
{
    if (sc->mode == PC_SCALE_NONE)
        return 0;
    return pc_wstore_bytes(&sc->stat) +
           (sc->mode == PC_SCALE_STD ? pc_wstore_bytes(&sc->count) : 0);
}

/* Entry i of s to v (and its second value to a), room reserved. */
static void put(pc_wstore *s, uint32_t i, double v, double a)
{
    if (s->v) {
        s->v[i] = v;
        if (s->avg)
            s->avg[i] = a;
        return;
    }
    uint32_t h = pc_wstore_slot(s, i);
    *pc_wstore_val(s, h) = v;
    if (s->savg)
        s->savg[h] = a;
}

/* The standard deviation of a feature from its count, mean and M2; where the
 * values barely vary (a one-hot feature is always 1: no deviation at all),
 * their root mean square instead, so such a feature is scaled to about 1
 * rather than divided by nothing.  The threshold, 2^-20 of the rms, bounds
 * a scaled value: |x| <= sqrt(count) rms, so |x| / divisor <= 2^20 sqrt(count). */
static double std_divisor(double c, double mean, double m2)
{
    if (c <= 0)
        return 0;
    double var = m2 / c, sd = sqrt(var), rms = sqrt(var + mean * mean);
    return sd > rms * 0x1p-20 ? sd : rms;
}

/* Welford's step: the count, mean and M2 after one more value x. */
static void welford(double *c, double *mean, double *m2, double x)
{
    double d = x - *mean;
    *c += 1;
    *mean += d / *c;
    *m2 += d * (x - *mean);
    /* d and x - mean have one sign in exact arithmetic; rounded, the new
     * mean can pass x by an ulp and the product turn negative: a variance
     * is never below 0 (and a snapshot holding one would not load) */
    if (!(*m2 >= 0))
        *m2 = 0;
}

/* The divisor feature i (value x, not yet learned when learn is false) gets,
 * learning x into the statistics when learn is true.  Inlined by force:
 * scale() runs it per feature of every example, and once pc_scaler_value
 * called it too gcc no longer inlined it there (callgrind: 5 % more
 * instructions for a daemon's labels and predicts). */
static inline __attribute__((always_inline)) double step(pc_scaler *sc, uint32_t i, double x,
                                                         bool learn)
{
    if (sc->mode == PC_SCALE_MAX) {
        double s = pc_wstore_get(&sc->stat, i), a = fabs(x);
        if (a > s) {
            s = a;
            if (learn)
                put(&sc->stat, i, s, 0);
        }
        return s;
    }
    if (sc->mode == PC_SCALE_RMS || sc->mode == PC_SCALE_RMS_SENT) {
        /* the sum of squares with x, over the examples with this one: the
         * examples that did not carry the feature add 0 to the sum */
        double q = pc_wstore_get(&sc->stat, i) + x * x;
        if (learn)
            put(&sc->stat, i, q, 0);
        return sqrt(q / (sc->examples + 1));
    }
    double c = pc_wstore_get(&sc->count, i), mean = pc_wstore_get(&sc->stat, i),
           m2 = pc_wstore_get_avg(&sc->stat, i);
    welford(&c, &mean, &m2, x);
    if (learn) {
        put(&sc->count, i, c, 0);
        put(&sc->stat, i, mean, m2);
    }
    return std_divisor(c, mean, m2);
}

/* x / d, d being x's divisor.  max: d >= |x|.  rms: d >= |x| / sqrt(examples).
 * std: d is about the feature's spread.  But for values near the bottom of
 * double's range a square underflows to 0: no value is scaled past 2^52, nor
 * divided by 0. */
static double divide(double x, double d)
{
    double v = x / d; /* |x / d| is |x| / |d| to the bit: one division for the test too */
    return fabs(v) <= 0x1p52 ? v : x / fabs(x);
}

/* Asks for every entry of x's features in s before the pass that reads
 * them: over a large dimension each is a cache miss, fetched side by side
 * this way rather than one after the other.  Inlined by force: as a
 * function of its own it has no effect gcc counts (a prefetch changes no
 * memory), so gcc 12 -O2 judged it pure and dropped every call to it; the
 * statistics' loads then missed one after the other (labels/s with
 * `scale: rms-sent` over 2^20: 0.58 of unprepared before, 0.67 to 0.74 after). */
static inline __attribute__((always_inline)) void prefetch(const pc_wstore *s, const pc_svec *x)
{
    if (s->v) {
        for (uint32_t k = 0; k < x->n; k++)
            if (x->idx[k] < s->dim) /* rms-sent's bins have no entry */
                __builtin_prefetch(&s->v[x->idx[k]]);
    } else {
        pc_wstore_prefetch(s, x);
    }
}

/* x scaled into out; learn: the statistics learn it on the way. */
static void scale(pc_scaler *sc, const pc_svec *x, pc_svec *out, bool learn)
{
    prefetch(&sc->stat, x);
    if (sc->mode == PC_SCALE_STD)
        prefetch(&sc->count, x);
    double n2 = 0;
    /* rms-sent: the bins, indices dim and up (pc_prep_space), stay as sent */
    uint32_t bins = sc->mode == PC_SCALE_RMS_SENT ? sc->dim : UINT32_MAX;
    for (uint32_t k = 0; k < x->n; k++) {
        uint32_t i = x->idx[k];
        double v = i < bins ? divide(x->val[k], step(sc, i, x->val[k], learn)) : x->val[k];
        out->idx[k] = i;
        out->val[k] = v;
        n2 += v * v;
    }
    out->n = x->n;
    out->norm2 = n2;
    if (learn && (sc->mode == PC_SCALE_RMS || sc->mode == PC_SCALE_RMS_SENT))
        sc->examples += 1; /* every example counts, whatever features it carries */
}

pc_status pc_scaler_learn(pc_scaler *sc, const pc_svec *x, pc_svec *out)
{
    if (!pc_wstore_reserve(&sc->stat, x->n) ||
        (sc->mode == PC_SCALE_STD && !pc_wstore_reserve(&sc->count, x->n)))
        return PC_ENOMEM;
    scale(sc, x, out, true);
    return PC_OK;
}

void pc_scaler_apply(const pc_scaler *sc, const pc_svec *x, pc_svec *out)
{
    scale((pc_scaler *)sc, x, out, false); /* learn false: sc is only read */
}

double pc_scaler_value(const pc_scaler *sc, uint32_t i, double x)
{
    if (sc->mode == PC_SCALE_NONE || i >= sc->dim)
        return x;
    return divide(x, step((pc_scaler *)sc, i, x, false)); /* learn false: sc is only read */
}

double pc_scaler_divisor(const pc_scaler *sc, uint32_t i)
{
    if (i >= sc->dim) /* rms-sent's bins */
        return 1;
    switch (sc->mode) {
    case PC_SCALE_MAX: return pc_wstore_get(&sc->stat, i);
    case PC_SCALE_STD:
        return std_divisor(pc_wstore_get(&sc->count, i), pc_wstore_get(&sc->stat, i),
                           pc_wstore_get_avg(&sc->stat, i));
    case PC_SCALE_RMS:
    case PC_SCALE_RMS_SENT:
        return sc->examples > 0 ? sqrt(pc_wstore_get(&sc->stat, i) / sc->examples) : 0;
    default: return 1;
    }
}

void pc_scaler_encode(const pc_scaler *sc, pc_writer *w)
{
    if (sc->mode == PC_SCALE_NONE)
        return;
    pc_wstore_encode(&sc->stat, false, w);
    if (sc->mode == PC_SCALE_RMS || sc->mode == PC_SCALE_RMS_SENT)
        pc_writer_f64(w, sc->examples);
    if (sc->mode == PC_SCALE_STD) {
        pc_wstore_encode(&sc->stat, true, w);
        pc_wstore_encode(&sc->count, false, w);
    }
}

/* A statistic that no stream could leave: a negative max or M2, a count
 * that is not a whole number >= 1; or one past what values bounded at 2^64
 * (PC_VALUE_MAX) leave: a max or mean past 2^64, an M2 past count x 2^130
 * (each (x - mean)^2 is at most 2^130).  The next Welford step from a mean
 * of 1e300 would overflow M2 into a snapshot that cannot load. */
typedef struct check {
    bool whole;   /* counts: whole numbers >= 1; else >= 0 */
    bool bad;
} check;

static void check_entry(void *arg, uint32_t i, double v)
{
    (void)i;
    check *c = arg;
    if (c->whole ? !(v >= 1 && v == floor(v)) : !(v >= 0 && v <= PC_VALUE_MAX))
        c->bad = true;
}

/* fn on every entry of s, in any order: pc_wstore_visit's false only says
 * it found no memory to sort the indices and went in the table's order,
 * which the checks below do not mind (a snapshot read as memory runs out
 * is not a malformed one). */
static void visit_all(const pc_wstore *s, void (*fn)(void *arg, uint32_t i, double v), void *arg)
{
    (void)pc_wstore_visit(s, fn, arg);
}

static bool entries_ok(const pc_wstore *s, bool whole)
{
    check c = {whole, false};
    visit_all(s, check_entry, &c);
    return !c.bad;
}

typedef struct m2_check {
    const pc_wstore *stat;
    bool bad;
} m2_check;

static void check_m2(void *arg, uint32_t i, double count)
{
    m2_check *c = arg;
    double m2 = pc_wstore_get_avg(c->stat, i);
    if (!(m2 >= 0 && m2 <= count * 0x1p130 && fabs(pc_wstore_get(c->stat, i)) <= PC_VALUE_MAX))
        c->bad = true;
}

typedef struct sum_check {
    double bound;
    bool bad;
} sum_check;

static void check_sum(void *arg, uint32_t i, double q)
{
    (void)i;
    sum_check *c = arg;
    if (!(q >= 0 && q <= c->bound))
        c->bad = true;
}

bool pc_scaler_decode(pc_scaler *sc, pc_reader *r)
{
    if (sc->mode == PC_SCALE_NONE)
        return true;
    if (!pc_wstore_decode(&sc->stat, false, r))
        return false;
    if (sc->mode == PC_SCALE_MAX) {
        if (entries_ok(&sc->stat, false))
            return true;
        r->why = "a feature's max |x| is negative or past 2^64, the bound of a value";
        return false;
    }
    if (sc->mode == PC_SCALE_RMS || sc->mode == PC_SCALE_RMS_SENT) {
        /* a whole count; each sum of squares >= 0 and at most examples x 2^128
         * (each value is at most 2^64), so none without an example */
        sc->examples = pc_reader_f64(r);
        sum_check c = {sc->examples * 0x1p128, false};
        visit_all(&sc->stat, check_sum, &c);
        if (!r->failed && sc->examples >= 0 && sc->examples <= 0x1p64 &&
            sc->examples == floor(sc->examples) && !c.bad)
            return true;
        if (!r->failed)
            r->why = "a feature's sum of squares is no stream's (below 0, or past examples x "
                     "2^128), or the example count is not a whole number in [0, 2^64]";
        return false;
    }
    if (!pc_wstore_decode(&sc->stat, true, r) || !pc_wstore_decode(&sc->count, false, r))
        return false;
    /* M2, the second value, of every feature counted: >= 0 (a square root
     * is taken of it). */
    m2_check c = {&sc->stat, false};
    visit_all(&sc->count, check_m2, &c);
    if (entries_ok(&sc->count, true) && !c.bad)
        return true;
    r->why = "a feature's count, mean or M2 is no stream's (a count not a whole number >= 1, a "
             "mean past 2^64, an M2 below 0 or past count x 2^130)";
    return false;
}
