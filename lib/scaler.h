/* scaler.h - the scale step of feature preparation: online per-feature
 * scaling, state of a model (perceptron.h, pc_scale; docs/config.md).
 *
 * Kept per feature index in a pc_wstore of the model's storage (dense, sparse
 * or auto: the same values in each), O(nnz) per example:
 *   max: v = the largest |x_i| seen;
 *   std: v = the mean of x_i over the examples that carried it, avg = the sum
 *        of squared deviations from it (Welford's update), and a second store
 *        counts those examples;
 *   rms: v = the sum of x_i^2, and one count (examples) of every example
 *        learned, those without the feature too: the divisor sqrt(v / examples)
 *        is the root mean square of x_i over the stream, absent values 0;
 *   rms-sent: rms for the indices below dim; those from dim up (the bins,
 *        which pc_prep_space puts there) pass as they are, learning nothing.
 * A label updates the statistics with its example first, then scales it; a
 * prediction scales by what that update would give, without making it, so
 * predict(x) just before label(x) sees the same vector.
 */
#ifndef PC_SCALER_H
#define PC_SCALER_H

#include "lib/bytes.h"
#include "lib/wstore.h"

typedef struct pc_scaler {
    pc_scale mode;             /* PC_SCALE_NONE: nothing allocated */
    pc_wstore stat;            /* max, or the mean (v) and M2 (avg) */
    pc_wstore count;           /* std: examples that carried each feature */
    double examples;           /* rms: examples learned (a whole number) */
    uint32_t dim;              /* the statistics' indices: rms-sent leaves those past it at 1 */
} pc_scaler;

pc_status pc_scaler_init(pc_scaler *sc, pc_scale mode, uint32_t dim, pc_storage storage);
void pc_scaler_free(pc_scaler *sc);
void pc_scaler_clear(pc_scaler *sc);
size_t pc_scaler_bytes(const pc_scaler *sc);
/* Learns x (normalized) into the statistics and writes x scaled by them into
 * out (out->cap >= x->n; idx, val and norm2 set).  PC_ENOMEM: nothing learned. */
pc_status pc_scaler_learn(pc_scaler *sc, const pc_svec *x, pc_svec *out);
/* Writes x scaled as pc_scaler_learn would scale it, without learning it. */
void pc_scaler_apply(const pc_scaler *sc, const pc_svec *x, pc_svec *out);
/* Value x of feature i as pc_scaler_apply scales it (x itself without scaling). */
double pc_scaler_value(const pc_scaler *sc, uint32_t i, double x);
/* The divisor of feature i (0: never seen). */
double pc_scaler_divisor(const pc_scaler *sc, uint32_t i);
void pc_scaler_encode(const pc_scaler *sc, pc_writer *w);
/* Into a freshly initialised scaler of the same mode and dim; false when the
 * bytes are malformed (a statistic negative, or a count not whole; rms: a sum
 * of squares past examples x 2^128, or a feature without an example). */
bool pc_scaler_decode(pc_scaler *sc, pc_reader *r);

#endif
