/* learner.h - one binary learner: a rule, its parameters and its state. */
#ifndef PC_LEARNER_H
#define PC_LEARNER_H

#include "lib/rule.h"

typedef struct pc_learner {
    const pc_rule *rule;
    void *state;        /* rule->state_size bytes, owned */
    uint64_t updates;
    bool averaged;
} pc_learner;

pc_status pc_learner_init(pc_learner *l, const pc_rule *r, const pc_rule_ctx *ctx, pc_error *err);
void pc_learner_destroy(pc_learner *l);
/* The rule's own score (what its update condition reads). */
double pc_learner_score(const pc_learner *l, const pc_svec *x);
/* The score predictions are made with: the averaged weights when averaging. */
double pc_learner_predict_score(const pc_learner *l, const pc_svec *x);
int pc_learner_sign(const pc_learner *l, double s);
/* Applies the rule's update for (x, y) scored s, then counts the example. */
bool pc_learner_update(pc_learner *l, const pc_svec *x, int y, double s);
void pc_learner_describe(const pc_learner *l, pc_learner_info *info);
/* Heap bytes of the state (rule.h's bytes). */
size_t pc_learner_bytes(const pc_learner *l);
double pc_learner_weight(const pc_learner *l, uint32_t i);
/* The sum of pc_learner_weight(l, i)^2 over i < below, in increasing i:
 * O(stored weights) on a sparse table, O(below) else. */
double pc_learner_weight_sum_sq(const pc_learner *l, uint32_t below);
/* The vector whose pc_wvec_get is pc_learner_weight (not averaged, no rule
 * override of weight), for scans over its store; NULL when there is none. */
const struct pc_wvec *pc_learner_plain_weights(const pc_learner *l);
pc_status pc_learner_encode(const pc_learner *l, pc_writer *w);
pc_status pc_learner_decode(pc_learner *l, const pc_rule *r, const pc_rule_ctx *ctx,
                            pc_reader *rd, pc_error *err);
#endif
