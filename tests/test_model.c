/* test_model.c - the model layer on hand-computed perceptron streams: bias,
 * learning rate, averaging, batch mode, multiclass, stats, reset, top weights. */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(perceptron_with_bias_step_by_step)
{
    pc_model *m = tu_model("perceptron", 2, true);
    pc_outcome o;
    /* 1: s = 0 -> predicts +1 (no mistake) but a = 0 updates: w = (1,0), b = 1 */
    o = tu_label(m, 2, (double[]){1, 0}, 1);
    ck_assert(!o.mistake && o.updated && o.pred.y == 1 && o.pred.score == 0);
    /* 2: s = 0 + 1 = 1 on a -1: mistake; w = (1,-1), b = 0 */
    o = tu_label(m, 2, (double[]){0, 1}, -1);
    ck_assert(o.mistake && o.updated && o.pred.score == 1);
    /* 3: s = -1 on a -1: right, no update */
    o = tu_label(m, 2, (double[]){-1, 0}, -1);
    ck_assert(!o.mistake && !o.updated && o.pred.score == -1);
    /* 4: s = 2 on a +1 */
    o = tu_label(m, 2, (double[]){0, -2}, 1);
    ck_assert(!o.mistake && !o.updated && o.pred.score == 2);
    /* 5: s = 1 - 1 + 0 = 0 on a -1: predicted +1, mistake; w = (0,-2), b = -1 */
    o = tu_label(m, 2, (double[]){1, 1}, -1);
    ck_assert(o.mistake && o.updated && o.pred.y == 1);
    ck_assert(pc_model_weight(m, 0, 0) == 0 && pc_model_weight(m, 0, 1) == -2);
    pc_learner_info li;
    pc_model_learner_info(m, 0, &li);
    ck_assert(li.bias == -1 && li.norm == 2 && li.updates == 3);
    pc_stats s;
    pc_model_stats(m, &s);
    ck_assert(s.examples == 5 && s.mistakes == 2 && s.updates == 3);
    ck_assert(s.recent_examples == 5 && s.recent_mistakes == 2);
    pc_model_free(m);
}
END_TEST

/* ||w|| without the bias when the bias dominates: norm^2 - w_b^2 would keep
 * none of the digits (1e16 + 25 - 1e16). */
START_TEST(norm_without_a_dominant_bias_is_exact)
{
    pc_model_config c;
    pc_model_config_default(&c, 4);
    c.rule = pc_rule_find("perceptron");
    pc_params_default(c.rule, &c.params);
    c.bias_value = 1e8;
    pc_model *m = NULL;
    pc_error err = {{0}};
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_OK);
    tu_label(m, 4, (double[]){3, 4, 0, 0}, 1); /* w = (3, 4, 0, 0), w_b = 1e8 */
    pc_learner_info li;
    pc_model_learner_info(m, 0, &li);
    ck_assert_msg(li.norm == 5 && li.bias == 1e16, "norm %.17g bias %.17g", li.norm, li.bias);
    pc_model_free(m);
}
END_TEST

/* info's norm and bias are the same bits in sparse and dense storage,
 * averaged or not, the bias ordinary or dominant (the second sum): a sparse
 * table's norm sums its stored weights only, in increasing index, and the
 * squares it leaves out are +0. */
START_TEST(sparse_and_dense_report_the_same_norm)
{
    for (int averaged = 0; averaged < 2; averaged++)
        for (int big = 0; big < 2; big++) {
            pc_model *m[2];
            for (int k = 0; k < 2; k++) {
                pc_model_config c;
                pc_model_config_default(&c, 1u << 12);
                c.rule = pc_rule_find("pa");
                pc_params_default(c.rule, &c.params);
                c.averaged = averaged;
                c.bias_value = big ? 1e8 : 1;
                c.storage = k ? PC_STORAGE_SPARSE : PC_STORAGE_DENSE;
                pc_error err = {{0}};
                ck_assert_int_eq(pc_model_new(&c, &m[k], &err), PC_OK);
            }
            uint64_t rng = 11;
            pc_svec x;
            pc_svec_init(&x);
            for (int e = 0; e < 300; e++) {
                pc_svec_clear(&x);
                for (int f = 0; f < 5; f++)
                    ck_assert_int_eq(pc_svec_push(&x, (uint32_t)(tu_xorshift(&rng) % 4096),
                                                  (double)(tu_xorshift(&rng) % 200) / 10 - 10),
                                     PC_OK);
                pc_error err = {{0}};
                ck_assert_int_eq(tu_normalize(&x, 1u << 12, &err), PC_OK);
                pc_label l = {.y = tu_xorshift(&rng) % 2 ? 1 : -1};
                for (int k = 0; k < 2; k++) {
                    pc_outcome o;
                    ck_assert_int_eq(pc_model_label(m[k], &x, &l, &o, &err), PC_OK);
                }
                if (e % 50 != 49)
                    continue;
                pc_learner_info a, b;
                pc_model_learner_info(m[0], 0, &a);
                pc_model_learner_info(m[1], 0, &b);
                ck_assert(a.norm > 0);
                ck_assert_msg(memcmp(&a.norm, &b.norm, 8) == 0 && memcmp(&a.bias, &b.bias, 8) == 0,
                              "averaged %d, bias %g, example %d: dense norm %.17g bias %.17g, "
                              "sparse %.17g %.17g", averaged, big ? 1e8 : 1, e, a.norm, a.bias,
                              b.norm, b.bias);
            }
            pc_svec_free(&x);
            pc_model_free(m[0]);
            pc_model_free(m[1]);
        }
}
END_TEST

START_TEST(perceptron_learning_rate_scales_weights)
{
    pc_model *m = tu_model_p("perceptron", 2, true, "eta", 0.5);
    tu_label(m, 2, (double[]){1, 0}, 1);
    tu_label(m, 2, (double[]){0, 1}, -1);
    tu_label(m, 2, (double[]){1, 1}, -1);
    ck_assert(pc_model_weight(m, 0, 0) == 0 && pc_model_weight(m, 0, 1) == -1);
    pc_learner_info li;
    pc_model_learner_info(m, 0, &li);
    ck_assert(li.bias == -0.5);
    pc_model_free(m);
}
END_TEST

START_TEST(averaged_perceptron_predicts_with_the_mean_of_past_weights)
{
    pc_model_config c;
    pc_model_config_default(&c, 2);
    c.bias = false;
    c.averaged = true;
    pc_model *m;
    pc_error err;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_OK);
    tu_label(m, 2, (double[]){1, 0}, 1);  /* w1 = (1,0) */
    tu_label(m, 2, (double[]){0, 1}, -1); /* w2 = (1,-1) */
    tu_label(m, 2, (double[]){1, 0}, 1);  /* w3 = (1,-1): mean (1, -2/3) */
    tu_near(tu_score(m, 2, (double[]){0, 1}), -2.0 / 3);
    tu_near(tu_score(m, 2, (double[]){1, 0}), 1);
    tu_near(pc_model_weight(m, 0, 1), -2.0 / 3);
    pc_learner_info li; /* info reports the weights that predict: the average */
    pc_model_learner_info(m, 0, &li);
    tu_near(li.norm, sqrt(1 + 4.0 / 9));
    pc_model_free(m);
}
END_TEST

START_TEST(batch_mode_scores_with_the_starting_weights)
{
    pc_model_config c;
    pc_model_config_default(&c, 2);
    c.bias = false;
    c.batch = true;
    pc_model *mb, *ms;
    pc_error err;
    ck_assert_int_eq(pc_model_new(&c, &mb, &err), PC_OK);
    c.batch = false;
    ck_assert_int_eq(pc_model_new(&c, &ms, &err), PC_OK);
    pc_svec xs[2];
    pc_label ys[2] = {{.y = 1}, {.y = 1}};
    for (int i = 0; i < 2; i++)
        pc_svec_init(&xs[i]);
    tu_dense(&xs[0], 2, 2, (double[]){1, 0});
    tu_dense(&xs[1], 2, 2, (double[]){2, 0});
    pc_outcome o[2];
    /* batch: both score 0 under w = 0, so w = (1,0) + (2,0) */
    ck_assert_int_eq(pc_model_label_batch(mb, xs, ys, 2, o, &err), PC_OK);
    ck_assert(o[0].updated && o[1].updated && !o[0].mistake && !o[1].mistake);
    ck_assert(pc_model_weight(mb, 0, 0) == 3);
    /* online: the second example already scores 1 > 0 */
    ck_assert_int_eq(pc_model_label_batch(ms, xs, ys, 2, o, &err), PC_OK);
    ck_assert(o[0].updated && !o[1].updated);
    ck_assert(pc_model_weight(ms, 0, 0) == 1);
    pc_stats s;
    pc_model_stats(mb, &s);
    ck_assert(s.examples == 2 && s.updates == 2 && s.mistakes == 0);
    for (int i = 0; i < 2; i++)
        pc_svec_free(&xs[i]);
    pc_model_free(mb);
    pc_model_free(ms);
}
END_TEST

START_TEST(config_dimension_is_checked)
{
    pc_model_config c;
    pc_model_config_default(&c, 2);
    c.rule = pc_rule_find("perceptron");
    c.batch = true;
    c.averaged = true;
    pc_model *m = NULL;
    pc_error err;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_OK);
    pc_model_free(m);
    c.dim = 0;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_EINVAL);
    ck_assert(strstr(err.msg, "dim") != NULL);
    c.dim = PC_DIM_MAX + 1;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_EINVAL);
}
END_TEST

static pc_outcome label_cls(pc_model *m, const double *v, const char *cls, pc_status want)
{
    pc_svec x;
    pc_svec_init(&x);
    tu_dense(&x, 2, 2, v);
    pc_label l = {.cls = cls, .cls_len = strlen(cls)};
    pc_outcome o = {0};
    pc_error err;
    ck_assert_int_eq(pc_model_label(m, &x, &l, &o, &err), want);
    pc_svec_free(&x);
    return o;
}

START_TEST(multiclass_one_vs_rest_with_open_classes)
{
    pc_model_config c;
    pc_model_config_default(&c, 2);
    c.bias = false;
    c.multiclass = true;
    c.open_classes = true;
    pc_model *m;
    pc_error err;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_OK);
    ck_assert_int_eq(pc_model_class_count(m), 0);
    /* "a" is added, predicted (the only class): no mistake; w_a = (1,0) */
    pc_outcome o = label_cls(m, (double[]){1, 0}, "a", PC_OK);
    ck_assert(!o.mistake && o.pred.cls == 0 && o.updated);
    /* "b" is added; scores a: 0, b: 0 -> tie to a: mistake; w_a = (1,-1), w_b = (0,1) */
    o = label_cls(m, (double[]){0, 1}, "b", PC_OK);
    ck_assert(o.mistake && o.pred.cls == 0);
    ck_assert_int_eq(pc_model_class_count(m), 2);
    ck_assert_str_eq(pc_model_class_name(m, 1), "b");
    double scores[2];
    pc_prediction p;
    pc_svec x;
    pc_svec_init(&x);
    tu_dense(&x, 2, 2, (double[]){0, 1});
    pc_model_predict(m, &x, &p, scores);
    ck_assert(p.cls == 1 && scores[0] == -1 && scores[1] == 1);
    uint64_t ex, mi;
    pc_model_class_stats(m, 1, &ex, &mi);
    ck_assert(ex == 1 && mi == 1);
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

/* A multiclass perceptron of dim 2 with the two fixed classes given. */
static pc_model *two_classes(const char *c0, const char *c1)
{
    const char *classes[] = {c0, c1};
    pc_model_config c;
    pc_model_config_default(&c, 2);
    c.multiclass = true;
    c.nclasses = 2;
    c.classes = classes;
    pc_model *m;
    pc_error err;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_OK);
    return m;
}

START_TEST(multiclass_fixed_classes_reject_unknown_labels)
{
    pc_model *m = two_classes("cat", "dog");
    pc_error err;
    label_cls(m, (double[]){1, 0}, "cat", PC_OK);
    label_cls(m, (double[]){1, 0}, "bird", PC_ENOTFOUND);
    pc_svec x;
    pc_svec_init(&x);
    tu_dense(&x, 2, 2, (double[]){1, 0});
    pc_label bin = {.y = 1};
    pc_outcome o;
    ck_assert_int_eq(pc_model_label(m, &x, &bin, &o, &err), PC_EINVAL);
    pc_stats s;
    pc_model_stats(m, &s);
    ck_assert(s.examples == 1);
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

/* A class name is bytes with a length (`weights` passes the wire's): "a\0x"
 * is not "a".  The lookup compared with strncmp, which stops at the NUL,
 * then read the stored name at the given length, past the end of "a". */
START_TEST(class_find_takes_the_whole_name)
{
    pc_model *m = two_classes("a", "bb");
    ck_assert_int_eq(pc_model_class_find(m, "a", 1), 0);
    ck_assert_int_eq(pc_model_class_find(m, "bb", 2), 1);
    ck_assert_int_eq(pc_model_class_find(m, "b", 1), -1);
    ck_assert_int_eq(pc_model_class_find(m, "a\0x", 3), -1);
    ck_assert_int_eq(pc_model_class_find(m, "a\0", 2), -1);
    pc_model_free(m);
}
END_TEST

START_TEST(binary_models_reject_bad_labels)
{
    pc_model *m = tu_model("perceptron", 2, false);
    pc_svec x;
    pc_svec_init(&x);
    tu_dense(&x, 2, 2, (double[]){1, 0});
    pc_label l = {.y = 0};
    pc_outcome o;
    pc_error err;
    ck_assert_int_eq(pc_model_label(m, &x, &l, &o, &err), PC_EINVAL);
    l.cls = "x";
    l.cls_len = 1;
    ck_assert_int_eq(pc_model_label(m, &x, &l, &o, &err), PC_EINVAL);
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

START_TEST(reset_forgets_learning)
{
    pc_model *m = tu_model("perceptron", 4, true);
    tu_label(m, 2, (double[]){1, 2}, -1);
    pc_error err;
    ck_assert_int_eq(pc_model_reset(m, &err), PC_OK);
    pc_stats s;
    pc_model_stats(m, &s);
    ck_assert(s.examples == 0 && pc_model_weight(m, 0, 1) == 0);
    pc_model_free(m);
}
END_TEST

START_TEST(top_weights_by_magnitude)
{
    pc_model *m = tu_model("perceptron", 8, false);
    tu_label(m, 5, (double[]){0, 3, -5, 1, 0}, 1);
    uint32_t idx[3];
    double w[3];
    ck_assert_int_eq(pc_model_top_weights(m, 0, 3, idx, w), 3);
    ck_assert(idx[0] == 2 && w[0] == -5 && idx[1] == 1 && w[1] == 3 && idx[2] == 3);
    ck_assert_int_eq(pc_model_top_weights(m, 0, 10, (uint32_t[10]){0}, (double[10]){0}), 3);
    pc_model_free(m);
}
END_TEST

/* pc_model_top_weights reads the store directly for plain learners: the
 * same answer as ranking every pc_model_weight (|w| descending, ties by
 * index), dense and sparse, with a bias, for a rescaling rule (alma), an
 * averaged one and rules whose weights are their own (winnow, romma). */
static void top_weights_match_the_ranking(const char *rule, pc_storage storage, bool averaged,
                                          pc_weights weights)
{
    enum { DIM = 200, K = 17 };
    pc_model_config c;
    pc_model_config_default(&c, DIM);
    c.rule = pc_rule_find(rule);
    pc_params_default(c.rule, &c.params);
    c.bias = true;
    c.averaged = averaged;
    c.storage = storage;
    c.weights = weights;
    pc_model *m = NULL;
    pc_error err = {{0}};
    ck_assert_msg(pc_model_new(&c, &m, &err) == PC_OK, "%s: %s", rule, err.msg);
    uint64_t r = 7;
    pc_svec x;
    pc_svec_init(&x);
    for (int e = 0; e < 300; e++) { /* small integers: many equal |w| */
        pc_svec_clear(&x);
        for (int j = 0; j < 4; j++) {
            r = r * 6364136223846793005u + 1442695040888963407u;
            /* every third index: zeros between */
            ck_assert(pc_svec_push(&x, (uint32_t)(r >> 33) % 60 * 3, (double)((r >> 20) % 3 + 1)) == PC_OK);
        }
        ck_assert(pc_svec_normalize(&x, DIM, &err) == PC_OK);
        pc_label y = {.y = (r >> 40) % 2 ? 1 : -1};
        pc_outcome o;
        ck_assert(pc_model_label(m, &x, &y, &o, &err) == PC_OK);
    }
    pc_svec_free(&x);
    uint32_t want[K], got[K];
    double wantw[K], gotw[K];
    size_t n = 0;
    for (uint32_t i = 0; i < DIM; i++) { /* insertion by the ranking, from scratch */
        double v = pc_model_weight(m, 0, i), a = fabs(v);
        if (v == 0)
            continue;
        size_t j = n < K ? n++ : K;
        while (j > 0 && (a > fabs(wantw[j - 1]) || (a == fabs(wantw[j - 1]) && i < want[j - 1]))) {
            if (j < K)
                want[j] = want[j - 1], wantw[j] = wantw[j - 1];
            j--;
        }
        if (j < K)
            want[j] = i, wantw[j] = v;
    }
    ck_assert_uint_eq(pc_model_top_weights(m, 0, K, got, gotw), n);
    for (size_t j = 0; j < n; j++)
        ck_assert_msg(got[j] == want[j] && gotw[j] == wantw[j], "%s storage %d: rank %zu: %u %g, "
                      "want %u %g", rule, storage, j, got[j], gotw[j], want[j], wantw[j]);
    /* a slice at a time (as the daemon scans a large model): the same */
    size_t sn = 0;
    uint32_t len = pc_model_scan_length(m, 0);
    for (uint32_t from = 0; from < len; from += 7)
        sn = pc_model_top_weights_slice(m, 0, from, from + 7, K, got, gotw, sn);
    ck_assert_uint_eq(sn, n);
    for (size_t j = 0; j < n; j++)
        ck_assert_msg(got[j] == want[j] && gotw[j] == wantw[j], "%s storage %d sliced: rank %zu",
                      rule, storage, j);
    pc_model_free(m);
}

START_TEST(top_weights_read_from_the_store_match_the_ranking)
{
    const char *rules[] = {"perceptron", "alma", "pa1", "winnow", "romma"};
    for (size_t k = 0; k < sizeof rules / sizeof *rules; k++)
        for (int st = PC_STORAGE_DENSE; st <= PC_STORAGE_AUTO; st++)
            top_weights_match_the_ranking(rules[k], (pc_storage)st, false, PC_WEIGHTS_FLOAT64);
    top_weights_match_the_ranking("perceptron", PC_STORAGE_SPARSE, true, PC_WEIGHTS_FLOAT64);
    for (size_t k = 0; k < sizeof rules / sizeof *rules; k++)
        if (strcmp(rules[k], "winnow") != 0) { /* float64 only */
            top_weights_match_the_ranking(rules[k], PC_STORAGE_DENSE, false, PC_WEIGHTS_FLOAT32);
            top_weights_match_the_ranking(rules[k], PC_STORAGE_AUTO, false, PC_WEIGHTS_FLOAT32);
        }
}
END_TEST

/* weights: float32 (docs/operations.md, "Memory"). */
static pc_model *new_model(const char *rule, uint32_t dim, pc_storage storage, pc_weights weights,
                           bool averaged)
{
    pc_model_config c;
    pc_model_config_default(&c, dim);
    c.rule = pc_rule_find(rule);
    pc_params_default(c.rule, &c.params);
    c.storage = storage;
    c.weights = weights;
    c.averaged = averaged;
    pc_model *m = NULL;
    pc_error err = {{0}};
    ck_assert_msg(pc_model_new(&c, &m, &err) == PC_OK, "%s: %s", rule, err.msg);
    return m;
}

static void label_one(pc_model *m, const uint32_t *idx, const double *val, int n, int y)
{
    pc_svec x;
    pc_svec_init(&x);
    pc_error err = {{0}};
    for (int k = 0; k < n; k++)
        ck_assert(pc_svec_push(&x, idx[k], val[k]) == PC_OK);
    ck_assert(tu_normalize(&x, pc_model_config_of(m)->dim, &err) == PC_OK);
    pc_label l = {.y = y};
    pc_outcome o;
    ck_assert_msg(pc_model_label(m, &x, &l, &o, &err) == PC_OK, "%s", err.msg);
    pc_svec_free(&x);
}

/* A dense float32 vector is 4 bytes a weight: the model holds exactly that
 * much less (dim weights and the bias, twice when averaged). */
START_TEST(float32_halves_a_dense_model)
{
    const uint32_t dim = 1u << 16;
    for (int avg = 0; avg < 2; avg++) {
        pc_model *d = new_model("perceptron", dim, PC_STORAGE_DENSE, PC_WEIGHTS_FLOAT64, avg);
        pc_model *f = new_model("perceptron", dim, PC_STORAGE_DENSE, PC_WEIGHTS_FLOAT32, avg);
        ck_assert_uint_eq(pc_model_bytes(d) - pc_model_bytes(f), (size_t)(dim + 1) * 4 * (avg ? 2 : 1));
        pc_model_free(d);
        pc_model_free(f);
    }
}
END_TEST

/* Small integers are floats, and so are their sums: a perceptron fed them
 * holds the same weights in float32 as in float64, and scores every example
 * with the same bits. */
START_TEST(float32_is_exact_on_small_integers)
{
    pc_model *d = new_model("perceptron", 64, PC_STORAGE_DENSE, PC_WEIGHTS_FLOAT64, true);
    pc_model *f = new_model("perceptron", 64, PC_STORAGE_DENSE, PC_WEIGHTS_FLOAT32, true);
    uint64_t r = 11;
    pc_svec x;
    pc_svec_init(&x);
    pc_error err = {{0}};
    for (int e = 0; e < 2000; e++) {
        pc_svec_clear(&x);
        for (int j = 0; j < 5; j++) {
            r = r * 6364136223846793005u + 1442695040888963407u;
            ck_assert(pc_svec_push(&x, (uint32_t)(r >> 33) % 64, (double)((r >> 20) % 7) - 3) == PC_OK);
        }
        ck_assert(pc_svec_normalize(&x, 64, &err) == PC_OK);
        pc_label y = {.y = (r >> 40) % 2 ? 1 : -1};
        pc_outcome od, of;
        ck_assert(pc_model_label(d, &x, &y, &od, &err) == PC_OK);
        ck_assert(pc_model_label(f, &x, &y, &of, &err) == PC_OK);
        ck_assert_msg(memcmp(&od.pred.score, &of.pred.score, sizeof(double)) == 0,
                      "example %d: float32 %.17g, float64 %.17g", e, of.pred.score, od.pred.score);
    }
    pc_stats sd;
    pc_model_stats(d, &sd);
    ck_assert_uint_gt(sd.updates, 500);
    pc_svec_free(&x);
    pc_model_free(d);
    pc_model_free(f);
}
END_TEST

/* An example whose update would take a weight past float's 3.4e38 (a value
 * of 1e39 is a valid double) is skipped, said in the learner's note, and the
 * model stays finite and goes on learning. */
START_TEST(float32_skips_an_update_past_its_range)
{
    for (int st = PC_STORAGE_DENSE; st <= PC_STORAGE_AUTO; st += 2) {
        pc_model *f = new_model("perceptron", 16, (pc_storage)st, PC_WEIGHTS_FLOAT32, false);
        const uint32_t i1[] = {1, 2};
        const double ok[] = {1, 2}, huge[] = {1, 1e39};
        label_one(f, i1, ok, 2, -1);       /* a mistake (0 scores +1): w = (-1, -2), bias -1 */
        label_one(f, i1, huge, 2, 1);      /* a mistake whose update leaves float's range */
        ck_assert(isfinite(pc_model_weight(f, 0, 2)));
        ck_assert_msg(pc_model_weight(f, 0, 1) == -1 && pc_model_weight(f, 0, 2) == -2, "w %g %g", pc_model_weight(f, 0, 1), pc_model_weight(f, 0, 2));
        pc_learner_info li;
        pc_model_learner_info(f, 0, &li);
        ck_assert_msg(li.note && strstr(li.note, "float32"), "storage %d: note %s", st,
                      li.note ? li.note : "(none)");
        label_one(f, i1, ok, 2, 1);        /* and learns the next one */
        ck_assert(pc_model_weight(f, 0, 1) == 0 && pc_model_weight(f, 0, 2) == 0);
        pc_model_free(f);
    }
}
END_TEST

START_TEST(float32_is_refused_where_it_cannot_apply)
{
    pc_model_config c;
    pc_model_config_default(&c, 16);
    c.weights = PC_WEIGHTS_FLOAT32;
    c.storage = PC_STORAGE_SPARSE;
    pc_model *m = NULL;
    pc_error err = {{0}};
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_EINVAL);
    ck_assert_msg(strstr(err.msg, "sparse") && strstr(err.msg, "storage dense or auto"), "%s", err.msg);
    c.storage = PC_STORAGE_DENSE;
    c.rule = pc_rule_find("winnow");
    pc_params_default(c.rule, &c.params);
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_EINVAL);
    ck_assert_msg(strstr(err.msg, "winnow") && strstr(err.msg, "float32"), "%s", err.msg);
    ck_assert(m == NULL);
}
END_TEST

/* A float32 model's snapshot holds floats: the same bytes read as float32
 * where a weight is not a float (a float64 model's, its width byte changed)
 * are refused as malformed, not rounded into another model. */
START_TEST(float32_snapshot_holds_floats_only)
{
    pc_model *d = new_model("perceptron", 16, PC_STORAGE_DENSE, PC_WEIGHTS_FLOAT64, false);
    const uint32_t i1[] = {1, 2};
    const double v[] = {0.1, 0.3};
    label_one(d, i1, v, 2, 1);
    uint8_t *b;
    size_t len;
    pc_error err = {{0}};
    ck_assert_int_eq(pc_model_encode(d, &b, &len, &err), PC_OK);
    /* "PCMODEL", version, rule name (u32 + 10 bytes), no parameters, dim, flags */
    size_t at = 7 + 1 + 4 + strlen("perceptron") + 4 + 1;
    ck_assert_uint_eq(pc_rule_param_count(pc_rule_find("perceptron")), 1);
    at += 4 + 8; /* its one parameter, eta */
    ck_assert_uint_eq(b[at], PC_WEIGHTS_FLOAT64);
    b[at] = PC_WEIGHTS_FLOAT32;
    pc_model *f = NULL;
    ck_assert_int_eq(pc_model_decode(b, len, &f, &err), PC_EFORMAT);
    ck_assert(f == NULL);
    b[at] = 2; /* a width this build does not know */
    ck_assert_int_eq(pc_model_decode(b, len, &f, &err), PC_EFORMAT);
    free(b);
    pc_model_free(d);
}
END_TEST

/* Issue 14: a model too big for memory is refused with a message that says
 * so (the rules' init says nothing when calloc fails; the client saw code 11
 * and an empty message).  In a child whose address space is capped; skipped
 * where the cap is not honoured (valgrind's and ASan's allocators). */
START_TEST(out_of_memory_creating_a_model_says_so)
{
#if defined(__SANITIZE_ADDRESS__)
    return; /* ASan's shadow memory cannot live under an address-space cap */
#endif
    int fds[2];
    ck_assert(pipe(fds) == 0);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        char msg[300] = "";
        struct rlimit rl = {256u << 20, 256u << 20};
        void *probe = NULL;
        if (setrlimit(RLIMIT_AS, &rl) != 0 || (probe = malloc(512u << 20)) != NULL) {
            snprintf(msg, sizeof msg, "skip");
        } else {
            pc_model_config c;
            pc_model_config_default(&c, 1u << 26); /* 512 MiB of weights */
            pc_model *m;
            pc_error err;
            memset(err.msg, 'x', sizeof err.msg - 1); /* garbage, as on a stack */
            err.msg[sizeof err.msg - 1] = 0;
            pc_status st = pc_model_new(&c, &m, &err);
            snprintf(msg, sizeof msg, "%d %s", (int)st, err.msg);
        }
        free(probe);
        ssize_t w = write(fds[1], msg, strlen(msg) + 1);
        _exit(w > 0 ? 0 : 1);
    }
    close(fds[1]);
    char got[300] = "";
    ssize_t n = read(fds[0], got, sizeof got - 1);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    ck_assert(n > 0);
    if (strcmp(got, "skip") == 0)
        return;
    char want[64];
    snprintf(want, sizeof want, "%d out of memory", (int)PC_ENOMEM);
    ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "got '%s'", got);
    ck_assert_msg(strstr(got, "perceptron learner of dimension 67108865"), "got '%s'", got);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model");
    TU_TCASE(s, "perceptron", 0, perceptron_with_bias_step_by_step,
        perceptron_learning_rate_scales_weights, norm_without_a_dominant_bias_is_exact,
        sparse_and_dense_report_the_same_norm,
        averaged_perceptron_predicts_with_the_mean_of_past_weights,
        batch_mode_scores_with_the_starting_weights, config_dimension_is_checked,
        multiclass_one_vs_rest_with_open_classes, multiclass_fixed_classes_reject_unknown_labels,
        binary_models_reject_bad_labels, class_find_takes_the_whole_name, reset_forgets_learning,
        top_weights_by_magnitude, top_weights_read_from_the_store_match_the_ranking,
        out_of_memory_creating_a_model_says_so, float32_halves_a_dense_model,
        float32_is_exact_on_small_integers, float32_skips_an_update_past_its_range,
        float32_is_refused_where_it_cannot_apply, float32_snapshot_holds_floats_only);
    return tu_run(s);
}
