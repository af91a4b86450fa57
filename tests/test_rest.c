/* test_rest.c - the approximate LRU's choice (daemon/core/rest.c,
 * pcd_rest_pick), a pure function: which resident model goes to rest. */
#include <check.h>
#include <stdlib.h>

#include "daemon/core/rest.h"
#include "tests/testutil.h"

#define N 100

static pcd_model models[N];
static pcd_model *resident[N];

static void setup_models(void)
{
    for (size_t i = 0; i < N; i++) {
        models[i] = (pcd_model){.used = 1000 + i};
        resident[i] = &models[i];
    }
}

static bool odd(const pcd_model *e, const void *ud)
{
    (void)ud;
    return e->used % 2;
}

/* Up to PCD_REST_SAMPLES models: all are looked at, the exact LRU. */
START_TEST(few_models_give_the_exact_lru)
{
    setup_models();
    uint64_t rng = 1;
    models[3].used = 5;
    ck_assert_ptr_eq(pcd_rest_pick(resident, 4, PCD_REST_SAMPLES, &rng, NULL, NULL, NULL),
                     &models[3]);
    /* keep is never chosen, nor what skip refuses */
    ck_assert_ptr_eq(pcd_rest_pick(resident, 4, PCD_REST_SAMPLES, &rng, &models[3], NULL, NULL),
                     &models[0]);
    models[0].used = 1001; /* odd: skipped */
    ck_assert_ptr_eq(pcd_rest_pick(resident, 4, PCD_REST_SAMPLES, &rng, &models[3], odd, NULL),
                     &models[2]);
    ck_assert_ptr_null(pcd_rest_pick(resident, 1, PCD_REST_SAMPLES, &rng, &models[0], NULL, NULL));
    ck_assert_ptr_null(pcd_rest_pick(resident, 0, PCD_REST_SAMPLES, &rng, NULL, NULL, NULL));
}
END_TEST

/* Many: the choice is the least recently used of the sample, and over many
 * rounds it falls on old models far more often than on recent ones. */
START_TEST(many_models_sample_towards_the_least_recently_used)
{
    setup_models();
    uint64_t rng = 0x1234;
    unsigned old = 0, recent = 0;
    for (int round = 0; round < 10000; round++) {
        pcd_model *e = pcd_rest_pick(resident, N, PCD_REST_SAMPLES, &rng, NULL, NULL, NULL);
        ck_assert_ptr_nonnull(e);
        size_t i = (size_t)(e - models);
        old += i < N / 2;
        recent += i >= N / 2;
    }
    /* P(min of 5 uniform draws in the older half) = 1 - 2^-5 */
    ck_assert_uint_gt(old, 9 * recent);
    ck_assert_uint_ne(rng, 0x1234); /* the state moved on */
}
END_TEST

/* All but one model refused (a snapshot child saving the others): the
 * five samples rarely meet it, and before, the pick then gave none, which
 * under max_memory refused the client's write; now it is found every round,
 * and none only when no model qualifies. */
static bool not_42(const pcd_model *e, const void *ud)
{
    (void)ud;
    return e != &models[42];
}

START_TEST(a_model_is_found_when_every_sample_is_refused)
{
    setup_models();
    uint64_t rng = 7;
    for (int round = 0; round < 1000; round++)
        ck_assert_ptr_eq(pcd_rest_pick(resident, N, PCD_REST_SAMPLES, &rng, NULL, not_42, NULL),
                         &models[42]);
    ck_assert_ptr_null(pcd_rest_pick(resident, N, PCD_REST_SAMPLES, &rng, &models[42], not_42, NULL));
}
END_TEST

static Suite *rest_suite(void)
{
    Suite *s = suite_create("rest");
    TU_TCASE(s, "pick", 30, few_models_give_the_exact_lru,
             many_models_sample_towards_the_least_recently_used,
             a_model_is_found_when_every_sample_is_refused);
    return s;
}

int main(void)
{
    return tu_run(rest_suite());
}
