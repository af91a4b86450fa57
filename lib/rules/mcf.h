/* mcf.h - numeric helpers shared by the seed 000 rules (Maximum Cosine
 * Framework): romma.c (romma, aromma, naromma) and mcp.c (cmcp, mcp).  Static
 * inline only: the vector with an exact norm, the cosines, the parallel test
 * (which must agree between aromma and naromma, Theorem 7 making them
 * equivalent) and the two families' steps, in one place.
 *
 * Why a vector with an exact norm (mcf_vec).  Every rule here reads ||w|| in
 * its update (step sizes, conditions, the normalisation), and a running
 * ||w||^2 kept by algebra (||w + a x||^2 = ||w||^2 + 2a w.x + a^2||x||^2, or
 * seed 000 eq. 31) drifts away from the vector actually stored: after a step
 * that nearly cancels w the carried rounding is amplified by ||w||^2/||w'||^2.
 * On noisy streams, where these rules keep taking such steps, the drift
 * compounds (measured: the running norm off by a factor 100 for cmcp and 1e7
 * for aggressive ROMMA after 50000 examples), and since the error feeds the
 * next step sizes the rule no longer follows the paper.  mcf_vec carries the
 * sum of the squares of the stored entries in double-double (ddsum.h), updated
 * from the touched entries only (O(nnz)), with a bound on its accumulated error: it
 * stays within 2^-50 of the entries' own sum, as a dense recount would, and the
 * rules then follow a quad precision implementation to 1e-13 where the running
 * norm had lost every digit.  When the entries shrink so much (cancelling
 * steps) that the bound passes 2^-50 of the sum, the sum is recounted: O(dim),
 * measured once or twice per 10^5 examples on 10% label noise, never on the
 * benchmark's stream.
 *
 * Every other quantity is formed from norms and cosines rather than products
 * of squared norms: the contract streams examples of norm 1e-150 .. 1e150.
 */
#ifndef PC_RULES_MCF_H
#define PC_RULES_MCF_H

#include "lib/rule.h"
#include "lib/rules/ddsum.h"

#include <math.h>

/* x counts as parallel to w when sin^2 of their angle is at most this (an angle
 * of about 1e-5 rad).  Seed 000 Fig. 1 step 4 skips exactly parallel examples:
 * the update cannot turn w and the ROMMA denominators
 * ||x||^2||w||^2 - (w.x)^2 = ||x||^2||w||^2 sin^2 vanish.  In floating point the
 * cosine of two parallel vectors is 1 only up to rounding, hence a tolerance. */
#define MCF_PARALLEL_SIN2 1e-10

/* cmcp and mcp keep ||w|| within [2^-MCF_RANGE, 2^MCF_RANGE]; float32
 * entries (range 2^+-127) within 2^+-MCF_RANGE_F32. */
#define MCF_RANGE 200
#define MCF_RANGE_F32 60

static inline int mcf_range(const pc_wvec *w)
{
    return w->s.width == PC_WEIGHTS_FLOAT32 ? MCF_RANGE_F32 : MCF_RANGE;
}

/* The ROMMA family refuses a hypothesis longer than this (its squared norm
 * would near the double range, and so would its scores on long examples). */
#define MCF_NORM_MAX 1e150

/* ---- a weight vector with an exact sum of squares ----------------------- */

typedef struct mcf_vec {
    pc_wvec w;  /* w.norm2 = scale^2 r after every change */
    pc_ddsum r; /* sum of the stored entries v[i]^2 (ddsum.h) */
} mcf_vec;

/* Sum of v[i]^2 over the indices of x, in double-double. */
static inline void mcf_touched(const pc_wvec *w, const pc_svec *x, double *hi, double *lo)
{
    *hi = *lo = 0;
    for (uint32_t k = 0; k < x->n; k++)
        pc_dd_add_square(hi, lo, pc_wvec_raw(w, x->idx[k]));
}

static inline void mcf_sync(mcf_vec *m)
{
    double r = pc_ddsum_value(&m->r);
    m->w.norm2 = r > 0 ? m->w.scale * m->w.scale * r : 0;
}

static inline void mcf_add_square(void *arg, uint32_t i, double v)
{
    pc_ddsum *r = arg;
    (void)i;
    pc_dd_add_square(&r->hi, &r->lo, v);
}

/* Recount the sum of squares over every entry, in index order whatever the
 * storage (the same rounding): O(dim) dense, O(nnz log nnz) sparse, after
 * the wvec folded its scale into the entries (rare). */
static inline void mcf_recount(mcf_vec *m)
{
    pc_ddsum_clear(&m->r);
    pc_wstore_visit(&m->w.s, mcf_add_square, &m->r);
    mcf_sync(m);
}

static inline pc_status mcf_init(mcf_vec *m, const pc_rule_ctx *ctx, bool averaged)
{
    pc_ddsum_clear(&m->r);
    pc_status st = pc_wvec_init(&m->w, ctx, averaged);
    if (st == PC_OK)
        pc_wvec_track_support(&m->w); /* mcf_zero clears what was touched, not all dim */
    return st;
}

/* w += alpha x: O(nnz), the sum of squares moved by the touched entries
 * (each double-double operation errs by at most 2^-104 of its operands). */
static inline void mcf_add(mcf_vec *m, double alpha, const pc_svec *x)
{
    double oh, ol, nh, nl;
    mcf_touched(&m->w, x, &oh, &ol);
    pc_wvec_add(&m->w, alpha, x);
    mcf_touched(&m->w, x, &nh, &nl);
    if (!pc_ddsum_move(&m->r, oh, ol, nh, nl))
        mcf_recount(m); /* the entries cancelled down to the error: rare, O(dim) */
    else
        mcf_sync(m);
}

/* w *= c (c != 0): O(1), the entries do not move unless the wvec renormalises. */
static inline void mcf_scale(mcf_vec *m, double c)
{
    double expect = m->w.scale * c;
    pc_wvec_scale(&m->w, c);
    if (m->w.scale != expect)
        mcf_recount(m);
    else
        mcf_sync(m);
}

/* w = 0: O(entries touched since the last reset), rare (see mcf_dir_set). */
static inline void mcf_zero(mcf_vec *m)
{
    pc_wvec_zero(&m->w);
    pc_ddsum_clear(&m->r);
}

/* A decoded mcf_vec is one the steps above could have left: its sum of
 * squares is the entries' own, as a recount finds it, and ||w||^2 is what
 * mcf_sync makes of it.  A sum that disagrees with its entries (a damaged
 * or crafted snapshot that passed its CRC) would feed wrong norms to every
 * later step: measured, an aromma model whose stored sum was not its
 * vector's learned one example into a NaN state it could no longer save
 * (tests/fuzz/regressions/snapshot/aromma-learned-does-not-decode).
 * The bound: the carried error (r.err, kept under 2^-50 of the sum), plus
 * 2^-20 of the sum for what a recount does not carry into err (each recount
 * errs by at most 2^-104 per entry, 2^-76 of the sum for 2^28 entries, and
 * the sum may shrink by up to 2^50 after one before err forces the next), so
 * that no vector the steps wrote is refused.  O(dim), at load only. */
static inline bool mcf_consistent(const mcf_vec *m)
{
    pc_ddsum c;
    pc_ddsum_clear(&c);
    (void)pc_wstore_visit(&m->w.s, mcf_add_square, &c); /* any order is within the bound */
    double diff = fabs((m->r.hi - c.hi) + (m->r.lo - c.lo));
    if (!(diff <= m->r.err + 0x1p-20 * c.hi))
        return false;
    double r = pc_ddsum_value(&m->r);
    return m->w.norm2 == (r > 0 ? m->w.scale * m->w.scale * r : 0);
}

static inline void mcf_encode(const mcf_vec *m, pc_writer *wr)
{
    pc_wvec_encode(&m->w, wr);
    pc_writer_f64(wr, m->r.hi);
    pc_writer_f64(wr, m->r.lo);
    pc_writer_f64(wr, m->r.err);
}

static inline bool mcf_decode(mcf_vec *m, pc_reader *r)
{
    if (!pc_wvec_decode(&m->w, r))
        return false;
    m->r.hi = pc_reader_f64(r);
    m->r.lo = pc_reader_f64(r);
    m->r.err = pc_reader_f64(r);
    return !r->failed && pc_ddsum_valid(&m->r) && mcf_consistent(m);
}

/* Both families' state is an mcf_vec and a scalar >= 0 (ROMMA's ||u||,
 * NAROMMA's l*, the MCPs' l), encoded after it. */
static inline void mcf_encode_with(const mcf_vec *m, double t, pc_writer *wr)
{
    mcf_encode(m, wr);
    pc_writer_f64(wr, t);
}

static inline pc_status mcf_decode_with(mcf_vec *m, double *t, pc_reader *r)
{
    if (!mcf_decode(m, r))
        return PC_EFORMAT;
    *t = pc_reader_f64(r);
    return !r->failed && *t >= 0 && isfinite(*t) ? PC_OK : PC_EFORMAT;
}

/* ---- cosines ------------------------------------------------------------ */

/* The cosine s/(nw nx) clamped to [-1, 1] (rounding can step outside). */
static inline double mcf_cos(double s, double nw, double nx)
{
    double c = s / nw / nx;
    return c > 1 ? 1 : c < -1 ? -1 : c;
}

/* sin^2 = 1 - cos^2, in the form that keeps its precision near |cos| = 1. */
static inline double mcf_sin2(double cs)
{
    double a = fabs(cs);
    return (1 - a) * (1 + a);
}

static inline bool mcf_parallel(double cs)
{
    return !(mcf_sin2(cs) > MCF_PARALLEL_SIN2);
}

/* ---- the ROMMA family: u = mag * d/||d||, d a unit direction ------------- */

/* The ROMMA family's hypothesis is a magnitude (||u||, or NAROMMA's l*) times
 * a unit direction d: every update rescales u, and only so are both its norm
 * and its direction exact (a stored u with a running norm drifts, see above).
 * The score is mag d.x/||d||: O(nnz), with the scale trick for d. */
static inline double mcf_dir_score(const mcf_vec *d, double mag, const pc_svec *x)
{
    return d->w.norm2 > 0 ? mag * (pc_wvec_dot(&d->w, x) / sqrt(d->w.norm2)) : 0;
}

static inline double mcf_dir_weight(const mcf_vec *d, double mag, uint32_t i)
{
    return d->w.norm2 > 0 ? mag * (pc_wvec_get(&d->w, i) / sqrt(d->w.norm2)) : 0;
}

/* d = y x/||x||.  From a non-zero d this is a reset (O(entries touched since
 * the last one)); in the ROMMA family it stays rare: ||u|| never decreases
 * and a Type II needs ||x|| < 1/||u||, i.e. an example strictly shorter than
 * the last reset's.
 * fresh: d is still the zero vector of init. */
static inline void mcf_dir_set(mcf_vec *d, int y, const pc_svec *x, bool fresh)
{
    if (!fresh)
        mcf_zero(d);
    mcf_add(d, y / sqrt(x->norm2), x);
}

/* d = (d/||d|| + beta x) normalised: the direction of u + (beta ||u||) x. */
static inline void mcf_dir_step(mcf_vec *d, double beta, const pc_svec *x)
{
    mcf_add(d, beta * sqrt(d->w.norm2), x);
    if (d->w.norm2 > 0)
        mcf_scale(d, 1 / sqrt(d->w.norm2));
}

/* ROMMA's step u' = c u + d x (seed 000 eq. 25-26, Li and Long 2002) on
 * u = *nu * dir, for y = +-1 and s = u.x, u != 0.  Returns false (no change)
 * when x is parallel to u.  With r = ||x|| ||u|| and cs = s/r, eq. 25-26 read
 *   c = (1 - y cs / r) / sin^2,   d = (y - s) / (||x||^2 sin^2),
 * (no product of squared norms), so u' = c ||u|| (dir + d/(c ||u||) x), and
 *   ||u'||^2 = ||u||^2 + (1 - y s)^2 / (||x||^2 sin^2)
 * (seed 000 eq. 31, whose l* is ||u|| and gamma is y s/||u||).  c > 0 here:
 * y s < ||x||^2 ||u||^2 on a mistake and in a Type III. */
static inline bool mcf_romma_step(mcf_vec *dir, double *nu, const pc_svec *x, int y, double s)
{
    double nx = sqrt(x->norm2), r = nx * *nu;
    if (!(r > 0) || !isfinite(s))
        return false;
    double cs = mcf_cos(s, *nu, nx);
    if (mcf_parallel(cs))
        return false;
    double sin2 = mcf_sin2(cs);
    double c = (1 - y * cs / r) / sin2;  /* seed 000, eq. 25 */
    double d = (y - s) / nx / nx / sin2; /* seed 000, eq. 26 */
    double t = (1 - y * s) / (nx * sqrt(sin2));
    double nu2 = hypot(*nu, t);          /* seed 000, eq. 31 */
    double beta = d / (c * *nu);
    if (!(c > 0) || !isfinite(beta) || !(nu2 <= MCF_NORM_MAX))
        return false; /* beyond double range: keep the current hypothesis */
    mcf_dir_step(dir, beta, x);
    *nu = nu2;
    return true;
}

/* ---- cmcp and mcp: a literal, additive w --------------------------------- */

/* The cmcp/mcp step w += (||w|| / (l ||x||^2)) y x (seed 000 eq. 38 and 41),
 * with nw = ||w|| > 0, nx = ||x||, cs = s/(nw nx).  Both rules are invariant to
 * the scale of w (the step is proportional to ||w|| and the conditions compare
 * w.x with ||w||), but one step multiplies ||w|| by rho = sqrt(1 + 2 y cs q + q^2),
 * q = 1/(l ||x||), which reaches 1e150 when a short example follows long ones.
 * So when ||w'|| would leave [2^-MCF_RANGE, 2^MCF_RANGE], w and its running
 * average are first multiplied by a power of two, entry by entry (O(dim), rare;
 * the wvec scale stays 1, so the stored entries are w's own): exact, and the
 * same as running the whole history at that scale, so predictions and later
 * updates are unchanged.  q is finite on every stream (l ||x|| >= the
 * smallest ||x|| over the largest: 2^-537, the least norm whose square is
 * not 0, over 2^81, or about 1 when a bias value dominates both), but past
 * 1e154 its square is not: log2(rho) is then log2|e|, to the last bit.
 * Returns false, changing nothing, when q is not finite, which only a state
 * no stream leaves can cause (l near 0: a damaged snapshot's,
 * tests/fuzz/regressions/snapshot/mcp-l-subnormal). */
static inline bool mcf_mcp_step(mcf_vec *w, const pc_svec *x, int y, double l, double nw,
                                double nx, double cs)
{
    double q = 1 / (l * nx);
    if (!isfinite(q))
        return false;
    double e = y * cs + q;
    double rho2 = e * e + mcf_sin2(cs); /* = 1 + 2 y cs q + q^2 without cancellation */
    double log2n = log2(nw) + (isfinite(rho2) ? 0.5 * log2(rho2) : log2(fabs(e)));
    if (!(fabs(log2n) <= mcf_range(&w->w))) {
        int ex = -(int)lround(log2n);
        pc_wvec_ldexp(&w->w, ex);
        /* Exact, but for entries it takes below the smallest double or
         * float: recounted (O(dim), as the ldexp), so that the sum stays the
         * entries' own.  A float32 w shifted by 2^-267 keeps none. */
        mcf_recount(w);
        nw = ldexp(nw, ex);
    }
    mcf_add(w, y * (nw * q / nx), x);
    return true;
}

/* The first example of cmcp and mcp: w = y x (seed 000 Lemma 8, Fig. 2 step 1),
 * at a power-of-two scale when ||x|| itself is out of range (see above). */
static inline void mcf_mcp_first(mcf_vec *w, const pc_svec *x, int y, double nx)
{
    double lg = log2(nx), k = 1;
    if (!(fabs(lg) <= mcf_range(&w->w)))
        k = ldexp(1.0, -(int)lround(lg));
    mcf_add(w, y * k, x);
}

#endif
