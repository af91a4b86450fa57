/* alma.c - ALMA_2, the Approximate Large Margin Algorithm (Gentile 2001).
 *
 * Seed 004 Table 1 and App. B.3 (a benchmark there, with Gentile's tuning of
 * his Theorem 3: phi = 0.3, i.e. alpha = 1 - phi = 0.7, B = sqrt(8)/alpha,
 * C = sqrt(2)).  On the normalised example xh = x/||x||, with k the number
 * of updates so far plus one:
 *   update when  y w.xh <= (1 - alpha) B / sqrt(k)     (the margin gamma_k)
 *   then         w <- w + (C / sqrt(k)) y xh           (step eta_k)
 *                w <- w / max(1, ||w||)                (back into the unit ball)
 *                k <- k + 1
 * The prediction is sign(w.x), the sign of w.xh.  The projection rescales
 * all of w, so w is kept as scale * v (wvec): O(1) for it, O(nnz) per update.
 * The bias, when wanted, is the constant feature of seed 004 B.3 ("ALMA ...
 * append a coordinate of 1"), normalised with the rest of x.
 */
#include "lib/rule.h"

#include <float.h>
#include <math.h>

typedef struct alma {
    pc_wvec w;
    double alpha, B, C;
    uint64_t k;         /* updates so far + 1 (Gentile's k starts at 1) */
} alma;
PC_RULE_W_FIRST(alma);

enum { P_ALPHA, P_B, P_C };
static const pc_param_spec params[] = {
    [P_ALPHA] = {"alpha", PC_PARAM_REAL, 0.7, 0, 1, true, false, NULL, 0,
                 "margin fraction (Gentile 2001; seed 004 B.3 uses 1 - phi = 0.7): ALMA aims at "
                 "(1 - alpha) of the normalised maximum margin; 1 updates on mistakes only"},
    [P_B] = {"B", PC_PARAM_REAL, NAN, 0, 1e300, true, false, NULL, 0,
             "margin scale (Gentile 2001, Thm 3; seed 004 B.3): update when y w.xh <= "
             "(1 - alpha) B / sqrt(k); default derived: sqrt(8) / alpha"},
    [P_C] = {"C", PC_PARAM_REAL, 1.4142135623730951, 0, 1e300, true, false, NULL, 0,
             "step scale (Gentile 2001, Thm 3; seed 004 B.3): the k-th update adds "
             "(C / sqrt(k)) y xh; default sqrt(2)"},
};

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    alma *p = state;
    (void)err;
    p->alpha = pc_param1(ctx, P_ALPHA);
    p->B = pc_param1(ctx, P_B);
    if (isnan(p->B)) /* derived: Gentile's Theorem 3 tuning */
        p->B = sqrt(8.0) / p->alpha;
    p->C = pc_param1(ctx, P_C);
    p->k = 1;
    return pc_wvec_init(&p->w, ctx, false);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    alma *p = state;
    /* ||x|| out of the normal range (values beyond ~1e154 or below ~1e-154)
     * would put Inf or 0 into the step: skip such an example. */
    if (!(x->norm2 >= DBL_MIN) || !isfinite(x->norm2))
        return false;
    double xn = sqrt(x->norm2);
    double sk = sqrt((double)p->k);
    /* y w.xh = y s / ||x|| against gamma_k = (1 - alpha) B / sqrt(k) */
    if (y * s / xn > (1 - p->alpha) * p->B / sk)
        return false;
    pc_wvec_add(&p->w, p->C / sk * y / xn, x); /* w + eta_k y xh */
    if (p->w.norm2 > 1)                        /* w / max(1, ||w||) */
        pc_wvec_scale(&p->w, 1 / sqrt(p->w.norm2));
    p->k++;
    return true;
}

static void describe(const void *state, pc_learner_info *info)
{
    const alma *p = state;
    /* the margin ALMA is testing against now, gamma_k (Gentile 2001) */
    info->margin = (1 - p->alpha) * p->B / sqrt((double)p->k);
}

static pc_status encode(const void *state, pc_writer *w)
{
    const alma *p = state;
    pc_wvec_encode(&p->w, w);
    pc_writer_u64(w, p->k);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    alma *p = state;
    if (!pc_wvec_decode(&p->w, r))
        return PC_EFORMAT;
    p->k = pc_reader_u64(r);
    if (r->failed || p->k == 0)
        return PC_EFORMAT;
    return PC_OK;
}

const pc_rule pc_rule_alma = {
    .name = "alma",
    .summary = "ALMA_2, approximate large margin with normalised examples (Gentile 2001; seed 004)",
    .flags = 0, PC_RULE_PARAMS(params), .state_size = sizeof(alma),
    .init = init, .score = pc_rule_w_score, .update = update,
    .primary = pc_rule_w_primary, /* not PC_RULE_ADDITIVE: the projection rescales w */
    .describe = describe, .encode = encode, .decode = decode,
};
