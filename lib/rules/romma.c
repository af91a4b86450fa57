/* romma.c - ROMMA, the Relaxed Online Maximum Margin Algorithm (Li and Long
 * 2002), a benchmark of seed 004, with the update of seed 000 eq. 25-26.
 *
 * Conservative: on a mistake, y(u.x) <= 0, the first update sets
 * u = y x/||x||^2 (the shortest u with y u.x = 1); every later one sets
 * u = c u + d x (seed 000 eq. 25-26), the shortest vector with y u'.x = 1 and
 * u'.u = ||u||^2, i.e. the projection of 0 onto the relaxed version space.
 * u is kept as ||u|| times a unit direction (mcf.h: the rescaling is the wvec's
 * lazy scale, the norm stays exact), ||u|| follows seed 000 eq. 31 and s = u.x
 * comes with the call: O(nnz) per example.  An example parallel to u (a
 * vanishing denominator in eq. 25-26) is skipped (seed 000 Fig. 1 step 4).
 */
#include "lib/rules/mcf.h"

typedef struct romma {
    mcf_vec d; /* u's direction */
    double nu; /* ||u||, 0 before the first update */
} romma;

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    romma *p = state;
    (void)err;
    p->nu = 0;
    return mcf_init(&p->d, ctx->dim, false);
}

static void destroy(void *state)
{
    romma *p = state;
    pc_wvec_free(&p->d.w);
}

static double score(const void *state, const pc_svec *x)
{
    const romma *p = state;
    return mcf_dir_score(&p->d, p->nu, x);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    romma *p = state;
    if (y * s > 0 || !(x->norm2 > 0)) /* conservative: a <= 0 only */
        return false;
    if (!(p->nu > 0)) { /* u = 0: the first update, u = y x/||x||^2 */
        mcf_dir_set(&p->d, y, x, true);
        p->nu = 1 / sqrt(x->norm2);
        return true;
    }
    return mcf_romma_step(&p->d, &p->nu, x, y, s); /* seed 000, eq. 25-26 */
}

static double weight(const void *state, uint32_t i)
{
    const romma *p = state;
    return mcf_dir_weight(&p->d, p->nu, i);
}

static void describe(const void *state, pc_learner_info *info)
{
    const romma *p = state;
    info->norm = p->nu;
    /* Every seen example satisfies y u*.x >= 1 for u* = w/gamma of any unit
     * separator w of margin gamma, and u is the shortest vector of a set that
     * contains them all: gamma <= 1/||u|| (Li and Long 2002). */
    if (p->nu > 0)
        info->margin = 1 / p->nu;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const romma *p = state;
    mcf_encode(&p->d, w);
    pc_writer_f64(w, p->nu);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    romma *p = state;
    if (!mcf_decode(&p->d, r))
        return PC_EFORMAT;
    p->nu = pc_reader_f64(r);
    return !r->failed && p->nu >= 0 && isfinite(p->nu) ? PC_OK : PC_EFORMAT;
}

const pc_rule pc_rule_romma = {
    .name = "romma",
    .summary = "ROMMA, relaxed online maximum margin, conservative (seed 004 benchmark, seed 000 eq. 25-26)",
    .flags = 0,
    .params = NULL,
    .nparams = 0,
    .state_size = sizeof(romma),
    .init = init,
    .destroy = destroy,
    .score = score,
    .update = update,
    .weight = weight,
    .describe = describe,
    .encode = encode,
    .decode = decode,
};
