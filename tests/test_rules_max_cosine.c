/* test_rules_max_cosine.c - the seed 000 (Maximum Cosine Framework) rules:
 * romma, aromma, naromma (romma.c), cmcp, mcp (mcp.c).
 *
 * Hand-computed streams (dim 2, no bias) step by step, the mistake bound
 * (R/gamma)^2 of perceptron, cmcp and mcp (seed 001 Thm 1, seed 000 Thm 10) and
 * of the ROMMA family (seed 004 Table 1), NAROMMA == aggressive ROMMA
 * prediction by prediction (seed 000 Thm 7), the margin estimates 1/l and
 * 1/||u|| as upper bounds of the true margin, the carried norm equal to the
 * weights' norm on noisy streams, parallel examples skipped, averaging of the
 * additive rules, cmcp/mcp against a direction-only reference on streams of
 * norms 1e-150 .. 1e150, and outcomes that do not depend on the dimension.
 */
#include "tests/testutil.h"

#include <stdlib.h>

/* ---- deterministic streams (xorshift64, Box-Muller) --------------------- */

static uint64_t rng = 88172645463325252ull;
static void rng_seed(uint64_t s) { rng = s ? s : 88172645463325252ull; }
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static double grand(void)
{
    double u = urand(), v = urand();
    return sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

#define DMAX 64

/* A dense example of d features, stored also as a normalized svec. */
typedef struct ex {
    double v[DMAX];
    int y;
    pc_svec x;
} ex;

static void ex_make(ex *e, uint32_t d)
{
    pc_error err;
    pc_svec_init(&e->x);
    for (uint32_t i = 0; i < d; i++)
        ck_assert_int_eq(pc_svec_push(&e->x, i, e->v[i]), PC_OK);
    ck_assert_int_eq(pc_svec_normalize(&e->x, d, &err), PC_OK);
}

static void random_unit(double *t, uint32_t d)
{
    double n = 0;
    for (uint32_t i = 0; i < d; i++) {
        t[i] = grand();
        n += t[i] * t[i];
    }
    for (uint32_t i = 0; i < d; i++)
        t[i] /= sqrt(n);
}

/* n examples of dimension d separable through the origin by a unit target t
 * with margin >= gamma, norms in [0.2, 1].  Returns R = max ||x|| and
 * *gmin = min |t.x| (the exact margin of the sample). */
static double separable(ex *es, int n, uint32_t d, double gamma, double *gmin)
{
    double t[DMAX], R = 0;
    random_unit(t, d);
    *gmin = INFINITY;
    for (int k = 0; k < n; k++) {
        double dot, nn;
        do {
            nn = 0;
            for (uint32_t i = 0; i < d; i++) {
                es[k].v[i] = grand();
                nn += es[k].v[i] * es[k].v[i];
            }
            double sc = (0.2 + 0.8 * urand()) / sqrt(nn);
            dot = 0;
            nn = 0;
            for (uint32_t i = 0; i < d; i++) {
                es[k].v[i] *= sc;
                dot += t[i] * es[k].v[i];
                nn += es[k].v[i] * es[k].v[i];
            }
        } while (fabs(dot) < gamma);
        es[k].y = dot > 0 ? 1 : -1;
        R = fmax(R, sqrt(nn));
        *gmin = fmin(*gmin, fabs(dot));
        ex_make(&es[k], d);
    }
    return R;
}

static void free_all(ex *es, int n)
{
    for (int k = 0; k < n; k++)
        pc_svec_free(&es[k].x);
}

static pc_outcome label_x(pc_model *m, const pc_svec *x, int y)
{
    pc_label l = {.y = y};
    pc_outcome o;
    pc_error err = {{0}};
    ck_assert_msg(pc_model_label(m, x, &l, &o, &err) == PC_OK, "%s", err.msg);
    return o;
}

static double margin_of(const pc_model *m)
{
    pc_learner_info li;
    pc_model_learner_info(m, 0, &li);
    return li.margin;
}

/* ---- hand-computed streams ---------------------------------------------- */

/* Labels (x0, x1) with y and checks the score and outcome before the update,
 * then the weights after it. */
static void step(pc_model *m, double x0, double x1, int y, double s, bool mistake, bool updated,
                 double w0, double w1)
{
    double v[2] = {x0, x1};
    pc_outcome o = tu_label(m, 2, v, y);
    tu_near(o.pred.score, s);
    ck_assert_int_eq(o.pred.y, s >= 0 ? 1 : -1);
    ck_assert_int_eq(o.mistake, mistake);
    ck_assert_int_eq(o.updated, updated);
    tu_near(pc_model_weight(m, 0, 0), w0);
    tu_near(pc_model_weight(m, 0, 1), w1);
}

START_TEST(romma_by_hand)
{
    pc_model *m = tu_model("romma", 2, false);
    ck_assert(isnan(margin_of(m)));
    /* 1. x=(1,0) y=+1: s=0, a=0 <= 0: first update u = y x/||x||^2 = (1,0).
     *    sign(0)=+1 is right: no mistake. */
    step(m, 1, 0, +1, 0, false, true, 1, 0);
    tu_near(margin_of(m), 1); /* 1/||u|| */
    /* 2. x=(0,1) y=-1: s=0, mistake.  ||u||^2=1, ||x||^2=1, u.x=0, den=1*1-0=1:
     *    c=(1-y*0)/1=1 (eq. 25), d=1*(-1-0)/1=-1 (eq. 26): u=(1,-1). */
    step(m, 0, 1, -1, 0, true, true, 1, -1);
    /* 3. x=(1,1) y=-1: s=1-1=0, mistake.  ||u||^2=2, ||x||^2=2, A=4, den=4:
     *    c=(4-0)/4=1, d=2(-1-0)/4=-1/2: u=(1,-1)-(1,1)/2=(1/2,-3/2). */
    step(m, 1, 1, -1, 0, true, true, 0.5, -1.5);
    /* 4. x=(2,1) y=+1: s=1-3/2=-1/2, mistake.  ||u||^2=5/2, ||x||^2=5,
     *    A=25/2, den=25/2-1/4=49/4: c=(25/2+1/2)/(49/4)=52/49,
     *    d=(5/2)(1+1/2)/(49/4)=15/49: u=(52/98+30/49, -156/98+15/49)=(8/7,-9/7).
     *    Check: y u.x=(16-9)/7=1 and u.u_old=4/7+27/14=5/2=||u_old||^2. */
    step(m, 2, 1, +1, -0.5, true, true, 8.0 / 7, -9.0 / 7);
    /* ||u||^2=(64+81)/49=145/49, also eq. 31: 5/2+(3/2)^2/(5(1-(1/4)/(25/2)))=5/2+2.25/4.9. */
    tu_near(margin_of(m), 7 / sqrt(145));
    /* 5. x=(1,0) y=+1: s=8/7 > 0: right, no update (conservative). */
    step(m, 1, 0, +1, 8.0 / 7, false, false, 8.0 / 7, -9.0 / 7);
    pc_model_free(m);
}
END_TEST

/* The aromma stream; naromma must give the same scores and weights (Thm 7). */
static void aromma_stream(const char *rule)
{
    pc_model *m = tu_model(rule, 2, false);
    /* 1. x=(2,0) y=+1: u=0, a=0 < 1 and 0 >= ||x||^2*0: Type II,
     *    u=y x/||x||^2=(1/2,0); NAROMMA Fig. 1 step 1: v=y x, l*=1/||x||=1/2. */
    step(m, 2, 0, +1, 0, false, true, 0.5, 0);
    tu_near(margin_of(m), 2); /* 1/||u|| = 1/l* */
    /* 2. x=(4,0) y=+1: s=2, a=2 >= 1: Type I.  (NAROMMA: gamma=4, l*gamma=2 >= 1.) */
    step(m, 4, 0, +1, 2, false, false, 0.5, 0);
    /* 3. x=(1,1/2) y=+1: s=1/2 < 1, ||x||^2||u||^2=(5/4)(1/4)=5/16 <= 1/2: Type II,
     *    u=x/(5/4)=(4/5,2/5).  (NAROMMA: gamma=1, l*gamma=1/2, ||x||^2 l*=5/8 <= 1;
     *    v=y x, l*=1/||x||=2/sqrt(5).) */
    step(m, 1, 0.5, +1, 0.5, false, true, 0.8, 0.4);
    tu_near(margin_of(m), sqrt(5) / 2);
    /* 4. x=(0,1) y=+1: s=2/5 < 1, A=1*(4/5)=4/5 > 2/5: Type III.  den=4/5-4/25=16/25,
     *    c=(4/5-2/5)/(16/25)=5/8, d=(4/5)(1-2/5)/(16/25)=3/4:
     *    u=(5/8)(4/5,2/5)+(3/4)(0,1)=(1/2,1).  (NAROMMA: gamma=(2/5)/sqrt(4/5),
     *    l*^2=4/5+(2/5-1)^2/(1-gamma^2)=4/5+(9/25)/(4/5)=5/4=||u||^2, eq. 22.) */
    step(m, 0, 1, +1, 0.4, false, true, 0.5, 1);
    tu_near(margin_of(m), 2 / sqrt(5));
    /* 5. x=(1,-1) y=-1: s=1/2-1=-1/2, right, a=1/2 < 1, A=2*(5/4)=5/2: Type III.
     *    den=5/2-1/4=9/4, c=(5/2-1/2)/(9/4)=8/9, d=(5/4)(-1+1/2)/(9/4)=-5/18:
     *    u=(4/9-5/18, 8/9+5/18)=(1/6,7/6).  Check y u.x=1, u.u_old=5/4. */
    step(m, 1, -1, -1, -0.5, false, true, 1.0 / 6, 7.0 / 6);
    /* 6. x=(1,0) y=-1: s=1/6, mistake, a=-1/6, A=||u||^2=25/18: Type III.
     *    den=25/18-1/36=49/36, c=(25/18+1/6)/(49/36)=8/7,
     *    d=(25/18)(-1-1/6)/(49/36)=-25/21: u=(8/42-25/21, 8/6)=(-1,4/3). */
    step(m, 1, 0, -1, 1.0 / 6, true, true, -1, 4.0 / 3);
    tu_near(margin_of(m), 3.0 / 5); /* ||u||^2 = 1+16/9 = 25/9 */
    pc_model_free(m);
}

START_TEST(aromma_by_hand)
{
    aromma_stream("aromma");
}
END_TEST

START_TEST(naromma_by_hand)
{
    /* naromma's score is l* v.x/||v|| and its weights l* v/||v||: aromma's u. */
    aromma_stream("naromma");
}
END_TEST

START_TEST(cmcp_by_hand)
{
    pc_model *m = tu_model("cmcp", 2, false);
    /* 1. x=(1,0) y=+1: s=0, a <= 0: w=y x=(1,0), l=1/||x||=1 (Lemma 8). */
    step(m, 1, 0, +1, 0, false, true, 1, 0);
    tu_near(margin_of(m), 1); /* 1/l */
    /* 2. x=(-1,1) y=+1: s=-1, mistake.  ||w||=1, l=1, ||x||^2=2:
     *    w += 1/(1*2) x = (1,0)+(-1/2,1/2) = (1/2,1/2); l^2 = 1+1/2 = 3/2. */
    step(m, -1, 1, +1, -1, true, true, 0.5, 0.5);
    tu_near(margin_of(m), sqrt(2.0 / 3));
    /* 3. x=(0,-1) y=+1: s=-1/2, mistake.  ||w||=sqrt(1/2), l=sqrt(3/2), ||x||=1:
     *    step sqrt(1/2)/sqrt(3/2) = 1/sqrt(3): w=(1/2, 1/2-1/sqrt(3)); l^2=5/2. */
    double w1 = 0.5 - 1 / sqrt(3);
    step(m, 0, -1, +1, -0.5, true, true, 0.5, w1);
    tu_near(margin_of(m), sqrt(0.4));
    /* 4. x=(1,1) y=+1: s=1/2+w1=0.4226 > 0: no update (conservative). */
    step(m, 1, 1, +1, 0.5 + w1, false, false, 0.5, w1);
    /* 5. x=(1,0) y=-1: s=1/2, mistake.  ||w||^2=1/4+w1^2=5/6-1/sqrt(3), l=sqrt(5/2):
     *    w0 -= ||w||/sqrt(5/2); l^2 = 5/2+1 = 7/2. */
    double nw = sqrt(0.25 + w1 * w1);
    step(m, 1, 0, -1, 0.5, true, true, 0.5 - nw / sqrt(2.5), w1);
    tu_near(margin_of(m), sqrt(2.0 / 7));
    pc_model_free(m);
}
END_TEST

START_TEST(mcp_by_hand)
{
    pc_model *m = tu_model("mcp", 2, false);
    /* 1. x=(1,0) y=+1: w=y x=(1,0), l=1 (Fig. 2 step 1). */
    step(m, 1, 0, +1, 0, false, true, 1, 0);
    /* 2. x=(2,2) y=+1: a=2 > ||w||/(2l)=1/2: no update (eq. 41). */
    step(m, 2, 2, +1, 2, false, false, 1, 0);
    /* 3. x=(1/2,1) y=+1: a=1/2 <= 1/2 (the boundary updates): ||x||^2=5/4,
     *    w += 1/(1*5/4) x = (1,0)+(2/5,4/5) = (7/5,4/5); eta=a l/||w||=1/2 (eq. 43),
     *    l^2 += (1-2*1/2)/(5/4) = 0: l stays 1 (eq. 42). */
    step(m, 0.5, 1, +1, 0.5, false, true, 1.4, 0.8);
    tu_near(margin_of(m), 1);
    /* 4. x=(0,1) y=-1: s=4/5, mistake, eta=0.  ||w||^2=49/25+16/25=13/5, l=1, ||x||=1:
     *    w1 -= sqrt(13/5); l^2 = 1+1 = 2. */
    double w1 = 0.8 - sqrt(2.6);
    step(m, 0, 1, -1, 0.8, true, true, 1.4, w1);
    tu_near(margin_of(m), sqrt(0.5));
    /* 5. x=(1/2,1/2) y=+1: a=0.7+w1/2=0.2938; ||w||=sqrt(1.96+w1^2)=1.6187,
     *    ||w||/(2l)=0.5723 >= a: a margin update with eta=a sqrt(2)/||w||=0.2567:
     *    w += ||w||/(sqrt(2)*(1/2)) x, l^2 = 2+(1-2 eta)/(1/2). */
    double nw = sqrt(1.96 + w1 * w1), a = 0.7 + w1 / 2, eta = a * sqrt(2) / nw;
    double st = nw / (sqrt(2) * 0.5);
    step(m, 0.5, 0.5, +1, a, false, true, 1.4 + st / 2, w1 + st / 2);
    tu_near(margin_of(m), 1 / sqrt(2 + (1 - 2 * eta) / 0.5));
    pc_model_free(m);
}
END_TEST

/* ---- properties --------------------------------------------------------- */

static const char *const bounded[] = {"perceptron", "cmcp", "mcp", "romma", "aromma", "naromma"};

/* On separable streams every rule above makes at most (R/gamma)^2 mistakes
 * (y*s <= 0 events, a tie included) over many passes: the perceptron by seed
 * 001 Thm 1, cmcp by Lemma 8 as in Thm 10, mcp by seed 000 Thm 10, the ROMMA
 * family by Li and Long (seed 004 Table 1).  The last pass is clean, and each
 * rule's margin estimate (1/l, 1/||u||) bounds the true margin from above. */
START_TEST(mistake_bound_on_separable_streams)
{
    enum { N = 400, PASSES = 25 };
    static ex es[N];
    const uint32_t dims[] = {3, 10, 40};
    const double gammas[] = {0.1, 0.05, 0.08};
    for (int k = 0; k < 3; k++) {
        rng_seed(1000 + (uint64_t)k);
        double gmin, R = separable(es, N, dims[k], gammas[k], &gmin);
        double bound = (R / gmin) * (R / gmin);
        for (size_t r = 0; r < sizeof bounded / sizeof *bounded; r++) {
            pc_model *m = tu_model(bounded[r], dims[k], false);
            int mistakes = 0, last = 0;
            for (int p = 0; p < PASSES; p++) {
                last = 0;
                for (int i = 0; i < N; i++) {
                    pc_outcome o = label_x(m, &es[i].x, es[i].y);
                    if (o.pred.score * es[i].y <= 0)
                        mistakes++, last++;
                }
            }
            ck_assert_msg(mistakes <= bound, "%s: %d mistakes > (R/gamma)^2 = %g (d=%u)", bounded[r],
                          mistakes, bound, dims[k]);
            ck_assert_msg(mistakes >= 1 && last == 0, "%s: %d mistakes in the last pass", bounded[r],
                          last);
            double mg = margin_of(m);
            if (!isnan(mg)) /* the perceptron has no estimate */
                ck_assert_msg(mg >= gmin * (1 - 1e-9), "%s: margin estimate %g < true %g",
                              bounded[r], mg, gmin);
            pc_model_free(m);
        }
        free_all(es, N);
    }
}
END_TEST

/* Seed 000 Theorem 7: NAROMMA and aggressive ROMMA hold hypotheses of the same
 * direction (u = l* v/||v||) after every example, so they predict alike and
 * update alike, example by example: separable or noisy streams, with or
 * without the bias feature, norms falling over four decades (Type II resets),
 * sparse.  Theorem 7 is exact arithmetic; both rules keep exact norms
 * (mcf.h), so their scores agree to 1e-9 of ||u|| ||x|| and l* = ||u|| to 1e-9,
 * even on the 10% noise stream where ||u|| grows by dozens of decades. */
START_TEST(naromma_predicts_as_aromma)
{
    enum { N = 8000 };
    struct {
        uint32_t d;
        bool bias;
        double noise, spread;
        int nnz;
    } cases[] = {
        {5, false, 0.0, 0, 0},   {5, false, 0.1, 0, 0},  {8, true, 0.0, 0, 0},
        {8, false, 0.0, 2, 0},   {8, true, 0.02, 1, 0},  {20, false, 0.0, 2, 0},
        {20, true, 0.05, 0, 0},  {1000, true, 0.0, 1, 6}, {1000, false, 0.1, 1, 6},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rng_seed(77 + c);
        uint32_t d = cases[c].d;
        double t[1000], b = cases[c].bias ? 0.3 : 0;
        for (uint32_t i = 0; i < d; i++)
            t[i] = grand();
        pc_model *ma = tu_model("aromma", d, cases[c].bias);
        pc_model *mn = tu_model("naromma", d, cases[c].bias);
        pc_svec x;
        pc_svec_init(&x);
        int updates = 0, mistakes = 0, resets = 0;
        for (int n = 0; n < N; n++) {
            pc_error err;
            /* spread: norms dropping from 10^spread by 100x every 300 examples down
             * to 10^-spread, with a margin of 1/5 of the norm: the first examples
             * after a drop are short against 1/||u|| (Type II) */
            double sc = pow(10, cases[c].spread - 2 * fmin(floor(n / 300.0), cases[c].spread) +
                                    0.3 * (2 * urand() - 1));
            double dot;
            do {
                pc_svec_clear(&x);
                dot = b;
                int nnz = cases[c].nnz ? cases[c].nnz : (int)d;
                for (int k = 0; k < nnz; k++) {
                    uint32_t i = cases[c].nnz ? (uint32_t)(urand() * d) : (uint32_t)k;
                    double v = grand() * sc;
                    pc_svec_push(&x, i, v);
                    dot += t[i] * v;
                }
            } while (cases[c].spread > 0 && fabs(dot) < 0.2 * sc * sqrt(d));
            ck_assert_int_eq(pc_svec_normalize(&x, d, &err), PC_OK);
            int y = dot >= 0 ? 1 : -1;
            if (urand() < cases[c].noise)
                y = -y;
            pc_outcome oa = label_x(ma, &x, y), on = label_x(mn, &x, y);
            ck_assert_msg(oa.pred.y == on.pred.y, "case %zu example %d: aromma %g, naromma %g", c, n,
                          oa.pred.score, on.pred.score);
            ck_assert_int_eq(oa.updated, on.updated);
            ck_assert_int_eq(oa.mistake, on.mistake);
            double nu = 1 / margin_of(ma), nx = sqrt(x.norm2 + (cases[c].bias ? 1 : 0));
            ck_assert_double_eq_tol(on.pred.score, oa.pred.score, 1e-9 * nx * nu);
            ck_assert_double_eq_tol(1 / margin_of(mn), nu, 1e-9 * nu); /* l* = ||u|| */
            updates += oa.updated;
            mistakes += oa.mistake;
            resets += oa.updated && fabs(nu * nx - 1) < 1e-12; /* Type II: u = y x/||x||^2 */
        }
        ck_assert_int_gt(updates, 20);
        ck_assert_int_gt(mistakes, 5);
        if (cases[c].spread >= 2)
            ck_assert_int_gt(resets, 1); /* Type II after the first example */
        pc_svec_free(&x);
        pc_model_free(ma);
        pc_model_free(mn);
    }
}
END_TEST

/* Every rule reads ||w|| in its update, so the norm it carries must stay the
 * norm of the weights it stores, on noisy streams too, where steps that nearly
 * cancel w are common: a running ||w||^2 kept by algebra was off by a factor 100
 * (cmcp) to 1e7 (aromma) after 50000 such examples; mcf.h keeps it exact. */
START_TEST(running_norm_is_the_weights_norm)
{
    static const char *const rules[] = {"romma", "aromma", "naromma", "cmcp", "mcp"};
    for (int r = 0; r < 5; r++) {
        rng_seed(78);
        double t[5];
        for (int i = 0; i < 5; i++)
            t[i] = grand();
        pc_model *m = tu_model(rules[r], 5, false);
        for (int n = 1; n <= 30000; n++) {
            double v[5], dot = 0;
            for (int i = 0; i < 5; i++) {
                v[i] = grand();
                dot += t[i] * v[i];
            }
            int y = (dot >= 0) != (urand() < 0.1) ? 1 : -1;
            tu_label(m, 5, v, y);
            if (n % 3000)
                continue;
            double s2 = 0;
            for (uint32_t i = 0; i < 5; i++)
                s2 += pc_model_weight(m, 0, i) * pc_model_weight(m, 0, i);
            pc_learner_info li;
            pc_model_learner_info(m, 0, &li);
            ck_assert_msg(fabs(li.norm / sqrt(s2) - 1) < 1e-12, "%s after %d: norm %g, weights %g",
                          rules[r], n, li.norm, sqrt(s2));
            /* and the decoder, which checks the sums against the entries,
             * takes every state these steps leave (noise makes them cancel
             * and recount) */
            pc_error err = {{0}};
            ck_assert_msg(tu_snapshot_loads(m, &err) == PC_OK, "%s after %d: %s", rules[r], n,
                          err.msg);
        }
        pc_model_free(m);
    }
}
END_TEST

static double f64_at(const uint8_t *p)
{
    double v;
    memcpy(&v, p, 8);
    return v;
}

static pc_status decode_with(const uint8_t *buf, size_t len, size_t at, double v)
{
    uint8_t *copy = malloc(len);
    memcpy(copy, buf, len);
    memcpy(copy + at, &v, 8);
    pc_model *m = NULL;
    pc_error err = {{0}};
    pc_status st = pc_model_decode(copy, len, &m, &err);
    pc_model_free(m);
    free(copy);
    return st;
}

/* A state no update could have left is refused at load, so what loads
 * learns soundly: a sum of squares that is not the vector's (a crafted or
 * damaged snapshot with a good CRC; fuzzed, one such aromma model learned
 * into NaN and could not be saved again).  The untouched bytes load (the
 * offsets are right). */
START_TEST(a_state_that_disagrees_with_itself_is_refused)
{
    static const char *const rules[] = {"romma", "aromma", "naromma"};
    for (int r = 0; r < 3; r++) {
        rng_seed(79);
        pc_model *m = tu_model(rules[r], 5, false);
        for (int n = 0; n < 200; n++) {
            double v[5];
            for (int i = 0; i < 5; i++)
                v[i] = grand();
            tu_label(m, 5, v, v[0] + 0.5 * v[1] >= 0 ? 1 : -1);
        }
        pc_learner_info li;
        pc_model_learner_info(m, 0, &li);
        uint8_t *buf;
        size_t len, at = 0;
        pc_error err = {{0}};
        ck_assert(pc_model_encode(m, &buf, &len, &err) == PC_OK);
        /* mcf_encode_with ends the state with the sum of squares of the
         * direction's stored entries (hi, lo, err), then ||u|| */
        for (size_t k = 32; k + 8 <= len; k++) /* the last f64 with ||u||'s bits */
            if (f64_at(buf + k) == li.norm)
                at = k;
        ck_assert_msg(at, "%s: ||u|| = %g not found in its bytes", rules[r], li.norm);
        double hi = f64_at(buf + at - 24);
        ck_assert_msg(hi > 0, "%s: the direction's sum of squares %g", rules[r], hi);
        ck_assert_int_eq(decode_with(buf, len, at, li.norm), PC_OK);
        ck_assert_int_eq(decode_with(buf, len, at - 24, hi * (1 + 0x1p-10)), PC_EFORMAT);
        ck_assert_int_eq(decode_with(buf, len, at - 24, hi * 4), PC_EFORMAT);
        ck_assert_int_eq(decode_with(buf, len, at - 24, 0), PC_EFORMAT);
        /* ||u|| itself is free: a reset on an example of norm 1e-160 leaves
         * 1e160, past the cap of the steps (MCF_NORM_MAX) */
        ck_assert_int_eq(decode_with(buf, len, at, li.norm * 3), PC_OK);
        ck_assert_int_eq(decode_with(buf, len, at, 1e160), PC_OK);
        free(buf);
        pc_model_free(m);
    }
}
END_TEST

/* An example parallel to the hypothesis cannot turn it and zeroes the ROMMA
 * denominators: every rule skips it (seed 000 Fig. 1 step 4), even on a
 * mistake. */
START_TEST(parallel_examples_are_skipped)
{
    static const char *const rules[] = {"romma", "aromma", "naromma", "cmcp", "mcp"};
    for (size_t r = 0; r < 5; r++) {
        pc_model *m = tu_model(rules[r], 3, false);
        double x[3] = {1, -2, 0.5}, mx[3] = {-2, 4, -1}, hx[3] = {0.5, -1, 0.25};
        ck_assert(tu_label(m, 3, x, +1).updated);
        pc_outcome o = tu_label(m, 3, mx, +1); /* -2x labelled +1: a mistake */
        ck_assert_msg(o.mistake && !o.updated, "%s updated on a parallel mistake", rules[r]);
        o = tu_label(m, 3, hx, +1); /* x/2: right, a margin violation for aromma/mcp */
        ck_assert_msg(!o.updated, "%s updated on a parallel example", rules[r]);
        pc_model_free(m);
    }
}
END_TEST

/* cmcp and mcp change w only by w += alpha x (from w = 0 on the first example
 * too): PC_RULE_ADDITIVE, so the averaged model predicts with the mean of the
 * weights after each example.  The ROMMA family rescales and refuses averaging. */
START_TEST(additive_rules_average)
{
    ck_assert(pc_rule_can_average(pc_rule_find("cmcp")));
    ck_assert(pc_rule_can_average(pc_rule_find("mcp")));
    ck_assert(!pc_rule_can_average(pc_rule_find("romma")));
    ck_assert(!pc_rule_can_average(pc_rule_find("aromma")));
    ck_assert(!pc_rule_can_average(pc_rule_find("naromma")));
    static const char *const names[] = {"romma", "aromma", "naromma", "cmcp", "mcp"};
    for (int r = 0; r < 5; r++) { /* no parameters, no batch mode */
        ck_assert_int_eq(pc_rule_param_count(pc_rule_find(names[r])), 0);
        ck_assert(!pc_rule_can_batch(pc_rule_find(names[r])));
    }
    for (int r = 3; r < 5; r++) {
        pc_model_config c;
        pc_model_config_default(&c, 3);
        c.rule = pc_rule_find(names[r]);
        pc_params_default(c.rule, &c.params);
        c.bias = false;
        c.averaged = true;
        pc_model *avg = NULL, *plain = tu_model(names[r], 3, false);
        pc_error err;
        ck_assert_int_eq(pc_model_new(&c, &avg, &err), PC_OK);
        rng_seed(5);
        double sum[3] = {0};
        for (int n = 1; n <= 200; n++) {
            double v[3] = {grand(), grand(), grand()};
            int y = v[0] - 0.5 * v[1] + 0.1 >= 0 ? 1 : -1;
            tu_label(plain, 3, v, y);
            tu_label(avg, 3, v, y);
            for (uint32_t i = 0; i < 3; i++) {
                sum[i] += pc_model_weight(plain, 0, i);
                ck_assert_double_eq_tol(pc_model_weight(avg, 0, i), sum[i] / n,
                                        1e-9 * (1 + fabs(sum[i] / n)));
            }
        }
        pc_model_free(avg);
        pc_model_free(plain);
    }
}
END_TEST

/* A direction-only reference of cmcp/mcp: w kept at unit norm, the step
 * w += (1/(l ||x||^2)) y x in units of ||w||.  The rules must predict as it does
 * on streams whose norms jump between 1e-150 and 1e150, where the literal w of
 * seed 000 leaves [2^-400, 2^400] (its squared norm and its scores then near
 * the end of the double range; the library rescales w by powers of two). */
typedef struct ref {
    double w[4], l;
    double log2n; /* log2 of the norm the literal w of seed 000 would have */
    bool mcp;
} ref;

static double ref_score(const ref *r, const double *x)
{
    return r->w[0] * x[0] + r->w[1] * x[1] + r->w[2] * x[2] + r->w[3] * x[3];
}

static void ref_update(ref *r, const double *x, int y)
{
    double nx = 0, mx = 0;
    for (int i = 0; i < 4; i++)
        mx = fmax(mx, fabs(x[i]));
    for (int i = 0; i < 4; i++)
        nx += (x[i] / mx) * (x[i] / mx);
    nx = mx * sqrt(nx);
    if (r->l == 0) {
        for (int i = 0; i < 4; i++)
            r->w[i] = y * x[i] / nx;
        r->l = 1 / nx;
        r->log2n = log2(nx);
        return;
    }
    double a = y * ref_score(r, x); /* ||w|| = 1 */
    if (!(r->mcp ? a <= 1 / (2 * r->l) : a <= 0))
        return;
    double q = 1 / (r->l * nx), eta = a <= 0 ? 0 : a * r->l, m = 0, n = 0;
    for (int i = 0; i < 4; i++) {
        r->w[i] += q * y * (x[i] / nx);
        m = fmax(m, fabs(r->w[i]));
    }
    for (int i = 0; i < 4; i++)
        n += (r->w[i] / m) * (r->w[i] / m);
    for (int i = 0; i < 4; i++)
        r->w[i] = r->w[i] / m / sqrt(n);
    r->log2n += log2(m) + 0.5 * log2(n);
    r->l = hypot(r->l, sqrt(1 - 2 * eta) / nx);
}

START_TEST(mcp_family_is_scale_free_at_extreme_norms)
{
    static const char *const rules[] = {"cmcp", "mcp"};
    static const double scales[] = {1e-150, 1e150, 1, 1e-100, 1e100};
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++) {
            rng_seed(900 + (uint64_t)k);
            pc_model *m = tu_model(rules[r], 4, false);
            pc_model_config c = *pc_model_config_of(m);
            c.averaged = true; /* the rescale also scales the running average */
            pc_model *ma = NULL;
            pc_error err;
            ck_assert_int_eq(pc_model_new(&c, &ma, &err), PC_OK);
            ref rf = {.mcp = r == 1};
            double literal = 0; /* largest |log2 ||w||| of the literal w (> 200: rescaled) */
            for (int n = 0; n < 400; n++) {
                double sc = scales[(size_t)(n * (k + 1) + (int)(urand() * 2)) % 5], x[4];
                for (int i = 0; i < 4; i++)
                    x[i] = grand() * sc;
                int y = x[0] + 0.5 * x[1] - x[3] >= 0 ? 1 : -1;
                double rs = ref_score(&rf, x);
                pc_outcome o = tu_label(m, 4, x, y), oa = tu_label(ma, 4, x, y);
                ck_assert(isfinite(o.pred.score) && isfinite(oa.pred.score));
                ck_assert_msg(o.pred.y == (rs >= 0 ? 1 : -1), "%s stream %d example %d: %g vs ref %g",
                              rules[r], k, n, o.pred.score, rs);
                ref_update(&rf, x, y);
                literal = fmax(literal, fabs(rf.log2n));
                pc_learner_info li;
                pc_model_learner_info(m, 0, &li);
                ck_assert(li.norm > 0x1p-202 && li.norm < 0x1p202);
                ck_assert_double_eq_tol(li.margin, 1 / rf.l, 1e-9 / rf.l);
                for (uint32_t i = 0; i < 4; i++)
                    ck_assert(isfinite(pc_model_weight(ma, 0, i)));
            }
            ck_assert_msg(literal > 400, "%s: the rescale was not exercised (%g)", rules[r], literal);
            pc_model_free(m);
            pc_model_free(ma);
        }
}
END_TEST

/* O(nnz): a rule's work does not depend on the dimension.  A 2^22-dimensional
 * model learns a sparse stream as a small one does: same outcomes (only the
 * indices differ).  The speed side is bench/bench_rules. */
START_TEST(cost_does_not_grow_with_dim)
{
    static const char *const rules[] = {"romma", "aromma", "naromma", "cmcp", "mcp"};
    for (int r = 0; r < 5; r++) {
        pc_model *big = tu_model(rules[r], 1u << 22, true), *small = tu_model(rules[r], 64, true);
        pc_svec xb, xs;
        pc_svec_init(&xb);
        pc_svec_init(&xs);
        rng_seed(31);
        for (int n = 0; n < 5000; n++) {
            pc_error err;
            pc_svec_clear(&xb);
            pc_svec_clear(&xs);
            double dot = 0;
            for (int k = 0; k < 8; k++) {
                uint32_t i = (uint32_t)(urand() * 64);
                double v = grand();
                pc_svec_push(&xs, i, v);
                pc_svec_push(&xb, i * (1u << 16), v);
                dot += (i % 3 ? 1 : -1) * v;
            }
            ck_assert_int_eq(pc_svec_normalize(&xs, 64, &err), PC_OK);
            ck_assert_int_eq(pc_svec_normalize(&xb, 1u << 22, &err), PC_OK);
            int y = (dot >= 0) != (urand() < 0.1) ? 1 : -1;
            pc_outcome ob = label_x(big, &xb, y), os = label_x(small, &xs, y);
            ck_assert_int_eq(ob.pred.y, os.pred.y);
            ck_assert_int_eq(ob.updated, os.updated);
        }
        pc_svec_free(&xb);
        pc_svec_free(&xs);
        pc_model_free(big);
        pc_model_free(small);
    }
}
END_TEST

/* The longest example a client can send, then one of the shortest: q =
 * 1/(l ||x||) is about 1e179 and its square overflows.  Before
 * mcf_mcp_step took log2(rho) from e there, cmcp and mcp stepped to an
 * infinite weight on two labels, and the model's snapshot no longer loaded.
 * The step (eq. 38, 41) turns w almost onto y x: its weight on the short
 * feature dominates, it predicts the short example right, and it loads. */
START_TEST(a_short_example_after_a_long_one)
{
    static const char *const rules[] = {"cmcp", "mcp"};
    for (int r = 0; r < 2; r++)
        for (int av = 0; av < 2; av++)
            for (int w32 = 0; w32 < 2; w32++) {
                pc_model_config c;
                pc_model_config_default(&c, 2);
                c.rule = pc_rule_find(rules[r]);
                pc_params_default(c.rule, &c.params);
                c.bias = false; /* a constant feature would bound the ratio of norms */
                c.averaged = av;
                c.weights = w32 ? PC_WEIGHTS_FLOAT32 : PC_WEIGHTS_FLOAT64;
                pc_model *m;
                pc_error err = {{0}};
                ck_assert(pc_model_new(&c, &m, &err) == PC_OK);
                double longest[2] = {PC_VALUE_MAX, 0}, shortest[2] = {0, 1e-160};
                ck_assert(tu_label(m, 2, longest, 1).updated);
                ck_assert(tu_label(m, 2, shortest, 1).updated);
                const char *n = rules[r];
                double w0 = pc_model_weight(m, 0, 0), w1 = pc_model_weight(m, 0, 1);
                ck_assert_msg(isfinite(w0) && isfinite(w1) && w1 > 0, "%s: w = (%g, %g)", n, w0, w1);
                if (!av) /* the average still remembers the first w */
                    ck_assert_msg(w1 > 1e100 * fabs(w0), "%s: w = (%g, %g)", n, w0, w1);
                ck_assert_int_eq(tu_label(m, 2, shortest, 1).pred.y, 1);
                ck_assert_msg(tu_snapshot_loads(m, &err) == PC_OK, "%s: %s", n, err.msg);
                pc_model_free(m);
            }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rules_max_cosine");
    TU_TCASE(s, "seed000", 120, romma_by_hand, aromma_by_hand, naromma_by_hand, cmcp_by_hand,
        mcp_by_hand, mistake_bound_on_separable_streams, naromma_predicts_as_aromma,
        running_norm_is_the_weights_norm, a_state_that_disagrees_with_itself_is_refused,
        a_short_example_after_a_long_one, parallel_examples_are_skipped, additive_rules_average,
        mcp_family_is_scale_free_at_extreme_norms, cost_does_not_grow_with_dim);
    return tu_run(s);
}
