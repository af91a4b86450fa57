/* mcp.c - MCP, the Maximum Cosine Perceptron (seed 000 Sect. 4, Fig. 2,
 * eq. 41-43, Lemma 9, Theorem 10).
 *
 * CMCP's step taken not only on mistakes but whenever the example is close to
 * the hyperplane:
 *   if y(w.x) <= ||w||/(2l):   w += ||w||/(l ||x||^2) y x          (eq. 41)
 *                              l^2 += (1 - 2 eta)/||x||^2           (eq. 42)
 *   eta = 0 on a mistake (y(w.x) <= 0), else y(w.x) l/||w|| <= 1/2 (eq. 43)
 * after w = y x, l = 1/||x|| on the first example (Fig. 2 step 1).  Lemma 9
 * keeps cos(w, target) >= gamma l, and a mistake adds 1/||x||^2 to l^2:
 * at most (R/gamma)^2 mistakes (Theorem 10).  Every change is w += alpha x,
 * so the rule is PC_RULE_ADDITIVE (averaging).  O(nnz) per example: ||w|| is a
 * running scalar kept exact (mcf.h); w is kept in range by an exact
 * power-of-two rescale, rare (mcf_mcp_step); an example parallel to w is
 * skipped (it cannot turn w).
 */
#include "lib/rules/mcf.h"

typedef struct mcp {
    mcf_vec w; /* the literal w of seed 000, exact norm (mcf.h) */
    double l;  /* 0 before the first example */
} mcp;

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    mcp *p = state;
    (void)err;
    p->l = 0;
    return mcf_init(&p->w, ctx->dim, ctx->averaged);
}

static double score(const void *state, const pc_svec *x)
{
    const mcp *p = state;
    return pc_wvec_dot(&p->w.w, x);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    mcp *p = state;
    if (!(x->norm2 > 0))
        return false;
    double nx = sqrt(x->norm2), l = p->l;
    if (!(l > 0)) { /* Fig. 2 step 1: w_1 = y a_0, l_1 = 1/||a_0|| */
        mcf_mcp_first(&p->w, x, y, nx);
        p->l = 1 / nx;
        return true;
    }
    double nw = sqrt(p->w.w.norm2), a = y * s;
    if (!(a <= nw / (2 * l)) || !(nw > 0)) /* eq. 41 (NaN: no update) */
        return false;
    double cs = mcf_cos(s, nw, nx);
    if (mcf_parallel(cs))
        return false;
    double eta = a <= 0 ? 0 : a * l / nw; /* eq. 43 */
    double c = 1 - 2 * eta;               /* >= 0 by eq. 41; clamp the rounding */
    mcf_mcp_step(&p->w, x, y, l, nw, nx, cs); /* eq. 41 */
    p->l = hypot(l, sqrt(c > 0 ? c : 0) / nx); /* eq. 42 */
    return true;
}

static pc_wvec *primary(void *state)
{
    mcp *p = state;
    return &p->w.w;
}

static void describe(const void *state, pc_learner_info *info)
{
    const mcp *p = state;
    /* 1 >= cos(theta) >= gamma l (Lemma 9): gamma <= 1/l. */
    if (p->l > 0)
        info->margin = 1 / p->l;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const mcp *p = state;
    mcf_encode(&p->w, w);
    pc_writer_f64(w, p->l);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    mcp *p = state;
    if (!mcf_decode(&p->w, r))
        return PC_EFORMAT;
    p->l = pc_reader_f64(r);
    return !r->failed && p->l >= 0 && isfinite(p->l) ? PC_OK : PC_EFORMAT;
}

const pc_rule pc_rule_mcp = {
    .name = "mcp",
    .summary = "maximum cosine perceptron, updates on y(w.x) <= ||w||/(2l) (seed 000 Fig. 2)",
    .flags = PC_RULE_ADDITIVE,
    .params = NULL,
    .nparams = 0,
    .state_size = sizeof(mcp),
    .init = init,
    .score = score,
    .update = update,
    .primary = primary,
    .describe = describe,
    .encode = encode,
    .decode = decode,
};
