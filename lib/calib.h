/* calib.h - online probability calibration of one learner's scores (Platt
 * scaling fit online), shared by model.c and codec.c, and by perceptronctl's
 * `replay --report`, which follows a new model's calibration exactly.
 *
 * p(y = +1 | s) = 1 / (1 + exp(-(a z + b))) with z = s / scale, scale the
 * root mean square of the scores seen (1 before any) (so a and b do not depend on how large
 * a rule's margins grow).  After every labelled example (a, b) take one
 * Newton step of the logistic loss on the score the model predicted with
 * *before* learning that example (progressive scores, so the fit is on unseen
 * examples), with the curvature summed under an exponential forgetting of
 * PC_CALIB_WINDOW examples: the calibration follows the model's recent
 * stream.  A ridge of PC_CALIB_RIDGE keeps the first steps bounded.
 */
#ifndef PC_CALIB_H
#define PC_CALIB_H

#include <stdint.h>

#include "lib/bytes.h"

#define PC_CALIB_WINDOW 1000.0
#define PC_CALIB_RIDGE 1.0
#define PC_CALIB_RESCALE 32

typedef struct pc_calib {
    double a, b;        /* the sigmoid's slope and offset, on z */
    double hzz, hz, h1; /* forgetful sum of p(1-p) [z^2, z, 1] */
    double ms;          /* running mean of s^2 */
    double inv;         /* 1 / scale: 1/sqrt(ms), refreshed every PC_CALIB_RESCALE
                           examples past the first ones (a sqrt per label costs) */
    uint64_t n;         /* examples seen */
} pc_calib;

/* p(y = +1) for score s; 0.5 before any example. */
double pc_calib_prob(const pc_calib *c, double s);
/* Learns from the progressive score s of an example labelled y (+1/-1). */
void pc_calib_learn(pc_calib *c, double s, int y);

void pc_calib_encode(const pc_calib *c, pc_writer *w);
/* Reads what encode wrote; the reader's failed / nonfinite flags tell (failed
 * too for a calibration no step could have left). */
void pc_calib_decode(pc_calib *c, pc_reader *r);

#endif
