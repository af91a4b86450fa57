/* mcf.h - numeric helpers shared by the seed 000 rules (Maximum Cosine
 * Framework: romma, aromma, naromma, cmcp, mcp).  Static inline only: each rule
 * file stays self-contained, but the pieces that must agree bit for bit between
 * rules (the parallel test shared by aromma and naromma, which Theorem 7 makes
 * equivalent; the ROMMA step shared by romma and aromma) live in one place.
 *
 * Every quantity is formed from norms and cosines rather than from products of
 * squared norms: the contract streams examples of norm 1e-150 .. 1e150, and
 * ||x||^2 ||w||^2 (seed 000 eq. 25-26 as written) would overflow there.
 */
#ifndef PC_RULES_MCF_H
#define PC_RULES_MCF_H

#include "lib/rule.h"

#include <math.h>

/* x counts as parallel to w when sin^2 of their angle is at most this (an angle
 * of about 1e-5 rad).  Seed 000 Fig. 1 step 4 skips exactly parallel examples:
 * the update cannot turn w and the ROMMA denominators
 * ||x||^2||w||^2 - (w.x)^2 = ||x||^2||w||^2 sin^2 vanish.  In floating point the
 * cosine of two parallel vectors is 1 only up to the rounding of the dot
 * product and of the running norm, hence a tolerance rather than "= 1". */
#define MCF_PARALLEL_SIN2 1e-10

/* The additive rules (cmcp, mcp) keep ||w|| within [2^-MCF_RANGE, 2^MCF_RANGE]. */
#define MCF_RANGE 200

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

/* u = y x / ||x||^2: ROMMA's first hypothesis and aggressive ROMMA's Type II
 * (seed 000 Table 1).  From a non-zero u this is a reset costing O(dim); it
 * stays rare because ||u|| never decreases and each Type II needs
 * ||x|| < 1/||u||, i.e. an example strictly shorter than the last reset's.
 * fresh: u is still the zero vector of init (no reset needed). */
static inline void mcf_reset(pc_wvec *u, int y, const pc_svec *x, bool fresh)
{
    if (!fresh)
        pc_wvec_zero(u);
    pc_wvec_add(u, y / x->norm2, x);
    u->norm2 = 1 / x->norm2; /* exact ||y x/||x||^2||^2, not the running sum */
}

/* ROMMA's step u = c u + d x (seed 000 eq. 25-26, Li and Long 2002), for
 * y = +-1 and s = u.x, with u != 0.  Returns false (no change) when x is
 * parallel to u.  With r = ||x|| ||u|| and cs = s/r, eq. 25-26 read
 *   c = (1 - y cs / r) / sin^2,   d = (y - s) / (||x||^2 sin^2),
 * and ||u'||^2 = ||u||^2 + (1 - y s)^2 / (||x||^2 sin^2)   (seed 000 eq. 31, whose
 * l* is ||u|| and gamma is y s/||u||), a sum of positive terms: it replaces the
 * running norm, whose generic update c^2||u||^2 + 2cd s + d^2||x||^2 cancels. */
static inline bool mcf_romma_step(pc_wvec *u, const pc_svec *x, int y, double s)
{
    double nx = sqrt(x->norm2), nu = sqrt(u->norm2), r = nx * nu;
    if (!(r > 0) || !isfinite(s))
        return false;
    double cs = mcf_cos(s, nu, nx);
    if (mcf_parallel(cs))
        return false;
    double sin2 = mcf_sin2(cs);
    double c = (1 - y * cs / r) / sin2;           /* seed 000, eq. 25 */
    double d = (y - s) / nx / nx / sin2;          /* seed 000, eq. 26 */
    double t = (1 - y * s) / (nx * sqrt(sin2));
    double norm2 = u->norm2 + t * t;              /* seed 000, eq. 31 */
    if (!isfinite(c) || !isfinite(d) || !isfinite(norm2))
        return false; /* beyond double range: keep the current hypothesis */
    pc_wvec_scale_add(u, c, d, x);
    u->norm2 = norm2;
    return true;
}

/* The cmcp/mcp step w += (||w|| / (l ||x||^2)) y x (seed 000 eq. 38 and 41),
 * with nw = ||w|| > 0, nx = ||x||, cs = y-free cosine s/(nw nx).  Both rules
 * are invariant to the scale of w (the step is proportional to ||w|| and the
 * conditions compare w.x with ||w||), but one step multiplies ||w|| by
 * rho = sqrt(1 + 2 y cs q + q^2), q = 1/(l ||x||), which reaches 1e150 when a
 * short example follows long ones.  So when ||w'|| would leave
 * [2^-MCF_RANGE, 2^MCF_RANGE], w (and its running average, O(dim), rare) is first
 * multiplied by a power of two: exact, and the same as running the whole
 * history at that scale, so predictions and later updates are unchanged. */
static inline void mcf_mcp_step(pc_wvec *w, const pc_svec *x, int y, double l, double nw,
                                double nx, double cs)
{
    double q = 1 / (l * nx);
    double e = y * cs + q;
    double rho2 = e * e + mcf_sin2(cs); /* = 1 + 2 y cs q + q^2 without cancellation */
    double log2n = log2(nw) + 0.5 * log2(rho2);
    double k = 1;
    if (!(fabs(log2n) <= MCF_RANGE)) {
        k = ldexp(1.0, -(int)lround(log2n));
        pc_wvec_scale(w, k);
        if (w->avg)
            for (uint32_t i = 0; i < w->dim; i++)
                w->avg[i] *= k;
        nw *= k;
    }
    pc_wvec_add(w, y * (nw * q / nx), x);
    w->norm2 = nw * nw * rho2; /* ||w'||^2, the cancellation-free form */
}

/* The first example of cmcp and mcp: w = y x (seed 000 Lemma 8, Fig. 2 step 1),
 * at a power-of-two scale when ||x|| itself is out of range (see above). */
static inline void mcf_mcp_first(pc_wvec *w, const pc_svec *x, int y, double nx)
{
    double lg = log2(nx), k = 1;
    if (!(fabs(lg) <= MCF_RANGE))
        k = ldexp(1.0, -(int)lround(lg));
    pc_wvec_add(w, y * k, x);
}

#endif
