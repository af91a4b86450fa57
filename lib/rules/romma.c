/* romma.c - the ROMMA family: ROMMA, the Relaxed Online Maximum Margin
 * Algorithm (Li and Long 2002, a benchmark of seed 004), aggressive ROMMA (as
 * seed 000 Table 1 and eq. 25-26 summarise it) and NAROMMA, New Aggressive
 * ROMMA (seed 000 Sect. 3, Fig. 1, Table 2, eq. 7, 21-22).
 *
 * The hypothesis u is the shortest vector of a relaxed version space.  With
 * a = y(u.x):
 *   romma    on a mistake (a <= 0) only: the first sets u = y x/||x||^2 (the
 *            shortest u with y u.x = 1), every later one u' = c u + d x
 *            (seed 000 eq. 25-26), the shortest vector with y u'.x = 1 and
 *            u'.u = ||u||^2.
 *   aromma   on every a < 1:
 *            Type I    a >= 1                           u' = u
 *            Type II   1 > a >= ||x||^2 ||u||^2           u' = y x/||x||^2
 *            Type III  a < min(||x||^2 ||u||^2, 1)        u' = c u + d x (eq. 25-26)
 *            u starts at 0, so the first example is a Type II (0 >= 0): the
 *            u_1 of seed 000 Theorem 7.
 *   naromma  the Maximum Cosine Framework's derivation of aggressive ROMMA: v
 *            moves along y x by the step that maximises the local cosine
 *            bound l* (eq. 12-15), with gamma = y(v.x)/||v|| (eq. 7):
 *            Type I    gamma >= 1/l*                  v' = v
 *            Type II   1/l* > gamma >= ||x||^2 l*     v' = y x,  l*' = 1/||x||
 *            Type III  gamma < min(||x||^2 l*, 1/l*)  v' = v + ||v|| (1 - l* gamma)/(l* ||x||^2 - gamma) y x,
 *                                                     l*'^2 = l*^2 + (l* gamma - 1)^2/(||x||^2 - gamma^2)
 *            after v = y x, l* = 1/||x|| on the first example (Fig. 1 step 1).
 *
 * One state for the three: a magnitude times a unit direction (mcf.h: every
 * update rescales u, and only so are both its norm and its direction exact).
 * For romma and aromma they are ||u|| and u/||u||; for naromma l* and v/||v||,
 * since only v's direction matters (Fig. 1 is homogeneous in v) and by
 * Theorem 7 u = l* v/||v|| is aggressive ROMMA's hypothesis: score, weights,
 * norm and encoding are shared, only the update differs.  Not additive (u is
 * rescaled): no averaging.  O(nnz) per example except a Type II, which is a
 * reset (O(entries touched), rare: see mcf_dir_set).
 *
 * An example parallel to u is skipped in all three (seed 000 Fig. 1 step 4):
 * eq. 25-26 and Type III divide by ||x||^2||u||^2 sin^2 there, and skipping a
 * parallel Type II too keeps aromma and naromma equivalent (Theorem 7).
 * docs/algorithms.md has the three with the choices the papers leave open.
 */
#include "lib/rules/mcf.h"

typedef struct romma {
    mcf_vec d;  /* u's direction (naromma: v), unit norm once learning started */
    double mag; /* ||u|| (naromma: l*, the same by Theorem 7), 0 before the first update */
} romma;

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    romma *p = state;
    (void)err;
    p->mag = 0;
    return mcf_init(&p->d, ctx, false);
}

static void destroy(void *state)
{
    romma *p = state;
    pc_wvec_free(&p->d.w);
}

static double score(const void *state, const pc_svec *x)
{
    const romma *p = state;
    return mcf_dir_score(&p->d, p->mag, x);
}

/* u = y x/||x||^2: ROMMA's first update, aromma's Type II (naromma's
 * v = y x, l* = 1/||x||).  fresh: u is still the zero vector of init. */
static bool reset(romma *p, const pc_svec *x, int y, bool fresh)
{
    mcf_dir_set(&p->d, y, x, fresh);
    p->mag = 1 / sqrt(x->norm2);
    return true;
}

static bool update_romma(void *state, const pc_svec *x, int y, double s)
{
    romma *p = state;
    if (y * s > 0 || !(x->norm2 > 0)) /* conservative: a <= 0 only */
        return false;
    if (!(p->mag > 0)) /* u = 0: the first update */
        return reset(p, x, y, true);
    return mcf_romma_step(&p->d, &p->mag, x, y, s); /* seed 000, eq. 25-26 */
}

static bool update_aromma(void *state, const pc_svec *x, int y, double s)
{
    romma *p = state;
    double a = y * s;
    if (a >= 1 || !(x->norm2 > 0)) /* Type I (seed 000 Table 1) */
        return false;
    bool fresh = !(p->mag > 0); /* u = 0: Type II, u_1 = y x/||x||^2 (Theorem 7) */
    if (!fresh && mcf_parallel(mcf_cos(s, p->mag, sqrt(x->norm2))))
        return false; /* seed 000 Fig. 1 step 4 */
    if (fresh || a >= x->norm2 * p->mag * p->mag) /* Type II (overflow: inf, Type III) */
        return reset(p, x, y, fresh);
    return mcf_romma_step(&p->d, &p->mag, x, y, s); /* Type III, seed 000 eq. 25-26 */
}

static bool update_naromma(void *state, const pc_svec *x, int y, double s)
{
    romma *p = state;
    if (!(x->norm2 > 0))
        return false;
    double nx = sqrt(x->norm2), l = p->mag;
    if (!(l > 0)) /* Fig. 1 step 1: v = y x, l* = 1/||x|| */
        return reset(p, x, y, true);
    double gamma = y * s / l; /* eq. 7: y v.x/||v||, as s = l* v.x/||v|| */
    double cs = mcf_cos(gamma, 1, nx);
    if (mcf_parallel(cs) || !isfinite(gamma)) /* Fig. 1 step 4 */
        return false;
    double lg = l * gamma;
    if (lg >= 1) /* Type I, step 5 */
        return false;
    double den = l * nx - cs; /* (l* ||x||^2 - gamma)/||x|| > 0 in Type III */
    if (lg >= x->norm2 * l * l || !(den > 0)) /* Type II, step 6 (boundary: III -> II) */
        return reset(p, x, y, false);
    /* Type III, step 7.2: v += ||v|| (1 - l* gamma)/(l* ||x||^2 - gamma) y x */
    double beta = y * ((1 - lg) / nx) / den;
    double t = (lg - 1) / (nx * sqrt(mcf_sin2(cs)));
    double l2 = hypot(l, t); /* eq. 22, Type III */
    if (!isfinite(beta) || !(l2 <= MCF_NORM_MAX))
        return false; /* beyond double range: keep the current hypothesis */
    mcf_dir_step(&p->d, beta, x);
    p->mag = l2;
    return true;
}

static double weight(const void *state, uint32_t i)
{
    const romma *p = state;
    return mcf_dir_weight(&p->d, p->mag, i);
}

static void describe(const void *state, pc_learner_info *info)
{
    const romma *p = state;
    info->norm = p->mag;
    /* Every seen example satisfies y u*.x >= 1 for u* = w/gamma of any unit
     * separator w of margin gamma, and u is the shortest vector of a set that
     * contains them all: gamma <= 1/||u|| (Li and Long 2002).  For naromma,
     * the same from cos(theta) >= gamma l* (Lemma 6) and cos <= 1. */
    if (p->mag > 0)
        info->margin = 1 / p->mag;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const romma *p = state;
    mcf_encode_with(&p->d, p->mag, w);
    return PC_OK;
}

/* mcf.h checks the direction's sum against its entries.  Neither a unit
 * direction nor ||u|| <= MCF_NORM_MAX is an invariant to check: an example
 * whose ||x||^2 is subnormal resets u to a direction rounded far from unit
 * length and a magnitude 1/||x|| up to 4.5e161, and such models must load. */
static pc_status decode(void *state, pc_reader *r)
{
    romma *p = state;
    return mcf_decode_with(&p->d, &p->mag, r);
}

#define ROMMA_COMMON                                                                               \
    .flags = PC_RULE_CHECKED_DECODE, .params = NULL, .nparams = 0, .state_size = sizeof(romma),   \
    .init = init,                                                                                  \
    .destroy = destroy, .score = score, .weight = weight, .describe = describe, .encode = encode,  \
    .decode = decode

const pc_rule pc_rule_romma = {
    .name = "romma",
    .summary = "ROMMA, relaxed online maximum margin, conservative (seed 004 benchmark, seed 000 eq. 25-26)",
    .update = update_romma,
    ROMMA_COMMON,
};

const pc_rule pc_rule_aromma = {
    .name = "aromma",
    .summary = "aggressive ROMMA: updates whenever y(u.x) < 1, Types I-III (seed 000 Table 1)",
    .update = update_aromma,
    ROMMA_COMMON,
};

const pc_rule pc_rule_naromma = {
    .name = "naromma",
    .summary = "NAROMMA: aggressive ROMMA from the maximum cosine framework (seed 000 Fig. 1, Table 2)",
    .update = update_naromma,
    ROMMA_COMMON,
};
