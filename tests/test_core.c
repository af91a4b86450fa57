/* test_core.c - sparse vectors, feature hashing, parameter tables, the
 * bounded byte reader. */
#include "tests/testutil.h"

#include <stdlib.h>

#include "lib/bytes.h"
#include "lib/rule.h"
#include "lib/wvec.h"

START_TEST(svec_normalize_merges_and_drops_zeros_in_order_given)
{
    pc_svec x;
    pc_svec_init(&x);
    pc_error err;
    pc_svec_push(&x, 5, 1.0);
    pc_svec_push(&x, 2, 3.0);
    pc_svec_push(&x, 5, 2.0);
    pc_svec_push(&x, 7, 0.0);
    pc_svec_push(&x, 1, 4.0);
    pc_svec_push(&x, 1, -4.0);
    ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_OK);
    ck_assert_int_eq(x.n, 2);
    /* first occurrences keep their places: 5 before 2 */
    ck_assert(x.idx[0] == 5 && x.val[0] == 3 && x.idx[1] == 2 && x.val[1] == 3);
    ck_assert(x.norm2 == 18);
    ck_assert(!pc_svec_is_sorted(&x));
    pc_svec_sort(&x);
    ck_assert(x.idx[0] == 2 && x.val[0] == 3 && x.idx[1] == 5 && x.val[1] == 3);
    ck_assert(pc_svec_is_sorted(&x));
    pc_svec_free(&x);
}
END_TEST

/* Up to 1024 entries the table merges; hashed indices collide in it (the same
 * slot for 0 and 2^26 with 64 slots), so probing must tell them apart. */
START_TEST(svec_normalize_merges_colliding_and_repeated_indices)
{
    pc_svec x;
    pc_svec_init(&x);
    pc_error err;
    for (uint32_t r = 0; r < 3; r++)
        for (uint32_t i = 0; i < 300; i++)
            pc_svec_push(&x, (i * 7919u) % 1000u << 16, 1.0 + r);
    ck_assert_int_eq(pc_svec_normalize(&x, 1u << 28, &err), PC_OK);
    ck_assert_int_eq(x.n, 300);
    for (uint32_t i = 0; i < 300; i++) {
        ck_assert_uint_eq(x.idx[i], (i * 7919u) % 1000u << 16);
        ck_assert(x.val[i] == 6.0);
    }
    ck_assert(x.norm2 == 10800.0);
    pc_svec_free(&x);
}
END_TEST

START_TEST(svec_normalize_sorts_long_vectors)
{
    pc_svec x;
    pc_svec_init(&x);
    pc_error err;
    for (uint32_t i = 0; i < 5000; i++)
        pc_svec_push(&x, (i * 7919u) % 5000u, 1.0);
    pc_svec_push(&x, 17, 2.0); /* a repeat: merged by sorting beyond 1024 entries */
    ck_assert_int_eq(pc_svec_normalize(&x, 5000, &err), PC_OK);
    ck_assert_int_eq(x.n, 5000);
    for (uint32_t i = 0; i < 5000; i++)
        ck_assert_uint_eq(x.idx[i], i);
    ck_assert(x.val[17] == 3.0);
    pc_svec_free(&x);
}
END_TEST

START_TEST(svec_normalize_rejects_bad_values)
{
    pc_svec x;
    pc_svec_init(&x);
    pc_error err;
    pc_svec_push(&x, 1, NAN);
    ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_EINVAL);
    ck_assert(strstr(err.msg, "finite") != NULL);
    pc_svec_clear(&x);
    pc_svec_push(&x, 1, INFINITY);
    ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_EINVAL);
    pc_svec_clear(&x);
    pc_svec_push(&x, 8, 1.0);
    ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_EINVAL);
    ck_assert(strstr(err.msg, "dimension") != NULL);
    pc_svec_clear(&x);
    pc_svec_push(&x, 0, 1e200);
    ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_EINVAL);
    ck_assert(strstr(err.msg, "too large") != NULL);
    pc_svec_clear(&x);
    pc_svec_push(&x, 3, PC_VALUE_MAX); /* the bound itself is a value */
    pc_svec_push(&x, 2, -PC_VALUE_MAX);
    ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_OK);
    pc_svec_clear(&x);
    pc_svec_push(&x, 3, nextafter(PC_VALUE_MAX, INFINITY));
    ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_EINVAL);
    pc_svec_clear(&x);
    pc_svec_push(&x, 5, PC_VALUE_MAX); /* duplicates whose sum is past the bound */
    pc_svec_push(&x, 1, 1.0);
    pc_svec_push(&x, 5, 1e19);
    ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_EINVAL);
    ck_assert_msg(strstr(err.msg, "feature 5 is given more than once") != NULL, "%s", err.msg);
    pc_svec_free(&x);
}
END_TEST

START_TEST(feature_hash_is_stable)
{
    /* Pinned values: XXH3_64bits("age") and ("") reduced by dim.  If these
     * change, every snapshot and every client-side index breaks. */
    ck_assert_uint_eq(pc_hash_feature("age", 3, 1u << 20), 323729u);
    ck_assert_uint_eq(pc_hash_feature("age", 3, 1000), 521u);
    ck_assert_uint_eq(pc_hash_feature("", 0, 1u << 28), 148083906u);
    ck_assert_uint_lt(pc_hash_feature("education", 9, 7), 7);
    ck_assert_uint_ne(pc_hash_feature("a", 1, 1u << 28), pc_hash_feature("b", 1, 1u << 28));
}
END_TEST

START_TEST(params_messages_name_the_parameter)
{
    const pc_rule *r = pc_rule_find("perceptron");
    pc_params p;
    pc_error err;
    pc_params_default(r, &p);
    ck_assert(p.val[0].v[0] == 1);
    ck_assert_int_eq(pc_params_set(r, &p, "eta", (double[]){0}, 1, &err), PC_EINVAL);
    ck_assert(strstr(err.msg, "eta") && strstr(err.msg, "range"));
    ck_assert_int_eq(pc_params_set(r, &p, "eta", (double[]){1, 2}, 2, &err), PC_EINVAL);
    ck_assert_int_eq(pc_params_set(r, &p, "etta", (double[]){1}, 1, &err), PC_ENOTFOUND);
    ck_assert(strstr(err.msg, "eta") != NULL); /* lists what it takes */
    ck_assert_int_eq(pc_params_set(r, &p, "eta", (double[]){0.25}, 1, &err), PC_OK);
    ck_assert(p.val[0].v[0] == 0.25);
}
END_TEST

START_TEST(reader_never_trusts_a_length)
{
    pc_writer w = {0};
    pc_writer_u32(&w, 0xffffffffu); /* a string claiming 4 GiB */
    pc_writer_u8(&w, 'x');
    pc_reader r = {.p = w.buf, .left = w.len};
    ck_assert(pc_reader_str(&r, SIZE_MAX) == NULL && r.failed);
    pc_reader r2 = {.p = w.buf, .left = w.len};
    ck_assert(!pc_reader_need(&r2, (uint64_t)1 << 62, 24) && r2.failed);
    /* A sparse array whose count exceeds its dimension is refused. */
    pc_writer w2 = {0};
    pc_writer_u8(&w2, 1);
    pc_writer_u32(&w2, 5);
    pc_reader r3 = {.p = w2.buf, .left = w2.len};
    double a[2];
    ck_assert(!pc_reader_f64_array(&r3, a, 2));
    free(w.buf);
    free(w2.buf);
}
END_TEST

START_TEST(f64_arrays_round_trip_dense_and_sparse)
{
    double dense[4] = {1, -0.0, 3, 4}, sparse[100] = {0}, back[100];
    sparse[17] = -2.5;
    sparse[99] = 1e-300;
    pc_writer w = {0};
    pc_writer_f64_array(&w, dense, 4);
    pc_writer_f64_array(&w, sparse, 100);
    ck_assert(!w.failed && w.len < 4 * 8 + 100 * 8);
    pc_reader r = {.p = w.buf, .left = w.len};
    ck_assert(pc_reader_f64_array(&r, back, 4));
    ck_assert(memcmp(back, dense, sizeof dense) == 0);
    ck_assert(pc_reader_f64_array(&r, back, 100));
    ck_assert(memcmp(back, sparse, sizeof sparse) == 0 && r.left == 0);
    free(w.buf);
}
END_TEST

static void add_pairs(pc_wvec *w, double alpha, const uint32_t *idx, const double *val, uint32_t n)
{
    pc_svec x;
    pc_svec_init(&x);
    for (uint32_t k = 0; k < n; k++)
        pc_svec_push(&x, idx[k], val[k]);
    ck_assert_int_eq(pc_svec_normalize(&x, w->dim, NULL), PC_OK);
    pc_wvec_add(w, alpha, &x);
    pc_svec_free(&x);
}

static void assert_all_zero(const pc_wvec *w)
{
    for (uint32_t i = 0; i < w->dim; i++) {
        ck_assert_msg(w->s.v[i] == 0, "v[%u] = %g after a reset", i, w->s.v[i]);
        if (w->s.avg)
            ck_assert_msg(w->s.avg[i] == 0, "avg[%u] = %g after a reset", i, w->s.avg[i]);
    }
    ck_assert(w->norm2 == 0 && w->scale == 1);
}

/* A tracked vector's reset clears exactly what the adds touched: entries
 * that went back to 0 and were touched again, the averages, and, once the
 * list would pass dim entries or v came from a snapshot, everything. */
START_TEST(wvec_tracked_reset_clears_what_was_touched)
{
    pc_wvec w;
    pc_rule_ctx ctx = {.dim = 1000, .storage = PC_STORAGE_DENSE};
    ck_assert_int_eq(pc_wvec_init(&w, &ctx, true), PC_OK);
    pc_wvec_track_support(&w);
    w.tick = 3;
    static const uint32_t a[] = {3, 7}, b[] = {7, 500};
    static const double one[] = {1, 1}, minus[] = {-1, 2};
    add_pairs(&w, 1, a, one, 2);
    add_pairs(&w, 1, b, minus, 2);   /* v[7] back to 0 */
    add_pairs(&w, 2, b, one, 2);     /* and touched again: listed twice */
    ck_assert(w.s.v[7] == 2 && w.s.v[500] == 4 && w.s.avg[3] != 0);
    ck_assert_uint_eq(w.nsupport, 4);
    pc_wvec_zero(&w);
    assert_all_zero(&w);
    ck_assert_uint_eq(w.nsupport, 0);
    add_pairs(&w, 1, b, one, 2);     /* still tracked after a reset */
    ck_assert_uint_eq(w.nsupport, 2);
    pc_wvec_zero(&w);
    assert_all_zero(&w);

    /* More touches than dim: the list is dropped and the reset clears all. */
    uint32_t idx[1];
    double v1[1] = {1};
    for (uint32_t r = 0; r < 5; r++) /* 334 entries touched afresh 3 times */
        for (uint32_t i = 0; i < 1000; i += 3) {
            idx[0] = i;
            add_pairs(&w, r % 2 ? -1 : 1, idx, v1, 1);
        }
    ck_assert(w.support_lost);
    ck_assert(w.s.v[0] == 1);
    pc_wvec_zero(&w);
    assert_all_zero(&w);
    ck_assert(!w.support_lost);

    /* From a snapshot, where v is non-zero is unknown. */
    add_pairs(&w, 1, a, one, 2);
    pc_writer wr = {0};
    pc_wvec_encode(&w, &wr);
    pc_wvec_zero(&w);
    pc_reader rd = {.p = wr.buf, .left = wr.len};
    ck_assert(pc_wvec_decode(&w, &rd));
    ck_assert(w.s.v[3] == 1 && w.support_lost);
    pc_wvec_zero(&w);
    assert_all_zero(&w);
    free(wr.buf);
    pc_wvec_free(&w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core");
    TU_TCASE(s, "core", 0, svec_normalize_merges_and_drops_zeros_in_order_given,
        svec_normalize_merges_colliding_and_repeated_indices, svec_normalize_sorts_long_vectors,
        wvec_tracked_reset_clears_what_was_touched, svec_normalize_rejects_bad_values,
        feature_hash_is_stable, params_messages_name_the_parameter, reader_never_trusts_a_length,
        f64_arrays_round_trip_dense_and_sparse);
    return tu_run(s);
}
