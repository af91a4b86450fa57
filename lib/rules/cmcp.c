/* cmcp.c - CMCP, the Conservative Maximum Cosine Perceptron (seed 000
 * Sect. 4, eq. 33-38, Lemma 8).
 *
 * The first example sets w = y x and l = 1/||x||; afterwards, on a mistake
 * (y(w.x) <= 0), the step that maximises the local cosine bound (eq. 34, by
 * Lemma 2: x_i = 1/(l ||x||^2)) is taken:
 *   w += ||w||/(l ||x||^2) y x                 (eq. 38)
 *   l^2 += 1/||x||^2                           (eq. 36, 39-40)
 * so the cosine between w and any unit separator of margin gamma is at least
 * gamma l (Lemma 8), and at most 1: the same (R/gamma)^2 mistake bound as the
 * perceptron.  Every change is w += alpha x: PC_RULE_ADDITIVE (averaging).
 * ||w|| is a running scalar kept exact (mcf.h), so each example costs O(nnz).
 * w is kept in range by an exact power-of-two rescale, rare (mcf_mcp_step); an
 * example parallel to w is skipped (it cannot turn w).
 */
#include "lib/rules/mcf.h"

typedef struct cmcp {
    mcf_vec w; /* the literal w of seed 000, exact norm (mcf.h) */
    double l;  /* 0 before the first example */
} cmcp;

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    cmcp *p = state;
    (void)err;
    p->l = 0;
    return mcf_init(&p->w, ctx->dim, ctx->averaged);
}

static double score(const void *state, const pc_svec *x)
{
    const cmcp *p = state;
    return pc_wvec_dot(&p->w.w, x);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    cmcp *p = state;
    if (y * s > 0 || !(x->norm2 > 0)) /* conservative: a <= 0 (eq. 38) */
        return false;
    double nx = sqrt(x->norm2);
    if (!(p->l > 0)) { /* w_1 = y a_0, l_1 = 1/||a_0|| (Lemma 8) */
        mcf_mcp_first(&p->w, x, y, nx);
        p->l = 1 / nx;
        return true;
    }
    double nw = sqrt(p->w.w.norm2);
    if (!(nw > 0) || !isfinite(s))
        return false;
    double cs = mcf_cos(s, nw, nx);
    if (mcf_parallel(cs))
        return false;
    mcf_mcp_step(&p->w, x, y, p->l, nw, nx, cs); /* eq. 38 */
    p->l = hypot(p->l, 1 / nx);                  /* eq. 36: l^2 += 1/||x||^2 */
    return true;
}

static pc_wvec *primary(void *state)
{
    cmcp *p = state;
    return &p->w.w;
}

static void describe(const void *state, pc_learner_info *info)
{
    const cmcp *p = state;
    /* 1 >= cos(theta) >= gamma l (Lemma 8): gamma <= 1/l. */
    if (p->l > 0)
        info->margin = 1 / p->l;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const cmcp *p = state;
    mcf_encode(&p->w, w);
    pc_writer_f64(w, p->l);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    cmcp *p = state;
    if (!mcf_decode(&p->w, r))
        return PC_EFORMAT;
    p->l = pc_reader_f64(r);
    return !r->failed && p->l >= 0 && isfinite(p->l) ? PC_OK : PC_EFORMAT;
}

const pc_rule pc_rule_cmcp = {
    .name = "cmcp",
    .summary = "conservative maximum cosine perceptron (seed 000 Lemma 8)",
    .flags = PC_RULE_ADDITIVE,
    .params = NULL,
    .nparams = 0,
    .state_size = sizeof(cmcp),
    .init = init,
    .score = score,
    .update = update,
    .primary = primary,
    .describe = describe,
    .encode = encode,
    .decode = decode,
};
