/* pumma.c - PUMMA, the p-norm Updated Maximum Margin Algorithm, for p = 2.
 *
 * K. Ishibashi, K. Hatano and M. Takeda, "Online learning of maximum p-norm
 * margin classifiers with bias", COLT 2008 (seed 004's benchmark [20], its
 * Table 2; seed 004 App. B.3, B.5).  docs/algorithms.md has the equations
 * below as (P1)-(P4).  PUMMA keeps one positive point x+ and one negative
 * point x- and a hyperplane (w, b) with its own bias:
 *
 *   (P1) after the first example of each class (the initialisation of seed
 *        004 Alg. 1, which B.5 says PUMMA shares): the max-margin separator
 *        of the two points:  w = 2 z / ||z||^2,  z = x+ - x-
 *   (P2) on y (w.x + b) <= 1 - delta, x replaces the point of its class and
 *           w' = argmin ||w||^2  s.t.  w.z >= 2,  w.w_t >= ||w_t||^2
 *        (the two bias constraints w.x+ + b >= 1, w.x- + b <= -1 have a
 *        common b exactly when w.z >= 2; the half-space w.w_t >= ||w_t||^2 is
 *        the Bregman projection constraint of the paper for p = 2, B.5)
 *   (P3) closed form (the KKT conditions: w = lambda z + mu w_t, lambda,
 *        mu >= 0): with W = ||w_t||^2, zw = z.w_t, zz = ||z||^2,
 *           w = 2 z / zz                          if 2 zw / zz >= W (mu = 0)
 *           w = lambda z + mu w_t,  lambda = W (2 - zw) / det,
 *               mu = (zz W - 2 zw) / det,  det = zz W - zw^2   otherwise
 *   (P4) b = -w.(x+ + x-) / 2 (both bias constraints active: w.x+ + b = 1,
 *        w.x- + b = -1)
 *
 * delta in [0, 1] (seed 004 B.3: 0.01, PUMMA then recovers 99 % of the
 * maximum margin; Ishibashi et al. give no guarantee for 0).  Choices: an
 * update whose lambda is not positive (x already at functional margin 1, only
 * when delta = 0) moves neither w nor b but keeps x; an update whose z is
 * parallel to w_t (det <= 0) takes w = c w_t, the least c >= 1 with
 * c zw >= 2, or is skipped when zw <= 0 (the two points are not separable
 * by any w with w.w_t >= W: outside the paper's assumption), and counted.
 *
 * Translation invariant (seed 004 B.5): w depends on differences of points
 * only.  To keep that to the last bit far from the origin, the points are
 * stored relative to an anchor a, the first example (anchor.h): the score is
 * w.(x - a) + b_a with b_a = -w.((x+ - a) + (x- - a))/2, and b = b_a - w.a.
 * The origin is a point like any other (PC_RULE_ORIGIN).
 *
 * Cost O(nnz(x) + nnz(a) + nnz(x+) + nnz(x-)) per update (amortised),
 * O(nnz(x) + nnz(a)) per score: w is a wvec (the scale trick makes mu w_t
 * O(1)); ||w||^2 is set to (P3)'s 2 lambda + mu W after each step and
 * recounted over the entries w holds once as many entries were added as it
 * holds (on noisy data the 2x2 solve amplifies a running norm's error without
 * bound: off by 3e7 after 50,000 noisy examples of tests/test_numerics.c);
 * w.(x+ - a), w.(x- - a) are recomputed after each update over the two
 * stored points.
 */
#include "lib/rule.h"
#include "lib/rules/anchor.h"
#include "lib/rules/idxset.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct pumma {
    pc_wvec w;
    pc_anchor an;    /* a; the stored points are x+ - a and x- - a */
    pc_svec xp, xn;  /* x+ - a, x- - a (indices increasing) */
    pc_svec z;       /* scratch: y z = (x - a) - (the other class's point - a) */
    double sp, sn;   /* w.(x+ - a), w.(x- - a), at the last update */
    double delta;
    uint32_t dim;
    int phase, y1;   /* as omm.c: 0 nothing seen, 1 one class, 2 running */
    uint64_t skipped;
    /* ||w||^2 recounted over the entries w holds (sup), once as many entries
     * were added since the last recount as sup has: on noisy data the 2x2
     * solve (P3) amplifies the error of a running norm without bound */
    pc_idxset sup;
    bool sup_lost;   /* the set could not grow: the running norm only */
    uint64_t work;
    char note[128];
} pumma;

enum { P_DELTA };
static const pc_param_spec params[] = {
    [P_DELTA] = {"delta", PC_PARAM_REAL, 0.01, 0, 1, false, false, NULL, 0,
                 "PUMMA (Ishibashi et al. 2008) updates when y(w.x+b) <= 1 - delta and recovers "
                 "(1 - delta) of the maximum margin; seed 004 App. B.3 uses 0.01"},
};

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    pumma *o = state;
    (void)err;
    o->delta = pc_param1(ctx, P_DELTA);
    o->dim = ctx->dim;
    pc_svec_init(&o->xp);
    pc_svec_init(&o->xn);
    pc_svec_init(&o->z);
    return pc_wvec_init(&o->w, ctx, false);
}

static void destroy(void *state)
{
    pumma *o = state;
    pc_wvec_free(&o->w);
    pc_anchor_free(&o->an);
    pc_svec_free(&o->xp);
    pc_svec_free(&o->xn);
    pc_svec_free(&o->z);
    pc_idxset_free(&o->sup);
}

static double bias_a(const pumma *o)
{
    return -(o->sp + o->sn) / 2; /* (P4), relative to a */
}

static double score(const void *state, const pc_svec *x)
{
    const pumma *o = state;
    if (o->phase < 2) /* seed 004 Alg. 1 lines 2 and 6: predict +1, then y1 */
        return o->phase ? o->y1 : 0;
    double s, dd;
    pc_anchor_dots(&o->an, &o->w, NULL, x, &s, NULL, &dd);
    return s + bias_a(o);
}

/* dst = src (room for it). */
static bool copy(pc_svec *dst, const pc_svec *src)
{
    while (dst->cap < src->n)
        if (pc_svec_grow(dst) != PC_OK)
            return false;
    if (src->n) {
        memcpy(dst->idx, src->idx, src->n * sizeof *src->idx);
        memcpy(dst->val, src->val, src->n * sizeof *src->val);
    }
    dst->n = src->n;
    dst->norm2 = src->norm2;
    return true;
}

static void set_note(pumma *o)
{
    snprintf(o->note, sizeof o->note,
             "%llu updates skipped (out of memory, or the two points not separable)",
             (unsigned long long)o->skipped);
}

static bool skip(pumma *o)
{
    o->skipped++;
    set_note(o);
    return false;
}

/* Before w receives dz: its new indices join sup. */
static void note_sup(pumma *o, const pc_svec *dz)
{
    o->work += dz->n;
    for (uint32_t k = 0; k < dz->n && !o->sup_lost; k++)
        if (pc_wvec_get(&o->w, dz->idx[k]) == 0)
            o->sup_lost = !pc_idxset_add(&o->sup, dz->idx[k]);
}

/* ||w||^2 summed afresh over sup, when the amortisation allows. */
static void recount(pumma *o)
{
    if (o->sup_lost || o->work < o->sup.count)
        return;
    double s = 0;
    for (uint32_t k = 0; k < o->sup.cap; k++)
        if (o->sup.slot[k] != PC_IDXSET_EMPTY) {
            double v = pc_wvec_get(&o->w, o->sup.slot[k]);
            s += v * v;
        }
    o->w.norm2 = s;
    o->work = 0;
}

/* w.(x+ - a) and w.(x- - a) afresh, after w changed. */
static void refresh(pumma *o)
{
    double unused;
    pc_anchor_dots_d(&o->xp, &o->w, NULL, &o->sp, &unused);
    pc_anchor_dots_d(&o->xn, &o->w, NULL, &o->sn, &unused);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    pumma *o = state;
    if (o->phase == 1 && y == o->y1)
        return false; /* predicted y1 correctly: nothing is kept (Alg. 1 line 7) */
    if (o->phase == 2 && !(y * s <= 1 - o->delta))
        return false; /* (P2): functional margin above 1 - delta */
    if (!pc_anchor_reserve(&o->an, x))
        return skip(o);
    if (o->phase == 0) { /* the first point is the anchor: stored as 0 */
        pc_anchor_set(&o->an, x);
        o->xp.n = o->xn.n = 0;
        o->xp.norm2 = o->xn.norm2 = 0;
        o->y1 = y;
        o->phase = 1;
        return true;
    }
    const pc_svec *d = pc_anchor_diff(&o->an, x);
    pc_svec *mine = y > 0 ? &o->xp : &o->xn, *theirs = y > 0 ? &o->xn : &o->xp;
    /* x replaces the point of its class; dz = d - theirs = y z */
    if (!pc_anchor_sub(d, theirs, &o->z) || !copy(mine, d))
        return skip(o);
    const pc_svec *dz = &o->z;
    double zw, zz = dz->norm2, unused;
    pc_anchor_dots_d(dz, &o->w, NULL, &zw, &unused);
    zw *= y; /* w_t.z */
    if (!(zz > 0)) { /* x+ = x-: not separable; x is kept, w stays */
        refresh(o);
        return skip(o);
    }
    double W = o->w.norm2;
    if (o->phase == 1 || W == 0 || 2 * zw / zz >= W) {
        /* (P1), and (P3) with mu = 0: w = 2 z / ||z||^2, as z then times
         * 2/||z||^2 in two factors: its square may pass the double range on
         * examples near 1e-154, where ||w||^2 = 4/||z||^2 does not */
        double c = 2 / zz, c1 = sqrt(c);
        if (!isfinite(c) || !isfinite(4 / zz)) { /* x is kept, w stays */
            refresh(o);
            return skip(o);
        }
        pc_wvec_scale(&o->w, 0);
        pc_idxset_clear(&o->sup);
        o->work = 0, o->sup_lost = false;
        note_sup(o, dz);
        pc_wvec_add(&o->w, y, dz);
        pc_wvec_scale(&o->w, c1);
        pc_wvec_scale(&o->w, c / c1);
        o->w.norm2 = 4 / zz; /* ||w||^2 = w.(c z) = 2c: exact where the running value drifts */
    } else {
        double det = zz * W - zw * zw;
        if (det > 1e-12 * zz * W) { /* (P3), both constraints active */
            double lambda = W * (2 - zw) / det, mu = (zz * W - 2 * zw) / det;
            if (!isfinite(lambda) || !isfinite(mu) || !isfinite(lambda * lambda * zz)) {
                refresh(o);
                return skip(o);
            }
            if (lambda > 0) {
                note_sup(o, dz);
                pc_wvec_scale_add(&o->w, mu, y * lambda, dz);
                /* ||w||^2 = w.(lambda z + mu w_t) = 2 lambda + mu W: a sum of
                 * positive terms, where the wvec's running value (mu^2 W +
                 * 2 mu lambda z.w_t + lambda^2 ||z||^2) cancels on noisy data */
                o->w.norm2 = 2 * lambda + mu * W;
            }
        } else if (zw > 0) { /* z parallel to w_t: w = c w_t */
            pc_wvec_scale(&o->w, fmax(1, 2 / zw));
        } else {
            refresh(o);
            return skip(o);
        }
    }
    o->phase = 2;
    recount(o);
    refresh(o);
    return true;
}

static double weight(const void *state, uint32_t i)
{
    const pumma *o = state;
    return pc_wvec_get(&o->w, i);
}

static double bias(const void *state)
{
    const pumma *o = state;
    if (o->phase < 2)
        return o->phase ? o->y1 : 0;
    return bias_a(o) - pc_anchor_dot_a(&o->an, &o->w); /* b = b_a - w.a */
}

static void describe(const void *state, pc_learner_info *info)
{
    const pumma *o = state;
    info->norm = sqrt(o->w.norm2);
    /* the functional margin 1 of the two points, geometrically: an upper
     * bound on the maximum margin (the constraints relax the full problem) */
    info->margin = o->phase == 2 && o->w.norm2 > 0 ? 1 / sqrt(o->w.norm2) : NAN;
    info->note = o->skipped ? o->note
                 : o->phase < 2 ? "initialisation (seed 004 Alg. 1, App. B.5): predicting the "
                                  "first label until both classes are seen"
                                : NULL;
}

static void encode_svec(const pc_svec *x, pc_writer *w)
{
    pc_writer_u32(w, x->n);
    for (uint32_t k = 0; k < x->n; k++) {
        pc_writer_u32(w, x->idx[k]);
        pc_writer_f64(w, x->val[k]);
    }
}

/* A stored point: indices increasing and < dim, values finite. */
static bool decode_svec(pc_svec *x, pc_reader *r, uint32_t dim)
{
    uint32_t n = pc_reader_u32(r);
    if (r->failed || n > dim || !pc_reader_need(r, n, 12))
        return false;
    while (x->cap < n)
        if (pc_svec_grow(x) != PC_OK) {
            r->nomem = true;
            return false;
        }
    double n2 = 0;
    for (uint32_t k = 0; k < n; k++) {
        x->idx[k] = pc_reader_u32(r);
        x->val[k] = pc_reader_f64(r);
        if (r->failed || x->idx[k] >= dim || (k && x->idx[k] <= x->idx[k - 1]) ||
            !isfinite(x->val[k]))
            return false;
        n2 += x->val[k] * x->val[k];
    }
    x->n = n;
    x->norm2 = n2;
    return true;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const pumma *o = state;
    pc_writer_u8(w, (uint8_t)(o->phase | (o->y1 > 0) << 2));
    pc_writer_u64(w, o->skipped);
    pc_anchor_encode(&o->an, w);
    encode_svec(&o->xp, w);
    encode_svec(&o->xn, w);
    pc_writer_u8(w, o->sup_lost);
    pc_writer_u64(w, o->work);
    pc_idxset_encode(&o->sup, w);
    pc_wvec_encode(&o->w, w);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    pumma *o = state;
    uint8_t f = pc_reader_u8(r);
    o->phase = f & 3, o->y1 = f & 4 ? 1 : -1;
    o->skipped = pc_reader_u64(r);
    set_note(o);
    if (r->failed || f > 7 || o->phase > 2 || !pc_anchor_decode(&o->an, r, o->dim) ||
        !decode_svec(&o->xp, r, o->dim) || !decode_svec(&o->xn, r, o->dim))
        return r->nomem ? PC_ENOMEM : PC_EFORMAT;
    uint8_t lost = pc_reader_u8(r);
    o->work = pc_reader_u64(r);
    if (r->failed || lost > 1 || !pc_idxset_decode(&o->sup, r, o->dim))
        return r->nomem ? PC_ENOMEM : PC_EFORMAT;
    o->sup_lost = lost;
    if (!pc_wvec_decode(&o->w, r) || !isfinite(o->w.norm2))
        return PC_EFORMAT;
    refresh(o); /* the same bits as after the update that wrote them */
    return isfinite(o->sp) && isfinite(o->sn) ? PC_OK : PC_EFORMAT;
}

static size_t bytes(const void *state)
{
    const pumma *o = state;
    return pc_wvec_bytes(&o->w) + pc_anchor_bytes(&o->an) +
           ((size_t)o->xp.cap + o->xn.cap + o->z.cap) * 12 + (size_t)o->sup.cap * 4;
}

const pc_rule pc_rule_pumma = {
    .name = "pumma",
    .summary = "PUMMA, p-norm Updated Maximum Margin with bias, p = 2 (Ishibashi et al. 2008; "
               "seed 004 benchmark)",
    .state_size = sizeof(pumma),
    PC_ANCHORED_RULE_OPS,
};
