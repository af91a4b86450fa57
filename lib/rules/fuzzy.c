/* fuzzy.c - the Fuzzy Perceptron (Keller and Hunt 1985), streaming form.
 *
 * Seed 002 ch. 4.  On y(w.x) <= 0 when x is not fuzzy (Alg. 3 line 5):
 *   w += eta |p1(x) - p2(x)|^m y x                          (Def. 20)
 * with the membership of x in its own class (Def. 21)
 *   p_own = 0.5 + (e^{c (d_oth - d_own)/d} - e^{-c}) / (2 (e^c - e^{-c})),
 * p_oth = 1 - p_own; d_own, d_oth the distances of x to the two class means
 * and d the distance between the means.  x is fuzzy when p1, p2 are both in
 * [0.5 - delta, 0.5 + delta] (Def. 19), i.e. when q = p_own - 1/2 <= delta
 * (q is in [0, 1/2] since |d_oth - d_own| <= d), and |p1 - p2| = 2q.
 *
 * The thesis computes the means over the whole data set; here they are the
 * running means of the labelled examples, the current one included (its
 * label is known when it updates).  Until both classes have a mean,
 * |p1 - p2| = 1 and nothing is fuzzy.
 *
 * State in O(nnz) per example: the two class means as wvecs, kept as means
 * (mu = (1 - 1/n) mu + x/n, the scale making the (1 - 1/n) free) rather than
 * sums so their norms cannot overflow however long the stream; each wvec
 * keeps ||mu||^2, and mu+.mu- is a running scalar.  Then
 *   ||x - mu||^2 = ||x||^2 - 2 x.mu + ||mu||^2,
 *   d^2 = ||mu+||^2 - 2 mu+.mu- + ||mu-||^2.
 */
#include "lib/rule.h"

#include <float.h>
#include <math.h>

typedef struct fuzzy {
    pc_wvec w;
    pc_wvec mu[2];   /* class means: [0] of y = -1, [1] of y = +1 */
    uint64_t n[2];   /* examples seen per class */
    double cross;    /* mu[0].mu[1] */
    double eta, m, c, delta;
} fuzzy;
PC_RULE_W_FIRST(fuzzy);

enum { F_ETA, F_M, F_C, F_DELTA };
static const pc_param_spec params[] = {
    [F_ETA] = {"eta", PC_PARAM_REAL, 1, 0, 1e6, true, false, NULL, 0,
               "learning rate eta of the fuzzy update (seed 002 Def. 20)"},
    [F_M] = {"m", PC_PARAM_REAL, 2, 0, 1e3, false, false, NULL, 0,
             "exponent m of |p1 - p2| in the update (seed 002 Def. 20 asks m > 1; "
             "m = 0 drops the scaling)"},
    [F_C] = {"c", PC_PARAM_REAL, 2, 0, 1e3, true, false, NULL, 0,
             "steepness c > 0 of the membership function (seed 002 Def. 21)"},
    [F_DELTA] = {"delta", PC_PARAM_REAL, 0.05, 0, 0.5, false, false, NULL, 0,
                 "x is fuzzy (never updates) when its memberships are within delta of 0.5 "
                 "(seed 002 Def. 19)"},
};

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    fuzzy *f = state;
    (void)err;
    f->eta = pc_param1(ctx, F_ETA);
    f->m = pc_param1(ctx, F_M);
    f->c = pc_param1(ctx, F_C);
    f->delta = pc_param1(ctx, F_DELTA);
    pc_status st = pc_wvec_init(&f->w, ctx, ctx->averaged);
    if (st == PC_OK && (st = pc_wvec_init(&f->mu[0], ctx, false)) != PC_OK)
        pc_wvec_free(&f->w);
    if (st == PC_OK && (st = pc_wvec_init(&f->mu[1], ctx, false)) != PC_OK) {
        pc_wvec_free(&f->w);
        pc_wvec_free(&f->mu[0]);
    }
    return st;
}

static void destroy(void *state)
{
    fuzzy *f = state;
    pc_wvec_free(&f->mu[0]);
    pc_wvec_free(&f->mu[1]);
}

static double dist(double xx, double xmu, double mumu)
{
    double d2 = xx - 2 * xmu + mumu;
    return d2 > 0 ? sqrt(d2) : 0; /* rounding may make it slightly negative */
}

/* q = p_own - 1/2 of Def. 21 for r = (d_oth - d_own)/d in [-1, 1], written
 * with exponents <= 0 so no c overflows:
 *   (e^{cr} - e^{-c}) / (2(e^c - e^{-c})) = e^{c(r-1)} expm1(-c(r+1)) / (2 expm1(-2c)). */
static double membership_gap(double r, double c)
{
    return exp(c * (r - 1)) * expm1(-c * (r + 1)) / (2 * expm1(-2 * c));
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    fuzzy *f = state;
    int own = y > 0, oth = !own;
    pc_wvec *mo = &f->mu[own], *mt = &f->mu[oth];
    /* Running mean of the own class, x included: mu = (1 - 1/n) mu + x/n. */
    double n = (double)++f->n[own], xt = pc_wvec_dot(mt, x), xo;
    if (n == 1) {
        pc_wvec_add(mo, 1, x); /* mu was 0 */
        f->cross = xt;
        xo = x->norm2;
    } else {
        double k = (n - 1) / n;
        pc_wvec_scale(mo, k);
        xo = pc_wvec_add(mo, 1 / n, x) + x->norm2 / n; /* x.mu after the add */
        f->cross = k * f->cross + xt / n;
    }
    if (y * s > 0) /* seed 002 Alg. 3 line 5: only misclassified points update */
        return false;
    double gap = 1; /* |p1 - p2|: 1 until both classes have a mean */
    if (f->n[oth] > 0) {
        double d_own = dist(x->norm2, xo, mo->norm2), d_oth = dist(x->norm2, xt, mt->norm2);
        double dd = mo->norm2 - 2 * f->cross + mt->norm2, r = 0;
        /* d ~ 0 (the means coincide, up to the rounding of dd): (d_oth - d_own)/d is
         * 0/0; x is equidistant from both means, so take r = 0 (Def. 21's value when
         * d_oth = d_own; the thesis' idea 3: "near 0.5 if equidistant"). */
        if (dd > 8 * DBL_EPSILON * (mo->norm2 + mt->norm2))
            r = (d_oth - d_own) / sqrt(dd);
        r = isnan(r) ? 0 : r > 1 ? 1 : r < -1 ? -1 : r; /* |d_oth - d_own| <= d, up to rounding */
        double q = membership_gap(r, f->c);
        if (q <= f->delta) /* Def. 19: fuzzy, ignored */
            return false;
        gap = 2 * q;
    }
    double alpha = f->eta * pow(gap, f->m) * y; /* Def. 20 */
    if (alpha == 0 || !isfinite(alpha))
        return false;
    pc_wvec_add(&f->w, alpha, x);
    return true;
}

static size_t bytes(const void *state)
{
    const fuzzy *f = state;
    return pc_wvec_bytes(&f->w) + pc_wvec_bytes(&f->mu[0]) + pc_wvec_bytes(&f->mu[1]);
}

static pc_status encode(const void *state, pc_writer *w)
{
    const fuzzy *f = state;
    pc_wvec_encode(&f->w, w);
    for (int i = 0; i < 2; i++) {
        pc_wvec_encode(&f->mu[i], w);
        pc_writer_u64(w, f->n[i]);
    }
    pc_writer_f64(w, f->cross);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    fuzzy *f = state;
    if (!pc_wvec_decode(&f->w, r) || !isfinite(f->w.norm2))
        return PC_EFORMAT;
    for (int i = 0; i < 2; i++) {
        if (!pc_wvec_decode(&f->mu[i], r) || !isfinite(f->mu[i].norm2))
            return PC_EFORMAT;
        f->n[i] = pc_reader_u64(r);
        if (f->n[i] > (1ull << 53)) /* n is used as an exact double */
            return PC_EFORMAT;
    }
    f->cross = pc_reader_f64(r);
    return r->failed || !isfinite(f->cross) ? PC_EFORMAT : PC_OK;
}

const pc_rule pc_rule_fuzzy = {
    .name = "fuzzy",
    .summary = "Fuzzy Perceptron: steps scaled by memberships, fuzzy points ignored (seed 002 ch. 4)",
    .flags = PC_RULE_ADDITIVE,
    PC_RULE_PARAMS(params),
    .state_size = sizeof(fuzzy),
    .init = init, .destroy = destroy, .score = pc_rule_w_score, .update = update,
    .primary = pc_rule_w_primary, .encode = encode, .decode = decode, .bytes = bytes,
};
