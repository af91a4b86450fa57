/* test_explain.c - pc_model_explain (lib/explain.c): the contributions of
 * an example's features and the score of the empty example make up the score
 * pc_model_predict gives, for every rule of the registry, binary and
 * multiclass, every storage, both weight widths, averaged or not, with and
 * without the scale step, to the precision docs/protocol.md states (1e-12 of
 * the parts' magnitudes, 1e-9 for the OMM rules). */
#include "tests/testutil.h"

#include "lib/learner.h"

#include <stdio.h>

#define DIM 64

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(void)
{
    return (double)(tu_xorshift(&rng) >> 11) * 0x1p-53;
}

/* Up to 12 features, values at several scales (the scale step has work). */
static void random_example(pc_svec *x)
{
    pc_error err;
    pc_svec_clear(x);
    int n = 1 + (int)(urand() * 12);
    for (int k = 0; k < n; k++) {
        uint32_t i = (uint32_t)(urand() * DIM);
        ck_assert_int_eq(pc_svec_push(x, i, (urand() * 2 - 1) * (1 + (double)(i % 4) * 40)),
                         PC_OK);
    }
    ck_assert_int_eq(pc_svec_normalize(x, DIM, &err), PC_OK);
}

static pc_label label_of(const pc_svec *x, bool multiclass)
{
    static const char *names[] = {"a", "b", "c"};
    double s = 0.3;
    for (uint32_t k = 0; k < x->n; k++)
        s += (x->idx[k] % 3 == 0 ? 1.0 : -0.4) * x->val[k];
    pc_label y = {.y = s >= 0 ? 1 : -1};
    if (multiclass) {
        int c = s > 10 ? 0 : s >= 0 ? 1 : 2;
        y.cls = names[c];
        y.cls_len = 1;
    }
    return y;
}

typedef struct variant {
    bool multiclass, averaged, bias;
    pc_storage storage;
    pc_weights weights;
    pc_scale scale;
} variant;

static pc_model *make(const pc_rule *r, const variant *v)
{
    pc_model_config c;
    pc_model_config_default(&c, DIM);
    c.rule = r;
    pc_params_default(r, &c.params);
    c.multiclass = v->multiclass;
    c.open_classes = v->multiclass;
    c.averaged = v->averaged;
    c.bias = v->bias;
    c.storage = v->storage;
    c.weights = v->weights;
    c.prep.scale = v->scale;
    pc_model *m = NULL;
    pc_error err = {{0}};
    ck_assert_msg(pc_model_new(&c, &m, &err) == PC_OK, "%s: %s", pc_rule_name(r), err.msg);
    return m;
}

/* intercept + the contributions in order against the score, and each part
 * against what it claims to be. */
static void check_parts(pc_model *m, const pc_svec *x, size_t cls, double score, const char *what)
{
    pc_part parts[DIM];
    double sum = pc_model_explain(m, x, cls, parts), mag = fabs(sum);
    /* Winnow's score is w.x - theta (theta = N, DIM here): w.x and theta
     * cancel, and the rounding of their difference is the score's */
    const pc_rule *rule = pc_model_config_of(m)->rule;
    if (!strcmp(pc_rule_name(rule), "winnow"))
        mag += DIM;
    /* The OMM rules score relative to an anchor, (p - q).(x - a) and the
     * squared norms: terms larger than the parts, whose rounding is the
     * score's (seen at 1.01e-12 of |parts| in the sanitizer build) */
    double tol = (rule->flags & PC_RULE_OWN_BIAS) ? 1e-9 : 1e-12;
    for (uint32_t k = 0; k < x->n; k++) {
        const pc_part *p = &parts[k];
        ck_assert_uint_eq(p->idx, x->idx[k]);
        ck_assert(p->value == x->val[k]);
        ck_assert(p->weight == pc_model_weight(m, cls, p->idx));
        ck_assert(p->contribution == p->weight * p->scaled);
        if (pc_model_config_of(m)->prep.scale == PC_SCALE_NONE)
            ck_assert(p->scaled == p->value);
        sum += p->contribution;
        mag += fabs(p->contribution);
    }
    ck_assert_msg(fabs(sum - score) <= tol * mag + 1e-300,
                  "%s class %zu: the parts sum to %.17g, the score is %.17g (scale %g)", what,
                  cls, sum, score, mag);
}

static void run(const pc_rule *r, const variant *v)
{
    if ((v->averaged && !pc_rule_can_average(r)) ||
        (v->weights == PC_WEIGHTS_FLOAT32 &&
         ((r->flags & PC_RULE_FLOAT64_ONLY) || v->storage == PC_STORAGE_SPARSE)))
        return;
    char what[160];
    snprintf(what, sizeof what, "%s %s%s%s %s %s scale %d", pc_rule_name(r),
             v->multiclass ? "multiclass" : "binary", v->averaged ? " averaged" : "",
             v->bias ? " bias" : "", pc_storage_names[v->storage],
             v->weights == PC_WEIGHTS_FLOAT32 ? "float32" : "float64", (int)v->scale);
    pc_model *m = make(r, v);
    pc_svec x;
    pc_svec_init(&x);
    for (int t = 0; t < 80; t++) {
        random_example(&x);
        /* before each label: the model as it stands, including before the first */
        if (t % 10 == 0 || t < 5) {
            pc_prediction p;
            double scores[3] = {0};
            pc_model_predict(m, &x, &p, scores);
            size_t k = pc_model_class_count(m);
            if (!v->multiclass)
                check_parts(m, &x, 0, p.score, what);
            for (size_t c = 0; v->multiclass && c < k; c++)
                check_parts(m, &x, c, scores[c], what);
        }
        pc_label y = label_of(&x, v->multiclass);
        pc_outcome o;
        pc_error err;
        ck_assert_msg(pc_model_label(m, &x, &y, &o, &err) == PC_OK, "%s: %s", what, err.msg);
    }
    pc_svec_free(&x);
    pc_model_free(m);
}

START_TEST(parts_make_up_the_score)
{
    const pc_rule *r = pc_rules()[_i];
    for (int mc = 0; mc < 2; mc++)
        for (int av = 0; av < 2; av++)
            for (int st = PC_STORAGE_DENSE; st <= PC_STORAGE_AUTO; st++)
                for (int w = 0; w < 2; w++)
                    for (int sc = 0; sc < 2; sc++) {
                        variant v = {.multiclass = mc, .averaged = av, .bias = (mc + av + st) % 2 == 0,
                                     .storage = (pc_storage)st,
                                     .weights = w ? PC_WEIGHTS_FLOAT32 : PC_WEIGHTS_FLOAT64,
                                     .scale = sc ? PC_SCALE_STD : PC_SCALE_NONE};
                        run(r, &v);
                    }
}
END_TEST

/* A hand-computed case: the perceptron after two updates, no bias feature:
 * w = x1 - x2, so each part is w_i x_i and the empty example scores 0. */
START_TEST(perceptron_parts_by_hand)
{
    variant v = {.bias = false};
    pc_model *m = make(pc_rule_find("perceptron"), &v);
    pc_svec x;
    pc_svec_init(&x);
    pc_error err;
    pc_outcome o;
    pc_svec_push(&x, 1, 2.0);
    pc_svec_push(&x, 5, -1.0);
    ck_assert_int_eq(pc_svec_normalize(&x, DIM, &err), PC_OK);
    pc_label neg = {.y = -1};
    ck_assert_int_eq(pc_model_label(m, &x, &neg, &o, &err), PC_OK); /* score 0 -> +1: mistake */
    /* w = -(2 e1 - e5) = -2 e1 + e5 */
    pc_svec_clear(&x);
    pc_svec_push(&x, 1, 3.0);
    pc_svec_push(&x, 7, 4.0);
    ck_assert_int_eq(pc_svec_normalize(&x, DIM, &err), PC_OK);
    pc_part parts[2];
    double b = pc_model_explain(m, &x, 0, parts);
    ck_assert(b == 0);
    ck_assert(parts[0].idx == 1 && parts[0].weight == -2 && parts[0].contribution == -6);
    ck_assert(parts[1].idx == 7 && parts[1].weight == 0 && parts[1].contribution == 0);
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

static int rule_count(void)
{
    int n = 0;
    while (pc_rules()[n])
        n++;
    return n;
}

int main(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("explain");
    tcase_add_loop_test(tc, parts_make_up_the_score, 0, rule_count());
    tcase_add_test(tc, perceptron_parts_by_hand);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
