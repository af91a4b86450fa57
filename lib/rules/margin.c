/* margin.c - the Margin-Fuzzy Perceptron.
 *
 * Seed 002 ch. 5, Alg. 4: the perceptron (seed 002 Def. 10, learning rate
 * eta) that ignores the misclassified examples lying inside a margin of width
 * epsilon around its boundary, where the overlapping ("fuzzy") data is.  In
 * streaming form: on y(w.x + b) <= 0 (Alg. 4 line 5) and
 * |w.x + b| / ||w|| >= epsilon (line 3, "at least epsilon from the boundary"),
 * w += eta y x and b += eta y.
 *
 * The distance to the hyperplane divides by ||w|| without the bias: seed 002
 * 5.2 reads <w, x> as the signed distance only when ||w|| = 1, and the bias
 * only shifts the hyperplane.  The model appends the bias as the last
 * coordinate (ctx->bias), so the rule keeps the squared norm of the other
 * coordinates as its own running scalar, updated in O(nnz) from the partial
 * dot product (subtracting w_b^2 from ||w||^2 would cancel badly when the bias
 * dominates).  While that part of w is 0 the distance is undefined and the
 * rule updates like the perceptron ("always when w = 0").
 */
#include "lib/rule.h"

#include <math.h>

typedef struct margin {
    pc_wvec w;
    double eta, epsilon;
    bool has_bias;      /* coordinate dim - 1 is the bias feature */
    uint32_t bi;        /* its index */
    double nb2;         /* ||w||^2 without the bias coordinate (has_bias only) */
} margin;
PC_RULE_W_FIRST(margin);

enum { P_ETA, P_EPSILON };
static const pc_param_spec params[] = {
    [P_ETA] = PC_PARAM_SPEC_ETA,
    [P_EPSILON] = {"epsilon", PC_PARAM_REAL, 0.1, 0, 1e300, false, false, NULL, 0,
                   "margin (seed 002 ch. 5, Alg. 4): misclassified examples closer than epsilon "
                   "to the boundary (|w.x + b| / ||w||) are ignored; 0 is the perceptron"},
};

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    margin *p = state;
    (void)err;
    p->eta = pc_param1(ctx, P_ETA);
    p->epsilon = pc_param1(ctx, P_EPSILON);
    p->has_bias = ctx->bias && ctx->dim > 0;
    p->bi = p->has_bias ? ctx->dim - 1 : 0;
    p->nb2 = 0;
    return pc_wvec_init(&p->w, ctx, ctx->averaged);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    margin *p = state;
    if (y * s > 0) /* seed 002 Alg. 4 line 5: only y(w.x + b) <= 0 updates */
        return false;
    double n2 = p->has_bias ? p->nb2 : p->w.norm2;
    /* Alg. 4 line 3: skip the examples inside the margin.  |s| >= eps ||w||
     * is the distance test without a division (n2 = 0: always update). */
    if (n2 > 0 && fabs(s) < p->epsilon * sqrt(n2))
        return false;
    double alpha = p->eta * y; /* seed 002 Def. 10: w += eta y x */
    if (p->has_bias) {
        /* ||w'||^2 = ||w||^2 + 2 alpha w.x + alpha^2 ||x||^2 over the
         * non-bias coordinates only, read before w moves. */
        double d = 0, xn2 = 0;
        for (uint32_t k = 0; k < x->n; k++) {
            if (x->idx[k] == p->bi)
                continue;
            d += pc_wvec_get(&p->w, x->idx[k]) * x->val[k];
            xn2 += x->val[k] * x->val[k];
        }
        p->nb2 += 2 * alpha * d + alpha * alpha * xn2;
        if (p->nb2 < 0) /* rounding */
            p->nb2 = 0;
    }
    pc_wvec_add(&p->w, alpha, x);
    return true;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const margin *p = state;
    pc_wvec_encode(&p->w, w);
    pc_writer_f64(w, p->nb2);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    margin *p = state;
    if (!pc_wvec_decode(&p->w, r))
        return PC_EFORMAT;
    p->nb2 = pc_reader_f64(r);
    if (r->failed || !(p->nb2 >= 0) || !isfinite(p->nb2))
        return PC_EFORMAT;
    return PC_OK;
}

const pc_rule pc_rule_margin = {
    .name = "margin",
    .summary = "Margin-Fuzzy Perceptron: ignores mistakes within epsilon of the boundary "
               "(seed 002 ch. 5)",
    .flags = PC_RULE_ADDITIVE, PC_RULE_PARAMS(params), .state_size = sizeof(margin),
    .init = init, .score = pc_rule_w_score, .update = update, .primary = pc_rule_w_primary,
    .encode = encode, .decode = decode,
};
