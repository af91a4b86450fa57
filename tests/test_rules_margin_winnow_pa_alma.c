/* test_rules_margin_winnow_pa_alma.c - four rules on hand-computed streams
 * and on the properties their papers claim: margin (seed 002 ch. 5), winnow
 * (seed 001 Alg. 2), pa / pa1 / pa2 (Crammer et al. 2006) and alma (Gentile
 * 2001, seed 004 B.3).  Each hand stream writes its arithmetic in the
 * comments. */
#include "tests/testutil.h"

#include <stdlib.h>

/* ---- helpers ------------------------------------------------------------ */

/* A binary model with up to three parameters set by name. */
static pc_model *model_ps(const char *rule, uint32_t dim, bool bias, int n, const char *const *names,
                          const double *vals)
{
    tu_param ps[3];
    for (int i = 0; i < n; i++)
        ps[i] = (tu_param){names[i], 1, {vals[i]}};
    return tu_model_with(rule, dim, bias, n, ps);
}

/* Asserts one labelled step: score, prediction, mistake and update flags. */
static void step(pc_model *m, size_t n, const double *x, int y, double score, int pred, bool mistake,
                 bool updated)
{
    pc_outcome o = tu_label(m, n, x, y);
    tu_near(o.pred.score, score);
    ck_assert_int_eq(o.pred.y, pred);
    ck_assert_int_eq(o.mistake, mistake);
    ck_assert_int_eq(o.updated, updated);
}

static void weights_are(pc_model *m, size_t n, const double *w)
{
    for (size_t i = 0; i < n; i++)
        tu_near(pc_model_weight(m, 0, (uint32_t)i), w[i]);
}

static double bias_of(pc_model *m)
{
    pc_learner_info li;
    pc_model_learner_info(m, 0, &li);
    return li.bias;
}

static pc_learner_info info_of(pc_model *m)
{
    pc_learner_info li;
    pc_model_learner_info(m, 0, &li);
    return li;
}

/* Deterministic xorshift PRNG (no libc rand state). */
static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double urand(void)
{
    return (double)(tu_xorshift(&rng) >> 11) / 9007199254740992.0;
}

/* A dense random example in [-1,1]^n, labelled by a fixed hyperplane with a
 * little label noise (so updates keep happening). */
static int noisy_example(double *x, size_t n)
{
    double s = 0.2;
    for (size_t i = 0; i < n; i++) {
        x[i] = urand() * 2 - 1;
        s += (i % 2 ? 1.0 : -0.7) * x[i];
    }
    int y = s >= 0 ? 1 : -1;
    return urand() < 0.1 ? -y : y;
}

static double param_default(const char *rule, const char *name)
{
    const pc_rule *r = pc_rule_find(rule);
    for (size_t i = 0; i < pc_rule_param_count(r); i++)
        if (strcmp(pc_rule_param(r, i)->name, name) == 0)
            return pc_rule_param(r, i)->def;
    ck_abort_msg("%s has no parameter %s", rule, name);
    return 0;
}

/* ---- margin (Margin-Fuzzy Perceptron, seed 002 ch. 5 Alg. 4) ------------- */

START_TEST(margin_step_by_step)
{
    /* dim 2, bias feature 1, eta 1, epsilon 0.5.  Distance = |s| / ||w||, w
     * without the bias. */
    pc_model *m = tu_model_p("margin", 2, true, "epsilon", 0.5);
    /* 1: w = 0: s = 0, predicts +1 (no mistake); a = 0 and w = 0 -> update:
     *    w = (1,0), b = 1 */
    step(m, 2, (double[]){1, 0}, 1, 0, 1, false, true);
    /* 2: s = 0 + 1 = 1 on a -1: mistake, distance 1/||(1,0)|| = 1 >= 0.5 ->
     *    w = (1,-1), b = 0 */
    step(m, 2, (double[]){0, 1}, -1, 1, 1, true, true);
    weights_are(m, 2, (double[]){1, -1});
    ck_assert(bias_of(m) == 0);
    /* 3: s = -0.25 on a +1: mistake, distance 0.25/sqrt(2) = 0.18 < 0.5:
     *    inside the margin, ignored (the perceptron would update) */
    step(m, 2, (double[]){-0.25, 0}, 1, -0.25, -1, true, false);
    /* 4: s = 2 - 2 + 0 = 0 on a -1: predicted +1, mistake; distance 0: ignored */
    step(m, 2, (double[]){2, 2}, -1, 0, 1, true, false);
    /* 5: s = 1 + 0 = 1 on a -1: mistake, distance 1/sqrt(2) = 0.71 >= 0.5:
     *    w = (1,-1) - (0,-1) = (1,0), b = -1 */
    step(m, 2, (double[]){0, -1}, -1, 1, 1, true, true);
    weights_are(m, 2, (double[]){1, 0});
    ck_assert(bias_of(m) == -1);
    /* 6: s = 0.375 - 1 = -0.625 on a +1: mistake; distance 0.625/||(1,0)|| =
     *    0.625 >= 0.5 -> update: w = (1.375, 0), b = 0.  Had the bias been
     *    counted in ||w|| (sqrt(2)) the distance would be 0.44 < 0.5. */
    step(m, 2, (double[]){0.375, 0}, 1, -0.625, -1, true, true);
    weights_are(m, 2, (double[]){1.375, 0});
    ck_assert(bias_of(m) == 0);
    pc_learner_info li = info_of(m);
    ck_assert(li.updates == 4 && li.norm == 1.375);
    pc_stats s;
    pc_model_stats(m, &s);
    ck_assert(s.examples == 6 && s.mistakes == 5 && s.updates == 4);
    pc_model_free(m);
}
END_TEST

START_TEST(margin_without_bias_counts_every_coordinate)
{
    /* No bias feature: the last coordinate is an ordinary weight and counts in
     * ||w||.  eps 0.5.  1: w = 0, s = 0 -> w = (1,1).  2: s = -0.75 on a +1:
     * distance 0.75/sqrt(2) = 0.53 >= 0.5 -> w = (0.25, 1).  (With the last
     * coordinate wrongly dropped it would be 0.75/1, the same decision; step
     * 3 tells them apart.)  3: x = (0,-0.5), y = +1: s = -0.5, distance
     * 0.5/||(0.25,1)|| = 0.485 < 0.5 -> ignored (0.5/0.25 = 2 if dropped). */
    pc_model *m = tu_model_p("margin", 2, false, "epsilon", 0.5);
    step(m, 2, (double[]){1, 1}, 1, 0, 1, false, true);
    step(m, 2, (double[]){-0.75, 0}, 1, -0.75, -1, true, true);
    weights_are(m, 2, (double[]){0.25, 1});
    step(m, 2, (double[]){0, -0.5}, 1, -0.5, -1, true, false);
    pc_model_free(m);
}
END_TEST

START_TEST(margin_large_epsilon_suppresses_perceptron_updates)
{
    /* On a noisy stream: epsilon 0 is exactly the perceptron; a large epsilon
     * ignores most of the mistakes the perceptron learns from; an epsilon
     * beyond every distance keeps only the updates made while w = 0. */
    pc_model *p = tu_model("perceptron", 4, true);
    pc_model *m0 = tu_model_p("margin", 4, true, "epsilon", 0);
    pc_model *m2 = tu_model_p("margin", 4, true, "epsilon", 2);
    pc_model *mx = tu_model_p("margin", 4, true, "epsilon", 1e300);
    double x[4];
    for (int t = 0; t < 2000; t++) {
        int y = noisy_example(x, 4);
        pc_outcome op = tu_label(p, 4, x, y), o0 = tu_label(m0, 4, x, y);
        ck_assert(op.updated == o0.updated && op.pred.score == o0.pred.score);
        tu_label(m2, 4, x, y);
        tu_label(mx, 4, x, y);
    }
    for (uint32_t i = 0; i < 4; i++)
        ck_assert(pc_model_weight(p, 0, i) == pc_model_weight(m0, 0, i));
    uint64_t up = info_of(p).updates, u2 = info_of(m2).updates, ux = info_of(mx).updates;
    ck_assert_msg(u2 * 4 < up, "perceptron %llu updates, margin(eps 2) %llu", (unsigned long long)up,
                  (unsigned long long)u2);
    ck_assert_uint_eq(ux, 1); /* the first update leaves w != 0 */
    pc_model_free(p);
    pc_model_free(m0);
    pc_model_free(m2);
    pc_model_free(mx);
}
END_TEST

START_TEST(margin_defaults)
{
    ck_assert(param_default("margin", "eta") == 1);
    ck_assert(param_default("margin", "epsilon") == 0.1);
    ck_assert(pc_rule_can_average(pc_rule_find("margin")));
    ck_assert(!pc_rule_can_batch(pc_rule_find("margin")));
    /* eta scales the steps: the first update is eta x */
    pc_model *m = tu_model_p("margin", 2, false, "eta", 0.5);
    step(m, 2, (double[]){1, 2}, 1, 0, 1, false, true);
    weights_are(m, 2, (double[]){0.5, 1});
    pc_model_free(m);
}
END_TEST

/* ---- winnow (seed 001 Alg. 2) --------------------------------------------- */

START_TEST(winnow_step_by_step)
{
    /* dim 3, no bias, beta 1 (factor 2), theta = N = 3, w = (1,1,1).  Score
     * w.x - 3, prediction 1[w.x > 3]. */
    pc_model *m = tu_model("winnow", 3, false);
    weights_are(m, 3, (double[]){1, 1, 1});
    /* 1: w.x = 2, s = -1 -> predicts -1 on a +1: promote x's features:
     *    w = (2,2,1) */
    step(m, 3, (double[]){1, 1, 0}, 1, -1, -1, true, true);
    weights_are(m, 3, (double[]){2, 2, 1});
    tu_near(info_of(m).norm, 3); /* sqrt(4 + 4 + 1) */
    /* 2: w.x = 5, s = 2 -> predicts +1 on a -1: demote all: w = (1,1,0.5) */
    step(m, 3, (double[]){1, 1, 1}, -1, 2, 1, true, true);
    weights_are(m, 3, (double[]){1, 1, 0.5});
    /* 3: w.x = 0.5, s = -2.5 on a -1: right, no update */
    step(m, 3, (double[]){0, 0, 1}, -1, -2.5, -1, false, false);
    /* 4: w.x = 1.5, s = -1.5 on a +1: promote features 0, 2: w = (2,1,1) */
    step(m, 3, (double[]){1, 0, 1}, 1, -1.5, -1, true, true);
    weights_are(m, 3, (double[]){2, 1, 1});
    /* 5: w.x = 4, s = 1 on a +1: right */
    step(m, 3, (double[]){1, 1, 1}, 1, 1, 1, false, false);
    /* 6: w.x = 3 = theta: s = 0 is a -1 prediction (strict 1[w.x > theta]),
     *    right on a -1 */
    step(m, 3, (double[]){1, 1, 0}, -1, 0, -1, false, false);
    /* 7: real values: w.x = 2*0.5 = 1, s = -2 on a +1: w_0 *= 2^0.5 */
    step(m, 3, (double[]){0.5, 0, 0}, 1, -2, -1, true, true);
    weights_are(m, 3, (double[]){2 * sqrt(2.0), 1, 1});
    pc_learner_info li = info_of(m);
    tu_near(li.norm, sqrt(8.0 + 1 + 1));
    ck_assert(li.updates == 4 && li.note == NULL);
    pc_model_free(m);
}
END_TEST

START_TEST(winnow_parameters_and_bias)
{
    ck_assert(param_default("winnow", "beta") == 1);
    ck_assert(isnan(param_default("winnow", "theta")));
    ck_assert(!pc_rule_can_average(pc_rule_find("winnow")));
    /* beta 3: a promotion multiplies by 4. */
    pc_model *m = tu_model_p("winnow", 3, false, "beta", 3);
    step(m, 3, (double[]){1, 0, 0}, 1, -2, -1, true, true); /* w.x = 1, theta 3 */
    weights_are(m, 3, (double[]){4, 1, 1});
    pc_model_free(m);
    /* theta 1: w.x = 2 > 1 predicts +1 at once. */
    m = tu_model_p("winnow", 3, false, "theta", 1);
    step(m, 3, (double[]){1, 1, 0}, -1, 1, 1, true, true);
    weights_are(m, 3, (double[]){0.5, 0.5, 1});
    pc_model_free(m);
    /* With the bias feature the default theta is still the model's dim 3 (not
     * 4): w.x = 1 + 1 + 1 + 1 (bias weight 1) = 4, s = 1.  Demoting halves
     * the bias weight too: b = 0.5. */
    m = tu_model("winnow", 3, true);
    ck_assert(bias_of(m) == 1);
    step(m, 3, (double[]){1, 1, 1}, -1, 1, 1, true, true);
    weights_are(m, 3, (double[]){0.5, 0.5, 0.5});
    ck_assert(bias_of(m) == 0.5);
    /* norm without the bias: sqrt(3 * 0.25) */
    tu_near(info_of(m).norm, sqrt(0.75));
    pc_model_free(m);
}
END_TEST

START_TEST(winnow_clamps_huge_values)
{
    pc_model *m = tu_model("winnow", 3, false);
    /* w.x = 1e150 - 3 > 0 on a -1: 2^-1e150 would underflow: clamped at 1e-100 */
    step(m, 3, (double[]){1e150, 0, 0}, -1, 1e150, 1, true, true);
    ck_assert(pc_model_weight(m, 0, 0) == 1e-100);
    ck_assert(info_of(m).note != NULL);
    /* and 2^1e150 at 1e100 */
    step(m, 3, (double[]){0, 1e150, 0}, 1, -3 + 1e150, 1, false, false);
    step(m, 3, (double[]){0, 0, 1e-300}, 1, -3, -1, true, false); /* 2^1e-300 = 1 */
    pc_svec x;
    pc_svec_init(&x);
    tu_dense(&x, 3, 3, (double[]){1e150, 1e150, 1e150});
    pc_prediction p;
    pc_model_predict(m, &x, &p, NULL);
    ck_assert(isfinite(p.score));
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

/* Seed 001 sec. 4's setting: x in {0,1}^N, the target a disjunction of k of
 * the N features.  Winnow's mistakes grow with k log N, not with N: each
 * promotion doubles a relevant weight still <= N (at most k(log2 N + 1) of
 * them) and the weight sum bounds the demotions by 2 + 2 * promotions, so
 * mistakes <= 2 + 3k(log2 N + 1). */
static uint64_t winnow_disjunction_mistakes(uint32_t N, int k, int T)
{
    pc_model *m = tu_model("winnow", N, false);
    uint32_t rel[8];
    for (int j = 0; j < k; j++)
        rel[j] = (uint32_t)(urand() * N);
    /* each feature on with probability p, so P(y = 1) = 1 - (1-p)^k ~ 1/2 */
    double p = 1 - pow(0.5, 1.0 / k);
    pc_svec x;
    pc_svec_init(&x);
    pc_error err;
    uint64_t mistakes = 0;
    for (int t = 0; t < T; t++) {
        pc_svec_clear(&x);
        for (uint32_t i = 0; i < N; i++)
            if (urand() < p)
                pc_svec_push(&x, i, 1);
        ck_assert_int_eq(pc_svec_normalize(&x, N, &err), PC_OK);
        int y = -1; /* y = x_rel[0] or ... or x_rel[k-1] */
        for (uint32_t q = 0; q < x.n; q++)
            for (int j = 0; j < k; j++)
                if (x.idx[q] == rel[j])
                    y = 1;
        pc_label l = {.y = y};
        pc_outcome o;
        ck_assert_int_eq(pc_model_label(m, &x, &l, &o, &err), PC_OK);
        mistakes += o.mistake;
    }
    pc_svec_free(&x);
    pc_model_free(m);
    return mistakes;
}

START_TEST(winnow_few_mistakes_on_a_k_of_n_disjunction)
{
    const int k = 4, T = 3000;
    uint32_t Ns[] = {256, 1024, 8192};
    for (int i = 0; i < 3; i++) {
        uint32_t N = Ns[i];
        uint64_t mk = winnow_disjunction_mistakes(N, k, T);
        double bound = 2 + 3.0 * k * (log2((double)N) + 1);
        ck_assert_msg((double)mk <= bound, "N %u: %llu mistakes > bound %g", N, (unsigned long long)mk,
                      bound);
    }
}
END_TEST

/* ---- pa, pa1, pa2 (Crammer et al. 2006) ---------------------------------- */

/* The same stream for the three: dim 2, no bias. */
static const double pa_x[5][2] = {{1, 0}, {1, 1}, {0, 2}, {2, 0}, {1, 0}};
static const int pa_y[5] = {1, -1, -1, 1, 1};

START_TEST(pa_step_by_step)
{
    pc_model *m = tu_model("pa", 2, false);
    /* 1: s = 0, l = 1, ||x||^2 = 1, tau = 1: w = (1,0); y w.x = 1 */
    step(m, 2, pa_x[0], pa_y[0], 0, 1, false, true);
    weights_are(m, 2, (double[]){1, 0});
    /* 2: s = 1 on a -1: l = 2, ||x||^2 = 2, tau = 1: w = (0,-1); y w.x = 1 */
    step(m, 2, pa_x[1], pa_y[1], 1, 1, true, true);
    weights_are(m, 2, (double[]){0, -1});
    /* 3: s = -2, y s = 2 >= 1: l = 0, passive */
    step(m, 2, pa_x[2], pa_y[2], -2, -1, false, false);
    /* 4: s = 0, l = 1, ||x||^2 = 4, tau = 1/4: w = (0.5,-1) */
    step(m, 2, pa_x[3], pa_y[3], 0, 1, false, true);
    weights_are(m, 2, (double[]){0.5, -1});
    /* 5: s = 0.5 (right but within the margin): l = 0.5, tau = 0.5: w = (1,-1) */
    step(m, 2, pa_x[4], pa_y[4], 0.5, 1, false, true);
    weights_are(m, 2, (double[]){1, -1});
    ck_assert(info_of(m).updates == 4);
    ck_assert(pc_rule_param_count(pc_rule_find("pa")) == 0);
    pc_model_free(m);
}
END_TEST

START_TEST(pa1_step_by_step)
{
    ck_assert(param_default("pa1", "C") == 1);
    pc_model *m = tu_model_p("pa1", 2, false, "C", 0.5);
    /* 1: l = 1, l/||x||^2 = 1 > C: tau = 0.5: w = (0.5,0) */
    step(m, 2, pa_x[0], pa_y[0], 0, 1, false, true);
    weights_are(m, 2, (double[]){0.5, 0});
    /* 2: s = 0.5 on a -1: l = 1.5, l/2 = 0.75 > C: tau = 0.5: w = (0,-0.5);
     *    the new margin is 0.5, short of 1: clipped */
    step(m, 2, pa_x[1], pa_y[1], 0.5, 1, true, true);
    weights_are(m, 2, (double[]){0, -0.5});
    /* 3: s = -1 on a -1: margin 1, passive */
    step(m, 2, pa_x[2], pa_y[2], -1, -1, false, false);
    /* 4: s = 0: l = 1, l/4 = 0.25 < C: tau = 0.25: w = (0.5,-0.5) */
    step(m, 2, pa_x[3], pa_y[3], 0, 1, false, true);
    weights_are(m, 2, (double[]){0.5, -0.5});
    /* 5: s = 0.5: l = 0.5, l/1 = 0.5 = C: tau = 0.5: w = (1,-0.5) */
    step(m, 2, pa_x[4], pa_y[4], 0.5, 1, false, true);
    weights_are(m, 2, (double[]){1, -0.5});
    pc_model_free(m);
}
END_TEST

START_TEST(pa2_step_by_step)
{
    ck_assert(param_default("pa2", "C") == 1);
    pc_model *m = tu_model_p("pa2", 2, false, "C", 0.5); /* 1/(2C) = 1 */
    /* 1: l = 1, tau = 1/(1 + 1) = 0.5: w = (0.5,0) */
    step(m, 2, pa_x[0], pa_y[0], 0, 1, false, true);
    weights_are(m, 2, (double[]){0.5, 0});
    /* 2: s = 0.5 on a -1: l = 1.5, tau = 1.5/(2 + 1) = 0.5: w = (0,-0.5) */
    step(m, 2, pa_x[1], pa_y[1], 0.5, 1, true, true);
    weights_are(m, 2, (double[]){0, -0.5});
    /* 3: s = -1: margin 1, passive */
    step(m, 2, pa_x[2], pa_y[2], -1, -1, false, false);
    /* 4: s = 0: l = 1, tau = 1/(4 + 1) = 0.2: w = (0.4,-0.5) */
    step(m, 2, pa_x[3], pa_y[3], 0, 1, false, true);
    weights_are(m, 2, (double[]){0.4, -0.5});
    /* 5: s = 0.4: l = 0.6, tau = 0.6/(1 + 1) = 0.3: w = (0.7,-0.5) */
    step(m, 2, pa_x[4], pa_y[4], 0.4, 1, false, true);
    weights_are(m, 2, (double[]){0.7, -0.5});
    pc_model_free(m);
}
END_TEST

START_TEST(pa_new_margin_is_one_and_pa1_clips_at_c)
{
    /* Random stream, dim 5, with the bias feature: after each update on
     * (x, y), pa's y w.x is 1 (the passive-aggressive property); pa1's step
     * tau = (w' - w)_i / (y x_i) is min(C, l/||x||^2) <= C; pa2's new margin
     * l' = 1 - y w'.x = l (1/(2C)) / (||x||^2 + 1/(2C)) stays positive. */
    const double C = 0.1;
    pc_model *pa = tu_model("pa", 5, true);
    pc_model *p1 = tu_model_p("pa1", 5, false, "C", C);
    pc_model *p2 = tu_model_p("pa2", 5, true, "C", C);
    double x[5];
    int clipped = 0, unclipped = 0;
    for (int t = 0; t < 1000; t++) {
        int y = noisy_example(x, 5);
        double xn2 = 0;
        for (int i = 0; i < 5; i++)
            xn2 += x[i] * x[i];
        pc_outcome o = tu_label(pa, 5, x, y);
        if (o.updated)
            ck_assert_double_eq_tol(y * tu_score(pa, 5, x), 1, 1e-12);
        else
            ck_assert(y * o.pred.score >= 1);

        double before[5];
        for (uint32_t i = 0; i < 5; i++)
            before[i] = pc_model_weight(p1, 0, i);
        o = tu_label(p1, 5, x, y);
        double l = 1 - y * o.pred.score;
        ck_assert_int_eq(o.updated, l > 0);
        if (o.updated) {
            double want = fmin(C, l / xn2);
            clipped += want == C;
            unclipped += want < C;
            for (uint32_t i = 0; i < 5; i++) {
                if (fabs(x[i]) < 0.1) /* too small to read tau from */
                    continue;
                double tau = (pc_model_weight(p1, 0, i) - before[i]) / (y * x[i]);
                ck_assert(tau <= C * (1 + 1e-12));
                ck_assert_double_eq_tol(tau, want, 1e-9);
            }
        }

        o = tu_label(p2, 5, x, y);
        l = 1 - y * o.pred.score;
        if (o.updated) {
            double n2 = xn2 + 1; /* the bias feature adds 1 to ||x||^2 */
            double l2 = 1 - y * tu_score(p2, 5, x);
            ck_assert_double_eq_tol(l2, l * (1 / (2 * C)) / (n2 + 1 / (2 * C)), 1e-9);
            ck_assert(l2 > 0);
        }
    }
    ck_assert(clipped > 10 && unclipped > 10); /* both regimes of pa1 were hit */
    pc_model_free(pa);
    pc_model_free(p1);
    pc_model_free(p2);
}
END_TEST

/* ---- alma (Gentile 2001; seed 004 App. B.3) -------------------------------- */

START_TEST(alma_step_by_step)
{
    /* alpha 0.5, B 2, C 1: gamma_k = (1 - 0.5) 2 / sqrt(k) = 1/sqrt(k) and the
     * step eta_k = 1/sqrt(k).  dim 2, no bias. */
    static const char *const names[] = {"alpha", "B", "C"};
    pc_model *m = model_ps("alma", 2, false, 3, names, (double[]){0.5, 2, 1});
    ck_assert(info_of(m).margin == 1); /* gamma_1 */
    /* 1 (k = 1): x = (3,4), xh = (0.6,0.8), s = 0 <= gamma_1 = 1: update
     *    w = 0 + 1 * (0.6,0.8), ||w|| = 1: no projection.  k = 2 */
    step(m, 2, (double[]){3, 4}, 1, 0, 1, false, true);
    weights_are(m, 2, (double[]){0.6, 0.8});
    /* 2 (k = 2): x = (1,0), y w.xh = 0.6 <= gamma_2 = 0.707: a right
     *    prediction inside the margin updates: u = (0.6 + 1/sqrt(2), 0.8),
     *    ||u|| = 1.53 > 1: w = u/||u||.  k = 3 */
    step(m, 2, (double[]){1, 0}, 1, 0.6, 1, false, true);
    double u0 = 0.6 + 1 / sqrt(2.0), u1 = 0.8, un = sqrt(u0 * u0 + u1 * u1);
    double w0 = u0 / un, w1 = u1 / un; /* (0.8529, 0.5220) */
    weights_are(m, 2, (double[]){w0, w1});
    tu_near(info_of(m).norm, 1);
    /* 3 (k = 3): x = (1,0), y w.xh = 0.853 > gamma_3 = 0.577: no update */
    step(m, 2, (double[]){1, 0}, 1, w0, 1, false, false);
    /* 4 (k = 3): x = (0,-2), xh = (0,-1), s = -2 w1 < 0 on a +1: mistake;
     *    w = (w0, w1 - 1/sqrt(3)), ||w|| = 0.855 < 1: no projection.  k = 4 */
    step(m, 2, (double[]){0, -2}, 1, -2 * w1, -1, true, true);
    weights_are(m, 2, (double[]){w0, w1 - 1 / sqrt(3.0)});
    pc_learner_info li = info_of(m);
    tu_near(li.norm, sqrt(w0 * w0 + (w1 - 1 / sqrt(3.0)) * (w1 - 1 / sqrt(3.0))));
    tu_near(li.margin, 0.5); /* gamma_4 = 1/sqrt(4) */
    ck_assert(li.updates == 3);
    pc_model_free(m);
}
END_TEST

START_TEST(alma_defaults_and_alpha_one)
{
    ck_assert(param_default("alma", "alpha") == 0.7);
    ck_assert(isnan(param_default("alma", "B")));
    tu_near(param_default("alma", "C"), sqrt(2.0));
    ck_assert(!pc_rule_can_average(pc_rule_find("alma")));
    /* B derived as sqrt(8)/alpha: gamma_1 = 0.3 sqrt(8)/0.7 */
    pc_model *m = tu_model("alma", 2, false);
    tu_near(info_of(m).margin, 0.3 * sqrt(8.0) / 0.7);
    /* k = 1: x = (1,0) -> w = sqrt(2) (1,0), projected to (1,0).  k = 2:
     * x = (1,0) again, y w.xh = 1 > gamma_2 = 0.857: no update.  k = 2:
     * x = (0,1): y w.xh = 0 <= 0.857: w = (1, 1) (step sqrt(2)/sqrt(2)),
     * projected to (1,1)/sqrt(2). */
    step(m, 2, (double[]){1, 0}, 1, 0, 1, false, true);
    weights_are(m, 2, (double[]){1, 0});
    step(m, 2, (double[]){1, 0}, 1, 1, 1, false, false);
    step(m, 2, (double[]){0, 1}, 1, 0, 1, false, true);
    weights_are(m, 2, (double[]){sqrt(0.5), sqrt(0.5)});
    pc_model_free(m);
    /* alpha = 1: gamma_k = 0, ALMA updates on mistakes (and zero scores)
     * only: the right prediction of step 2 in alma_step_by_step no longer
     * updates. */
    static const char *const names[] = {"alpha", "B", "C"};
    m = model_ps("alma", 2, false, 3, names, (double[]){1, 2, 1});
    step(m, 2, (double[]){3, 4}, 1, 0, 1, false, true);
    step(m, 2, (double[]){1, 0}, 1, 0.6, 1, false, false);
    /* and B scales the margin: B = 4 doubles gamma_k. */
    pc_model_free(m);
    m = model_ps("alma", 2, false, 3, names, (double[]){0.5, 4, 1});
    ck_assert(info_of(m).margin == 2);
    pc_model_free(m);
}
END_TEST

START_TEST(alma_norm_never_exceeds_one)
{
    /* ||w|| <= 1 after every example (bias coordinate included: it is part of
     * ALMA's w), on a noisy stream of examples of very different norms. */
    pc_model *m = tu_model("alma", 6, true);
    double x[6];
    uint64_t updates = 0;
    for (int t = 0; t < 3000; t++) {
        int y = noisy_example(x, 6);
        double sc = pow(10, (double)(t % 7) - 3);
        for (int i = 0; i < 6; i++)
            x[i] *= sc;
        updates += tu_label(m, 6, x, y).updated;
        pc_learner_info li = info_of(m);
        double n2 = li.norm * li.norm + li.bias * li.bias;
        ck_assert_msg(n2 <= 1 + 1e-12, "||w||^2 = %.17g at step %d", n2, t);
    }
    ck_assert(updates > 100);
    pc_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rules_margin_winnow_pa_alma");
    TU_TCASE(s, "margin", 0, margin_step_by_step, margin_without_bias_counts_every_coordinate,
        margin_large_epsilon_suppresses_perceptron_updates, margin_defaults);
    TU_TCASE(s, "winnow", 0, winnow_step_by_step, winnow_parameters_and_bias,
        winnow_clamps_huge_values, winnow_few_mistakes_on_a_k_of_n_disjunction);
    TU_TCASE(s, "pa", 0, pa_step_by_step, pa1_step_by_step, pa2_step_by_step,
        pa_new_margin_is_one_and_pa1_clips_at_c);
    TU_TCASE(s, "alma", 0, alma_step_by_step, alma_defaults_and_alpha_one,
        alma_norm_never_exceeds_one);
    return tu_run(s);
}
