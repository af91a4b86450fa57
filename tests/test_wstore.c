/* test_wstore.c - the weight storage (lib/wstore.c) and the weight vector
 * over it (lib/wvec.c): the sparse table grows, survives collisions, clears
 * and shrinks, turns dense under auto at its documented threshold, encodes
 * to the dense array's bytes and decodes back, and a wvec on it computes
 * bit-identically to a dense one through renormalisation and ldexp. */
#include "tests/testutil.h"

#include <float.h>

#include <math.h>
#include <stdlib.h>

#include "lib/bytes.h"
#include "lib/rule.h"
#include "lib/wstore.h"
#include "lib/wvec.h"

/* Indices that share the home group of `first` in a table of 2^bits slots
 * (2^(bits - 2) groups of 4). */
static uint32_t same_home(uint32_t first, unsigned bits, uint32_t dim, uint32_t *out, uint32_t n)
{
    pc_wstore t = {.shift = 32 - (bits - 2)};
    uint32_t h = pc_wstore_home(&t, first), c = 0;
    for (uint32_t i = 0; i < dim && c < n; i++)
        if (pc_wstore_home(&t, i) == h)
            out[c++] = i;
    return c;
}

START_TEST(table_grows_and_keeps_every_entry)
{
    pc_wstore s;
    ck_assert_int_eq(pc_wstore_init(&s, 1u << 20, PC_STORAGE_SPARSE, PC_WEIGHTS_FLOAT64, true), PC_OK);
    ck_assert_ptr_null(s.v);
    ck_assert_uint_eq(s.cap, 16);
    uint64_t rng = 7;
    uint32_t keys[5000];
    for (uint32_t k = 0; k < 5000; k++) {
        keys[k] = (uint32_t)(tu_xorshift(&rng) % (1u << 20));
        ck_assert(pc_wstore_reserve(&s, 1));
        *pc_wstore_ref(&s, keys[k]) += k + 1;
        s.savg[pc_wstore_slot(&s, keys[k])] -= 1;
        ck_assert(s.count * 4 <= s.cap * 3); /* never past 3/4 full */
    }
    ck_assert_uint_le(s.count, 5000);
    ck_assert_uint_eq(s.cap, 8192); /* 5000 entries: the smallest power of two at <= 3/4 */
    ck_assert_uint_eq(pc_wstore_bytes(&s), 8192 * (16 + 8));
    /* Every key holds the sum of what was added to it (repeats included). */
    double *want = calloc(1u << 20, sizeof *want);
    for (uint32_t k = 0; k < 5000; k++)
        want[keys[k]] += k + 1;
    for (uint32_t k = 0; k < 5000; k++)
        ck_assert(pc_wstore_get(&s, keys[k]) == want[keys[k]]);
    ck_assert(pc_wstore_get(&s, 1u << 19) == want[1u << 19]);
    free(want);
    pc_wstore_free(&s);
}
END_TEST

START_TEST(collisions_probe_past_each_other)
{
    pc_wstore s;
    ck_assert_int_eq(pc_wstore_init(&s, 1u << 16, PC_STORAGE_SPARSE, PC_WEIGHTS_FLOAT64, false), PC_OK);
    uint32_t same[8];
    ck_assert_uint_eq(same_home(5, 4, 1u << 16, same, 8), 8); /* 8 keys, one home of 4 groups */
    ck_assert(pc_wstore_reserve(&s, 8)); /* 8 fit in 16 at 3/4: no growth, all collide */
    ck_assert_uint_eq(s.cap, 16);
    for (int k = 0; k < 8; k++)
        *pc_wstore_ref(&s, same[k]) = k + 0.5;
    /* The first 4 fill their home group, the next 4 the group after it. */
    uint32_t home = pc_wstore_home(&s, same[0]);
    for (int k = 0; k < 8; k++)
        ck_assert_uint_eq(pc_wstore_find(&s, same[k]), ((home + (uint32_t)k / 4) % 4) * 4 + (uint32_t)k % 4);
    for (int k = 0; k < 8; k++)
        ck_assert(pc_wstore_get(&s, same[k]) == k + 0.5);
    /* An absent key of the same home is found absent after the run of 8. */
    uint32_t more[9];
    same_home(5, 4, 1u << 16, more, 9);
    ck_assert(pc_wstore_get(&s, more[8]) == 0);
    ck_assert_uint_eq(pc_wstore_find(&s, more[8]), PC_WSTORE_EMPTY);
    /* Absent reads +0 (as a dense array's untouched entry), even beside -0s:
     * the sign of a zero reaches a dot product that sums to zero. */
    for (int k = 0; k < 8; k++)
        *pc_wstore_ref(&s, same[k]) = -0.0;
    ck_assert(!signbit(pc_wstore_get(&s, more[8])));
    ck_assert(signbit(pc_wstore_get(&s, same[7])));
    uint32_t absent = UINT32_MAX; /* an absent index whose home group has room */
    for (uint32_t i = 0; i < (1u << 16) && absent == UINT32_MAX; i++)
        if (pc_wstore_home(&s, i) != home && pc_wstore_home(&s, i) != (home + 1) % 4)
            absent = i;
    ck_assert_uint_ne(absent, UINT32_MAX);
    ck_assert(pc_wstore_get(&s, absent) == 0 && !signbit(pc_wstore_get(&s, absent)));
    /* The probe wraps around the table's end: 6 keys of the last group. */
    uint32_t last[6];
    pc_wstore t = {.shift = 30}; /* 4 groups */
    uint32_t c = 0;
    for (uint32_t i = 0; i < (1u << 16) && c < 6; i++)
        if (pc_wstore_home(&t, i) == 3)
            last[c++] = i;
    ck_assert_uint_eq(c, 6);
    pc_wstore_clear(&s);
    for (int k = 0; k < 6; k++)
        *pc_wstore_ref(&s, last[k]) = -k - 1;
    ck_assert_uint_eq(pc_wstore_find(&s, last[5]), 1); /* slots 12..15, then 0, 1 */
    for (int k = 0; k < 6; k++)
        ck_assert(pc_wstore_get(&s, last[k]) == -k - 1);
    pc_wstore_free(&s);
}
END_TEST

START_TEST(clear_empties_and_shrinks_a_large_table)
{
    pc_wstore s;
    ck_assert_int_eq(pc_wstore_init(&s, 1u << 20, PC_STORAGE_SPARSE, PC_WEIGHTS_FLOAT64, true), PC_OK);
    ck_assert(pc_wstore_reserve(&s, 1000));
    for (uint32_t i = 0; i < 1000; i++)
        *pc_wstore_ref(&s, i * 7) = 1;
    uint32_t big = s.cap;
    pc_wstore_clear(&s); /* held 1000 of 2048 since the last clear: keeps its size */
    ck_assert_uint_eq(s.cap, big);
    ck_assert_uint_eq(s.count, 0);
    for (uint32_t i = 0; i < 1000; i++)
        ck_assert(pc_wstore_get(&s, i * 7) == 0 && pc_wstore_get_avg(&s, i * 7) == 0);
    ck_assert(pc_wstore_reserve(&s, 3));
    for (uint32_t i = 0; i < 3; i++)
        *pc_wstore_ref(&s, i) = 2;
    pc_wstore_clear(&s); /* 3 of 2048: starts small again */
    ck_assert_uint_eq(s.cap, 16);
    ck_assert(pc_wstore_get(&s, 1) == 0);
    pc_wstore_free(&s);
}
END_TEST

START_TEST(auto_turns_dense_when_the_table_would_outgrow_the_array)
{
    /* dim 4096: the dense array is 32 KiB; a table of 2048 slots is 32 KiB,
     * so the table stops at 1024 slots and the 769th entry turns it dense. */
    pc_wstore s;
    ck_assert_int_eq(pc_wstore_init(&s, 4096, PC_STORAGE_AUTO, PC_WEIGHTS_FLOAT64, false), PC_OK);
    for (uint32_t i = 0; i < 768; i++) {
        ck_assert(pc_wstore_reserve(&s, 1));
        *pc_wstore_ref(&s, i * 5) = i + 1;
    }
    ck_assert_ptr_null(s.v);
    ck_assert_uint_eq(s.cap, 1024);
    ck_assert(pc_wstore_reserve(&s, 1));
    ck_assert_ptr_nonnull(s.v);
    ck_assert_uint_eq(pc_wstore_bytes(&s), 4096 * 8);
    for (uint32_t i = 0; i < 768; i++)
        ck_assert(s.v[i * 5] == i + 1 && pc_wstore_get(&s, i * 5) == i + 1);
    ck_assert(s.v[1] == 0);
    pc_wstore_clear(&s); /* one way: stays dense */
    ck_assert_ptr_nonnull(s.v);
    pc_wstore_free(&s);
}
END_TEST

/* The same values in a dense and a sparse store encode to the same bytes, in
 * both of pc_writer_f64_array's forms, and decode back into either storage. */
static void encode_both(uint32_t dim, uint32_t nnz)
{
    pc_wstore d, s;
    ck_assert_int_eq(pc_wstore_init(&d, dim, PC_STORAGE_DENSE, PC_WEIGHTS_FLOAT64, true), PC_OK);
    ck_assert_int_eq(pc_wstore_init(&s, dim, PC_STORAGE_SPARSE, PC_WEIGHTS_FLOAT64, true), PC_OK);
    uint64_t rng = 99;
    for (uint32_t k = 0; k < nnz; k++) {
        uint32_t i = (uint32_t)(tu_xorshift(&rng) % dim);
        double v = k % 5 == 0 ? -0.0 : (double)(tu_xorshift(&rng) % 1000) - 500;
        ck_assert(pc_wstore_reserve(&s, 1));
        *pc_wstore_ref(&d, i) = v;
        *pc_wstore_ref(&s, i) = v;
        d.avg[i] = v / 3;
        s.savg[pc_wstore_slot(&s, i)] = v / 3;
    }
    pc_writer wd = {0}, ws = {0};
    for (int a = 0; a < 2; a++) {
        pc_wstore_encode(&d, a, &wd);
        pc_wstore_encode(&s, a, &ws);
    }
    ck_assert(!wd.failed && !ws.failed);
    ck_assert_uint_eq(wd.len, ws.len);
    ck_assert(memcmp(wd.buf, ws.buf, wd.len) == 0);
    for (int k = 0; k < 3; k++) {
        pc_storage kind = (pc_storage)k;
        pc_wstore back;
        ck_assert_int_eq(pc_wstore_init(&back, dim, kind, PC_WEIGHTS_FLOAT64, true), PC_OK);
        pc_reader r = {.p = ws.buf, .left = ws.len};
        ck_assert(pc_wstore_decode(&back, false, &r) && pc_wstore_decode(&back, true, &r));
        ck_assert_uint_eq(r.left, 0);
        for (uint32_t i = 0; i < dim; i++) {
            double a = pc_wstore_get(&back, i), b = d.v[i];
            ck_assert(memcmp(&a, &b, 8) == 0 || (a == 0 && b == 0 && !signbit(b)));
            ck_assert(pc_wstore_get_avg(&back, i) == d.avg[i]);
        }
        pc_writer w2 = {0};
        pc_wstore_encode(&back, false, &w2);
        pc_wstore_encode(&back, true, &w2);
        ck_assert(w2.len == ws.len && memcmp(w2.buf, ws.buf, ws.len) == 0);
        free(w2.buf);
        pc_wstore_free(&back);
    }
    free(wd.buf);
    free(ws.buf);
    pc_wstore_free(&d);
    pc_wstore_free(&s);
}

START_TEST(encoding_is_the_dense_arrays_bytes_and_round_trips)
{
    encode_both(1u << 16, 300);  /* the sparse form: index/value pairs */
    encode_both(64, 200);        /* the dense form: 64 doubles */
}
END_TEST

typedef struct seen {
    uint32_t n, last;
    bool ascending;
} seen;

static void note_index(void *arg, uint32_t i, double v)
{
    seen *o = arg;
    ck_assert(v != 0);
    o->ascending &= o->n == 0 || i > o->last;
    o->last = i;
    o->n++;
}

/* A sparse table visits (and so encodes) its indices in ascending order,
 * whichever of their four bytes differ: none, one key, keys that differ in
 * the low byte only, in the high byte only, and over the whole 32 bits. */
START_TEST(a_table_visits_its_indices_in_ascending_order)
{
    static const struct { uint32_t n, mask, fixed; } cases[] = {
        {0, 0, 0}, {1, 0xffffffffu, 0}, {200, 0xffu, 0x12345600u},
        {200, 0xff000000u, 0x00abcdefu}, {5000, 0xffffffffu, 0}, {3, 0x3u, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        pc_wstore s;
        ck_assert_int_eq(pc_wstore_init(&s, UINT32_MAX, PC_STORAGE_SPARSE, PC_WEIGHTS_FLOAT64, false),
                         PC_OK);
        uint64_t rng = 7 + c;
        for (uint32_t k = 0; k < cases[c].n; k++) {
            uint32_t i = (((uint32_t)tu_xorshift(&rng) & cases[c].mask) | cases[c].fixed) %
                         UINT32_MAX;
            ck_assert(pc_wstore_reserve(&s, 1));
            *pc_wstore_ref(&s, i) = 1 + k;
        }
        seen o = {0, 0, true};
        ck_assert(pc_wstore_visit(&s, note_index, &o));
        ck_assert_msg(o.ascending, "case %zu: indices out of order", c);
        ck_assert_uint_eq(o.n, s.count);
        pc_wstore_free(&s);
    }
}
END_TEST

START_TEST(decode_rejects_bad_entries)
{
    pc_wstore s;
    ck_assert_int_eq(pc_wstore_init(&s, 100, PC_STORAGE_SPARSE, PC_WEIGHTS_FLOAT64, false), PC_OK);
    /* sparse form: 2 entries, indices not increasing */
    uint8_t b[1 + 4 + 2 * 12];
    b[0] = 1;
    pc_put_u32(b + 1, 2);
    double one = 1;
    uint64_t u;
    memcpy(&u, &one, 8);
    pc_put_u32(b + 5, 9);
    pc_put_u64(b + 9, u);
    pc_put_u32(b + 17, 3);
    pc_put_u64(b + 21, u);
    pc_reader r = {.p = b, .left = sizeof b};
    ck_assert(!pc_wstore_decode(&s, false, &r));
    pc_put_u32(b + 17, 100); /* out of range */
    r = (pc_reader){.p = b, .left = sizeof b};
    ck_assert(!pc_wstore_decode(&s, false, &r));
    pc_put_u32(b + 17, 10); /* fine */
    pc_wstore_clear(&s);
    r = (pc_reader){.p = b, .left = sizeof b};
    ck_assert(pc_wstore_decode(&s, false, &r));
    ck_assert(pc_wstore_get(&s, 9) == 1 && pc_wstore_get(&s, 10) == 1 && s.count == 2);
    pc_wstore_free(&s);
}
END_TEST

static void add1(pc_wvec *w, double alpha, uint32_t i, double v)
{
    pc_svec x;
    pc_error err;
    pc_svec_init(&x);
    pc_svec_push(&x, i, v);
    ck_assert_int_eq(pc_svec_normalize(&x, w->dim, &err), PC_OK);
    pc_wvec_add(w, alpha, &x);
    pc_svec_free(&x);
}

/* Renormalisation (the scale folded into the entries) and ldexp run on the
 * table's entries exactly as on the array's. */
START_TEST(wvec_renormalises_and_rescales_the_same_in_both)
{
    pc_wvec w[2];
    for (int k = 0; k < 2; k++) {
        pc_rule_ctx ctx = {.dim = 1u << 12, .storage = k ? PC_STORAGE_SPARSE : PC_STORAGE_DENSE};
        ck_assert_int_eq(pc_wvec_init(&w[k], &ctx, true), PC_OK);
        w[k].tick = 1;
    }
    uint64_t rng = 3;
    for (int t = 0; t < 3000; t++) {
        uint32_t i = (uint32_t)(tu_xorshift(&rng) % 4096);
        double v = (double)(tu_xorshift(&rng) % 2001) / 1000 - 1, c = 1e-7 * (1 + t % 3);
        for (int k = 0; k < 2; k++) {
            add1(&w[k], 0.3, i, v);
            pc_wvec_scale(&w[k], t % 50 == 49 ? 1 / c : c); /* crosses 1e-120 often */
            w[k].tick++;
            if (t % 700 == 0)
                pc_wvec_ldexp(&w[k], t % 1400 ? 3 : -2);
        }
        ck_assert(memcmp(&w[0].scale, &w[1].scale, 8) == 0);
        ck_assert(memcmp(&w[0].norm2, &w[1].norm2, 8) == 0);
    }
    ck_assert(w[0].scale != 1e-7); /* it did fold: the scale was reset to 1 on the way */
    for (uint32_t i = 0; i < 4096; i++) {
        double a = pc_wvec_get(&w[0], i), b = pc_wvec_get(&w[1], i);
        double ga = pc_wvec_get_avg(&w[0], i), gb = pc_wvec_get_avg(&w[1], i);
        ck_assert(memcmp(&a, &b, 8) == 0 && memcmp(&ga, &gb, 8) == 0);
    }
    /* A reset empties both; the sparse one keeps only what is added after. */
    pc_wvec_zero(&w[0]);
    pc_wvec_zero(&w[1]);
    add1(&w[1], 1, 42, 1);
    ck_assert_uint_eq(w[1].s.count, 1);
    ck_assert(pc_wvec_get(&w[1], 42) == 1 && pc_wvec_get(&w[1], 41) == 0);
    for (int k = 0; k < 2; k++)
        pc_wvec_free(&w[k]);
}
END_TEST

static bool wvec_loads(const pc_wvec *w, const pc_rule_ctx *ctx)
{
    pc_writer wr = {0};
    pc_wvec_encode(w, &wr);
    ck_assert(!wr.failed);
    pc_wvec back;
    ck_assert_int_eq(pc_wvec_init(&back, ctx, false), PC_OK);
    pc_reader r = {.p = wr.buf, .left = wr.len};
    bool ok = pc_wvec_decode(&back, &r);
    ck_assert(!ok || memcmp(&back.scale, &w->scale, 8) == 0);
    pc_wvec_free(&back);
    free(wr.buf);
    return ok;
}

/* The decoder takes every scale pc_wvec_scale leaves (1, or within the fold
 * range: 1e+-120, float32 2^+-40) and refuses others: a subnormal scale
 * (fuzzed, an alma model's) made the next add divide into infinity. */
START_TEST(wvec_decode_takes_the_scales_its_folds_leave)
{
    for (int k = 0; k < 2; k++) {
        pc_rule_ctx ctx = {.dim = 8, .storage = PC_STORAGE_DENSE,
                           .weights = k ? PC_WEIGHTS_FLOAT32 : PC_WEIGHTS_FLOAT64};
        pc_wvec w;
        ck_assert_int_eq(pc_wvec_init(&w, &ctx, false), PC_OK);
        ck_assert(wvec_loads(&w, &ctx));
        uint64_t rng = 11;
        double lo = 1, hi = 1;
        for (int t = 0; t < 5000; t++) {
            add1(&w, 0.5, (uint32_t)(tu_xorshift(&rng) % 8), 1);
            double e = (double)(tu_xorshift(&rng) % 61) - 30; /* 1e-30 .. 1e30 */
            pc_wvec_scale(&w, (tu_xorshift(&rng) % 2 ? -1 : 1) * pow(10, e));
            lo = fmin(lo, fabs(w.scale)), hi = fmax(hi, fabs(w.scale));
            /* the walk of scales takes w anywhere; the decoder also holds
             * ||w||^2 to the double's range (the bound every add keeps) */
            double n2 = 0;
            for (uint32_t i = 0; i < 8; i++)
                n2 += pc_wvec_get(&w, i) * pc_wvec_get(&w, i);
            ck_assert_msg(wvec_loads(&w, &ctx) == (n2 <= DBL_MAX), "scale %g after %d", w.scale, t);
        }
        ck_assert(lo < (k ? 0x1p-20 : 1e-60) && hi > (k ? 0x1p20 : 1e60)); /* it went far */
        static const double bad[] = {1e-200, 4.9e-324, -1e-130, 1e125, -INFINITY, NAN, 0};
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            w.scale = bad[i];
            ck_assert_msg(!wvec_loads(&w, &ctx), "scale %g", bad[i]);
        }
        pc_wvec_zero(&w);
        add1(&w, 0.5, 0, 1);
        w.scale = 1e100; /* within float64's range, past float32's */
        ck_assert(wvec_loads(&w, &ctx) == !k);
        w.scale = 1;
        pc_wvec_free(&w);
    }
}
END_TEST

/* A weight past the bound every add keeps (||w||^2 within the double's
 * range) is refused whatever else the bytes say, in every storage, plain
 * and averaged, naming it (issue 29: "norm": null from a snapshot). */
START_TEST(wvec_decode_refuses_weights_past_the_bound)
{
    for (int k = 0; k < 2; k++) {
        for (int avg = 0; avg < 2; avg++) {
            pc_rule_ctx ctx = {.dim = 8, .storage = k ? PC_STORAGE_SPARSE : PC_STORAGE_DENSE};
            pc_wvec w;
            ck_assert_int_eq(pc_wvec_init(&w, &ctx, avg), PC_OK);
            add1(&w, 1e150, 2, 1);
            add1(&w, 1e150, 3, 1); /* 2e300: within */
            w.tick = avg ? 1 : 0;
            pc_writer wr = {0};
            pc_wvec_encode(&w, &wr);
            pc_wvec back;
            ck_assert_int_eq(pc_wvec_init(&back, &ctx, avg), PC_OK);
            pc_reader r = {.p = wr.buf, .left = wr.len};
            ck_assert(pc_wvec_decode(&back, &r));
            pc_wvec_free(&back);
            /* 1e150 -> 1e200: its square is past the double's range */
            double big = 1e150, huge = 1e200;
            size_t at = wr.len;
            for (size_t i = 0; i + 8 <= wr.len && at == wr.len; i++)
                if (memcmp(wr.buf + i, &big, 8) == 0)
                    at = i;
            ck_assert(at < wr.len);
            memcpy(wr.buf + at, &huge, 8);
            ck_assert_int_eq(pc_wvec_init(&back, &ctx, avg), PC_OK);
            r = (pc_reader){.p = wr.buf, .left = wr.len};
            ck_assert(!pc_wvec_decode(&back, &r));
            ck_assert_msg(r.why && strstr(r.why, "past the bound"), "%s", r.why ? r.why : "-");
            pc_wvec_free(&back);
            free(wr.buf);
            pc_wvec_free(&w);
        }
    }
}
END_TEST

/* An add that would take w or its norm past the double's range is skipped
 * and counted, in every storage; one whose alpha^2 alone overflows but
 * whose step does not (1e160 on a value of 1e-160) is taken. */
START_TEST(wvec_skips_an_add_past_the_doubles_range)
{
    for (int k = 0; k < 2; k++) {
        pc_rule_ctx ctx = {.dim = 8, .storage = k ? PC_STORAGE_SPARSE : PC_STORAGE_DENSE};
        pc_wvec w;
        ck_assert_int_eq(pc_wvec_init(&w, &ctx, false), PC_OK);
        add1(&w, 1, 0, 1);
        add1(&w, 1e300, 1, 1e-160); /* ||alpha x|| = 1e140: taken */
        ck_assert_uint_eq(w.overflowed, 0);
        ck_assert(pc_wvec_get(&w, 1) == 1e300 * 1e-160 && isfinite(w.norm2));
        double n2 = w.norm2;
        add1(&w, 1e300, 2, 1e-100); /* ||alpha x|| = 1e200: skipped */
        add1(&w, 1e170, 3, 1); /* 1e170: skipped */
        ck_assert_uint_eq(w.overflowed, 2);
        ck_assert(pc_wvec_get(&w, 2) == 0 && pc_wvec_get(&w, 3) == 0 && w.norm2 == n2);
        pc_wvec_free(&w);
    }
}
END_TEST

/* A model's reported bytes follow what it has seen when sparse. */
START_TEST(model_bytes_follow_storage)
{
    size_t b[2];
    for (int k = 0; k < 2; k++) {
        pc_model_config c;
        pc_model_config_default(&c, 1u << 20);
        c.storage = k ? PC_STORAGE_SPARSE : PC_STORAGE_DENSE;
        pc_model *m;
        pc_error err;
        ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_OK);
        pc_svec x;
        pc_svec_init(&x);
        uint64_t rng = 5;
        for (int t = 0; t < 200; t++) {
            pc_svec_clear(&x);
            for (int f = 0; f < 32; f++)
                pc_svec_push(&x, (uint32_t)(tu_xorshift(&rng) % 5000) * 199, 1);
            ck_assert_int_eq(pc_svec_normalize(&x, 1u << 20, &err), PC_OK);
            pc_label l = {.y = t % 3 ? 1 : -1};
            ck_assert_int_eq(pc_model_label(m, &x, &l, NULL, &err), PC_OK);
        }
        b[k] = pc_model_bytes(m);
        pc_svec_free(&x);
        pc_model_free(m);
    }
    ck_assert_uint_ge(b[0], 8u << 20);          /* 2^20 doubles, and the bias */
    ck_assert_uint_le(b[1], 256u << 10);        /* a table for < 5001 entries */
    ck_assert_uint_ge(b[1], 16 * 4096);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wstore");
    TU_TCASE(s, "wstore", 0, table_grows_and_keeps_every_entry, collisions_probe_past_each_other,
        clear_empties_and_shrinks_a_large_table,
        auto_turns_dense_when_the_table_would_outgrow_the_array,
        encoding_is_the_dense_arrays_bytes_and_round_trips,
        a_table_visits_its_indices_in_ascending_order, decode_rejects_bad_entries,
        wvec_renormalises_and_rescales_the_same_in_both,
        wvec_decode_takes_the_scales_its_folds_leave, wvec_decode_refuses_weights_past_the_bound,
        wvec_skips_an_add_past_the_doubles_range, model_bytes_follow_storage);
    return tu_run(s);
}
