/* aromma.c - aggressive ROMMA (Li and Long 2002), as seed 000 Table 1 and
 * eq. 25-26 summarise it.
 *
 * With a = y(u.x), the hypothesis u moves on every a < 1 (not only on
 * mistakes):
 *   Type I    a >= 1                              u' = u
 *   Type II   1 > a >= ||x||^2 ||u||^2              u' = y x/||x||^2
 *   Type III  a < min(||x||^2 ||u||^2, 1)           u' = c u + d x (eq. 25-26)
 * u starts at 0, so the first example is a Type II (0 >= 0): u = y x/||x||^2,
 * the u_1 of seed 000 Theorem 7.  u is kept as ||u|| times a unit direction
 * (mcf.h); Type III is one add and the wvec scale, O(nnz); Type II is a reset
 * (O(dim)), rare: see mcf_dir_set.
 * An example parallel to u is skipped, as NAROMMA does (seed 000 Fig. 1
 * step 4): Type III divides by ||x||^2||u||^2 sin^2 there, and skipping a
 * parallel Type II too keeps the two rules equivalent (Theorem 7).
 */
#include "lib/rules/mcf.h"

typedef struct aromma {
    mcf_vec d; /* u's direction */
    double nu; /* ||u||, 0 before the first example */
} aromma;

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    aromma *p = state;
    (void)err;
    p->nu = 0;
    return mcf_init(&p->d, ctx->dim, false);
}

static void destroy(void *state)
{
    aromma *p = state;
    pc_wvec_free(&p->d.w);
}

static double score(const void *state, const pc_svec *x)
{
    const aromma *p = state;
    return mcf_dir_score(&p->d, p->nu, x);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    aromma *p = state;
    double a = y * s;
    if (a >= 1 || !(x->norm2 > 0)) /* Type I (seed 000 Table 1) */
        return false;
    bool fresh = !(p->nu > 0); /* u = 0: Type II, u_1 = y x/||x||^2 (Theorem 7) */
    if (!fresh && mcf_parallel(mcf_cos(s, p->nu, sqrt(x->norm2))))
        return false; /* seed 000 Fig. 1 step 4 */
    if (fresh || a >= x->norm2 * p->nu * p->nu) { /* Type II (overflow: inf, Type III) */
        mcf_dir_set(&p->d, y, x, fresh);
        p->nu = 1 / sqrt(x->norm2);
        return true;
    }
    return mcf_romma_step(&p->d, &p->nu, x, y, s); /* Type III, seed 000 eq. 25-26 */
}

static double weight(const void *state, uint32_t i)
{
    const aromma *p = state;
    return mcf_dir_weight(&p->d, p->nu, i);
}

static void describe(const void *state, pc_learner_info *info)
{
    const aromma *p = state;
    info->norm = p->nu;
    /* As for ROMMA, every unit separator of margin gamma has gamma <= 1/||u||. */
    if (p->nu > 0)
        info->margin = 1 / p->nu;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const aromma *p = state;
    mcf_encode(&p->d, w);
    pc_writer_f64(w, p->nu);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    aromma *p = state;
    if (!mcf_decode(&p->d, r))
        return PC_EFORMAT;
    p->nu = pc_reader_f64(r);
    return !r->failed && p->nu >= 0 && isfinite(p->nu) ? PC_OK : PC_EFORMAT;
}

const pc_rule pc_rule_aromma = {
    .name = "aromma",
    .summary = "aggressive ROMMA: updates whenever y(u.x) < 1, Types I-III (seed 000 Table 1)",
    .flags = 0,
    .params = NULL,
    .nparams = 0,
    .state_size = sizeof(aromma),
    .init = init,
    .destroy = destroy,
    .score = score,
    .update = update,
    .weight = weight,
    .describe = describe,
    .encode = encode,
    .decode = decode,
};
