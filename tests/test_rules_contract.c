/* test_rules_contract.c - what every registered rule must do, run over the
 * whole registry: so a new rule is held to it by adding one registry line.
 *
 * For each rule, with and without the bias feature and on a few streams:
 * zero-norm examples never update (except in the rules for which the zero
 * example is the origin, PC_RULE_ORIGIN: tests/test_rules_omm.c); scores stay finite on extreme values;
 * encode/decode is exact (same bytes, same scores, same future learning);
 * truncated or corrupted bytes are rejected without crashing; parameters
 * outside their declared range are rejected; averaging and batch mode are
 * refused where the rule cannot do them; the rule gives the operations it
 * must (rule.h) and no default restated; and the three storages (dense,
 * sparse, auto) give bit-identical scores and snapshots on the same stream. */
#include "tests/testutil.h"

#include "lib/learner.h"

#include <stdlib.h>

#define DIM 16

/* A deterministic pseudo-random stream (xorshift), no libc rand state. */
static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static void random_example(pc_svec *x, double scale)
{
    pc_error err;
    pc_svec_clear(x);
    int n = 1 + (int)(urand() * 6);
    for (int k = 0; k < n; k++)
        pc_svec_push(x, (uint32_t)(urand() * DIM), (urand() * 2 - 1) * scale);
    ck_assert_int_eq(tu_normalize(x, DIM, &err), PC_OK);
}

static int label_of(const pc_svec *x)
{
    /* a separable target through the origin with a margin-free tie rule */
    double s = 0;
    for (uint32_t k = 0; k < x->n; k++)
        s += (x->idx[k] % 3 == 0 ? 1.0 : -0.5) * x->val[k];
    return s >= 0 ? 1 : -1;
}

static pc_model *make_in(const pc_rule *r, bool bias, bool multiclass, pc_weights weights)
{
    pc_model_config c;
    pc_model_config_default(&c, DIM);
    c.weights = weights;
    c.rule = r;
    pc_params_default(r, &c.params);
    c.bias = bias;
    c.multiclass = multiclass;
    c.open_classes = multiclass;
    pc_model *m = NULL;
    pc_error err = {{0}};
    ck_assert_msg(pc_model_new(&c, &m, &err) == PC_OK, "%s: %s", pc_rule_name(r), err.msg);
    return m;
}

static pc_model *make(const pc_rule *r, bool bias, bool multiclass)
{
    return make_in(r, bias, multiclass, PC_WEIGHTS_FLOAT64);
}

static void learn(pc_model *m, pc_svec *x, int y)
{
    pc_error err = {{0}};
    pc_outcome o;
    pc_label l = {.y = y};
    if (pc_model_config_of(m)->multiclass) {
        static const char *names[] = {"neg", "pos", "other"};
        int c = y > 0 ? 1 : (x->n % 3 == 0 ? 2 : 0);
        l.cls = names[c];
        l.cls_len = strlen(names[c]);
    }
    ck_assert_msg(pc_model_label(m, x, &l, &o, &err) == PC_OK, "%s", err.msg);
    ck_assert(isfinite(o.pred.score));
}

static void scores_of(pc_model *m, pc_svec *probes, int n, double *out)
{
    for (int i = 0; i < n; i++) {
        pc_prediction p;
        double cs[8] = {0};
        pc_model_predict(m, &probes[i], &p, pc_model_class_count(m) <= 8 ? cs : NULL);
        out[i] = p.score;
    }
}

static const pc_rule *rule_i(int i)
{
    return pc_rules()[i];
}

static int rule_count(void)
{
    int n = 0;
    while (pc_rules()[n])
        n++;
    return n;
}

/* Homogeneous rules skip the zero example (it cannot move w).  A rule with
 * PC_RULE_ORIGIN learns from it as from any point (seed 004 Alg. 1; its exact
 * results are in tests/test_rules_omm.c): here it must stay finite and
 * round-trip, and the flag must come with the rule's own bias. */
START_TEST(zero_norm_example_never_updates)
{
    const pc_rule *r = rule_i(_i);
    bool origin = r->flags & PC_RULE_ORIGIN;
    ck_assert_msg(!origin || (r->flags & PC_RULE_OWN_BIAS),
                  "%s: the origin is a point only for a rule with its own bias", pc_rule_name(r));
    for (int b = 0; b < 2; b++) {
        pc_model *m = make(r, b, false);
        pc_svec x, zero;
        pc_svec_init(&x);
        pc_svec_init(&zero);
        for (int t = 0; t < 30; t++) {
            random_example(&x, 1);
            learn(m, &x, label_of(&x));
        }
        pc_learner_info before, after;
        pc_model_learner_info(m, 0, &before);
        uint8_t *b1, *b2;
        size_t l1, l2;
        pc_error err;
        pc_svec_push(&zero, 3, 0.0); /* normalizes to no feature at all */
        ck_assert_int_eq(pc_svec_normalize(&zero, DIM, &err), PC_OK);
        ck_assert_int_eq(zero.n, 0);
        if (b && !origin) /* with a bias feature the example is not zero-norm; skip */
            goto next;
        ck_assert_int_eq(pc_model_encode(m, &b1, &l1, &err), PC_OK);
        for (int y = -1; y <= 1; y += 2) {
            pc_label l = {.y = y};
            pc_outcome o;
            ck_assert_int_eq(pc_model_label(m, &zero, &l, &o, &err), PC_OK);
            ck_assert_msg(origin || !o.updated, "%s updated on a zero-norm example",
                          pc_rule_name(r));
            ck_assert(isfinite(o.pred.score));
        }
        pc_model_learner_info(m, 0, &after);
        ck_assert_int_eq(pc_model_encode(m, &b2, &l2, &err), PC_OK);
        if (origin) { /* learnt from: still finite, and a snapshot of it restores */
            pc_model *d = NULL;
            ck_assert_msg(pc_model_decode(b2, l2, &d, &err) == PC_OK, "%s", err.msg);
            ck_assert(isfinite(after.bias) && isfinite(after.norm));
            pc_model_free(d);
        } else {
            ck_assert(after.updates == before.updates);
            /* The learners' states are byte-identical (only the stats moved). */
            ck_assert_int_eq(l1, l2);
        }
        free(b1);
        free(b2);
    next:
        pc_svec_free(&x);
        pc_svec_free(&zero);
        pc_model_free(m);
    }
}
END_TEST

START_TEST(scores_stay_finite_on_extreme_values)
{
    static const double scales[] = {1e-150, 1e-8, 1, 1e8, 1e150};
    for (size_t k = 0; k < sizeof scales / sizeof *scales; k++) {
        pc_model *m = make(rule_i(_i), true, false);
        pc_svec x;
        pc_svec_init(&x);
        for (int t = 0; t < 300; t++) {
            random_example(&x, scales[(k + (size_t)t % 2) % 5]);
            learn(m, &x, label_of(&x));
            pc_prediction p;
            pc_model_predict(m, &x, &p, NULL);
            ck_assert_msg(isfinite(p.score), "%s: score %g at scale %g", pc_rule_name(rule_i(_i)), p.score,
                          scales[k]);
        }
        pc_learner_info li;
        pc_model_learner_info(m, 0, &li);
        ck_assert(isfinite(li.norm) && isfinite(li.bias));
        pc_svec_free(&x);
        pc_model_free(m);
    }
}
END_TEST

static void round_trip(const pc_rule *r, bool bias, bool multiclass, pc_weights weights)
{
    pc_model *m = make_in(r, bias, multiclass, weights);
    pc_svec x, probes[8];
    pc_svec_init(&x);
    for (int t = 0; t < 200; t++) {
        random_example(&x, 1 + 3 * urand());
        learn(m, &x, label_of(&x));
    }
    for (int i = 0; i < 8; i++) {
        pc_svec_init(&probes[i]);
        random_example(&probes[i], 1);
    }
    uint8_t *b1, *b2;
    size_t l1, l2;
    pc_error err;
    ck_assert_int_eq(pc_model_encode(m, &b1, &l1, &err), PC_OK);
    pc_model *d = NULL;
    ck_assert_msg(pc_model_decode(b1, l1, &d, &err) == PC_OK, "%s: %s", pc_rule_name(r), err.msg);
    ck_assert_int_eq(pc_model_encode(d, &b2, &l2, &err), PC_OK);
    ck_assert_int_eq(l1, l2);
    ck_assert_msg(memcmp(b1, b2, l1) == 0, "%s: re-encoding differs", pc_rule_name(r));
    free(b2);
    /* Same scores now and after learning the same stream further. */
    double s1[8], s2[8];
    for (int t = 0; t < 50; t++) {
        scores_of(m, probes, 8, s1);
        scores_of(d, probes, 8, s2);
        ck_assert_msg(memcmp(s1, s2, sizeof s1) == 0, "%s: scores differ after decode", pc_rule_name(r));
        random_example(&x, 1);
        learn(m, &x, label_of(&x));
        learn(d, &x, label_of(&x));
    }
    /* Every truncation is rejected cleanly (sampled for long encodings, and
     * every PCD_FLIP_STRIDE-th length only under valgrind: scripts/test). */
    const char *stride = getenv("PCD_FLIP_STRIDE");
    size_t step = l1 > 4000 ? l1 / 2000 : 1;
    if (stride && (size_t)atoi(stride) > step)
        step = (size_t)atoi(stride);
    for (size_t n = 0; n < l1; n += step) {
        pc_model *t = NULL;
        ck_assert_msg(pc_model_decode(b1, n, &t, &err) != PC_OK, "%s: truncation to %zu accepted",
                      pc_rule_name(r), n);
        ck_assert(t == NULL);
    }
    /* Corruption never crashes or leaks: a flip is either rejected or decodes
     * to some model that still works. */
    for (int k = 0; k < 200; k++) {
        size_t pos = (size_t)(urand() * (double)l1);
        b1[pos] ^= (uint8_t)(1 + urand() * 254);
        pc_model *t = NULL;
        if (pc_model_decode(b1, l1, &t, &err) == PC_OK) {
            scores_of(t, probes, 8, s1);
            pc_model_free(t);
        }
        b1[pos] = 0;
    }
    free(b1);
    pc_svec_free(&x);
    for (int i = 0; i < 8; i++)
        pc_svec_free(&probes[i]);
    pc_model_free(m);
    pc_model_free(d);
}

START_TEST(encode_decode_round_trip_is_exact)
{
    for (int w = 0; w < 2; w++) {
        if (w == PC_WEIGHTS_FLOAT32 && (rule_i(_i)->flags & PC_RULE_FLOAT64_ONLY))
            continue;
        round_trip(rule_i(_i), false, false, (pc_weights)w);
        round_trip(rule_i(_i), true, false, (pc_weights)w);
        round_trip(rule_i(_i), true, true, (pc_weights)w);
    }
}
END_TEST

/* One stream through a model in each storage: every score (the prediction
 * before each update, and probes every 50 examples) is bit-identical, the
 * snapshots are the same bytes but for the storage flag, and each decodes
 * and goes on learning in step with the others.  SDIM is large enough for
 * the sparse table to grow several times and for auto to turn dense midway;
 * the scales swing so the rules renormalise and recount. */
#define SDIM 2048

/* The storages and float32 streams' length: 600 examples, fewer when
 * PC_CONTRACT_STREAM says so (scripts/test sets 150 under valgrind, where
 * n-OMM's naive form, quadratic in the stream by design, took 5 of the CI's
 * 30 minutes at 600; the sanitizer pass runs the full length). */
static int stream_length(void)
{
    const char *env = getenv("PC_CONTRACT_STREAM");
    int n = env ? atoi(env) : 0;
    return n > 0 && n < 600 ? n : 600;
}
static const pc_storage storages[] = {PC_STORAGE_DENSE, PC_STORAGE_SPARSE, PC_STORAGE_AUTO};
enum { NSTORE = 3 };

static void wide_example(pc_svec *x, int t)
{
    static const double scales[] = {1, 1e-3, 1e5, 1e-30, 1e30, 2};
    pc_error err;
    pc_svec_clear(x);
    int n = 1 + (int)(urand() * 5);
    double sc = t % 97 < 90 ? 1 + urand() : scales[(size_t)t % 6];
    /* a few hot features and a long tail, as hashed text gives */
    for (int k = 0; k < n; k++)
        pc_svec_push(x, urand() < 0.3 ? (uint32_t)(urand() * 8) : (uint32_t)(urand() * SDIM),
                     (urand() * 2 - 1) * sc);
    ck_assert_int_eq(tu_normalize(x, SDIM, &err), PC_OK);
}

static void storages_agree(const pc_rule *r, bool bias, bool multiclass, bool averaged)
{
    pc_model *m[NSTORE];
    pc_error err = {{0}};
    for (int k = 0; k < NSTORE; k++) {
        pc_model_config c;
        pc_model_config_default(&c, SDIM);
        c.rule = r;
        pc_params_default(r, &c.params);
        c.bias = bias;
        c.multiclass = c.open_classes = multiclass;
        c.averaged = averaged;
        c.storage = storages[k];
        ck_assert_msg(pc_model_new(&c, &m[k], &err) == PC_OK, "%s: %s", pc_rule_name(r), err.msg);
    }
    pc_svec x, probe;
    pc_svec_init(&x);
    pc_svec_init(&probe);
    for (int t = 0, steps = stream_length(); t < steps; t++) {
        wide_example(&x, t);
        int y = label_of(&x);
        if (urand() < 0.05)
            y = -y; /* noise: rules that reset or recount do so */
        pc_outcome o[NSTORE];
        for (int k = 0; k < NSTORE; k++) {
            pc_label l = {.y = y};
            if (multiclass) {
                static const char *names[] = {"neg", "pos", "other"};
                int cl = y > 0 ? 1 : (x.n % 3 == 0 ? 2 : 0);
                l.cls = names[cl];
                l.cls_len = strlen(names[cl]);
            }
            ck_assert_msg(pc_model_label(m[k], &x, &l, &o[k], &err) == PC_OK, "%s", err.msg);
        }
        for (int k = 1; k < NSTORE; k++)
            ck_assert_msg(memcmp(&o[0].pred.score, &o[k].pred.score, sizeof(double)) == 0 &&
                              o[0].updated == o[k].updated,
                          "%s (bias %d, multiclass %d, averaged %d): storage %d scores %.17g, "
                          "dense %.17g at example %d",
                          pc_rule_name(r), bias, multiclass, averaged, k, o[k].pred.score,
                          o[0].pred.score, t);
        if (t % 50 == 0) {
            wide_example(&probe, t + 1);
            double s[NSTORE];
            for (int k = 0; k < NSTORE; k++)
                scores_of(m[k], &probe, 1, &s[k]);
            ck_assert(memcmp(&s[0], &s[1], sizeof *s) == 0 && memcmp(&s[0], &s[2], sizeof *s) == 0);
        }
    }
    /* Snapshots: the same bytes but the flags byte (F_SPARSE 32, F_AUTO 64). */
    uint8_t *b[NSTORE];
    size_t len[NSTORE];
    for (int k = 0; k < NSTORE; k++)
        ck_assert_int_eq(pc_model_encode(m[k], &b[k], &len[k], &err), PC_OK);
    for (int k = 1; k < NSTORE; k++) {
        ck_assert_uint_eq(len[k], len[0]);
        size_t diff = 0;
        for (size_t i = 0; i < len[0]; i++)
            if (b[k][i] != b[0][i]) {
                diff++;
                ck_assert_uint_eq(b[k][i] ^ b[0][i], k == 1 ? 32 : 64);
            }
        ck_assert_msg(diff == 1, "%s: snapshots differ in %zu bytes", pc_rule_name(r), diff);
    }
    /* Each decodes to its own storage and keeps learning in step. */
    pc_model *d[NSTORE];
    for (int k = 0; k < NSTORE; k++) {
        ck_assert_msg(pc_model_decode(b[k], len[k], &d[k], &err) == PC_OK, "%s", err.msg);
        ck_assert_int_eq(pc_model_config_of(d[k])->storage, storages[k]);
        ck_assert_uint_gt(pc_model_bytes(d[k]), 0);
        free(b[k]);
    }
    for (int t = 0; t < 200; t++) {
        wide_example(&x, t);
        double s[2 * NSTORE];
        for (int k = 0; k < NSTORE; k++) {
            scores_of(m[k], &x, 1, &s[k]);
            scores_of(d[k], &x, 1, &s[NSTORE + k]);
            learn(m[k], &x, label_of(&x));
            learn(d[k], &x, label_of(&x));
        }
        for (int k = 1; k < 2 * NSTORE; k++)
            ck_assert_msg(memcmp(&s[0], &s[k], sizeof *s) == 0, "%s: %d scores %.17g, not %.17g",
                          pc_rule_name(r), k, s[k], s[0]);
    }
    for (int k = 0; k < NSTORE; k++) {
        pc_model_free(m[k]);
        pc_model_free(d[k]);
    }
    pc_svec_free(&x);
    pc_svec_free(&probe);
}

START_TEST(storages_give_bit_identical_scores_and_snapshots)
{
    const pc_rule *r = rule_i(_i);
    storages_agree(r, false, false, false);
    storages_agree(r, true, false, false);
    storages_agree(r, true, true, false);
    if (pc_rule_can_average(r))
        storages_agree(r, true, false, true);
}
END_TEST

/* weights: float32 against float64.  On the wide stream (values from 1e-30
 * to 1e30) every score stays finite.  On a stream of ordinary values (0.5 to
 * 2) the two score every example alike, for as long as they make the same
 * updates, to 1e-3 of the score's scale ||w|| (||x|| + 1) + |b|: measured,
 * 1e-7 at most for every rule but two whose scores or steps come from
 * differences of squared distances, where float's rounding is amplified by
 * the cancellation: OMM (6e-5) and fuzzy (1.3e-4).  A storage bug (an entry
 * lost, the scale misapplied) is off by the order of 1.  The streams part
 * where rounding flips a near tie: here not before 500 examples (5/6 of the
 * stream), except for
 * fuzzy, whose update is skipped when a membership gap is within delta of
 * another (it parts after 7 examples on one of the streams). */
static void float32_tracks(const pc_rule *r, bool bias, bool averaged, pc_storage storage, bool wide)
{
    pc_model *m[2];
    pc_error err = {{0}};
    for (int k = 0; k < 2; k++) {
        pc_model_config c;
        pc_model_config_default(&c, SDIM);
        c.rule = r;
        pc_params_default(r, &c.params);
        c.bias = bias;
        c.averaged = averaged;
        c.storage = k ? storage : PC_STORAGE_DENSE;
        c.weights = k ? PC_WEIGHTS_FLOAT32 : PC_WEIGHTS_FLOAT64;
        ck_assert_msg(pc_model_new(&c, &m[k], &err) == PC_OK, "%s: %s", pc_rule_name(r), err.msg);
    }
    pc_svec x;
    pc_svec_init(&x);
    bool together = true;
    int in_step = 0;
    for (int t = 0, steps = stream_length(); t < steps; t++) {
        wide_example(&x, wide ? t : 0);
        pc_outcome o[2];
        double scale[2];
        for (int k = 0; k < 2; k++) {
            pc_learner_info li;
            pc_model_learner_info(m[k], 0, &li);
            scale[k] = li.norm * (sqrt(x.norm2) + 1) + fabs(li.bias);
            pc_label l = {.y = label_of(&x)};
            ck_assert_msg(pc_model_label(m[k], &x, &l, &o[k], &err) == PC_OK, "%s", err.msg);
            ck_assert_msg(isfinite(o[k].pred.score), "%s: score %g at %d", pc_rule_name(r),
                          o[k].pred.score, t);
        }
        if (!wide && together) {
            double sc = fmax(scale[0], scale[1]);
            double diff = fabs(o[0].pred.score - o[1].pred.score) / (sc > 0 ? sc : 1);
            double tol = 1e-3;
            ck_assert_msg(diff <= tol, "%s (bias %d, averaged %d, storage %d): float32 "
                          "scores %.9g, float64 %.9g at example %d", pc_rule_name(r), bias,
                          averaged, storage, o[1].pred.score, o[0].pred.score, t);
            in_step++;
            together = o[0].updated == o[1].updated;
        }
    }
    ck_assert_msg(wide || in_step >= stream_length() * 5 / 6 || !strcmp(pc_rule_name(r), "fuzzy"), "%s: float32 and float64 parted at example %d",
                  pc_rule_name(r), in_step);
    pc_model_free(m[0]);
    pc_model_free(m[1]);
    pc_svec_free(&x);
}

START_TEST(float32_scores_track_float64)
{
    const pc_rule *r = rule_i(_i);
    if (r->flags & PC_RULE_FLOAT64_ONLY) {
        pc_model_config c;
        pc_model_config_default(&c, DIM);
        c.rule = r;
        pc_params_default(r, &c.params);
        c.weights = PC_WEIGHTS_FLOAT32;
        pc_model *m = NULL;
        pc_error err = {{0}};
        ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_EINVAL);
        ck_assert(m == NULL && strstr(err.msg, "float32"));
        return;
    }
    for (int wide = 0; wide < 2; wide++) {
        float32_tracks(r, false, false, PC_STORAGE_DENSE, wide);
        float32_tracks(r, true, false, PC_STORAGE_AUTO, wide);
        if (r->flags & PC_RULE_ADDITIVE)
            float32_tracks(r, true, true, PC_STORAGE_DENSE, wide);
    }
}
END_TEST

START_TEST(parameters_out_of_range_are_rejected)
{
    const pc_rule *r = rule_i(_i);
    pc_params p;
    pc_error err;
    for (size_t i = 0; i < pc_rule_param_count(r); i++) {
        const pc_param_spec *s = pc_rule_param(r, i);
        double bad[] = {NAN, INFINITY, s->min - 1, s->max + 1, s->min, s->max};
        int nbad = 4 + (s->min_open ? 1 : 0) + (s->max_open ? 1 : 0);
        if (!s->min_open && s->max_open)
            bad[4] = s->max;
        for (int k = 0; k < nbad; k++) {
            if (k == 2 && !isfinite(s->min - 1))
                continue;
            if (k == 3 && !isfinite(s->max + 1))
                continue;
            if ((k == 2 && s->min - 1 == s->min) || (k == 3 && s->max + 1 == s->max))
                continue;
            pc_params_default(r, &p);
            err.msg[0] = 0;
            ck_assert_msg(pc_params_set(r, &p, s->name, &bad[k], 1, &err) == PC_EINVAL,
                          "%s.%s accepted %g", pc_rule_name(r), s->name, bad[k]);
            ck_assert(strstr(err.msg, s->name) != NULL);
        }
        /* The default (when not derived) is valid. */
        pc_params_default(r, &p);
        if (!isnan(s->def) || s->kind == PC_PARAM_LIST)
            ck_assert_msg(pc_params_set(r, &p, s->name, p.val[i].v, p.val[i].n, &err) == PC_OK,
                          "%s.%s default rejected: %s", pc_rule_name(r), s->name, err.msg);
        ck_assert(s->help && s->help[0]);
    }
    ck_assert_int_eq(pc_params_set(r, &p, "no_such_param", (double[]){1}, 1, &err), PC_ENOTFOUND);
}
END_TEST

START_TEST(averaging_and_batch_only_where_the_rule_allows)
{
    const pc_rule *r = rule_i(_i);
    pc_model_config c;
    pc_model_config_default(&c, DIM);
    c.rule = r;
    pc_params_default(r, &c.params);
    pc_model *m = NULL;
    pc_error err;
    c.averaged = true;
    pc_status st = pc_model_new(&c, &m, &err);
    ck_assert_int_eq(st, pc_rule_can_average(r) ? PC_OK : PC_EINVAL);
    if (m) { /* an averaged model learns and round-trips like any other */
        pc_svec x;
        pc_svec_init(&x);
        for (int t = 0; t < 50; t++) {
            random_example(&x, 1);
            learn(m, &x, label_of(&x));
        }
        pc_svec_free(&x);
        pc_model_free(m);
        m = NULL;
    }
    c.averaged = false;
    c.batch = true;
    st = pc_model_new(&c, &m, &err);
    ck_assert_int_eq(st, pc_rule_can_batch(r) ? PC_OK : PC_EINVAL);
    pc_model_free(m);
}
END_TEST

/* rule.h: init, score and update are required; the other operations are NULL
 * unless the rule has something to add to the learner's defaults, which read
 * the primary vector.  So a rule without one gives what the defaults cannot,
 * and a rule with one does not restate them. */
START_TEST(operations_are_given_where_the_rule_has_something_to_say)
{
    const pc_rule *r = rule_i(_i);
    const char *n = pc_rule_name(r);
    ck_assert_msg(r->init && r->score && r->update, "%s: init, score and update are required", n);
    ck_assert_msg(!r->encode == !r->decode, "%s: encode and decode come as a pair", n);
    if (!r->primary)
        ck_assert_msg(r->weight && r->encode, "%s: without a primary vector the rule gives its "
                                              "weights and its encoding", n);
    ck_assert_msg(r->primary || !(r->flags & (PC_RULE_ADDITIVE | PC_RULE_BATCH)),
                  "%s: averaging and batch mode work on the primary vector", n);
    /* Without PC_RULE_OWN_BIAS the bias is the model's constant feature, and
     * the learner's 0 is the rule's answer. */
    ck_assert_msg(!r->bias == !(r->flags & PC_RULE_OWN_BIAS),
                  "%s: a bias operation exactly when the rule learns its own bias", n);
    if (!r->primary)
        return;

    pc_params p;
    pc_params_default(r, &p);
    pc_rule_ctx ctx = {.dim = DIM, .params = &p, .averaged = false, .bias = false};
    pc_learner l;
    pc_error err = {{0}};
    ck_assert_msg(pc_learner_init(&l, r, &ctx, &err) == PC_OK, "%s: %s", n, err.msg);
    pc_svec x;
    pc_svec_init(&x);
    for (int t = 0; t < 200; t++) {
        random_example(&x, 1);
        pc_svec_sort(&x); /* for PC_RULE_SORTED rules, as the model does */
        int y = label_of(&x);
        pc_learner_update(&l, &x, y, pc_learner_score(&l, &x));
    }
    const pc_wvec *w = r->primary(l.state);
    ck_assert(w != NULL);
    /* The defaults read the primary vector as the rule's w, and averaging
     * replaces the score by the average of its scores: the score is w.x. */
    for (int k = 0; k < 20; k++) {
        random_example(&x, 1);
        ck_assert_msg(pc_learner_score(&l, &x) == pc_wvec_dot(w, &x),
                      "%s: the score is not the primary vector's", n);
    }
    if (r->weight) {
        bool differs = false;
        for (uint32_t i = 0; i < DIM; i++)
            differs |= r->weight(l.state, i) != pc_wvec_get(w, i);
        ck_assert_msg(differs, "%s: weight restates the primary vector's (leave it NULL)", n);
    }
    if (r->encode) {
        pc_writer own = {0}, def = {0};
        ck_assert_int_eq(r->encode(l.state, &own), PC_OK);
        pc_wvec_encode(w, &def);
        ck_assert_msg(own.len != def.len || memcmp(own.buf, def.buf, own.len) != 0,
                      "%s: encode restates the primary vector's (leave it NULL)", n);
        free(own.buf);
        free(def.buf);
    }
    pc_svec_free(&x);
    pc_learner_destroy(&l);
}
END_TEST

/* Whatever pc_svec_normalize accepts (what a client can send), learned for
 * long, leaves a model whose snapshot loads: streams of values from 1e124 to
 * 1e154 (the magnitudes of one stream within ten powers of ten of each
 * other), each example tried and learned only if accepted.  Before
 * PC_VALUE_MAX was the bound, such finite values took omm (from 1e77 on),
 * perceptron, margin, greedy, fuzzy and pumma (float32) to a state the
 * decoder refuses as not finite: a snapshot the daemon could not load.  At
 * the bound itself the stream is learned, and the same holds. */
static void extreme_stream(const pc_rule *r, bool averaged, pc_weights weights, double lo, double hi,
                           double bias_value)
{
    pc_model_config c;
    pc_model_config_default(&c, 8);
    c.rule = r;
    pc_params_default(r, &c.params);
    c.averaged = averaged;
    c.weights = weights;
    c.bias = bias_value != 0; /* 0: no constant feature */
    c.bias_value = c.bias ? bias_value : 1;
    pc_model *m;
    pc_error err = {{0}};
    ck_assert_msg(pc_model_new(&c, &m, &err) == PC_OK, "%s: %s", pc_rule_name(r), err.msg);
    pc_svec x;
    pc_svec_init(&x);
    uint64_t learned = 0;
    for (int t = 0; t < 1500; t++) {
        pc_svec_clear(&x);
        int n = 1 + (int)(urand() * 3);
        for (int k = 0; k < n; k++)
            pc_svec_push(&x, (uint32_t)(urand() * 8),
                         (urand() < 0.5 ? -1 : 1) * pow(10, lo + (hi - lo) * urand()));
        if (pc_svec_normalize(&x, 8, &err) != PC_OK)
            continue;
        pc_label y = {.y = urand() < 0.5 ? -1 : 1};
        pc_outcome o;
        ck_assert_msg(pc_model_label(m, &x, &y, &o, &err) == PC_OK, "%s", err.msg);
        learned++;
    }
    ck_assert_msg(hi > log10(PC_VALUE_MAX) || learned > 1000, "%s learned %llu", pc_rule_name(r),
                  (unsigned long long)learned);
    ck_assert_msg(tu_snapshot_loads(m, &err) == PC_OK,
                  "%s%s%s, values 1e%.0f to 1e%.0f, %llu learned: its snapshot does not load: %s",
                  pc_rule_name(r), averaged ? " averaged" : "", weights ? " float32" : "", lo, hi,
                  (unsigned long long)learned, err.msg);
    pc_svec_free(&x);
    pc_model_free(m);
}

START_TEST(what_a_client_can_send_leaves_a_model_that_loads)
{
    const pc_rule *r = rule_i(_i);
    pc_model_config big;
    pc_model_config_default(&big, 8);
    big.rule = r;
    pc_params_default(r, &big.params);
    big.bias_value = nextafter(PC_VALUE_MAX, INFINITY);
    pc_model *m = NULL;
    pc_error err = {{0}};
    pc_status st = pc_model_new(&big, &m, &err);
    ck_assert_msg((r->flags & PC_RULE_OWN_BIAS) ? st == PC_OK : st == PC_EINVAL && strstr(err.msg, "2^64"),
                  "%s: bias_value past 2^64: %d %s", pc_rule_name(r), st, err.msg);
    pc_model_free(m);
    /* but a snapshot of a model created before the bound still loads */
    big.bias_value = 12345.6875;
    ck_assert(pc_model_new(&big, &m, &err) == PC_OK);
    uint8_t *buf;
    size_t len, at = 0;
    ck_assert(pc_model_encode(m, &buf, &len, &err) == PC_OK);
    pc_model_free(m);
    for (size_t k = 0; k + 8 <= len && !at; k++)
        if (!memcmp(buf + k, &big.bias_value, 8))
            at = k;
    ck_assert_msg(at, "%s: bias_value not found in the snapshot", pc_rule_name(r));
    double old = 1e160;
    memcpy(buf + at, &old, 8);
    ck_assert_msg(pc_model_decode(buf, len, &m, &err) == PC_OK, "%s: %s", pc_rule_name(r), err.msg);
    ck_assert(pc_model_config_of(m)->bias_value == old);
    pc_model_free(m);
    free(buf);
    for (int w = 0; w < 2; w++) {
        if (w == PC_WEIGHTS_FLOAT32 && (r->flags & PC_RULE_FLOAT64_ONLY))
            continue;
        for (int av = 0; av < 2; av++) {
            if (av && !pc_rule_can_average(r))
                continue;
            for (int s = 0; s < 6; s++) {
                double lo = 124 + 30 * urand();
                extreme_stream(r, av, (pc_weights)w, lo, fmin(154, lo + 10 * urand()), 1);
            }
            double top = log10(PC_VALUE_MAX);
            extreme_stream(r, av, (pc_weights)w, top - 3, top, 1); /* learned: within the bound */
            /* the bias value is a feature value, bounded alike: at the bound
             * it is learned and the snapshot loads (past it, 1e160 took five
             * rules to infinity within 300 labels; pc_model_new refuses it) */
            extreme_stream(r, av, (pc_weights)w, top - 3, top, -PC_VALUE_MAX);
            /* the shortest examples, alone and among the longest, without a
             * constant feature to bound the ratio of norms: before 27
             * November pa's step 1/||x||^2 took ||w||^2 to infinity, and a
             * float32 mcp rescaled by 2^-267 kept a sum of squares its
             * entries had lost (the snapshot was refused) */
            for (int s = 0; s < 2; s++) {
                extreme_stream(r, av, (pc_weights)w, -165, -140, 0);
                extreme_stream(r, av, (pc_weights)w, -165, top, 0);
            }
        }
    }
}
END_TEST

START_TEST(registry_is_well_formed)
{
    int n = rule_count();
    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n; i++) {
        const pc_rule *r = rule_i(i);
        ck_assert(pc_rule_find(pc_rule_name(r)) == r);
        ck_assert(pc_rule_summary(r) && pc_rule_summary(r)[0]);
        ck_assert(pc_rule_param_count(r) <= PC_PARAMS_MAX);
        for (int k = 0; k < i; k++)
            ck_assert_str_ne(pc_rule_name(rule_i(k)), pc_rule_name(r));
    }
    ck_assert(pc_rule_find("nope") == NULL);
}
END_TEST

int main(void)
{
    int n = rule_count();
    Suite *s = suite_create("rules_contract");
    TCase *tc = TU_TCASE(s, "every_rule", 120, registry_is_well_formed);
    tcase_add_loop_test(tc, zero_norm_example_never_updates, 0, n);
    tcase_add_loop_test(tc, scores_stay_finite_on_extreme_values, 0, n);
    tcase_add_loop_test(tc, encode_decode_round_trip_is_exact, 0, n);
    tcase_add_loop_test(tc, storages_give_bit_identical_scores_and_snapshots, 0, n);
    tcase_add_loop_test(tc, float32_scores_track_float64, 0, n);
    tcase_add_loop_test(tc, parameters_out_of_range_are_rejected, 0, n);
    tcase_add_loop_test(tc, averaging_and_batch_only_where_the_rule_allows, 0, n);
    tcase_add_loop_test(tc, operations_are_given_where_the_rule_has_something_to_say, 0, n);
    tcase_add_loop_test(tc, what_a_client_can_send_leaves_a_model_that_loads, 0, n);
    return tu_run(s);
}
