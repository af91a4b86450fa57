/* wvec.c - weight vector with a lazy scale and a running squared norm, over
 * a dense or sparse store (wstore.h).  See wvec.h for the invariants; every
 * entry point here is O(nnz(x)) except init, a dense zero and the rare
 * renormalisation.  Dense and sparse run the same arithmetic on the same
 * entries, in the same order, so their results are bit-identical. */
#include "lib/wvec.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fold the scale into v when it leaves [2^-300, 2^300]... conservatively
 * earlier, so products with v stay far from the double range's ends; for
 * float32 entries (range 2^+-127) within 2^+-40, so that v = w / scale
 * leaves room for w itself. */
#define SCALE_LOW 1e-120
#define SCALE_HIGH 1e120
#define SCALE_LOW_F32 0x1p-40
#define SCALE_HIGH_F32 0x1p40

pc_status pc_wvec_init_store(pc_wvec *w, uint32_t dim, pc_storage storage, pc_weights weights,
                             bool averaged)
{
    memset(w, 0, sizeof *w);
    w->dim = dim;
    w->scale = 1;
    return pc_wstore_init(&w->s, dim, storage, weights, averaged);
}

void pc_wvec_free(pc_wvec *w)
{
    if (!w)
        return;
    pc_wstore_free(&w->s);
    free(w->support);
    w->support = NULL;
}

size_t pc_wvec_bytes(const pc_wvec *w)
{
    return pc_wstore_bytes(&w->s) + (size_t)w->support_cap * sizeof *w->support;
}

void pc_wvec_track_support(pc_wvec *w)
{
    w->tracked = true;
}

void pc_wvec_zero(pc_wvec *w)
{
    pc_wstore *s = &w->s;
    if (!s->groups && w->tracked && !w->support_lost) {
        for (uint32_t k = 0; k < w->nsupport; k++) {
            uint32_t i = w->support[k];
            if (s->v)
                s->v[i] = 0;
            else
                s->f[i] = 0;
            if (s->avg)
                s->avg[i] = 0;
            if (s->favg)
                s->favg[i] = 0;
        }
    } else {
        pc_wstore_clear(s);
    }
    w->nsupport = 0;
    w->support_lost = false;
    w->scale = 1;
    w->norm2 = 0;
}

/* Lists the entries of x's indices that are still 0 in v, before an add. */
static void note_support(pc_wvec *w, const pc_svec *x)
{
    if ((uint64_t)w->nsupport + x->n > w->dim) {
        w->support_lost = true; /* more entries than v has: a full clear is cheaper */
        return;
    }
    if (w->nsupport + x->n > w->support_cap) {
        uint64_t cap = w->support_cap ? 2 * (uint64_t)w->support_cap : 64;
        while (cap < (uint64_t)w->nsupport + x->n)
            cap *= 2;
        if (cap > w->dim)
            cap = w->dim;
        uint32_t *s = realloc(w->support, cap * sizeof *s);
        if (!s) {
            w->support_lost = true;
            return;
        }
        w->support = s;
        w->support_cap = (uint32_t)cap;
    }
    for (uint32_t k = 0; k < x->n; k++)
        if (pc_wstore_get(&w->s, x->idx[k]) == 0)
            w->support[w->nsupport++] = x->idx[k];
}

double pc_wvec_dot_sparse(const pc_wvec *w, const pc_svec *x)
{
    double s = 0;
    pc_wstore_prefetch(&w->s, x);
    for (uint32_t k = 0; k < x->n; k++)
        s += pc_wstore_lookup(&w->s, x->idx[k]) * x->val[k];
    return w->scale * s;
}

/* The sparse add in one pass over the table: each slot's old value enters
 * the dot product (in x's order, as pc_wvec_dot sums it) before the add. */
static double add_sparse(pc_wvec *w, double alpha, const pc_svec *x)
{
    pc_wstore *s = &w->s;
    double a = alpha / w->scale, t = w->tick * alpha, d = 0;
    for (uint32_t k = 0; k < x->n; k++) {
        uint32_t h = pc_wstore_slot(s, x->idx[k]);
        double *v = pc_wstore_val(s, h);
        d += *v * x->val[k];
        *v += a * x->val[k];
        if (s->savg)
            s->savg[h] += t * x->val[k];
    }
    return w->scale * d;
}

/* Whether w += alpha x keeps every entry it touches (and the average's)
 * within float's range, for an auto float32 store that is still a table:
 * its entries must fit when it turns dense (add_dense_float checks its own). */
static bool fits_float(const pc_wvec *w, double alpha, const pc_svec *x)
{
    const pc_wstore *s = &w->s;
    double a = alpha / w->scale, t = w->tick * alpha;
    for (uint32_t k = 0; k < x->n; k++) {
        uint32_t i = x->idx[k];
        if (!(fabs(pc_wstore_get(s, i) + a * x->val[k]) <= FLT_MAX) ||
            (s->with_avg && !(fabs(pc_wstore_get_avg(s, i) + t * x->val[k]) <= FLT_MAX)))
            return false;
    }
    return true;
}

/* The dense float32 add, in two passes over x as the float64 one takes (the
 * dot product, then the add).  The first reads each entry once for w.x, the
 * squared norm of the entries before, and whether each new entry (computed
 * in double) stays within float's range: if one would not (an example's
 * value of 1e39), nothing is written and it returns false.  The second
 * writes the rounded entries and sums their squares after: the norm moves by
 * the entries' actual change, as the rounding would otherwise drift ||w||^2
 * from the sum of their squares over many adds.  *dot: w.x before the add. */
static bool add_dense_float(pc_wvec *w, double alpha, const pc_svec *x, double *dot)
{
    pc_wstore *s = &w->s;
    float *f = s->f, *fa = s->favg;
    double a = alpha / w->scale, t = w->tick * alpha, d = 0, before = 0, after = 0;
    bool fits = true;
    for (uint32_t k = 0; k < x->n; k++) {
        double e = f[x->idx[k]];
        d += e * x->val[k];
        before += e * e;
        fits &= fabs(e + a * x->val[k]) <= FLT_MAX;
        if (fa)
            fits &= fabs(fa[x->idx[k]] + t * x->val[k]) <= FLT_MAX;
    }
    *dot = w->scale * d;
    if (!fits)
        return false;
    for (uint32_t k = 0; k < x->n; k++) {
        float e = (float)(f[x->idx[k]] + a * x->val[k]);
        f[x->idx[k]] = e;
        after += (double)e * e;
    }
    if (fa)
        for (uint32_t k = 0; k < x->n; k++)
            fa[x->idx[k]] = (float)(fa[x->idx[k]] + t * x->val[k]);
    w->norm2 += w->scale * w->scale * (after - before);
    if (w->norm2 < 0)
        w->norm2 = 0;
    return true;
}

/* alpha^2 ||x||^2, also where alpha^2 alone overflows (a step of 1e160 on
 * an example of norm 1e-160: cmcp and mcp after a long example). */
static double step_norm2(double alpha, const pc_svec *x)
{
    double s = alpha * alpha * x->norm2;
    return isfinite(s) ? s : alpha * (alpha * x->norm2);
}

/* step2: step_norm2(alpha, x), formed once per add by pc_wvec_add. */
static void add_norm(pc_wvec *w, double alpha, double dot, double step2)
{
    /* ||w + alpha x||^2 = ||w||^2 + 2 alpha w.x + alpha^2 ||x||^2; clamp the
     * rounding that could make it slightly negative. */
    w->norm2 += 2 * alpha * dot + step2;
    if (w->norm2 < 0)
        w->norm2 = 0;
}

/* Whether w + alpha x stays within the double's range, entries and norm:
 * ||w + alpha x||^2 <= 2 ||w||^2 + 2 alpha^2 ||x||^2 bounds both (an entry
 * is w's over a scale within 1e+-120), and alpha itself, over the scale and
 * times the averaging tick, must be finite too.  Not so for a pa step of
 * 1/||x||^2 on an example of norm 1e-160: its ||alpha x|| is 1e160, and its
 * square, the running norm, was infinite. */
static bool in_range(const pc_wvec *w, double alpha, double step2)
{
    double a = fabs(alpha), m = DBL_MAX / 4;
    return step2 <= m && w->norm2 <= m && a <= m && a <= m * fabs(w->scale) &&
           a * w->tick <= m;
}

double pc_wvec_add(pc_wvec *w, double alpha, const pc_svec *x)
{
    pc_wstore *s = &w->s;
    bool was_sparse = s->groups != NULL;
    double step2 = step_norm2(alpha, x);
    if (!in_range(w, alpha, step2)) {
        w->overflowed++;
        return pc_wvec_dot(w, x);
    }
    if (!pc_wstore_reserve(s, x->n)) {
        w->dropped++;
        return pc_wvec_dot(w, x);
    }
    if (s->groups && s->width == PC_WEIGHTS_FLOAT32 && !fits_float(w, alpha, x)) {
        w->overflowed++;
        return pc_wvec_dot(w, x);
    }
    if (s->groups) {
        double dot = add_sparse(w, alpha, x);
        add_norm(w, alpha, dot, step2);
        return dot;
    }
    if (was_sparse)
        w->support_lost = true; /* auto turned dense: the list never saw the table */
    if (w->tracked && !w->support_lost)
        note_support(w, x);
    double dot;
    if (s->f) {
        if (!add_dense_float(w, alpha, x, &dot))
            w->overflowed++;
        return dot;
    }
    dot = pc_wvec_dot(w, x);
    double a = alpha / w->scale, t = w->tick * alpha;
    for (uint32_t k = 0; k < x->n; k++)
        s->v[x->idx[k]] += a * x->val[k];
    if (s->avg)
        for (uint32_t k = 0; k < x->n; k++)
            s->avg[x->idx[k]] += t * x->val[k];
    add_norm(w, alpha, dot, step2);
    return dot;
}

void pc_wvec_scale(pc_wvec *w, double c)
{
    if (c == 0) {
        pc_wvec_zero(w);
        return;
    }
    w->scale *= c;
    w->norm2 *= c * c;
    double a = fabs(w->scale);
    bool narrow = w->s.width == PC_WEIGHTS_FLOAT32;
    if (a < (narrow ? SCALE_LOW_F32 : SCALE_LOW) || a > (narrow ? SCALE_HIGH_F32 : SCALE_HIGH)) {
        pc_wstore_scale(&w->s, w->scale); /* O(entries), rare */
        w->scale = 1;
    }
}

void pc_wvec_scale_add(pc_wvec *w, double c, double d, const pc_svec *x)
{
    pc_wvec_scale(w, c);
    pc_wvec_add(w, d, x);
}

void pc_wvec_ldexp(pc_wvec *w, int e)
{
    pc_wstore_ldexp(&w->s, e);
}

double pc_wvec_dot_avg(const pc_wvec *w, const pc_svec *x)
{
    if (!w->s.with_avg || w->tick <= 0)
        return pc_wvec_dot(w, x);
    pc_wstore_prefetch(&w->s, x);
    double s = 0, u = 0;
    for (uint32_t k = 0; k < x->n; k++) {
        s += pc_wstore_get(&w->s, x->idx[k]) * x->val[k];
        u += pc_wstore_get_avg(&w->s, x->idx[k]) * x->val[k];
    }
    return w->scale * s - u / w->tick;
}

double pc_wvec_get_avg(const pc_wvec *w, uint32_t i)
{
    if (!w->s.with_avg || w->tick <= 0)
        return pc_wvec_get(w, i);
    return w->scale * pc_wstore_get(&w->s, i) - pc_wstore_get_avg(&w->s, i) / w->tick;
}

void pc_wvec_encode(const pc_wvec *w, pc_writer *wr)
{
    pc_writer_f64(wr, w->scale);
    pc_writer_f64(wr, w->norm2);
    pc_writer_f64(wr, w->tick);
    pc_wstore_encode(&w->s, false, wr);
    pc_writer_u8(wr, w->s.with_avg);
    if (w->s.with_avg)
        pc_wstore_encode(&w->s, true, wr);
}

/* The bound every add keeps (in_range): ||w||^2, and so every weight's
 * square, within the double's range.  A vector past it is no state of ours
 * whatever the CRC says: its norm is infinite (`info` said "norm": null),
 * and the next score or step overflows.  Summed as the entries are read. */
static bool refuse(pc_reader *r, const char *why)
{
    r->why = why;
    r->failed = true;
    return false;
}

bool pc_wvec_decode(pc_wvec *w, pc_reader *r)
{
    w->scale = pc_reader_f64(r);
    w->norm2 = pc_reader_f64(r);
    w->tick = pc_reader_f64(r);
    double w2, a2 = 0;
    if (!pc_wstore_decode_sq(&w->s, false, r, w->scale, 0, &w2))
        return false;
    uint8_t has_avg = pc_reader_u8(r); /* 0 or 1, as written */
    /* The scale is 1 or where pc_wvec_scale leaves it, within its fold
     * range: a scale past it (a subnormal one, say) is no state of ours, and
     * the next add would divide by it into infinity. */
    double a = fabs(w->scale);
    bool narrow = w->s.width == PC_WEIGHTS_FLOAT32;
    if (r->failed || has_avg != w->s.with_avg || !(a >= (narrow ? SCALE_LOW_F32 : SCALE_LOW)) ||
        !(a <= (narrow ? SCALE_HIGH_F32 : SCALE_HIGH)))
        return r->failed = true, false;
    if (w->s.with_avg && !pc_wstore_decode_sq(&w->s, true, r, w->scale, w->tick, &a2))
        return false;
    if (!(w2 <= DBL_MAX))
        return refuse(r, "a weight past the bound learning keeps: the weights' squared norm "
                         "is not finite (past the double's range)");
    /* the averaged weights: a2 covers the entries with an average stored,
     * w2 bounds the others */
    if (!(a2 + w2 <= DBL_MAX))
        return refuse(r, "an averaged weight past the bound learning keeps: their squared norm "
                         "is not finite (past the double's range)");
    if (!(w->norm2 >= 0) || !(w->tick >= 0))
        return refuse(r, "a negative squared norm or example count");
    w->nsupport = 0;
    w->support_lost = true; /* where v is non-zero is not known: the next reset clears it all */
    return !r->failed;
}
