/* omm_naive.c - n-OMM, the naive Online Maximum Margin.
 *
 * Seed 004, Alg. 1 (naive implementation): every example with
 * a = y(w.x + b) < rho gamma_t is kept (line 20), and the classifier is the
 * maximum-margin separator of all kept points (eq. 2), from the nearest points
 * v+, v- of the two convex hulls (eq. 3, Lemma 3.1):
 *     W = v+ - v-,  gamma = ||W||/2,  w = W/||W||,  b = -w.(v+ + v-)/2.
 * Initialisation as Alg. 1 lines 1-13 (see omm.c).  Translation invariant
 * (Remark 3.4): the solver only moves weight between points of one class.
 * To the last bit, too: the points are kept relative to an anchor a, the
 * first one since the last (re)start (anchor.h), as x - a formed coordinate
 * by coordinate; W is the same either way (each class's weights sum to 1),
 * W.v+ and W.v- become W.(v+ - a), W.(v- - a), and the score
 * W.(x - a) - (W.(v+ - a) + W.(v- - a))/2.  The origin (the zero example) is
 * a point like any other (PC_RULE_ORIGIN).
 *
 * Solver: eq. 3 is the QP  min 1/2 ||sum_i alpha_i y_i x_i||^2  over convex
 * weights alpha of each class, solved by a primal active-set method (Nocedal
 * and Wright, ch. 16.5) warm-started from the previous weights: the point that
 * most violates optimality (W.x_i < W.v+ on P, > W.v- on N) joins the free set
 * F with an MDM pairwise step (Mitchell, Dem'yanov and Malozemov 1974: weight
 * moves to it from its class's worst active point, by the exact line
 * minimiser, so every round makes progress); then the equality-constrained
 * problem on F is solved by conjugate gradients projected on {both class sums
 * fixed}, a step that would make a weight negative stops at that bound and
 * drops the point from F.  It stops when the duality gap
 *     (W.v+ - min_P W.x) + (max_N W.x - W.v-)  <=  TOL ||W||^2,
 * TOL = 1e-12 (this bounds the relative error of ||W|| and gamma by 1e-12),
 * or at the rounding floor 64 eps R (R + ||W||), R the largest kept norm, or
 * after MAX_OUTER rounds (noted).  Cost per update: O(rounds * (CG steps * nnz
 * of F + nnz of all kept points)), growing with the kept points (docs/algorithms.md);
 * the kept points' features are renumbered compactly so no pass touches dim.
 * score is O(nnz).
 *
 * Kept points are copied into arrays that grow geometrically; at max_points,
 * or when growth fails, the update is skipped and describe() says so.  If the
 * kept points stop being separable (||W|| <= 1e-9 times their spread: the
 * hulls meet, outside the paper's assumption; in exact arithmetic the rule
 * would then be stuck) it restarts from the example at hand, as omm.c does:
 * the kept points are dropped and Alg. 1 begins again with x alone.
 */
#include "lib/rule.h"
#include "lib/rules/anchor.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TOL 1e-12
#define SEP_TOL 1e-9
#define MAX_OUTER 1000

typedef struct ommn {
    pc_anchor an;           /* a: the kept points are stored as x - a */
    uint32_t dim, max_points;
    double rho;
    int phase, y1;          /* as in omm.c */
    uint32_t n, cap;        /* kept points, array capacity */
    uint64_t len, pool;     /* used and allocated entries of idx/val */
    uint64_t *off;          /* point i is idx/val[off[i] .. off[i] + nnz[i]) */
    uint32_t *nnz, *idx, *fl; /* idx: compact feature numbers; fl: the free set F */
    uint32_t *map, *feat;   /* feature -> 1 + compact number (0: unseen), and back */
    uint32_t nf, fcap;      /* compact features, capacity of feat, W and U */
    signed char *y;
    unsigned char *fr;      /* fr[i]: i is in F */
    double *val, *alpha, *g; /* alpha: convex weights in each class; g_i = W.x_i */
    double *r, *p, *q, *d;  /* CG vectors over F */
    double *W, *U;          /* W = v+ - v- on compact features; U scratch, zero */
    double wp, wn;          /* W.(v+ - a), W.(v- - a): ||W||^2 = wp - wn, offset (wp + wn)/2 */
    double w2;              /* ||W||^2 summed over W itself: wp - wn cancels */
    double spread, rmax;    /* max ||x_i - x_0||, max ||x_i - a|| */
    uint64_t skipped, capped, restarts;
    char note[200];
} ommn;

enum { P_RHO, P_MAX_POINTS };
static const pc_param_spec params[] = {
    [P_RHO] = {"rho", PC_PARAM_REAL, 1, 0, 1, false, false, NULL, 0,
               "aggressiveness (seed 004 Alg. 1, Remark 3.3): update when y(w.x+b) < rho*gamma"},
    [P_MAX_POINTS] = {"max_points", PC_PARAM_INT, 10000, 2, 1e7, false, false, NULL, 0,
                      "points kept by n-OMM (seed 004 Alg. 1, naive); later updates are skipped"},
};

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    ommn *o = state;
    (void)err;
    o->dim = ctx->dim;
    o->rho = pc_param1(ctx, P_RHO);
    o->max_points = (uint32_t)pc_param1(ctx, P_MAX_POINTS);
    /* The kept points use a compact numbering of their features, so the
     * solver's passes run over arrays of at most the kept nnz, not over dim. */
    o->map = calloc(ctx->dim ? ctx->dim : 1, sizeof *o->map);
    return o->map ? PC_OK : PC_ENOMEM;
}

static void destroy(void *state)
{
    ommn *o = state;
    void *all[] = {o->off, o->nnz, o->idx, o->fl, o->y, o->fr, o->val, o->alpha,
                   o->g, o->r, o->p, o->q, o->d, o->W, o->U, o->map, o->feat};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    pc_anchor_free(&o->an);
}

static bool grow1(void *pp, uint64_t cap, size_t size)
{
    void **p = pp, *q = cap <= SIZE_MAX / size ? realloc(*p, (size_t)cap * size) : NULL;
    return q ? (*p = q, true) : false;
}

/* Room for one more point of k entries; false (state intact) on failure. */
static bool grow(ommn *o, uint32_t k)
{
    if (o->n == o->cap) {
        uint64_t c = o->cap ? (uint64_t)o->cap * 2 : 16;
        if (!grow1(&o->off, c, 8) || !grow1(&o->nnz, c, 4) || !grow1(&o->fl, c, 4) ||
            !grow1(&o->y, c, 1) || !grow1(&o->fr, c, 1) || !grow1(&o->alpha, c, 8) ||
            !grow1(&o->g, c, 8) || !grow1(&o->r, c, 8) || !grow1(&o->p, c, 8) ||
            !grow1(&o->q, c, 8) || !grow1(&o->d, c, 8))
            return false;
        o->cap = (uint32_t)c;
    }
    uint64_t c = o->pool ? o->pool : 256;
    while (c < o->len + k)
        c *= 2;
    if (c > o->pool && (!grow1(&o->idx, c, 4) || !grow1(&o->val, c, 8)))
        return false;
    o->pool = c;
    for (c = o->fcap ? o->fcap : 256; c < (uint64_t)o->nf + k; c *= 2)
        ;
    if (c > o->fcap && (!grow1(&o->feat, c, 4) || !grow1(&o->W, c, 8) || !grow1(&o->U, c, 8)))
        return false;
    o->fcap = (uint32_t)c;
    return true;
}

/* ||x_b - x_a||^2, merging sorted indices so each coordinate's difference is
 * formed first (exact under translation). */
static double dist2_pts(const ommn *o, uint32_t a, uint32_t b)
{
    uint64_t i = o->off[a], ie = i + o->nnz[a], j = o->off[b], je = j + o->nnz[b];
    double s = 0, t;
    while (i < ie || j < je) {
        if (j >= je || (i < ie && o->idx[i] < o->idx[j]))
            t = o->val[i++];
        else if (i >= ie || o->idx[j] < o->idx[i])
            t = o->val[j++];
        else
            t = o->val[j++] - o->val[i++];
        s += t * t;
    }
    return s;
}

/* Appends point n with weight alpha: its k features (< dim, distinct) get
 * compact numbers (new ones in the order given) and are stored sorted by them.
 * False for a repeated feature (only from corrupted bytes). */
static bool add_point(ommn *o, const uint32_t *idx, const double *val, uint32_t k, int y,
                      double alpha)
{
    for (uint32_t e = 0; e < k; e++) {
        uint32_t *c = &o->map[idx[e]];
        if (!*c) {
            o->feat[o->nf] = idx[e], o->W[o->nf] = o->U[o->nf] = 0;
            *c = ++o->nf;
        }
        uint64_t at = o->len + e; /* insertion sort: k is small */
        for (; at > o->len && o->idx[at - 1] > *c - 1; at--)
            o->idx[at] = o->idx[at - 1], o->val[at] = o->val[at - 1];
        o->idx[at] = *c - 1, o->val[at] = val[e];
    }
    for (uint64_t e = o->len + 1; e < o->len + k; e++)
        if (o->idx[e] == o->idx[e - 1])
            return false;
    uint32_t i = o->n++;
    o->off[i] = o->len, o->nnz[i] = k, o->y[i] = (signed char)y;
    o->alpha[i] = alpha, o->fr[i] = alpha > 0, o->g[i] = 0;
    o->len += k;
    double r2 = 0;
    for (uint64_t e = o->off[i]; e < o->len; e++)
        r2 += o->val[e] * o->val[e];
    o->rmax = fmax(o->rmax, sqrt(r2));
    o->spread = fmax(o->spread, sqrt(dist2_pts(o, 0, i)));
    return true;
}

static double dot_pt(const ommn *o, const double *v, uint32_t i)
{
    double s = 0;
    for (uint64_t k = o->off[i]; k < o->off[i] + o->nnz[i]; k++)
        s += v[o->idx[k]] * o->val[k];
    return s;
}

static void axpy_pt(const ommn *o, double *v, double c, uint32_t i)
{
    for (uint64_t k = o->off[i]; k < o->off[i] + o->nnz[i]; k++)
        v[o->idx[k]] += c * o->val[k];
}

/* W = sum_i alpha_i y_i x_i from scratch, then g, W.v+ and W.v-.
 * Deterministic, so a decoded state rebuilds bit-identically. */
static void rebuild(ommn *o)
{
    for (uint32_t k = 0; k < o->nf; k++)
        o->W[k] = 0;
    for (uint32_t i = 0; i < o->n; i++)
        if (o->alpha[i] > 0)
            axpy_pt(o, o->W, o->alpha[i] * o->y[i], i);
    o->wp = o->wn = o->w2 = 0;
    for (uint32_t k = 0; k < o->nf; k++)
        o->w2 += o->W[k] * o->W[k];
    for (uint32_t i = 0; i < o->n; i++) {
        o->g[i] = dot_pt(o, o->W, i);
        *(o->y[i] > 0 ? &o->wp : &o->wn) += o->alpha[i] * o->g[i];
    }
}

/* ||W||^2 = W.(v+ - v-), but summed over W's coordinates: wp - wn loses the
 * digits that ||v+||^2 / ||W||^2 has when the hulls are far from the origin. */
static double dist2(const ommn *o)
{
    return isfinite(o->w2) ? o->w2 : 0;
}

/* Projects v (over F) on {both class sums 0}: the moves that keep alpha convex. */
static void project(const ommn *o, uint32_t m, double *v)
{
    double s[2] = {0, 0}, c[2] = {0, 0};
    for (uint32_t j = 0; j < m; j++)
        s[o->y[o->fl[j]] > 0] += v[j], c[o->y[o->fl[j]] > 0] += 1;
    for (uint32_t j = 0; j < m; j++)
        v[j] -= s[o->y[o->fl[j]] > 0] / c[o->y[o->fl[j]] > 0];
}

/* out = Q v over F, Q_ij = y_i y_j x_i.x_j, through U = sum_j v_j y_j x_j. */
static void qprod(ommn *o, uint32_t m, const double *v, double *out)
{
    for (uint32_t j = 0; j < m; j++)
        axpy_pt(o, o->U, v[j] * o->y[o->fl[j]], o->fl[j]);
    for (uint32_t j = 0; j < m; j++)
        out[j] = o->y[o->fl[j]] * dot_pt(o, o->U, o->fl[j]);
    for (uint32_t j = 0; j < m; j++)
        for (uint64_t k = o->off[o->fl[j]]; k < o->off[o->fl[j]] + o->nnz[o->fl[j]]; k++)
            o->U[o->idx[k]] = 0;
}

static double dotm(uint32_t m, const double *a, const double *b)
{
    double s = 0;
    for (uint32_t j = 0; j < m; j++)
        s += a[j] * b[j];
    return s;
}

/* d = the move over F minimising f(alpha + d) with both sums kept: projected
 * conjugate gradients from d = 0 (the gradient of f is Q alpha = y_i g_i),
 * until the projected gradient's norm is below tol. */
static void cg(ommn *o, uint32_t m, double tol)
{
    double *r = o->r, *p = o->p, *q = o->q, *d = o->d;
    for (uint32_t j = 0; j < m; j++)
        r[j] = o->y[o->fl[j]] * o->g[o->fl[j]], d[j] = 0;
    project(o, m, r);
    for (uint32_t j = 0; j < m; j++)
        p[j] = -r[j];
    double rr = dotm(m, r, r), stop = tol * tol;
    for (uint32_t it = 0; it < 2 * m + 50 && rr > stop; it++) {
        qprod(o, m, p, q);
        double pq = dotm(m, p, q), al = rr / pq;
        if (!(pq > 0) || !isfinite(al))
            break; /* no curvature left: f is flat along p */
        project(o, m, q);
        for (uint32_t j = 0; j < m; j++)
            d[j] += al * p[j], r[j] += al * q[j];
        double rn = dotm(m, r, r), be = rn / rr;
        rr = rn;
        for (uint32_t j = 0; j < m; j++)
            p[j] = -r[j] + be * p[j];
    }
}

/* Point b, which violates optimality, joins F and receives weight from the
 * active point of its class with the worst g, by the exact line minimiser
 * (an MDM / pairwise step: a descent even where the CG step below is
 * ill-conditioned, so the rounds cannot cycle without progress). */
static void mdm_step(ommn *o, uint32_t b)
{
    uint32_t a = b;
    for (uint32_t i = 0; i < o->n; i++)
        if (o->y[i] == o->y[b] && o->alpha[i] > 0 && (a == b || o->y[b] * (o->g[i] - o->g[a]) > 0))
            a = i;
    double delta = o->y[b] * (o->g[a] - o->g[b]), dd = dist2_pts(o, a, b);
    double t = dd > 0 && delta > 0 ? fmin(delta / dd, o->alpha[a]) : 0;
    o->alpha[a] = t == o->alpha[a] ? 0 : o->alpha[a] - t;
    /* At most 1: a class's weights sum to 1 only within the rounding (and
     * the 1e-6 decode allows), so moving all of a's weight onto b could
     * leave b above 1, a weight decode refuses (the model would save a
     * snapshot it cannot load).  The cut brings the class's sum nearer 1. */
    o->alpha[b] = fmin(o->alpha[b] + t, 1);
    o->fr[a] = o->alpha[a] > 0;
    o->fr[b] = 1;
}

/* The full step alpha + d with negative weights cut to 0 and each class
 * rescaled, kept (true) if it lowers ||W||^2 below w2: it lets many points
 * leave F at once.  Otherwise alpha is restored (W and g are then stale). */
static bool projected_step(ommn *o, uint32_t m, double w2)
{
    double sum[2] = {0, 0};
    int cut = 0;
    for (uint32_t j = 0; j < m; j++) {
        uint32_t i = o->fl[j];
        double a = o->alpha[i] + o->d[j];
        o->q[j] = o->alpha[i];
        o->alpha[i] = a > 0 ? a : 0;
        cut += !(a > 0);
        sum[o->y[i] > 0] += o->alpha[i];
    }
    if (cut && sum[0] > 0 && sum[1] > 0) {
        for (uint32_t j = 0; j < m; j++)
            o->alpha[o->fl[j]] /= sum[o->y[o->fl[j]] > 0];
        rebuild(o);
        if (dist2(o) < w2) {
            for (uint32_t j = 0; j < m; j++)
                o->fr[o->fl[j]] = o->alpha[o->fl[j]] > 0;
            return true;
        }
    }
    for (uint32_t j = 0; j < m; j++)
        o->alpha[o->fl[j]] = o->q[j];
    return false;
}

/* The textbook step: alpha + tau d up to the first bound (ratio test), whose
 * point leaves F.  True when no bound stopped it (tau = 1). */
static bool bound_step(ommn *o, uint32_t m)
{
    uint32_t jb = UINT32_MAX;
    double tau = 1, sum[2] = {0, 0};
    for (uint32_t j = 0; j < m; j++)
        if (o->d[j] < 0 && o->alpha[o->fl[j]] + tau * o->d[j] < 0)
            tau = -o->alpha[o->fl[j]] / o->d[j], jb = j;
    for (uint32_t j = 0; j < m; j++) {
        uint32_t i = o->fl[j];
        double a = j == jb ? 0 : o->alpha[i] + tau * o->d[j];
        o->alpha[i] = a > 0 ? a : 0;
        o->fr[i] = j != jb;
        sum[o->y[i] > 0] += o->alpha[i];
    }
    for (uint32_t j = 0; j < m; j++) /* keep each class's weights summing to 1 */
        if (sum[o->y[o->fl[j]] > 0] > 0)
            o->alpha[o->fl[j]] /= sum[o->y[o->fl[j]] > 0];
    return jb == UINT32_MAX;
}

/* Active-set rounds until the duality gap is within tolerance; false when the
 * kept points are not separable (the hulls meet: seed 004 eq. 2 has no solution). */
static bool solve(ommn *o)
{
    bool full = true, fresh = false; /* F's problem solved; W and g are current */
    for (int round = 0;; round++) {
        if (!fresh)
            rebuild(o);
        fresh = false;
        uint32_t pb = 0, nb = 0;
        double pmin = INFINITY, nmax = -INFINITY;
        for (uint32_t i = 0; i < o->n; i++) {
            if (o->y[i] > 0 && o->g[i] < pmin)
                pmin = o->g[i], pb = i;
            if (o->y[i] < 0 && o->g[i] > nmax)
                nmax = o->g[i], nb = i;
        }
        double w2 = dist2(o), gap = (o->wp - pmin) + (nmax - o->wn);
        double tol = TOL * w2 + 64 * DBL_EPSILON * o->rmax * (o->rmax + sqrt(w2));
        if (sqrt(w2) <= SEP_TOL * o->spread)
            return false;
        if (!(gap > tol))
            return true;
        if (round == MAX_OUTER) {
            o->capped++;
            return true;
        }
        if (full) { /* KKT: W.x_i >= W.v+ on P, <= W.v- on N; the worst point joins F */
            mdm_step(o, o->wp - pmin >= nmax - o->wn ? pb : nb);
            full = false;
            continue;
        }
        uint32_t m = 0;
        for (uint32_t i = 0; i < o->n; i++)
            if (o->fr[i])
                o->fl[m++] = i;
        cg(o, m, tol / 4); /* each class's share of the gap is < 2 max |r| */
        fresh = projected_step(o, m, w2);
        if (!fresh)
            full = bound_step(o, m);
    }
}

static void set_note(ommn *o)
{
    char *p = o->note, *end = o->note + sizeof o->note; /* every part fits: < 200 bytes */
    p += snprintf(p, (size_t)(end - p), "%u points kept", o->n);
    if (o->skipped)
        p += snprintf(p, (size_t)(end - p), "; %llu updates skipped (%s)",
                      (unsigned long long)o->skipped,
                      o->n >= o->max_points ? "max_points cap hit" : "out of memory");
    if (o->capped)
        p += snprintf(p, (size_t)(end - p), "; %llu solves stopped after %d rounds",
                      (unsigned long long)o->capped, MAX_OUTER);
    if (o->restarts)
        snprintf(p, (size_t)(end - p), "; %llu restarts (kept points not separable)",
                 (unsigned long long)o->restarts);
}

static double normalise(double raw, double d2)
{
    double s = d2 > 0 ? raw / sqrt(d2) : raw;
    return isfinite(s) ? s : copysign(DBL_MAX, raw);
}

/* W_i; W is 0 off the kept points' features */
static double w_at(const void *arg, uint32_t i)
{
    const ommn *o = arg;
    return o->map[i] ? o->W[o->map[i] - 1] : 0;
}

static double raw_score(const ommn *o, const pc_svec *x)
{
    double s = pc_anchor_dot_fn(&o->an, x, w_at, o); /* W.(x - a) */
    return s - (o->wp + o->wn) / 2; /* seed 004 Lemma 3.1, unnormalised */
}

static double score(const void *state, const pc_svec *x)
{
    const ommn *o = state;
    if (o->phase < 2)
        return o->phase ? o->y1 : 0;
    return normalise(raw_score(o, x), dist2(o));
}

/* Alg. 1 line 1 again, from x alone, the new anchor (so it is kept as 0):
 * the kept points are dropped (their arrays stay allocated for the points to
 * come). */
static void restart(ommn *o, const pc_svec *x, int y)
{
    for (uint32_t k = 0; k < o->nf; k++)
        o->map[o->feat[k]] = 0;
    o->n = o->nf = 0;
    o->len = 0;
    o->spread = o->rmax = 0;
    pc_anchor_set(&o->an, x); /* room was reserved for x */
    add_point(o, NULL, NULL, 0, y, 1); /* fits: room was made for it */
    o->phase = 1, o->y1 = y;
    o->restarts++;
    rebuild(o);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    ommn *o = state;
    (void)s;
    if (o->phase == 1 && y == o->y1)
        return false;
    if (o->phase == 2 && !(y * raw_score(o, x) < o->rho * dist2(o) / 2))
        return false; /* seed 004 Alg. 1 line 18: no update */
    /* room for x as the anchor (phase 0, restarts), x - a, and the point */
    if (o->n >= o->max_points || !pc_anchor_reserve(&o->an, x)) {
        o->skipped++;
        set_note(o);
        return false;
    }
    if (o->phase == 0) /* x_1 is the anchor */
        pc_anchor_set(&o->an, x);
    const pc_svec *d = pc_anchor_diff(&o->an, x);
    if (!grow(o, d->n)) {
        o->skipped++;
        set_note(o);
        return false;
    }
    add_point(o, d->idx, d->val, d->n, y, o->phase < 2 ? 1 : 0);
    bool separable;
    if (o->phase < 2) { /* seed 004 Alg. 1 lines 1-13: singletons are the certificates */
        o->y1 = o->phase ? o->y1 : y;
        o->phase++;
        rebuild(o);
        separable = o->phase < 2 || dist2(o) > 0;
    } else {
        o->fr[o->n - 1] = 1;
        separable = solve(o);
    }
    if (!separable)
        restart(o, x, y);
    set_note(o);
    return true;
}

static double weight(const void *state, uint32_t i)
{
    const ommn *o = state;
    return o->phase < 2 || !o->map[i] ? 0 : normalise(o->W[o->map[i] - 1], dist2(o));
}

static double bias(const void *state)
{
    const ommn *o = state;
    if (o->phase < 2)
        return o->phase ? o->y1 : 0;
    /* b = -W.(v+ + v-)/(2 ||W||) = -(W.a + (W.(v+ - a) + W.(v- - a))/2)/||W|| */
    double wa = 0;
    for (uint32_t k = 0; k < o->an.a.n; k++)
        if (o->map[o->an.a.idx[k]])
            wa += o->W[o->map[o->an.a.idx[k]] - 1] * o->an.a.val[k];
    return normalise(-(wa + (o->wp + o->wn) / 2), dist2(o));
}

static void describe(const void *state, pc_learner_info *info)
{
    const ommn *o = state;
    info->norm = o->phase == 2 && dist2(o) > 0 ? 1 : 0;
    info->margin = o->phase == 2 ? sqrt(dist2(o)) / 2 : NAN;
    bool initial = o->phase < 2 && !o->restarts;
    info->note = initial ? "initialisation (seed 004 Alg. 1): predicting the first label until "
                           "both classes are seen"
                         : o->note;
}

/* Bit 4 of the first byte: the anchor follows the counters and the points
 * are kept relative to it.  Without it (a snapshot from before) they are
 * kept from the origin: an empty anchor, which is what those bytes meant. */
#define ANCHORED 0x10

static pc_status encode(const void *state, pc_writer *w)
{
    const ommn *o = state;
    pc_writer_u8(w, (uint8_t)(ANCHORED | o->phase | (o->y1 > 0) << 2));
    pc_writer_u64(w, o->skipped);
    pc_writer_u64(w, o->capped);
    pc_writer_u64(w, o->restarts);
    pc_anchor_encode(&o->an, w);
    pc_writer_u32(w, o->n);
    for (uint32_t i = 0; i < o->n; i++) {
        pc_writer_u8(w, (uint8_t)((o->y[i] > 0) | o->fr[i] << 1));
        pc_writer_f64(w, o->alpha[i]);
        pc_writer_u32(w, o->nnz[i]);
        for (uint64_t k = o->off[i]; k < o->off[i] + o->nnz[i]; k++)
            pc_writer_u32(w, o->feat[o->idx[k]]), pc_writer_f64(w, o->val[k]);
    }
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    ommn *o = state;
    uint8_t f = pc_reader_u8(r);
    /* bit 3 was an "inseparable" flag: snapshots before restarts may still carry it */
    o->phase = f & 3, o->y1 = f & 4 ? 1 : -1;
    o->skipped = pc_reader_u64(r);
    o->capped = pc_reader_u64(r);
    o->restarts = pc_reader_u64(r);
    if ((f & ANCHORED) && !pc_anchor_decode(&o->an, r, o->dim))
        return r->nomem ? PC_ENOMEM : PC_EFORMAT;
    uint32_t n = pc_reader_u32(r);
    if (r->failed || (f & ~ANCHORED) > 15 || o->phase > 2 || n > o->max_points ||
        !pc_reader_need(r, n, 13))
        return PC_EFORMAT;
    double mass[2] = {0, 0}; /* each class's weight: 1, or 0 before it is seen */
    for (uint32_t i = 0; i < n; i++) {
        uint8_t b = pc_reader_u8(r);
        double alpha = pc_reader_f64(r);
        uint32_t k = pc_reader_u32(r);
        /* read the features just past the pool's end, then add_point copies
         * them into place (the two ranges do not overlap) */
        if (r->failed || b > 3 || k > o->dim || !pc_reader_need(r, k, 12) ||
            !(alpha >= 0 && alpha <= 1) || (alpha > 0 && !(b >> 1)))
            return PC_EFORMAT;
        if (!grow(o, 2 * k)) /* out of memory, not bad bytes: a restore must not skip them */
            return PC_ENOMEM;
        uint32_t *fi = o->idx + o->len + k;
        double *fv = o->val + o->len + k;
        for (uint32_t e = 0; e < k; e++) {
            if ((fi[e] = pc_reader_u32(r)) >= o->dim || !isfinite(fv[e] = pc_reader_f64(r)))
                return PC_EFORMAT;
            /* x - a, both examples: past 2^65 the solver's squares overflow */
            if (!(fabs(fv[e]) <= 2 * PC_VALUE_MAX)) {
                r->why = "a kept point's value past 2^65 (points are differences of examples, "
                         "each bounded at 2^64)";
                return PC_EFORMAT;
            }
        }
        if (r->failed || !add_point(o, fi, fv, k, b & 1 ? 1 : -1, alpha))
            return PC_EFORMAT;
        mass[b & 1] += alpha;
        o->fr[i] = b >> 1;
    }
    /* Alg. 1's phases: 0, 1 (one point, of class y1) or 2 (both classes). */
    bool ok = o->phase == 2 ? n >= 2 && fabs(mass[0] - 1) < 1e-6 && fabs(mass[1] - 1) < 1e-6
                            : n == (uint32_t)o->phase && (!n || mass[o->y1 > 0] == 1);
    if (r->failed || !ok)
        return PC_EFORMAT;
    rebuild(o);
    set_note(o);
    return PC_OK;
}

/* The kept points' arrays, and the feature map: 4 bytes x dim whatever the
 * model's storage (untouched pages cost no memory). */
static size_t bytes(const void *state)
{
    const ommn *o = state;
    size_t per_point = 8 + 4 + 4 + 1 + 1 + 6 * 8; /* off nnz fl y fr alpha g r p q d */
    return (size_t)(o->dim ? o->dim : 1) * 4 + (size_t)o->cap * per_point +
           (size_t)o->pool * 12 + (size_t)o->fcap * 20 + pc_anchor_bytes(&o->an);
}

const pc_rule pc_rule_omm_naive = {
    .name = "omm-naive",
    .summary = "n-OMM, naive Online Maximum Margin, exact on the kept points (seed 004 Alg. 1)",
    .state_size = sizeof(ommn),
    PC_ANCHORED_RULE_OPS,
};
