/* wvec.h - a dense weight vector that keeps its scale and squared norm.
 *
 * w = scale * v (the sofia-ml trick): multiplying w by a constant costs O(1),
 * adding alpha*x costs O(nnz(x)), and ||w||^2 is kept as a running scalar, so
 * no rule pays O(dim) per example.  The scale is folded back into v only when
 * it drifts towards under- or overflow, which is rare (O(dim), amortised).
 *
 * Averaging (Freund and Schapire 1999, Daume's lazy form): when avg is set,
 * every add also accumulates tick*alpha*x in avg, and the average of the
 * weights after each of the `tick` examples so far is w - avg/tick.  Only for
 * vectors that are never rescaled (the additive rules).
 */
#ifndef PC_WVEC_H
#define PC_WVEC_H

#include "lib/perceptron.h"
#include "lib/bytes.h"

typedef struct pc_wvec {
    uint32_t dim;
    double *v;        /* dim entries, calloc'd: untouched pages cost no memory */
    double scale;
    double norm2;     /* ||w||^2 = scale^2 ||v||^2 */
    double *avg;      /* NULL unless averaging */
    double tick;      /* examples seen, for averaging (set by the learner) */
    /* Where v may be non-zero, for the vectors a rule resets to zero
     * (pc_wvec_track_support): every index an add found at 0 since the last
     * reset, repeats possible.  A reset then clears those entries only, a cost
     * the adds have already paid, instead of all dim.  support_lost: the list
     * would pass dim entries, could not grow, or v came from a snapshot; the
     * next reset clears all of v and starts a new list. */
    bool tracked, support_lost;
    uint32_t *support, nsupport, support_cap;
} pc_wvec;

pc_status pc_wvec_init(pc_wvec *w, uint32_t dim, bool averaged);
void pc_wvec_free(pc_wvec *w);
/* Bytes w holds (its arrays; untouched calloc pages counted too: the bound). */
size_t pc_wvec_bytes(const pc_wvec *w);
/* w = 0: O(dim), or O(entries touched since the last reset) when tracked. */
void pc_wvec_zero(pc_wvec *w);
/* Makes pc_wvec_zero cost what the adds since the last reset touched (up to
 * 4 bytes an index touched).  For a rule whose resets could otherwise make
 * one example cost O(dim). */
void pc_wvec_track_support(pc_wvec *w);

static inline double pc_wvec_dot(const pc_wvec *w, const pc_svec *x)
{
    double s = 0;
    for (uint32_t k = 0; k < x->n; k++)
        s += w->v[x->idx[k]] * x->val[k];
    return w->scale * s;
}
static inline double pc_wvec_get(const pc_wvec *w, uint32_t i)
{
    return w->scale * w->v[i];
}

/* w += alpha x; returns w.x before the add (it is needed for the norm). */
double pc_wvec_add(pc_wvec *w, double alpha, const pc_svec *x);
/* w *= c.  c = 0 resets to zero in O(dim). */
void pc_wvec_scale(pc_wvec *w, double c);
/* w = c w + d x in O(nnz). */
void pc_wvec_scale_add(pc_wvec *w, double c, double d, const pc_svec *x);
/* The averaged weights' dot product with x (requires avg). */
double pc_wvec_dot_avg(const pc_wvec *w, const pc_svec *x);
double pc_wvec_get_avg(const pc_wvec *w, uint32_t i);
/* Encode / decode v, scale, norm2, avg and tick as they are (bit-exact).
 * decode expects a wvec initialised for the same dim and averaging. */
void pc_wvec_encode(const pc_wvec *w, pc_writer *wr);
bool pc_wvec_decode(pc_wvec *w, pc_reader *r);
#endif
