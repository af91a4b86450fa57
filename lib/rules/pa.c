/* pa.c - the Passive-Aggressive rules PA, PA-I and PA-II.
 *
 * Crammer, Dekel, Keshet, Shalev-Shwartz and Singer, "Online Passive-
 * Aggressive Algorithms", JMLR 7 (2006), the benchmark of seed 000 (its
 * reference [1]) and seed 004 (ref. Crammer et al. [2006]).  With the hinge
 * loss l = max(0, 1 - y w.x): when l > 0, w += tau y x, where
 *   PA:    tau = l / ||x||^2                  (the new margin y w.x is 1)
 *   PA-I:  tau = min(C, l / ||x||^2)          (the step is clipped at C)
 *   PA-II: tau = l / (||x||^2 + 1/(2C))       (a softer, quadratic slack)
 * The bias, when wanted, is the model's constant feature (seed 004 B.3).
 *
 * One file for the three: they differ only in tau and in whether C exists,
 * so the shared ops take the variant from the state and each const struct at
 * the bottom has a two-line init naming its variant.
 */
#include "lib/rule.h"

#include <math.h>

enum variant { V_PA, V_PA1, V_PA2 };

typedef struct pa {
    pc_wvec w;
    enum variant v;
    double C;
} pa;
PC_RULE_W_FIRST(pa);

enum { P_C };
static const pc_param_spec params_pa1[] = {
    [P_C] = {"C", PC_PARAM_REAL, 1, 0, 1e300, true, false, NULL, 0,
             "aggressiveness (Crammer et al. 2006, PA-I): the largest step tau on one example"},
};
static const pc_param_spec params_pa2[] = {
    [P_C] = {"C", PC_PARAM_REAL, 1, 0, 1e300, true, false, NULL, 0,
             "aggressiveness (Crammer et al. 2006, PA-II): tau = l / (||x||^2 + 1/(2C))"},
};

static pc_status init_variant(pa *p, enum variant v, const pc_rule_ctx *ctx)
{
    p->v = v;
    p->C = v == V_PA ? INFINITY : pc_param1(ctx, P_C);
    return pc_wvec_init(&p->w, ctx, ctx->averaged);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    pa *p = state;
    double l = 1 - y * s; /* hinge loss max(0, 1 - y w.x) */
    if (!(l > 0))
        return false; /* passive: the margin is at least 1 */
    double tau;
    switch (p->v) {
    case V_PA:
        tau = l / x->norm2;
        break;
    case V_PA1:
        tau = fmin(p->C, l / x->norm2);
        break;
    default:
        tau = l / (x->norm2 + 1 / (2 * p->C));
        break;
    }
    /* A norm that underflowed (values below ~1e-154) would make tau infinite:
     * skip rather than let Inf into w. */
    if (!(tau > 0) || !isfinite(tau))
        return false;
    pc_wvec_add(&p->w, tau * y, x);
    return true;
}

/* The per-variant entry points: only the variant differs. */
static pc_status init_pa(void *s, const pc_rule_ctx *c, pc_error *e)
{
    (void)e;
    return init_variant(s, V_PA, c);
}
static pc_status init_pa1(void *s, const pc_rule_ctx *c, pc_error *e)
{
    (void)e;
    return init_variant(s, V_PA1, c);
}
static pc_status init_pa2(void *s, const pc_rule_ctx *c, pc_error *e)
{
    (void)e;
    return init_variant(s, V_PA2, c);
}

#define PA_COMMON                                                                                  \
    .flags = PC_RULE_ADDITIVE, .state_size = sizeof(pa), .score = pc_rule_w_score,                 \
    .update = update, .primary = pc_rule_w_primary

const pc_rule pc_rule_pa = {
    .name = "pa",
    .summary = "Passive-Aggressive: the smallest step to margin 1 "
               "(Crammer et al. 2006; seeds 000, 004)",
    .params = NULL,
    .nparams = 0,
    .init = init_pa,
    PA_COMMON,
};

const pc_rule pc_rule_pa1 = {
    .name = "pa1",
    .summary = "Passive-Aggressive PA-I: step clipped at C "
               "(Crammer et al. 2006; seeds 000, 004)",
    PC_RULE_PARAMS(params_pa1),
    .init = init_pa1,
    PA_COMMON,
};

const pc_rule pc_rule_pa2 = {
    .name = "pa2",
    .summary = "Passive-Aggressive PA-II: squared slack, tau = l/(||x||^2 + 1/(2C)) "
               "(Crammer et al. 2006; seeds 000, 004)",
    PC_RULE_PARAMS(params_pa2),
    .init = init_pa2,
    PA_COMMON,
};
