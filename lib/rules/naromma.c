/* naromma.c - NAROMMA, New Aggressive ROMMA (seed 000 Sect. 3, Fig. 1,
 * Table 2, eq. 7, 21-22).
 *
 * The Maximum Cosine Framework's derivation of aggressive ROMMA: the hypothesis
 * v moves along y x by the step that maximises the local cosine bound l*
 * (eq. 12-15), with gamma = y(v.x)/||v|| (eq. 7):
 *   Type I    gamma >= 1/l*                  v' = v
 *   Type II   1/l* > gamma >= ||x||^2 l*     v' = y x,  l*' = 1/||x||
 *   Type III  gamma < min(||x||^2 l*, 1/l*)  v' = v + ||v|| (1 - l* gamma)/(l* ||x||^2 - gamma) y x,
 *                                            l*'^2 = l*^2 + (l* gamma - 1)^2/(||x||^2 - gamma^2)
 * and the first example sets v = y x, l* = 1/||x|| (Fig. 1 step 1); an example
 * parallel to v is skipped (step 4).
 *
 * Only v's direction matters (Fig. 1 is homogeneous in v) while ||v|| could
 * grow without bound, so v is kept at unit norm (the wvec scale, O(1); its
 * norm exact, mcf.h).  The score is l* v.x/||v||: by Theorem 7,
 * u = l* v/||v|| is aggressive ROMMA's hypothesis, so score, weights and norm
 * are aromma's while the state and the update are NAROMMA's.  O(nnz) per
 * example except a Type II (rare, O(dim)).
 */
#include "lib/rules/mcf.h"

typedef struct naromma {
    mcf_vec v; /* unit norm once learning started */
    double l;  /* l*, 0 before the first example */
} naromma;

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    naromma *p = state;
    (void)err;
    p->l = 0;
    return mcf_init(&p->v, ctx->dim, false);
}

static void destroy(void *state)
{
    naromma *p = state;
    pc_wvec_free(&p->v.w);
}

static double score(const void *state, const pc_svec *x)
{
    const naromma *p = state;
    return mcf_dir_score(&p->v, p->l, x);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    naromma *p = state;
    if (!(x->norm2 > 0))
        return false;
    double nx = sqrt(x->norm2), l = p->l;
    if (!(l > 0)) { /* Fig. 1 step 1: v = y x, l* = 1/||x|| */
        mcf_dir_set(&p->v, y, x, true);
        p->l = 1 / nx;
        return true;
    }
    double gamma = y * s / l; /* eq. 7: y v.x/||v||, as s = l* v.x/||v|| */
    double cs = mcf_cos(gamma, 1, nx);
    if (mcf_parallel(cs) || !isfinite(gamma)) /* Fig. 1 step 4 */
        return false;
    double lg = l * gamma;
    if (lg >= 1) /* Type I, step 5 */
        return false;
    double den = l * nx - cs; /* (l* ||x||^2 - gamma)/||x|| > 0 in Type III */
    if (lg >= x->norm2 * l * l || !(den > 0)) { /* Type II, step 6 (boundary: III -> II) */
        mcf_dir_set(&p->v, y, x, false);
        p->l = 1 / nx;
        return true;
    }
    /* Type III, step 7.2: v += ||v|| (1 - l* gamma)/(l* ||x||^2 - gamma) y x */
    double beta = y * ((1 - lg) / nx) / den;
    double t = (lg - 1) / (nx * sqrt(mcf_sin2(cs)));
    double l2 = hypot(l, t); /* eq. 22, Type III */
    if (!isfinite(beta) || !(l2 <= MCF_NORM_MAX))
        return false; /* beyond double range: keep the current hypothesis */
    mcf_dir_step(&p->v, beta, x);
    p->l = l2;
    return true;
}

static double weight(const void *state, uint32_t i)
{
    const naromma *p = state;
    return mcf_dir_weight(&p->v, p->l, i);
}

static void describe(const void *state, pc_learner_info *info)
{
    const naromma *p = state;
    info->norm = p->l;
    /* cos(theta) >= gamma l* (Lemma 6) and cos <= 1: any unit separator's
     * margin gamma is at most 1/l*. */
    if (p->l > 0)
        info->margin = 1 / p->l;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const naromma *p = state;
    mcf_encode(&p->v, w);
    pc_writer_f64(w, p->l);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    naromma *p = state;
    if (!mcf_decode(&p->v, r))
        return PC_EFORMAT;
    p->l = pc_reader_f64(r);
    return !r->failed && p->l >= 0 && isfinite(p->l) ? PC_OK : PC_EFORMAT;
}

const pc_rule pc_rule_naromma = {
    .name = "naromma",
    .summary = "NAROMMA: aggressive ROMMA from the maximum cosine framework (seed 000 Fig. 1, Table 2)",
    .flags = 0,
    .params = NULL,
    .nparams = 0,
    .state_size = sizeof(naromma),
    .init = init,
    .destroy = destroy,
    .score = score,
    .update = update,
    .weight = weight,
    .describe = describe,
    .encode = encode,
    .decode = decode,
};
