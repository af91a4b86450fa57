/* test_experts.c - seed 001's weighted majority (WMA) and randomized weighted
 * majority (RWMA) over a model's experts (daemon/model/experts.c): weights,
 * votes and draws on hand-computed rounds; the seed's bounds on adversarial
 * and random streams (WMA's always, RWMA's mean over 20 seeds); the state
 * through the challengers' snapshot section (PCC2), PCC1 still read, damage
 * refused; the seed a model's name gives, pinned. */
#include "tests/testutil.h"

#include <math.h>

#include "daemon/model/challengers.h"
#include "daemon/model/registry.h"
#include "lib/bytes.h"

static pcd_experts make(pcp_experts_mode mode, double eta, uint64_t seed)
{
    pcd_experts x = {.cfg = {.mode = mode, .eta = eta, .seed = seed}};
    return x;
}

static pc_prediction bin(int y)
{
    return (pc_prediction){.y = y, .cls = -1, .score = y};
}

static pc_prediction cls(int32_t c)
{
    return (pc_prediction){.y = 1, .cls = c, .score = 1};
}

/* Three experts, eta 1/2: the weights halve with each mistake, the vote is
 * the weighted sum, a tie goes to the champion's answer. */
START_TEST(wma_weights_and_votes_by_hand)
{
    pcd_experts x = make(PCP_EXPERTS_WMA, 0.5, 1);
    double w[3];
    pcd_experts_weights(&x, 3, w);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(w[i], 1.0 / 3, 1e-15);
    /* round 1: experts say +1, -1, -1; truth +1: experts 1 and 2 err.  The
     * vote before: (1 - 1 - 1) / 3 = -1/3, so the combined answer is -1,
     * wrong (it came from expert 1) */
    pc_prediction p[3] = {bin(1), bin(-1), bin(-1)};
    bool wrong[3] = {false, true, true};
    pc_prediction said;
    ck_assert(pcd_experts_learn(&x, 3, p, wrong, false, &said));
    ck_assert_int_eq(said.y, -1);
    ck_assert_double_eq_tol(said.score, -1.0 / 3, 1e-15);
    /* weights now 1, 1/2, 1/2 over 2 */
    pcd_experts_weights(&x, 3, w);
    ck_assert_double_eq_tol(w[0], 0.5, 1e-15);
    ck_assert_double_eq_tol(w[1], 0.25, 1e-15);
    /* the same answers: +1 now carries 1/2 against 1/2: a tie, the champion's */
    size_t who;
    pc_prediction a = pcd_experts_answer(&x, 3, p, false, &who);
    ck_assert_int_eq(a.y, 1);
    ck_assert_uint_eq(who, 0);
    ck_assert_double_eq_tol(a.score, 0, 1e-15);
    /* round 2: expert 0 errs alone: weights 1/2, 1/2, 1/2 -> all 1/3;
     * the answer was the champion's +1, truth -1: wrong */
    bool wrong2[3] = {true, false, false};
    ck_assert(pcd_experts_learn(&x, 3, p, wrong2, false, NULL));
    pcd_experts_weights(&x, 3, w);
    ck_assert_double_eq_tol(w[2], 1.0 / 3, 1e-15);
    ck_assert_uint_eq(x.rounds, 2);
    ck_assert_uint_eq(x.mistakes, 2);
    ck_assert_uint_eq(x.wrong[0], 1);
    ck_assert_uint_eq(x.wrong[1], 1);
    /* now -1 has two thirds */
    a = pcd_experts_answer(&x, 3, p, false, &who);
    ck_assert_int_eq(a.y, -1);
    ck_assert_uint_eq(who, 1);
    ck_assert_double_eq_tol(a.score, -1.0 / 3, 1e-15);
    /* seed 001: 2 (1 + eta) m* + 2 ln N / eta = 3 * 1 + 4 ln 3 */
    ck_assert_double_eq_tol(pcd_experts_bound(&x, 3), 3 + 4 * log(3), 1e-12);
}
END_TEST

/* Multiclass: each class gets the weight of the experts that name it. */
START_TEST(wma_votes_per_class)
{
    pcd_experts x = make(PCP_EXPERTS_WMA, 0.5, 1);
    x.wrong[0] = 2; /* weights 1/4, 1, 1, 1/2 over 2.75 */
    x.wrong[3] = 1;
    pc_prediction p[4] = {cls(2), cls(0), cls(1), cls(1)};
    size_t who;
    pc_prediction a = pcd_experts_answer(&x, 4, p, true, &who);
    /* class 1: 1 + 1/2 = 1.5 of 2.75 */
    ck_assert_int_eq(a.cls, 1);
    ck_assert_uint_eq(who, 2);
    ck_assert_double_eq_tol(a.score, 1.5 / 2.75, 1e-15);
    /* weights 1, 1/32, 1, 1/2: class 2 with 1 + 1/32 against class 0's 1 */
    x.wrong[0] = 0;
    x.wrong[1] = 5;
    p[1] = cls(2);
    p[2] = cls(0);
    a = pcd_experts_answer(&x, 4, p, true, &who);
    ck_assert_int_eq(a.cls, 2);
    ck_assert_uint_eq(who, 0);
    /* no class yet (-1) is an answer like the others */
    pc_prediction none[2] = {cls(-1), cls(-1)};
    a = pcd_experts_answer(&x, 2, none, true, NULL);
    ck_assert_int_eq(a.cls, -1);
}
END_TEST

/* RWMA follows one expert, drawn in proportion to its weight: a pure
 * function of (seed, round); over many rounds the frequencies are the
 * weights. */
START_TEST(rwma_draws_follow_the_weights)
{
    pcd_experts x = make(PCP_EXPERTS_RWMA, 0.5, 42);
    x.wrong[1] = 1; /* weights 1, 1/2, 1/4 over 1.75 */
    x.wrong[2] = 2;
    pc_prediction p[3] = {bin(1), bin(-1), bin(1)};
    p[2].score = 7;
    unsigned count[3] = {0};
    enum { ROUNDS = 70000 };
    for (uint64_t t = 0; t < ROUNDS; t++) {
        x.rounds = t;
        size_t who, again;
        pc_prediction a = pcd_experts_answer(&x, 3, p, false, &who);
        ck_assert(a.y == p[who].y && a.score == p[who].score); /* its own answer */
        pcd_experts_answer(&x, 3, p, false, &again);
        ck_assert_uint_eq(who, again);
        count[who]++;
    }
    double want[3] = {1 / 1.75, 0.5 / 1.75, 0.25 / 1.75};
    for (int i = 0; i < 3; i++) /* 4 standard deviations: sqrt(p (1 - p) / n) < 0.0019 */
        ck_assert_msg(fabs(count[i] / (double)ROUNDS - want[i]) < 0.008, "expert %d: %g vs %g", i,
                      count[i] / (double)ROUNDS, want[i]);
    /* another seed, other draws */
    pcd_experts y = make(PCP_EXPERTS_RWMA, 0.5, 43);
    memcpy(y.wrong, x.wrong, sizeof y.wrong);
    unsigned differ = 0;
    for (uint64_t t = 0; t < 1000; t++) {
        size_t a, b;
        x.rounds = y.rounds = t;
        pcd_experts_answer(&x, 3, p, false, &a);
        pcd_experts_answer(&y, 3, p, false, &b);
        differ += a != b;
    }
    ck_assert_uint_gt(differ, 300);
}
END_TEST

START_TEST(the_schedule)
{
    pcd_experts x = make(PCP_EXPERTS_RWMA, 0, 1);
    /* min(1/2, sqrt(ln N / t)) */
    ck_assert_double_eq(pcd_experts_eta(&x, 4, 1), 0.5);
    ck_assert_double_eq_tol(pcd_experts_eta(&x, 4, 100), sqrt(log(4) / 100), 1e-15);
    ck_assert_double_eq_tol(pcd_experts_eta(&x, 9, 10000), sqrt(log(9) / 10000), 1e-15);
    ck_assert(isnan(pcd_experts_bound(&x, 4)));
    x.cfg.eta = 0.1;
    ck_assert_double_eq(pcd_experts_eta(&x, 4, 100), 0.1);
}
END_TEST

/* A stream of n experts' mistakes, binary, truth +1: adversarial (every
 * expert errs in turn, then the one with the most weight errs: the
 * combination is pushed to err as often as it can) or random (expert i errs
 * with probability 0.1 + 0.1 i). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static void round_of(int kind, const pcd_experts *x, size_t n, uint64_t t, pc_prediction *p,
                     bool *wrong)
{
    double w[PCD_EXPERTS_MAX];
    pcd_experts_weights(x, n, w);
    size_t heaviest = 0;
    for (size_t i = 1; i < n; i++)
        if (w[i] > w[heaviest])
            heaviest = i;
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case 0: wrong[i] = i == t % n; break;     /* in turn */
        case 1: wrong[i] = i == heaviest; break;  /* the favourite */
        case 2: wrong[i] = i != (t / 50) % n; break; /* all but one, the one changing */
        default: wrong[i] = urand() < 0.1 + 0.1 * (double)i; break;
        }
        p[i] = bin(wrong[i] ? -1 : 1);
    }
}

START_TEST(wma_stays_within_seed_001s_bound)
{
    static const double etas[] = {0.05, 0.1, 0.25, 0.5};
    for (int kind = 0; kind < 4; kind++)
        for (size_t e = 0; e < 4; e++)
            for (size_t n = 2; n <= PCD_EXPERTS_MAX; n += 3) {
                pcd_experts x = make(PCP_EXPERTS_WMA, etas[e], 1);
                for (uint64_t t = 0; t < 3000; t++) {
                    pc_prediction p[PCD_EXPERTS_MAX];
                    bool wrong[PCD_EXPERTS_MAX];
                    round_of(kind, &x, n, t, p, wrong);
                    pcd_experts_learn(&x, n, p, wrong, false, NULL);
                    /* the bound holds at every round, not only at the end */
                    ck_assert_msg((double)x.mistakes <= pcd_experts_bound(&x, n),
                                  "stream %d, eta %g, %zu experts, round %llu: %llu mistakes, "
                                  "bound %g", kind, etas[e], n, (unsigned long long)t,
                                  (unsigned long long)x.mistakes, pcd_experts_bound(&x, n));
                }
            }
}
END_TEST

/* RWMA's bound is on the expected mistakes: the mean over 20 seeds stays
 * within it (the streams do not depend on the draws). */
START_TEST(rwma_mean_stays_within_the_expected_bound)
{
    static const double etas[] = {0.1, 0.25, 0.5};
    for (int kind = 0; kind < 4; kind += 2)
        for (size_t e = 0; e < 3; e++) {
            size_t n = 5;
            double total = 0, bound = 0;
            for (uint64_t seed = 1; seed <= 20; seed++) {
                pcd_experts x = make(PCP_EXPERTS_RWMA, etas[e], seed);
                rng_state = 0x9e3779b97f4a7c15ull; /* the same stream for every seed */
                for (uint64_t t = 0; t < 3000; t++) {
                    pc_prediction p[PCD_EXPERTS_MAX];
                    bool wrong[PCD_EXPERTS_MAX];
                    round_of(kind, &x, n, t, p, wrong);
                    pcd_experts_learn(&x, n, p, wrong, false, NULL);
                }
                total += (double)x.mistakes;
                bound = pcd_experts_bound(&x, n);
            }
            ck_assert_msg(total / 20 <= bound, "stream %d, eta %g: mean %g, bound %g", kind,
                          etas[e], total / 20, bound);
        }
}
END_TEST

/* A binary champion with two challengers, with or without experts. */
static pcd_challengers *challengers(const pcp_experts_config *x, pc_model **champion)
{
    pc_model_config cfg;
    pc_model_config_default(&cfg, 8);
    pc_error perr;
    ck_assert_int_eq(pc_model_new(&cfg, champion, &perr), PC_OK);
    pcp_challenger ch[2] = {{.c = cfg}, {.c = cfg}};
    ch[1].c.rule = pc_rule_find("pa");
    pc_params_default(ch[1].c.rule, &ch[1].c.params);
    pcd_challengers *cs;
    pcp_error err;
    ck_assert_int_eq(pcd_challengers_create(&cs, *champion, ch, 2, x, &err), PCP_OK);
    pc_svec v;
    pc_svec_init(&v);
    for (int t = 0; t < 40; t++) {
        pc_svec_clear(&v);
        ck_assert_int_eq(pc_svec_push(&v, (uint32_t)(t % 7), t % 3 ? 0.5 : -1), PC_OK);
        pc_label y = {.y = t % 5 < 2 ? 1 : -1};
        pc_outcome o;
        ck_assert_int_eq(pc_model_label(*champion, &v, &y, &o, &perr), PC_OK);
        pcd_challengers_learn(cs, &v, &y, &o, NULL);
    }
    pc_svec_free(&v);
    return cs;
}

START_TEST(the_state_goes_through_snapshots)
{
    pcp_experts_config xc = {.mode = PCP_EXPERTS_RWMA, .eta = 0.25, .seed = 99};
    pc_model *champion;
    pcd_challengers *cs = challengers(&xc, &champion);
    ck_assert_uint_eq(cs->experts.rounds, 40);
    ck_assert_uint_gt(cs->experts.wrong[0] + cs->experts.wrong[1] + cs->experts.wrong[2], 0);
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, used;
    ck_assert(pcd_challengers_append(cs, &buf, &len, &cap));
    ck_assert(memcmp(buf, "PCC2", 4) == 0);
    char why[128];
    pcd_challengers *back = pcd_challengers_parse(buf, len, &used, why, sizeof why);
    ck_assert_msg(back != NULL, "%s", why);
    ck_assert_uint_eq(used, len);
    ck_assert(memcmp(&back->experts, &cs->experts, sizeof back->experts) == 0);
    pcd_challengers_free(back);
    /* every truncation and every flipped byte of the experts' state: refused
     * or a state within its bounds, never a crash */
    for (size_t n = 0; n < len; n++)
        ck_assert(pcd_challengers_parse(buf, n, &used, why, sizeof why) == NULL);
    for (size_t i = 16; i < 16 + 4 + 8 + 8 * 3 + 8 * 3; i++) {
        buf[i] ^= 0x40;
        back = pcd_challengers_parse(buf, len, &used, why, sizeof why);
        if (back) {
            const pcd_experts *x = &back->experts;
            ck_assert(x->cfg.mode != PCP_EXPERTS_NONE && x->cfg.eta >= 0 && x->cfg.eta <= 0.5);
            ck_assert(x->mistakes <= x->rounds);
            for (int k = 0; k < 3; k++)
                ck_assert(x->wrong[k] <= x->rounds);
        }
        pcd_challengers_free(back);
        buf[i] ^= 0x40;
    }
    free(buf);
    /* promote swaps the champion's count with the challenger's */
    uint64_t w0 = cs->experts.wrong[0], w2 = cs->experts.wrong[2];
    pcd_challengers_promote(cs, &champion, 1);
    ck_assert_uint_eq(cs->experts.wrong[0], w2);
    ck_assert_uint_eq(cs->experts.wrong[2], w0);
    /* reset starts the experts again, the combination kept */
    pcd_challengers_reset(cs);
    ck_assert_uint_eq(cs->experts.rounds + cs->experts.mistakes + cs->experts.wrong[0], 0);
    ck_assert_int_eq(cs->experts.cfg.mode, PCP_EXPERTS_RWMA);
    pcd_challengers_free(cs);
    pc_model_free(champion);
    /* without experts the section is PCC1 as before, and reads with none */
    cs = challengers(NULL, &champion);
    ck_assert(!pcd_challengers_combine(cs));
    buf = NULL;
    len = cap = 0;
    ck_assert(pcd_challengers_append(cs, &buf, &len, &cap));
    ck_assert(memcmp(buf, "PCC1", 4) == 0);
    back = pcd_challengers_parse(buf, len, &used, why, sizeof why);
    ck_assert(back && !pcd_challengers_combine(back));
    pcd_challengers_free(back);
    free(buf);
    pcd_challengers_free(cs);
    pc_model_free(champion);
}
END_TEST

/* A model created without experts.seed draws under XXH3-64 of its name:
 * pinned, since a different function would change the draws of every model
 * a journal replays (docs/config.md, experts.seed). */
START_TEST(a_models_name_gives_its_seed)
{
    ck_assert_uint_eq(pcd_model_name_seed("ra"), 0xc798f4aff1d9a038ull);
    ck_assert_uint_eq(pcd_model_name_seed("rb"), 0xcc58b17c79b2d6deull);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("experts");
    TU_TCASE(s, "experts", 120, wma_weights_and_votes_by_hand, wma_votes_per_class,
             rwma_draws_follow_the_weights, the_schedule, wma_stays_within_seed_001s_bound,
             rwma_mean_stays_within_the_expected_bound, the_state_goes_through_snapshots,
             a_models_name_gives_its_seed);
    return tu_run(s);
}
