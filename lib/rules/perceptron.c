/* perceptron.c - Rosenblatt's perceptron with a learning rate.
 *
 * Seed 001 Alg. 1, seed 002 Def. 10 (learning rate eta), seed 003 (bias via a
 * constant feature, batch mode): on y(w.x + b) <= 0, w += eta y x.  The update
 * does not read w, so batch mode (score a request with the starting weights,
 * then apply every update) is exactly seed 003's batch rule: PC_RULE_BATCH.
 * This file is also the reference for writing a rule: state, params table,
 * the ops (score and primary are rule.h's pc_rule_w_score/pc_rule_w_primary,
 * as for every rule whose state begins with its weight vector w), and the
 * const struct at the bottom.
 */
#include "lib/rule.h"

#include <math.h>

typedef struct perceptron {
    pc_wvec w;
    double eta;
} perceptron;
PC_RULE_W_FIRST(perceptron);

enum { P_ETA };
static const pc_param_spec params[] = {
    [P_ETA] = PC_PARAM_SPEC_ETA,
};

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    perceptron *p = state;
    (void)err;
    p->eta = pc_param1(ctx, P_ETA);
    return pc_wvec_init(&p->w, ctx, ctx->averaged);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    perceptron *p = state;
    if (y * s > 0) /* seed 001: update when y(w.x) <= 0, a score of 0 included */
        return false;
    pc_wvec_add(&p->w, p->eta * y, x);
    return true;
}

const pc_rule pc_rule_perceptron = {
    .name = "perceptron",
    .summary = "Rosenblatt's perceptron with learning rate and batch mode (seeds 001, 002, 003)",
    .flags = PC_RULE_ADDITIVE | PC_RULE_BATCH,
    PC_RULE_PARAMS(params),
    .state_size = sizeof(perceptron),
    .init = init, .score = pc_rule_w_score, .update = update, .primary = pc_rule_w_primary,
};
