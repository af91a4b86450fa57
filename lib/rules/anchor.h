/* anchor.h - examples measured from a reference point, for the translation-
 * invariant rules (omm, omm-naive, pumma).
 *
 * Those rules only ever use differences of examples (seed 004 Remark 3.4),
 * but computed from raw coordinates the differences cancel: with features
 * around ||u|| = 1e12 and a spread of 1, x.v - a.v loses 12 of the 16 digits
 * a double has.  So such a rule keeps its state relative to an anchor a, an
 * example (omm moves it, the others keep their first), and sees every
 * example as x - a, formed coordinate by coordinate (exact whenever x and a are close, and
 * bit-identical for a stream and its translate whenever x + u is exact).
 *
 * Cost: O(nnz(x) + nnz(a)) per example, a merge of two sorted index lists
 * (the rules set PC_RULE_SORTED).  a is one example, so this is O(nnz) in the
 * sense of seed 000's requirement 1: it does not grow with the dimension or
 * the stream.  The anchor is a choice, not part of the algorithm: an empty
 * anchor (the origin) is the classical computation, which is what a snapshot
 * written before anchors restores to.
 */
#ifndef PC_ANCHOR_H
#define PC_ANCHOR_H

#include "lib/bytes.h"
#include "lib/perceptron.h"
#include "lib/wvec.h"

/* The struct fields the three rules share: their flags (a bias of their
 * own, the origin a point like any other, indices increasing), their
 * parameter table `params` and every operation, under the names each file
 * gives them. */
#define PC_ANCHORED_RULE_OPS                                                                       \
    .flags = PC_RULE_OWN_BIAS | PC_RULE_ORIGIN | PC_RULE_SORTED, PC_RULE_PARAMS(params),          \
    .init = init, .destroy = destroy, .score = score, .update = update, .weight = weight,          \
    .bias = bias, .describe = describe, .encode = encode, .decode = decode, .bytes = bytes

typedef struct pc_anchor {
    pc_svec a; /* the anchor, indices increasing; empty: the origin */
    pc_svec d; /* scratch for x - a (pc_anchor_diff) */
} pc_anchor;

void pc_anchor_free(pc_anchor *an);
/* Room to make x the anchor and to form x - a: false when out of memory
 * (nothing changed).  Call before pc_anchor_set and pc_anchor_diff. */
bool pc_anchor_reserve(pc_anchor *an, const pc_svec *x);
void pc_anchor_set(pc_anchor *an, const pc_svec *x);
/* x - a (indices increasing, zeros dropped, norm2 set) in the anchor's
 * scratch, valid until the next call. */
const pc_svec *pc_anchor_diff(pc_anchor *an, const pc_svec *x);
/* The same x - a, and w0.(x - a), w1.(x - a) (w1 may be NULL) taken in the
 * same pass: the bits pc_anchor_dots and pc_anchor_dots_d give, for a rule
 * that needs both x - a and its dots (omm's update). */
const pc_svec *pc_anchor_diff_dots(pc_anchor *an, const pc_svec *x, const pc_wvec *w0,
                                   const pc_wvec *w1, double *d0, double *d1);
/* w0.(x - a), w1.(x - a) (w1 may be NULL), and ||x - a||^2, in one merge
 * without the anchor's scratch (for score).  The sums are taken over the
 * entries of x - a in index order, in four interleaved partial sums, so
 * they depend on those entries alone: pc_anchor_dots_d on the d that
 * pc_anchor_diff formed gives the same bits, and so does a translate. */
void pc_anchor_dots(const pc_anchor *an, const pc_wvec *w0, const pc_wvec *w1, const pc_svec *x,
                    double *d0, double *d1, double *norm2);
/* The same sums over a d from pc_anchor_diff (its norm2 is the third). */
void pc_anchor_dots_d(const pc_svec *d, const pc_wvec *w0, const pc_wvec *w1, double *d0,
                      double *d1);
/* out = x - y for two vectors of increasing indices (y as the anchor would
 * be), zeros dropped, norm2 set; false when out could not grow. */
bool pc_anchor_sub(const pc_svec *x, const pc_svec *y, pc_svec *out);
/* sum_i get(arg, i) (x_i - a_i) in index order, for a rule whose weights
 * are not a wvec (omm_naive.c). */
double pc_anchor_dot_fn(const pc_anchor *an, const pc_svec *x,
                        double (*get)(const void *arg, uint32_t i), const void *arg);
/* Heap bytes held. */
size_t pc_anchor_bytes(const pc_anchor *an);
/* w.a */
double pc_anchor_dot_a(const pc_anchor *an, const pc_wvec *w);
/* u32 count, then (u32 index, f64 value) pairs. */
void pc_anchor_encode(const pc_anchor *an, pc_writer *w);
/* False on malformed bytes (an index >= dim or not increasing, a value not
 * finite) or, with r->nomem set, when out of memory. */
bool pc_anchor_decode(pc_anchor *an, pc_reader *r, uint32_t dim);
#endif
