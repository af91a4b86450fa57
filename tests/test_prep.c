/* test_prep.c - feature preparation (lib/prep.c, lib/scaler.c): the text
 * forms of transforms and crosses and their refusals, the name step on
 * hand-computed examples, the scale step's statistics on hand-computed
 * streams, and through a model: predict before label sees what the label
 * sees, snapshots keep the statistics bit for bit, a model without
 * preparation is what it was (and written as format 4), reset forgets. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/scaler.h"

#define DIM (1u << 20) /* wide enough that the names of a test do not collide */

static uint32_t h(const char *name)
{
    return pc_hash_feature(name, strlen(name), DIM);
}

/* The value x holds at index i (x normalized: indices distinct), NAN if none. */
static double at(const pc_svec *x, uint32_t i)
{
    for (uint32_t k = 0; k < x->n; k++)
        if (x->idx[k] == i)
            return x->val[k];
    return NAN;
}

static pc_transform transform(const char *text)
{
    pc_transform t;
    pc_error err = {{0}};
    ck_assert_msg(pc_transform_parse(text, strlen(text), &t, &err) == PC_OK, "%s: %s", text,
                  err.msg);
    return t;
}

START_TEST(texts_parse_format_and_refuse)
{
    static const char *const good[] = {"capital_*:log", "age:bins=18,25.5,65", "*:logbins",
                                       "a:b:log", "h*:rangebins=8"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        pc_transform t = transform(good[i]);
        char back[PC_PREP_TEXT_MAX];
        pc_transform_format(&t, back, sizeof back);
        ck_assert_str_eq(back, good[i]);
    }
    ck_assert_str_eq(transform("a:b:log").pattern, "a:b"); /* the last ':' ends the pattern */
    ck_assert_int_eq(transform("age:bins=18,25.5,65").nedges, 3);
    struct {
        const char *text, *says;
    } bad[] = {
        {"age", "PATTERN:log"},
        {":log", "1 to 47 bytes"},
        {"age:sqrt", "unknown transform"},
        {"age:bins=", "needs its edges"},
        {"age:bins=3,2", "strictly increasing"},
        {"age:bins=1,x", "not a finite number"},
        {"age:bins=1,inf", "not a finite number"},
        {"age:bins=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "more than 16"},
        {"a_pattern_that_is_far_longer_than_forty_seven_bytes_*:log", "1 to 47 bytes"},
        {"h:rangebins=1", "2 to 64"},
        {"h:rangebins=65", "2 to 64"},
        {"h:rangebins=", "2 to 64"},
        {"h:rangebins=4x", "2 to 64"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pc_transform t;
        pc_error err = {{0}};
        ck_assert_int_eq(pc_transform_parse(bad[i].text, strlen(bad[i].text), &t, &err),
                         PC_EINVAL);
        ck_assert_msg(strstr(err.msg, bad[i].says), "%s: %s", bad[i].text, err.msg);
    }
    pc_cross c;
    pc_error err = {{0}};
    ck_assert_int_eq(pc_cross_parse("sex=,race=", 10, &c, &err), PC_OK);
    ck_assert_str_eq(c.a, "sex=");
    ck_assert_str_eq(c.b, "race=");
    ck_assert_int_eq(pc_cross_parse("a,b,c", 5, &c, &err), PC_EINVAL);
    ck_assert_msg(strstr(err.msg, "not more"), "%s", err.msg);
    ck_assert_int_eq(pc_cross_parse("ab", 2, &c, &err), PC_EINVAL);
    ck_assert_int_eq(pc_cross_parse("a,", 2, &c, &err), PC_EINVAL);
}
END_TEST

/* Runs the name step over (name, value) pairs into x, normalized. */
static void name_step(const pc_prep *p, pc_svec *x, size_t n, const char *const *names,
                      const double *v)
{
    pc_namer nm = pc_namer_plain(DIM);
    pc_namer_set(&nm, DIM, p);
    pc_svec_clear(x);
    pc_namer_start(&nm);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(pc_namer_add(&nm, x, names[i], strlen(names[i]), v[i]), PC_OK);
    ck_assert_int_eq(pc_namer_end(&nm, x), PC_OK);
    pc_error err;
    ck_assert_int_eq(pc_svec_normalize(x, pc_namer_space(&nm), &err), PC_OK);
    pc_namer_free(&nm);
}

START_TEST(name_step_transforms_by_pattern)
{
    pc_prep p = {0};
    p.transforms[p.ntransforms++] = transform("cap*:log");
    p.transforms[p.ntransforms++] = transform("age:bins=20,40,60");
    p.transforms[p.ntransforms++] = transform("h?urs:logbins");
    p.transforms[p.ntransforms++] = transform("*:log"); /* never reached by the names above */
    pc_svec x;
    pc_svec_init(&x);
    const char *names[] = {"capital", "age", "hours", "zero_or_less"};
    const double v[] = {1000, 40, 40, -3};
    name_step(&p, &x, 4, names, v);
    ck_assert_uint_eq(x.n, 6); /* 4 features, 2 bins */
    ck_assert_double_eq(at(&x, h("capital")), log1p(1000.0));
    ck_assert_double_eq(at(&x, h("zero_or_less")), -log1p(3.0)); /* the sign kept */
    ck_assert_double_eq(at(&x, h("age")), 40);
    ck_assert_double_eq(at(&x, h("age#b2")), 1);   /* 20 <= 40 and 40 <= 40: two edges */
    ck_assert_double_eq(at(&x, h("hours")), 40);
    /* 1 + 40 = 41 = 0.640625 2^6: floor(2 log2 41) = 2 (6 - 1) + (0.64 >= 0.7071) = 10 */
    ck_assert_double_eq(at(&x, h("hours#lb10")), 1);
    /* edges and half-octave boundaries, and negative values */
    struct {
        double v;
        const char *bin;
    } cases[] = {{19.999, "age#b0"}, {20, "age#b1"}, {60, "age#b3"}, {1e9, "age#b3"},
                 {-5, "age#b0"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        name_step(&p, &x, 1, (const char *[]){"age"}, &cases[i].v);
        ck_assert_msg(at(&x, h(cases[i].bin)) == 1, "age %g is not in %s", cases[i].v,
                      cases[i].bin);
    }
    /* a name past the stack's buffer: built on the heap, hashed the same */
    char longname[301], longbin[320];
    memset(longname, 'h', 300);
    longname[300] = 0;
    snprintf(longbin, sizeof longbin, "%s#lb2", longname);
    pc_prep all = {0};
    all.transforms[all.ntransforms++] = transform("*:logbins");
    name_step(&all, &x, 1, (const char *[]){longname}, (const double[]){1});
    ck_assert_double_eq(at(&x, h(longbin)), 1);
    struct {
        double v;
        const char *bin;
    } lb[] = {{0.5, "hours#lb1"},   /* 1.5: 2 log2 1.5 = 1.17 */
              {1, "hours#lb2"},     /* 2: exactly 2 */
              {0.4142, "hours#lb0"}, /* just under sqrt 2 */
              {0.4143, "hours#lb1"}, /* just over */
              {-1, "hours#lb-2"}};
    for (size_t i = 0; i < sizeof lb / sizeof *lb; i++) {
        name_step(&p, &x, 1, (const char *[]){"hours"}, &lb[i].v);
        ck_assert_msg(at(&x, h(lb[i].bin)) == 1, "hours %g is not in %s", lb[i].v, lb[i].bin);
    }
    pc_svec_free(&x);
}
END_TEST

START_TEST(name_step_crosses_pairs_and_bounds)
{
    pc_prep p = {0};
    p.max_crossed = PC_CROSSED_DEFAULT;
    pc_cross_parse("sex=,race=", 10, &p.crosses[p.ncrosses++], &(pc_error){{0}});
    pc_cross_parse("w,w", 3, &p.crosses[p.ncrosses++], &(pc_error){{0}});
    pc_svec x;
    pc_svec_init(&x);
    const char *names[] = {"sex=F", "race=B", "race=W", "w1", "w2", "w3", "other"};
    const double v[] = {1, 2, 0.5, 3, 5, 7, 9};
    name_step(&p, &x, 7, names, v);
    /* 7 features, 2 from sex x race, 3 from the pairs of w* (each once) */
    ck_assert_uint_eq(x.n, 12);
    ck_assert_double_eq(at(&x, h("sex=F*race=B")), 2);
    ck_assert_double_eq(at(&x, h("sex=F*race=W")), 0.5);
    ck_assert_double_eq(at(&x, h("w1*w2")), 15);
    ck_assert_double_eq(at(&x, h("w1*w3")), 21);
    ck_assert_double_eq(at(&x, h("w2*w3")), 35);
    ck_assert(isnan(at(&x, h("w2*w1"))));
    /* the bound: the first max_crossed pairs, in the order they are made */
    p.max_crossed = 3;
    name_step(&p, &x, 7, names, v);
    ck_assert_uint_eq(x.n, 10);
    ck_assert_double_eq(at(&x, h("w1*w2")), 15);
    ck_assert(isnan(at(&x, h("w1*w3"))));
    /* a product past a feature value's bound is held at it */
    const double big[] = {1, 0x1p40, 0x1p40};
    name_step(&p, &x, 3, (const char *[]){"w1", "w2", "zz"}, big);
    ck_assert_double_eq(at(&x, h("w1*w2")), 0x1p40);
    const double huge[] = {0x1p40, 0x1p40};
    name_step(&p, &x, 2, (const char *[]){"w1", "w2"}, huge);
    ck_assert_double_eq(at(&x, h("w1*w2")), PC_VALUE_MAX);
    pc_svec_free(&x);
}
END_TEST

static void svec_of(pc_svec *x, uint32_t n, const uint32_t *idx, const double *v)
{
    pc_svec_clear(x);
    for (uint32_t k = 0; k < n; k++)
        ck_assert_int_eq(pc_svec_push(x, idx[k], v[k]), PC_OK);
    pc_error err;
    ck_assert_int_eq(pc_svec_normalize(x, DIM, &err), PC_OK);
}

/* One stream through a scaler of each storage: the same values every step. */
START_TEST(scaler_max_and_std_by_hand)
{
    for (int storage = PC_STORAGE_DENSE; storage <= PC_STORAGE_AUTO; storage++) {
        pc_scaler mx, sd;
        ck_assert_int_eq(pc_scaler_init(&mx, PC_SCALE_MAX, DIM, storage), PC_OK);
        ck_assert_int_eq(pc_scaler_init(&sd, PC_SCALE_STD, DIM, storage), PC_OK);
        pc_svec x, out;
        pc_svec_init(&x);
        pc_svec_init(&out);
        while (out.cap < 4)
            pc_svec_grow(&out);
        /* feature 5: 2, -4, 1; feature 9: 10 every time (a one-hot-like constant) */
        const double f5[] = {2, -4, 1};
        const double want_max[] = {1, -1, 0.25};
        /* std of feature 5: {2}: none, rms 2 -> 1; {2,-4}: mean -1, var 9, sd 3 -> -4/3;
         * {2,-4,1}: mean -1/3, M2 = 9*2 + ... = 18 + (1+1)(1+1/3) = 20.666..., var
         * 6.888..., so 1 / sqrt(62/9) */
        const double want_std[] = {1, -4.0 / 3, 1 / sqrt(62.0 / 9)};
        for (int t = 0; t < 3; t++) {
            svec_of(&x, 2, (const uint32_t[]){5, 9}, (const double[]){f5[t], 10});
            pc_scaler_apply(&mx, &x, &out); /* what the label will see, before it */
            double before = at(&out, 5);
            ck_assert_int_eq(pc_scaler_learn(&mx, &x, &out), PC_OK);
            ck_assert_double_eq(at(&out, 5), want_max[t]);
            ck_assert_double_eq(at(&out, 5), before);
            ck_assert_double_eq(at(&out, 9), 1);
            ck_assert_double_eq(out.norm2, want_max[t] * want_max[t] + 1);
            pc_scaler_apply(&sd, &x, &out);
            before = at(&out, 5);
            ck_assert_int_eq(pc_scaler_learn(&sd, &x, &out), PC_OK);
            tu_near(at(&out, 5), want_std[t]);
            ck_assert_double_eq(at(&out, 5), before);
            ck_assert_double_eq(at(&out, 9), 1); /* no deviation: the rms, 10 */
        }
        ck_assert_double_eq(pc_scaler_divisor(&mx, 5), 4);
        ck_assert_double_eq(pc_scaler_divisor(&mx, 6), 0); /* never seen */
        tu_near(pc_scaler_divisor(&sd, 5), sqrt(62.0 / 9));
        ck_assert_double_eq(pc_scaler_divisor(&sd, 9), 10);
        /* apply learns nothing */
        svec_of(&x, 1, (const uint32_t[]){5}, (const double[]){100});
        pc_scaler_apply(&mx, &x, &out);
        ck_assert_double_eq(at(&out, 5), 1);
        ck_assert_double_eq(pc_scaler_divisor(&mx, 5), 4);
        pc_scaler_clear(&mx);
        ck_assert_double_eq(pc_scaler_divisor(&mx, 5), 0);
        pc_svec_free(&x);
        pc_svec_free(&out);
        pc_scaler_free(&mx);
        pc_scaler_free(&sd);
    }
}
END_TEST

/* scale: rms, by hand: the divisor is the root mean square over every example
 * learned, an example without the feature counting 0. */
START_TEST(scaler_rms_by_hand)
{
    for (int storage = PC_STORAGE_DENSE; storage <= PC_STORAGE_AUTO; storage++) {
        pc_scaler rs;
        ck_assert_int_eq(pc_scaler_init(&rs, PC_SCALE_RMS, DIM, storage), PC_OK);
        pc_svec x, out;
        pc_svec_init(&x);
        pc_svec_init(&out);
        while (out.cap < 4)
            pc_svec_grow(&out);
        /* feature 5: 2, absent, -4, 1; feature 9: 10, 10, 10, absent.
         * 5: sum of squares 4 over 1 example: divisor 2; then 20 over 3:
         *    sqrt(20/3), -4 / sqrt(20/3) = -sqrt(12/5); then 21 over 4: 1 / sqrt(21/4).
         * 9: 100k over k examples, divisor 10, while it is always there. */
        const uint32_t n[] = {2, 1, 2, 1};
        const uint32_t idx[][2] = {{5, 9}, {9, 0}, {5, 9}, {5, 0}};
        const double val[][2] = {{2, 10}, {10, 0}, {-4, 10}, {1, 0}};
        const double want5[] = {1, NAN, -sqrt(12.0 / 5), 2 / sqrt(21.0)};
        for (int t = 0; t < 4; t++) {
            svec_of(&x, n[t], idx[t], val[t]);
            pc_scaler_apply(&rs, &x, &out); /* what the label will see, before it */
            double before = at(&out, idx[t][0]);
            ck_assert_int_eq(pc_scaler_learn(&rs, &x, &out), PC_OK);
            ck_assert_double_eq(at(&out, idx[t][0]), before);
            if (idx[t][0] == 5)
                tu_near(at(&out, 5), want5[t]);
            if (t < 3)
                ck_assert_double_eq(at(&out, 9), 1);
        }
        ck_assert_double_eq(rs.examples, 4);
        tu_near(pc_scaler_divisor(&rs, 5), sqrt(21.0 / 4));
        ck_assert_double_eq(pc_scaler_divisor(&rs, 9), sqrt(75)); /* 300 over 4 */
        ck_assert_double_eq(pc_scaler_divisor(&rs, 6), 0);        /* never seen */
        /* a feature that was missing from an example weighs more when it comes
         * back: 10 / sqrt(400 / 5) = sqrt(5/4); and a new one sqrt(examples) */
        svec_of(&x, 2, (const uint32_t[]){9, 6}, (const double[]){10, -3});
        pc_scaler_apply(&rs, &x, &out); /* apply learns nothing */
        ck_assert_double_eq(rs.examples, 4);
        ck_assert_double_eq(pc_scaler_divisor(&rs, 9), sqrt(75));
        ck_assert_int_eq(pc_scaler_learn(&rs, &x, &out), PC_OK);
        tu_near(at(&out, 9), sqrt(1.25));
        tu_near(at(&out, 6), -sqrt(5));
        pc_scaler_clear(&rs);
        ck_assert_double_eq(rs.examples, 0);
        ck_assert_double_eq(pc_scaler_divisor(&rs, 5), 0);
        pc_svec_free(&x);
        pc_svec_free(&out);
        pc_scaler_free(&rs);
    }
}
END_TEST

/* A model of rule with the given scale (and a log transform when names). */
static pc_model *model(const char *rule, pc_scale scale, pc_storage storage)
{
    pc_model_config c;
    pc_model_config_default(&c, DIM);
    c.rule = pc_rule_find(rule);
    pc_params_default(c.rule, &c.params);
    c.prep.scale = scale;
    if (scale == PC_SCALE_RMS_SENT) /* the bins apart: indices up to 2 DIM */
        c.prep.transforms[c.prep.ntransforms++] = transform("*:logbins");
    c.storage = storage;
    pc_model *m;
    pc_error err;
    ck_assert_msg(pc_model_new(&c, &m, &err) == PC_OK, "%s", err.msg);
    return m;
}

/* A stream with features at very different scales (a 1e5 column beside 0/1
 * ones), the kind the scale step is for. */
static void example(uint64_t *rng, pc_svec *x, int *y)
{
    double a = (double)(tu_xorshift(rng) % 100000), b = (double)(tu_xorshift(rng) % 2),
           c = (double)(tu_xorshift(rng) % 90) + 10;
    svec_of(x, 3, (const uint32_t[]){1, 2, 3}, (const double[]){a, b ? 1 : 0.5, c});
    *y = (c > 50) != (b > 0) ? 1 : -1;
}

static void encode(const pc_model *m, uint8_t **buf, size_t *len)
{
    pc_error err;
    ck_assert_msg(pc_model_encode(m, buf, len, &err) == PC_OK, "%s", err.msg);
}

START_TEST(model_scales_and_snapshots_exactly)
{
    static const char *const rules[] = {"perceptron", "pa1", "alma", "aromma", "mcp", "omm"};
    for (size_t r = 0; r < sizeof rules / sizeof *rules; r++)
        for (pc_scale sc = PC_SCALE_MAX; sc <= PC_SCALE_RMS_SENT; sc++) {
            pc_model *m = model(rules[r], sc, PC_STORAGE_DENSE);
            pc_model *s = model(rules[r], sc, PC_STORAGE_SPARSE);
            pc_svec x;
            pc_svec_init(&x);
            uint64_t rng = 7;
            pc_model *back = NULL;
            for (int t = 0; t < 600; t++) {
                int y;
                example(&rng, &x, &y);
                if (sc == PC_SCALE_RMS_SENT) /* one of three bins, left at 1 */
                    ck_assert_int_eq(pc_svec_push(&x, DIM + 11 * (uint32_t)(t % 3), 1), PC_OK);
                pc_prediction p;
                pc_model_predict(m, &x, &p, NULL);
                pc_outcome o, os;
                pc_error err;
                ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = y}, &o, &err), PC_OK);
                ck_assert_int_eq(pc_model_label(s, &x, &(pc_label){.y = y}, &os, &err), PC_OK);
                /* predict just before label scores what the label scores */
                ck_assert_double_eq(p.score, o.pred.score);
                ck_assert_double_eq(os.pred.score, o.pred.score); /* storage: same bits */
                if (back) {
                    pc_outcome ob;
                    ck_assert_int_eq(pc_model_label(back, &x, &(pc_label){.y = y}, &ob, &err),
                                     PC_OK);
                    ck_assert_double_eq(ob.pred.score, o.pred.score);
                }
                if (t == 300) { /* a snapshot mid-stream learns on exactly as the model */
                    uint8_t *buf;
                    size_t len;
                    encode(m, &buf, &len);
                    ck_assert_uint_eq(buf[7], 5);
                    ck_assert_msg(pc_model_decode(buf, len, &back, &err) == PC_OK, "%s", err.msg);
                    uint8_t *again;
                    size_t len2;
                    encode(back, &again, &len2);
                    ck_assert_uint_eq(len2, len);
                    ck_assert(memcmp(again, buf, len) == 0);
                    free(again);
                    free(buf);
                }
            }
            ck_assert_double_eq(pc_model_feature_scale(m, 1), pc_model_feature_scale(back, 1));
            ck_assert(pc_model_feature_scale(m, 1) > 1000); /* max or std of a 1e5 column */
            ck_assert_double_eq(pc_model_feature_scale(m, 700), 0); /* never seen */
            uint8_t *b1, *b2, *b3;
            size_t l1, l2, l3;
            encode(m, &b1, &l1);
            encode(back, &b2, &l2);
            encode(s, &b3, &l3);
            ck_assert(l1 == l2 && memcmp(b1, b2, l1) == 0);
            pc_model_reset(m, &(pc_error){{0}});
            ck_assert_double_eq(pc_model_feature_scale(m, 1), 0);
            free(b1);
            free(b2);
            free(b3);
            pc_svec_free(&x);
            pc_model_free(m);
            pc_model_free(s);
            pc_model_free(back);
        }
}
END_TEST

/* scale none is the model as it was: the same scores as a config that never
 * heard of preparation, written as format 4 (older builds read it), and a
 * format 4 snapshot loads without preparation. */
START_TEST(no_preparation_is_the_old_model)
{
    pc_model *m = model("pa1", PC_SCALE_NONE, PC_STORAGE_DENSE);
    pc_svec x;
    pc_svec_init(&x);
    uint64_t rng = 11;
    for (int t = 0; t < 200; t++) {
        int y;
        example(&rng, &x, &y);
        ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = y}, NULL, &(pc_error){{0}}),
                         PC_OK);
    }
    uint8_t *buf;
    size_t len;
    encode(m, &buf, &len);
    ck_assert_uint_eq(buf[7], 4);
    pc_model *back;
    pc_error err;
    ck_assert_int_eq(pc_model_decode(buf, len, &back, &err), PC_OK);
    ck_assert_int_eq(pc_model_config_of(back)->prep.scale, PC_SCALE_NONE);
    ck_assert_double_eq(pc_model_feature_scale(back, 1), 1);
    free(buf);
    pc_model_free(back);
    pc_model_free(m);
    pc_svec_free(&x);
}
END_TEST

/* Values at the ends of double's range (the smallest subnormal, 1e-300,
 * 2^64) leave every scaled value finite and every statistic one a snapshot
 * holds: the squares of tiny values underflow to 0, which divided by 0. */
START_TEST(extreme_values_stay_finite)
{
    for (pc_scale sc = PC_SCALE_MAX; sc <= PC_SCALE_RMS_SENT; sc++) {
        pc_model *m = model("pa", sc, PC_STORAGE_SPARSE);
        pc_svec x;
        pc_svec_init(&x);
        const double v[] = {4.9e-324, 1e-300, -1e-300, 0x1p64, -0x1p64, 1e-170, 3, 1e-300};
        for (int t = 0; t < 64; t++) {
            double a = v[t % 8], b = v[(t * 5 + 3) % 8];
            svec_of(&x, 2, (const uint32_t[]){1, 2}, (const double[]){a, b});
            pc_outcome o;
            pc_error err;
            ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = t % 3 ? 1 : -1}, &o, &err),
                             PC_OK);
            ck_assert_msg(isfinite(o.pred.score), "%s, example %d: score %g", pc_scale_names[sc], t,
                          o.pred.score);
        }
        pc_error err;
        ck_assert_msg(tu_snapshot_loads(m, &err) == PC_OK, "%s: %s", pc_scale_names[sc], err.msg);
        pc_svec_free(&x);
        pc_model_free(m);
    }
}
END_TEST

/* rangebins: K = floor(N |v| / m), m the largest |v| the model has learned
 * of the feature, read as the model stands (the scale step's max); a value
 * at or past it, or a feature not learned yet, in the top bin. */
START_TEST(rangebins_learn_their_range)
{
    pc_model_config c;
    pc_model_config_default(&c, DIM);
    c.prep.scale = PC_SCALE_MAX;
    c.prep.transforms[c.prep.ntransforms++] = transform("age:rangebins=4");
    pc_model *m;
    pc_error err;
    ck_assert_msg(pc_model_new(&c, &m, &err) == PC_OK, "%s", err.msg);
    pc_namer nm = pc_namer_plain(DIM);
    pc_namer_for(&nm, m);
    pc_svec x;
    pc_svec_init(&x);
    struct {
        double v;
        const char *bin;
        bool learn;
    } steps[] = {
        {40, "age#rb3", true},   /* nothing learned: the top bin; then m = 40 */
        {10, "age#rb1", false},  /* 4 * 10/40 = 1 */
        {9.99, "age#rb0", false},
        {80, "age#rb3", true},   /* past m: the top bin; then m = 80 */
        {40, "age#rb2", false},  /* 4 * 40/80 */
        {79.9, "age#rb3", false},
        {-40, "age#rb-2", false},
        {0, "age#rb0", false},   /* a zero sent still has its bin */
    };
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        pc_svec_clear(&x);
        pc_namer_start(&nm);
        ck_assert_int_eq(pc_namer_add(&nm, &x, "age", 3, steps[i].v), PC_OK);
        ck_assert_int_eq(pc_namer_end(&nm, &x), PC_OK);
        ck_assert_int_eq(pc_svec_normalize(&x, DIM, &err), PC_OK);
        ck_assert_msg(at(&x, h(steps[i].bin)) == 1, "age %g is not in %s", steps[i].v,
                      steps[i].bin);
        if (steps[i].learn)
            ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = 1}, NULL, &err), PC_OK);
    }
    ck_assert_double_eq(pc_model_feature_scale(m, h("age")), 80);
    /* the range comes from scale: max: another scale is refused, naming it */
    pc_model_config_default(&c, DIM);
    c.prep.transforms[c.prep.ntransforms++] = transform("age:rangebins=4");
    pc_model *bad = NULL;
    ck_assert_int_eq(pc_model_new(&c, &bad, &err), PC_EINVAL);
    ck_assert_msg(strstr(err.msg, "scale: max (not none)"), "%s", err.msg);
    /* kept in the snapshot */
    uint8_t *buf;
    size_t len;
    encode(m, &buf, &len);
    pc_model *back;
    ck_assert_int_eq(pc_model_decode(buf, len, &back, &err), PC_OK);
    ck_assert_uint_eq(pc_model_config_of(back)->prep.transforms[0].nbins, 4);
    free(buf);
    pc_model_free(back);
    pc_svec_free(&x);
    pc_namer_free(&nm);
    pc_model_free(m);
}
END_TEST

/* What no stream leaves is refused at load: a negative max, a fractional
 * count; and configs that cannot be. */
/* scale: rms-sent keeps the bins apart: with a transform that adds bins the
 * features sent (and crosses) hash into [0, dim) as always and the bins into
 * [dim, 2 dim); without one (log only, or another scale) nothing moves. */
START_TEST(rms_sent_hashes_bins_apart)
{
    pc_prep p = {.scale = PC_SCALE_RMS_SENT};
    p.transforms[p.ntransforms++] = transform("age:bins=20,40,60");
    p.transforms[p.ntransforms++] = transform("h*:logbins");
    p.transforms[p.ntransforms++] = transform("inc:log");
    p.crosses[p.ncrosses++] = (pc_cross){"age", "job="};
    p.max_crossed = 8;
    ck_assert_uint_eq(pc_prep_space(&p, DIM), 2 * DIM);
    pc_svec x;
    pc_svec_init(&x);
    const char *names[] = {"age", "hours", "inc", "job=cook"};
    const double v[] = {40, 40, 1000, 1};
    name_step(&p, &x, 4, names, v);
    ck_assert_uint_eq(x.n, 7); /* 4 features, 2 bins, 1 cross */
    ck_assert_double_eq(at(&x, h("age")), 40);
    ck_assert_double_eq(at(&x, h("hours")), 40);
    ck_assert_double_eq(at(&x, h("inc")), log1p(1000.0));
    ck_assert_double_eq(at(&x, h("job=cook")), 1);
    ck_assert_double_eq(at(&x, h("age*job=cook")), 40); /* a cross is a feature sent */
    ck_assert_double_eq(at(&x, DIM + h("age#b2")), 1);
    ck_assert_double_eq(at(&x, DIM + h("hours#lb10")), 1);
    ck_assert(isnan(at(&x, h("age#b2"))));
    /* the same transforms under another scale, or rms-sent without bins: one space */
    pc_prep q = p;
    q.scale = PC_SCALE_RMS;
    ck_assert_uint_eq(pc_prep_space(&q, DIM), DIM);
    name_step(&q, &x, 4, names, v);
    ck_assert_double_eq(at(&x, h("age#b2")), 1);
    pc_prep logonly = {.scale = PC_SCALE_RMS_SENT, .ntransforms = 1};
    logonly.transforms[0] = transform("*:log");
    ck_assert_uint_eq(pc_prep_space(&logonly, DIM), DIM);
    ck_assert_uint_eq(pc_prep_space(NULL, DIM), DIM);
    pc_svec_free(&x);
}
END_TEST

/* rms-sent by hand: a feature below dim is divided by its rms over every
 * example (as rms), one at dim or past it (a bin) is passed as it is and
 * learns nothing; the examples count as in rms. */
START_TEST(scaler_rms_sent_by_hand)
{
    for (int storage = PC_STORAGE_DENSE; storage <= PC_STORAGE_AUTO; storage++) {
        pc_scaler rs;
        ck_assert_int_eq(pc_scaler_init(&rs, PC_SCALE_RMS_SENT, 16, storage), PC_OK);
        pc_svec x, out;
        pc_svec_init(&x);
        pc_svec_init(&out);
        while (out.cap < 4)
            pc_svec_grow(&out);
        /* feature 5: 3, then 4 (rms sqrt(25/2)); bins 16 and 31: 1 each time */
        svec_of(&x, 3, (const uint32_t[]){5, 16, 31}, (const double[]){3, 1, 1});
        ck_assert_int_eq(pc_scaler_learn(&rs, &x, &out), PC_OK);
        ck_assert_double_eq(at(&out, 5), 1);
        ck_assert_double_eq(at(&out, 16), 1);
        ck_assert_double_eq(at(&out, 31), 1);
        ck_assert_double_eq(out.norm2, 3);
        svec_of(&x, 2, (const uint32_t[]){5, 16}, (const double[]){4, 2});
        ck_assert_int_eq(pc_scaler_learn(&rs, &x, &out), PC_OK);
        tu_near(at(&out, 5), 4 / sqrt(12.5));
        ck_assert_double_eq(at(&out, 16), 2);
        ck_assert_double_eq(rs.examples, 2);
        ck_assert_double_eq(pc_scaler_divisor(&rs, 16), 1);
        ck_assert_double_eq(pc_scaler_value(&rs, 31, 7), 7);
        tu_near(pc_scaler_divisor(&rs, 5), sqrt(12.5));
        pc_svec_free(&x);
        pc_svec_free(&out);
        pc_scaler_free(&rs);
    }
}
END_TEST

/* A model with the bins apart: its weights span 2 dim (the bias past them),
 * a bin's weight is read at its index, the bias is reported as the bias. */
START_TEST(rms_sent_model_spans_two_spaces)
{
    pc_model *m = model("pa", PC_SCALE_RMS_SENT, PC_STORAGE_DENSE); /* with *:logbins */
    pc_svec x;
    pc_svec_init(&x);
    /* PA from zero weights: the loss is 1, the step 1 / ||x||^2 with x
     * scaled: feature 3 to 1 (its rms is itself), bin DIM + 9 at 1, bias 1 */
    svec_of(&x, 1, (const uint32_t[]){3}, (const double[]){5});
    ck_assert_int_eq(pc_svec_push(&x, DIM + 9, 1), PC_OK); /* past DIM: svec_of refuses it */
    pc_error err;
    ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = 1}, NULL, &err), PC_OK);
    ck_assert_double_eq(pc_model_weight(m, 0, 3), 1.0 / 3);
    ck_assert_double_eq(pc_model_weight(m, 0, DIM + 9), 1.0 / 3);
    ck_assert_double_eq(pc_model_feature_scale(m, DIM + 9), 1);
    ck_assert_double_eq(pc_model_feature_scale(m, 3), 5);
    ck_assert_double_eq(pc_model_weight(m, 0, 2 * DIM), 0); /* the bias is no feature's */
    pc_learner_info li;
    pc_model_learner_info(m, 0, &li);
    ck_assert_double_eq(li.bias, 1.0 / 3);
    ck_assert_uint_eq(pc_model_scan_length(m, 0), 2 * DIM);
    uint32_t idx[4];
    double w[4];
    ck_assert_uint_eq(pc_model_top_weights_slice(m, 0, 0, 2 * DIM, 4, idx, w, 0), 2);
    ck_assert_uint_eq(idx[0], 3);
    ck_assert_uint_eq(idx[1], DIM + 9);
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

START_TEST(refusals)
{
    pc_model *m = model("perceptron", PC_SCALE_MAX, PC_STORAGE_DENSE);
    pc_svec x;
    pc_svec_init(&x);
    svec_of(&x, 1, (const uint32_t[]){3}, (const double[]){2.5});
    ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = 1}, NULL, &(pc_error){{0}}), PC_OK);
    uint8_t *buf;
    size_t len;
    encode(m, &buf, &len);
    /* the scaler's array is the last thing written: its one entry, 2.5, is
     * the buffer's last 8 bytes */
    double v;
    memcpy(&v, buf + len - 8, 8);
    ck_assert_double_eq(v, 2.5);
    v = -2.5;
    memcpy(buf + len - 8, &v, 8);
    pc_model *back = NULL;
    pc_error err;
    ck_assert_int_eq(pc_model_decode(buf, len, &back, &err), PC_EFORMAT);
    ck_assert_msg(strstr(err.msg, "feature scales"), "%s", err.msg);
    free(buf);
    pc_model_free(m);
    pc_svec_free(&x);

    /* rms: the sums of squares, then the count of examples, last: a count that
     * is not whole, or no example for a sum of 6.25, is no stream's */
    m = model("pa", PC_SCALE_RMS, PC_STORAGE_DENSE);
    svec_of(&x, 1, (const uint32_t[]){3}, (const double[]){2.5});
    ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = 1}, NULL, &(pc_error){{0}}), PC_OK);
    encode(m, &buf, &len);
    memcpy(&v, buf + len - 16, 8);
    ck_assert_double_eq(v, 6.25);
    memcpy(&v, buf + len - 8, 8);
    ck_assert_double_eq(v, 1);
    ck_assert_int_eq(pc_model_decode(buf, len, &back, &err), PC_OK);
    pc_model_free(back);
    static const double bad_counts[] = {1.5, 0, -1};
    for (size_t k = 0; k < 3; k++) {
        memcpy(buf + len - 8, &bad_counts[k], 8);
        back = NULL;
        ck_assert_int_eq(pc_model_decode(buf, len, &back, &err), PC_EFORMAT);
        ck_assert_msg(strstr(err.msg, "feature scales"), "%s", err.msg);
    }
    free(buf);
    pc_model_free(m);
    pc_svec_free(&x);

    pc_model_config c;
    pc_model_config_default(&c, DIM);
    c.prep.scale = PC_SCALE_MAX;
    c.batch = true;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_EINVAL);
    ck_assert_msg(strstr(err.msg, "mode: batch"), "%s", err.msg);
    pc_model_config_default(&c, DIM);
    c.prep.ncrosses = 1;
    strcpy(c.prep.crosses[0].a, "a");
    strcpy(c.prep.crosses[0].b, "b");
    c.prep.max_crossed = 0;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_EINVAL);
    ck_assert_msg(strstr(err.msg, "max_crossed"), "%s", err.msg);
    pc_model_config_default(&c, DIM);
    c.prep.ntransforms = 1;
    c.prep.transforms[0] = transform("a:bins=1,2");
    c.prep.transforms[0].edges[1] = 0; /* not increasing */
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("prep");
    TU_TCASE(s, "prep", 0, texts_parse_format_and_refuse, name_step_transforms_by_pattern,
        name_step_crosses_pairs_and_bounds, scaler_max_and_std_by_hand, scaler_rms_by_hand,
        model_scales_and_snapshots_exactly, no_preparation_is_the_old_model,
        rangebins_learn_their_range, extreme_values_stay_finite, rms_sent_hashes_bins_apart,
        scaler_rms_sent_by_hand, rms_sent_model_spans_two_spaces, refusals);
    return tu_run(s);
}
