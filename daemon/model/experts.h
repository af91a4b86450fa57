/* experts.h - seed 001's prediction with expert advice over a model's
 * champion and challengers (docs/algorithms.md, "Experts").
 *
 * The experts are the champion (expert 0) and its challengers (1..n-1): each
 * learns every label and makes its own progressive prediction.  The state is
 * only counts, so snapshots, journal replays and replicas give the same
 * weights and the same draws bit for bit: expert i's weight is
 * (1 - eta)^m_i / sum_j (1 - eta)^m_j, m_i its mistakes (seed 001, WMA and
 * RWMA: every expert that errs has its weight multiplied by 1 - eta).
 * RWMA's draw in round t is a pure function of (seed, t): predict between
 * two labels follows the expert the next label will be scored on. */
#ifndef PCD_EXPERTS_H
#define PCD_EXPERTS_H

#include "lib/perceptron.h"
#include "proto/proto.h"

#define PCD_EXPERTS_MAX (1 + PCP_CHALLENGERS_MAX)

typedef struct pcd_experts {
    pcp_experts_config cfg;
    uint64_t rounds;                  /* labels the experts were scored on */
    uint64_t mistakes;                /* the combined answer's, progressive */
    uint64_t wrong[PCD_EXPERTS_MAX];  /* each expert's progressive mistakes; 0: the champion */
} pcd_experts;

/* The penalty in round t (1-based) among n experts: cfg.eta, or under the
 * schedule (eta 0) min(1/2, sqrt(ln n / t)). */
double pcd_experts_eta(const pcd_experts *x, size_t n, uint64_t t);
/* Each expert's weight now (the next round's), summing to 1, into w[0..n). */
void pcd_experts_weights(const pcd_experts *x, size_t n, double *w);
/* The combined answer from the experts' predictions p[0..n) by the weights
 * now.  WMA: the answer (binary: +1/-1; multiclass: the class) with the
 * largest total weight, ties going to the answer of the lowest-numbered
 * expert; its score is the weighted vote (binary: sum w_i y_i in [-1, 1];
 * multiclass: the answer's share of the weight).  RWMA: the prediction of
 * the expert drawn for this round, as it made it.  *who (may be NULL): the
 * expert drawn (RWMA) or the first expert that gave the answer (WMA). */
pc_prediction pcd_experts_answer(const pcd_experts *x, size_t n, const pc_prediction *p,
                                 bool multiclass, size_t *who);
/* One round: the experts predicted p[0..n) and erred where wrong[] says.
 * Scores the combined answer (into *said, may be NULL), then penalises.
 * Returns whether the combined answer was wrong: it is one of the experts'
 * answers, so it is wrong exactly when the expert it came from was. */
bool pcd_experts_learn(pcd_experts *x, size_t n, const pc_prediction *p, const bool *wrong,
                       bool multiclass, pc_prediction *said);
/* Experts i and j trade places (a promotion swaps champion and challenger). */
void pcd_experts_swap(pcd_experts *x, size_t i, size_t j);
/* Seed 001's bound on the mistakes so far, against the best expert:
 * WMA 2 (1 + eta) m* + 2 ln n / eta, RWMA (in expectation) (1 + eta) m* +
 * ln n / eta.  NAN under the schedule, for which the seed states only the
 * order (no-regret, O(sqrt(T ln n))). */
double pcd_experts_bound(const pcd_experts *x, size_t n);
/* The best expert's mistakes so far (m*). */
uint64_t pcd_experts_best(const pcd_experts *x, size_t n);

#endif
