/* hints.h - label hints: whether the label of a prediction is worth asking
 * for, by the selective sampling rule of Cesa-Bianchi, Gentile and Zaniboni
 * (2006, "Worst-case analysis of selective sampling for linear
 * classification"): ask with probability b / (b + |margin|), so a confident
 * prediction is seldom worth a label and an uncertain one nearly always
 * (docs/algorithms.md, "Label hints").
 *
 * The draw is a pure function of the model's seed, the example and the
 * number of labels the model has learned, and the score is the champion's,
 * itself a function of that state: a prediction, the label of the same
 * example next, a journal replay and every replica decide alike, with no
 * state of their own to keep but counts.  The settings are the join
 * config's (hints.b, hints.seed: pending.h keeps them), the counts the join
 * statistics. */
#ifndef PCD_HINTS_H
#define PCD_HINTS_H

#include "daemon/model/pending.h"
#include "daemon/model/registry.h"

typedef struct pcd_hint {
    bool ask;
    double probability; /* b / (b + |score|) */
} pcd_hint;

/* Whether e gives hints (hints.b > 0).  Inline: every label and predict
 * asks, and a model without hints need not enter this module for it. */
static inline bool pcd_hints_on(const pcd_model *e)
{
    return e->pending && e->pending->cfg.hints_b > 0;
}
/* The hint for x, predicted p by e's champion after it learned `examples`
 * labels.  The margin is |score| (binary) or the predicted class's score
 * less the runner-up's (multiclass; 0 before two classes: always ask). */
pcd_hint pcd_hints_decide(const pcd_model *e, const pc_svec *x, const pc_prediction *p,
                          uint64_t examples);
/* pcd_hints_learned's count, for a model with hints. */
void pcd_hints_count(pcd_model *e, const pc_svec *x, const pc_prediction *p, uint64_t ago,
                     bool mistake);
/* A label of x learned, `ago` labels ago (1: the last one; a batch's
 * first of n, n): counts it, as asked for or not (the hint its prediction p
 * would have had: the same state, the same draw) and whether that
 * prediction was a mistake.  No-op without hints, decided here so that
 * every label need not enter hints.c. */
static inline void pcd_hints_learned(pcd_model *e, const pc_svec *x, const pc_prediction *p,
                                     uint64_t ago, bool mistake)
{
    if (pcd_hints_on(e))
        pcd_hints_count(e, x, p, ago, mistake);
}
/* The examples e's champion has learned (the draws' clock). */
uint64_t pcd_hints_clock(const pcd_model *e);

#endif
