/* testutil.h - small helpers shared by the Check suites. */
#ifndef PC_TESTUTIL_H
#define PC_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/perceptron.h"

/* Marsaglia's xorshift64: the suites' deterministic random numbers (no libc
 * rand state), from a state each keeps. */
static inline uint64_t tu_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* pc_svec_normalize for the tests of the rules' numerics, which also use
 * values beyond PC_VALUE_MAX: no input reaches such scales any more, but a
 * model loaded from a snapshot can hold weights at them, and the rules must
 * stay finite there too.  Within the bound it is pc_svec_normalize; beyond
 * it, the values are normalized scaled down by a power of two (exact) and
 * scaled back, so the result is what pc_svec_normalize gave before the bound. */
static inline pc_status tu_normalize(pc_svec *x, uint32_t dim, pc_error *err)
{
    double big = 0;
    for (uint32_t k = 0; k < x->n; k++)
        big = fmax(big, fabs(x->val[k]));
    if (!(big > PC_VALUE_MAX) || !isfinite(big))
        return pc_svec_normalize(x, dim, err);
    int e = ilogb(big);
    for (uint32_t k = 0; k < x->n; k++)
        x->val[k] = ldexp(x->val[k], -e);
    pc_status st = pc_svec_normalize(x, dim, err);
    if (st != PC_OK)
        return st;
    double n2 = 0;
    for (uint32_t k = 0; k < x->n; k++) {
        x->val[k] = ldexp(x->val[k], e);
        n2 += x->val[k] * x->val[k];
    }
    x->norm2 = n2;
    return isfinite(n2) ? PC_OK : PC_EINVAL;
}

/* Builds a normalized dense-style example: x = (v[0], ..., v[n-1]). */
static inline void tu_dense(pc_svec *x, uint32_t dim, size_t n, const double *v)
{
    pc_error err;
    pc_svec_clear(x);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(pc_svec_push(x, (uint32_t)i, v[i]), PC_OK);
    ck_assert_int_eq(tu_normalize(x, dim, &err), PC_OK);
}

/* One parameter set by name (tu_model_with): n values (n > 1: a list). */
typedef struct tu_param {
    const char *name;
    size_t n;
    double v[4];
} tu_param;

/* A binary model of rule `rule` with dim and bias, its np parameters ps set
 * by name, the others at their defaults. */
static inline pc_model *tu_model_with(const char *rule, uint32_t dim, bool bias, int np,
                                      const tu_param *ps)
{
    pc_model_config c;
    pc_model_config_default(&c, dim);
    c.rule = pc_rule_find(rule);
    ck_assert_msg(c.rule != NULL, "rule %s is not registered", rule);
    pc_params_default(c.rule, &c.params);
    c.bias = bias;
    pc_error err = {{0}};
    for (int i = 0; i < np; i++)
        ck_assert_msg(pc_params_set(c.rule, &c.params, ps[i].name, ps[i].v, ps[i].n, &err) == PC_OK,
                      "%s", err.msg);
    pc_model *m = NULL;
    pc_status st = pc_model_new(&c, &m, &err);
    ck_assert_msg(st == PC_OK, "pc_model_new(%s): %s", rule, err.msg);
    return m;
}

/* A binary model of rule `rule` with dim and bias; params at their defaults. */
static inline pc_model *tu_model(const char *rule, uint32_t dim, bool bias)
{
    return tu_model_with(rule, dim, bias, 0, NULL);
}

/* Like tu_model with one parameter overridden. */
static inline pc_model *tu_model_p(const char *rule, uint32_t dim, bool bias, const char *param,
                                   double value)
{
    return tu_model_with(rule, dim, bias, 1, &(tu_param){param, 1, {value}});
}

/* Labels a dense example on a binary model and returns the outcome. */
static inline pc_outcome tu_label(pc_model *m, size_t n, const double *v, int y)
{
    pc_svec x;
    pc_svec_init(&x);
    tu_dense(&x, pc_model_config_of(m)->dim, n, v);
    pc_label l = {.y = y};
    pc_outcome o;
    pc_error err = {{0}};
    ck_assert_msg(pc_model_label(m, &x, &l, &o, &err) == PC_OK, "%s", err.msg);
    pc_svec_free(&x);
    return o;
}

static inline double tu_score(pc_model *m, size_t n, const double *v)
{
    pc_svec x;
    pc_svec_init(&x);
    tu_dense(&x, pc_model_config_of(m)->dim, n, v);
    pc_prediction p;
    pc_model_predict(m, &x, &p, NULL);
    pc_svec_free(&x);
    return p.score;
}

/* m's snapshot bytes load: PC_OK, or the decoder's status with its message
 * in err (for the caller's assertion, which says what m went through). */
static inline pc_status tu_snapshot_loads(const pc_model *m, pc_error *err)
{
    uint8_t *buf;
    size_t len;
    ck_assert_msg(pc_model_encode(m, &buf, &len, err) == PC_OK, "encode: %s", err->msg);
    pc_model *back = NULL;
    pc_status st = pc_model_decode(buf, len, &back, err);
    pc_model_free(back);
    free(buf);
    return st;
}

/* Runs a suite and returns the process exit status. */
static inline int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/* A test case `name` of suite s holding the tests listed (the names
 * START_TEST defines), in order, with a timeout in seconds when timeout > 0
 * (else Check's default); returns it for a fixture or loop tests. */
static inline TCase *tu_tcase(Suite *s, const char *name, double timeout,
                              const TTest *const *tests)
{
    TCase *tc = tcase_create(name);
    if (timeout > 0)
        tcase_set_timeout(tc, timeout);
    for (; *tests; tests++)
        tcase_add_test(tc, *tests);
    suite_add_tcase(s, tc);
    return tc;
}
#define TU_TCASE(s, name, timeout, ...)                                                            \
    tu_tcase((s), (name), (timeout), (const TTest *const[]){__VA_ARGS__, NULL})

#define TU_EPS 1e-12
#define tu_near(a, b) ck_assert_double_eq_tol((a), (b), TU_EPS * (1 + fabs((double)(b))))

#endif
