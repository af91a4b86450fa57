/* perceptron.c - Rosenblatt's perceptron with a learning rate.
 *
 * Seed 001 Alg. 1, seed 002 Def. 10 (learning rate eta), seed 003 (bias via a
 * constant feature, batch mode): on y(w.x + b) <= 0, w += eta y x.  The update
 * does not read w, so batch mode (score a request with the starting weights,
 * then apply every update) is exactly seed 003's batch rule: PC_RULE_BATCH.
 * This file is also the reference for writing a rule: state, params table,
 * the ops, and the const struct at the bottom.
 */
#include "lib/rule.h"

#include <math.h>

typedef struct perceptron {
    pc_wvec w;
    double eta;
} perceptron;

enum { P_ETA };
static const pc_param_spec params[] = {
    [P_ETA] = {"eta", PC_PARAM_REAL, 1, 0, 1e6, true, false, NULL, 0,
               "learning rate (seed 002 Def. 10): the step added on a mistake"},
};

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    perceptron *p = state;
    (void)err;
    p->eta = pc_param1(ctx, P_ETA);
    return pc_wvec_init(&p->w, ctx, ctx->averaged);
}

static double score(const void *state, const pc_svec *x)
{
    const perceptron *p = state;
    return pc_wvec_dot(&p->w, x);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    perceptron *p = state;
    if (y * s > 0) /* seed 001: update when y(w.x) <= 0, a score of 0 included */
        return false;
    pc_wvec_add(&p->w, p->eta * y, x);
    return true;
}

static pc_wvec *primary(void *state)
{
    perceptron *p = state;
    return &p->w;
}

const pc_rule pc_rule_perceptron = {
    .name = "perceptron",
    .summary = "Rosenblatt's perceptron with learning rate and batch mode (seeds 001, 002, 003)",
    .flags = PC_RULE_ADDITIVE | PC_RULE_BATCH,
    .params = params,
    .nparams = sizeof params / sizeof *params,
    .state_size = sizeof(perceptron),
    .init = init,
    .score = score,
    .update = update,
    .primary = primary,
};
