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

#include "lib/bytes.h"
#include "lib/perceptron.h"
#include "lib/wstore.h"

typedef struct pc_wvec {
    uint32_t dim;
    pc_wstore s;      /* v (and avg when averaging): dense or sparse (wstore.h) */
    double scale;
    double norm2;     /* ||w||^2 = scale^2 ||v||^2 */
    double tick;      /* examples seen, for averaging (set by the learner) */
    uint64_t dropped; /* adds skipped: a sparse table could not grow (out of memory) */
    uint64_t overflowed; /* adds skipped: w or ||w||^2 would have left the double's range,
                            or a float32 entry float's */
    /* Where v may be non-zero, for the dense vectors a rule resets to zero
     * (pc_wvec_track_support): every index an add found at 0 since the last
     * reset, repeats possible.  A reset then clears those entries only, a cost
     * the adds have already paid, instead of all dim.  support_lost: the list
     * would pass dim entries, could not grow, or v came from a snapshot; the
     * next reset clears all of v and starts a new list.  A sparse table
     * needs no list: it holds exactly the touched entries. */
    bool tracked, support_lost;
    uint32_t *support, nsupport, support_cap;
} pc_wvec;

/* A vector of dim weights in storage, entries of that width; averaged: keep
 * the average's accumulator too.  Rules call pc_wvec_init (rule.h), which
 * reads these from their context. */
pc_status pc_wvec_init_store(pc_wvec *w, uint32_t dim, pc_storage storage, pc_weights weights,
                             bool averaged);
void pc_wvec_free(pc_wvec *w);
/* w = 0: O(dim), or O(entries touched since the last reset) when tracked or
 * sparse. */
void pc_wvec_zero(pc_wvec *w);
/* Makes pc_wvec_zero cost what the adds since the last reset touched (up to
 * 4 bytes an index touched).  For a rule whose resets could otherwise make
 * one example cost O(dim). */
void pc_wvec_track_support(pc_wvec *w);
/* Heap bytes held. */
size_t pc_wvec_bytes(const pc_wvec *w);

/* The stored entry v[i] (w[i] = scale * v[i]). */
static inline double pc_wvec_raw(const pc_wvec *w, uint32_t i)
{
    return pc_wstore_get(&w->s, i);
}

double pc_wvec_dot_sparse(const pc_wvec *w, const pc_svec *x);

static inline double pc_wvec_dot(const pc_wvec *w, const pc_svec *x)
{
    const double *v = w->s.v;
    const float *f = w->s.f;
    double s = 0;
    if (v) {
        for (uint32_t k = 0; k < x->n; k++)
            s += v[x->idx[k]] * x->val[k];
    } else if (f) {
        for (uint32_t k = 0; k < x->n; k++)
            s += f[x->idx[k]] * x->val[k];
    } else {
        return pc_wvec_dot_sparse(w, x);
    }
    return w->scale * s;
}
static inline double pc_wvec_get(const pc_wvec *w, uint32_t i)
{
    return w->scale * pc_wvec_raw(w, i);
}

/* w += alpha x; returns w.x before the add (it is needed for the norm).  A
 * sparse vector that cannot grow its table skips the add (counted in
 * dropped), and so does any add that would take w or ||w||^2 past the
 * double's range, or a float32 entry past float's (counted in overflowed):
 * w and its norm stay as they were. */
double pc_wvec_add(pc_wvec *w, double alpha, const pc_svec *x);
/* w *= c.  c = 0 resets to zero (pc_wvec_zero). */
void pc_wvec_scale(pc_wvec *w, double c);
/* w = c w + d x in O(nnz). */
void pc_wvec_scale_add(pc_wvec *w, double c, double d, const pc_svec *x);
/* The stored entries (and the average's) times 2^e, exactly; scale unchanged. */
void pc_wvec_ldexp(pc_wvec *w, int e);
/* The averaged weights' dot product with x (requires averaging). */
double pc_wvec_dot_avg(const pc_wvec *w, const pc_svec *x);
double pc_wvec_get_avg(const pc_wvec *w, uint32_t i);
/* Encode / decode v, scale, norm2, avg and tick as they are (bit-exact, the
 * same bytes in every storage).  decode expects a wvec initialised for the
 * same dim and averaging. */
void pc_wvec_encode(const pc_wvec *w, pc_writer *wr);
bool pc_wvec_decode(pc_wvec *w, pc_reader *r);
#endif
