/* mcp.c - the Maximum Cosine Perceptrons of seed 000 Sect. 4: CMCP, the
 * conservative one (eq. 33-38, Lemma 8), and MCP (Fig. 2, eq. 41-43, Lemma 9,
 * Theorem 10).
 *
 * Both start from w = y x, l = 1/||x|| on the first example (Lemma 8, Fig. 2
 * step 1) and take the step that maximises the local cosine bound (eq. 34, by
 * Lemma 2: x_i = 1/(l ||x||^2)):
 *   w += ||w||/(l ||x||^2) y x                                     (eq. 38, 41)
 * They differ in when, and in how l grows:
 *   CMCP  on a mistake, y(w.x) <= 0:      l^2 += 1/||x||^2           (eq. 36)
 *   MCP   whenever y(w.x) <= ||w||/(2l):  l^2 += (1 - 2 eta)/||x||^2 (eq. 42)
 *         eta = 0 on a mistake, else y(w.x) l/||w|| <= 1/2          (eq. 43)
 * so the cosine between w and any unit separator of margin gamma stays at
 * least gamma l (Lemma 8, 9) and at most 1, and a mistake adds 1/||x||^2 to
 * l^2: at most (R/gamma)^2 mistakes, the perceptron's bound (Theorem 10).
 *
 * Every change is w += alpha x: PC_RULE_ADDITIVE (averaging).  ||w|| is a
 * running scalar kept exact (mcf.h), so each example costs O(nnz); w is kept
 * in range by an exact power-of-two rescale, rare (mcf_mcp_step); an example
 * parallel to w is skipped (it cannot turn w).  docs/algorithms.md has both
 * rules with the choices the paper leaves open.
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
    return mcf_init(&p->w, ctx, ctx->averaged);
}

static double score(const void *state, const pc_svec *x)
{
    const mcp *p = state;
    return pc_wvec_dot(&p->w.w, x);
}

/* w_1 = y a_0, l_1 = 1/||a_0|| (Lemma 8, Fig. 2 step 1). */
static bool first(mcp *p, const pc_svec *x, int y, double nx)
{
    mcf_mcp_first(&p->w, x, y, nx);
    p->l = 1 / nx;
    return true;
}

static bool update_cmcp(void *state, const pc_svec *x, int y, double s)
{
    mcp *p = state;
    if (y * s > 0 || !(x->norm2 > 0)) /* conservative: a <= 0 (eq. 38) */
        return false;
    double nx = sqrt(x->norm2);
    if (!(p->l > 0))
        return first(p, x, y, nx);
    double nw = sqrt(p->w.w.norm2);
    if (!(nw > 0) || !isfinite(s))
        return false;
    double cs = mcf_cos(s, nw, nx);
    if (mcf_parallel(cs))
        return false;
    if (!mcf_mcp_step(&p->w, x, y, p->l, nw, nx, cs)) /* eq. 38 */
        return false;
    p->l = hypot(p->l, 1 / nx); /* eq. 36: l^2 += 1/||x||^2 */
    return true;
}

static bool update_mcp(void *state, const pc_svec *x, int y, double s)
{
    mcp *p = state;
    if (!(x->norm2 > 0))
        return false;
    double nx = sqrt(x->norm2), l = p->l;
    if (!(l > 0))
        return first(p, x, y, nx);
    double nw = sqrt(p->w.w.norm2), a = y * s;
    if (!(a <= nw / (2 * l)) || !(nw > 0)) /* eq. 41 (NaN: no update) */
        return false;
    double cs = mcf_cos(s, nw, nx);
    if (mcf_parallel(cs))
        return false;
    double eta = a <= 0 ? 0 : a * l / nw; /* eq. 43 */
    double c = 1 - 2 * eta;               /* >= 0 by eq. 41; clamp the rounding */
    if (!mcf_mcp_step(&p->w, x, y, l, nw, nx, cs)) /* eq. 41 */
        return false;
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
    /* 1 >= cos(theta) >= gamma l (Lemma 8, 9): gamma <= 1/l. */
    if (p->l > 0)
        info->margin = 1 / p->l;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const mcp *p = state;
    mcf_encode_with(&p->w, p->l, w);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    mcp *p = state;
    return mcf_decode_with(&p->w, &p->l, r);
}

#define MCP_COMMON                                                                                 \
    .flags = PC_RULE_ADDITIVE | PC_RULE_CHECKED_DECODE, .params = NULL, .nparams = 0,             \
    .state_size = sizeof(mcp),                                                                     \
    .init = init, .score = score, .primary = primary, .describe = describe, .encode = encode,      \
    .decode = decode

const pc_rule pc_rule_cmcp = {
    .name = "cmcp",
    .summary = "conservative maximum cosine perceptron (seed 000 Lemma 8)",
    .update = update_cmcp,
    MCP_COMMON,
};

const pc_rule pc_rule_mcp = {
    .name = "mcp",
    .summary = "maximum cosine perceptron, updates on y(w.x) <= ||w||/(2l) (seed 000 Fig. 2)",
    .update = update_mcp,
    MCP_COMMON,
};
