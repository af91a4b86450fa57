/* challengers.h - rules learning beside a model on its own stream (see
 * challengers.c): every label the model (the champion) learns, directly or
 * joined to an event, trains each challenger too, in the same order;
 * predictions are the champion's, or with experts (experts.h) the champion's
 * and the challengers' combined.  `compare` shows them side by side with
 * McNemar's test against the champion, `promote` swaps one in. */
#ifndef PCD_CHALLENGERS_H
#define PCD_CHALLENGERS_H

#include "daemon/model/experts.h"
#include "lib/perceptron.h"
#include "proto/proto.h"

typedef struct pcd_challenger {
    pc_model *model;        /* owned */
    /* On the examples both learned, the progressive predictions that
     * disagree in correctness: the champion wrong and the challenger right
     * (b), and the reverse (c).  McNemar's test reads only these. */
    uint64_t b, c;
} pcd_challenger;

typedef struct pcd_challengers {
    size_t n;
    pcd_challenger ch[PCP_CHALLENGERS_MAX];
    pcd_experts experts;    /* expert 0 the champion, 1 + i challenger i; experts.cfg
                               also holds promote.* */
    uint64_t auto_promotions;
} pcd_challengers;

/* Builds the challengers of a champion from their specs beside the
 * champion's own config, into *out (none: NULL, no store), combined as
 * experts says (NULL: not).  PCP_E_SPEC / PCP_E_INTERNAL with err set when
 * one cannot be built. */
int pcd_challengers_create(pcd_challengers **out, const pc_model *champion,
                           const pcp_challenger *list, size_t n,
                           const pcp_experts_config *experts, pcp_error *err);
void pcd_challengers_free(pcd_challengers *cs);
/* Whether cs (may be NULL) answers predict as experts. */
bool pcd_challengers_combine(const pcd_challengers *cs);
/* The champion learned x with y (outcome o): so does every challenger of cs
 * (NULL: none), and the experts are scored.  *said (may be NULL) is what the
 * model answered for x: o, or with experts their combined outcome. */
void pcd_challengers_learn(pcd_challengers *cs, const pc_svec *x, const pc_label *y,
                           const pc_outcome *o, pc_outcome *said);
/* The same for a batch (the champion's outcomes os[0..n)); returns the
 * mistakes the model's answers made: the champion's, or the experts'. */
uint64_t pcd_challengers_learn_batch(pcd_challengers *cs, const pc_svec *xs, const pc_label *ys,
                                     size_t n, const pc_outcome *os);
/* With experts (pcd_challengers_combine): the combined prediction for x of
 * the champion and the challengers into *p, *who the expert it follows
 * (RWMA) or the first that gave it (WMA).  No class scores: the answer
 * carries the vote's (pcd_reply_experts_prediction). */
void pcd_challengers_predict(const pcd_challengers *cs, pc_model *champion,
                             const pc_svec *x, pc_prediction *p, size_t *who);
/* Challenger i becomes the champion (*champion) and the champion challenger
 * i: no state is lost.  The disagreement counts of the others start again. */
void pcd_challengers_promote(pcd_challengers *cs, pc_model **champion, size_t i);
/* With promote.auto: the challenger that has learned promote.min_examples
 * labels and that the always-valid test (below) finds better than the
 * champion at promote.confidence, the most clearly if several, is promoted
 * (pcd_challengers_promote).  Its index, or -1 when none is.  A function of
 * the counts alone: a journal replay and a replica promote at the same
 * label. */
int pcd_challengers_auto_promote(pcd_challengers *cs, pc_model **champion);
/* reset: every challenger forgets its learning too. */
void pcd_challengers_reset(pcd_challengers *cs);
/* McNemar's test with continuity correction on b and c: the statistic and
 * its p-value (chi-square, one degree of freedom); NAN, 1 when b + c == 0.
 * Valid for one look at a sample fixed in advance only. */
void pcd_mcnemar(uint64_t b, uint64_t c, double *chi2, double *p);

/* The always-valid test of compare (docs/protocol.md, Challengers): a
 * mixture sequential probability ratio test on the discordant pairs.
 * Under "equally good" each discordant pair is the champion's alone with
 * probability 1/2 whatever came before; the mixture over that probability
 * (uniform prior) against 1/2 gives the likelihood ratio
 *     L = B(b + 1, c + 1) * 2^(b + c),
 * a martingale under the null, so by Ville's inequality it ever reaches
 * 1/alpha with probability at most alpha, however often it is looked at
 * and whenever one stops.  Returns ln L (0 when b + c == 0). */
double pcd_msprt_log_lr(uint64_t b, uint64_t c);
/* The verdict's threshold on ln L at a confidence: ln(1 / (1 - confidence)). */
double pcd_msprt_threshold(double confidence);
/* The confidence compare states: a verdict when ln L >= ln(1 / (1 - it)). */
#define PCD_MSPRT_CONFIDENCE 0.95

/* Snapshot bytes: a section "PCC1", u64 length, u32 count, then for each
 * u64 b, u64 c, u64 length and the pc_model_encode bytes.  With experts,
 * "PCC2": the same with, after the count, u32 mode, f64 eta, u64 seed,
 * rounds and mistakes, count + 1 u64 expert mistakes (champion first), u8
 * promote.auto, f64 promote.confidence, u64 promote.min_examples and u64
 * the promotions made; PCC1 without either, so older daemons still read
 * those. */
bool pcd_challengers_append(const pcd_challengers *cs, uint8_t **buf, size_t *len, size_t *cap);
bool pcd_challengers_present(const uint8_t *b, size_t len);
pcd_challengers *pcd_challengers_parse(const uint8_t *b, size_t len, size_t *used, char *why,
                                       size_t whylen);

#endif
