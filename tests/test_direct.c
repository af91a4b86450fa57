/* test_direct.c - proto/direct.c, the one-pass reading of predict and label,
 * against the general path (pcp_scan, msgpack-c, pcp_message_parse,
 * pcp_features, the label param) that it must agree with.
 *
 * The property (checked by tests/direct_check.c, shared with the request
 * fuzz target): whenever the direct path accepts bytes, the general path
 * accepts them too and decodes the same message: msgid, method, model, the
 * features of each example (same pairs in the same order, same norm), the
 * labels, the length and the names reported; for predict, label and their
 * batches.  Checked on hand-picked messages, on every prefix
 * of them (an incomplete message is always declined), and on random
 * mutations of them.  Every buffer is malloc'ed to its exact size, so a read
 * past the end is an AddressSanitizer (or valgrind) error.
 */
#include "proto/proto.h"

#include "tests/direct_check.h"
#include "tests/mpnotation.h"
#include "tests/testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ITEMS DC_ITEMS /* examples a test batch may hold */

/* A disagreement fails the running Check test with its description. */
static void ck_failed(const char *msg)
{
    ck_abort_msg("%s", msg);
}

static bool compare(const uint8_t *msg, size_t n, const pcp_limits *lim, const char *what)
{
    return dc_compare(msg, n, lim, what);
}

/* The default limits, with batches of at most ITEMS examples. */
static pcp_limits limits(void)
{
    pcp_limits l;
    pcp_limits_default(&l);
    l.max_batch = ITEMS;
    return l;
}

/* compare() on the bytes of a message written in the mp notation. */
static bool compare_text(const char *text, const pcp_limits *lim)
{
    bytes b;
    bytes_init(&b);
    bytes_text(&b, text);
    bool took = compare((const uint8_t *)b.sb.data, b.sb.size, lim, text);
    msgpack_sbuffer_destroy(&b.sb);
    return took;
}

/* Messages the direct path reads. */
static const char *const accepted[] = {
    "[0, 7, 'label', ['m', {3: 1.5, 1: -2, 3: 0.5}, 1]]",
    "[0, 4294967295, 'predict', ['m', {999: 1.0, 0: 2.0}]]",
    "[2, 'label', ['m', {'colour': 1, 'size': 2.5f, 'colour': 1}, -1]]",
    "[2, 'predict', ['model.v2', [['a', 1], [5, -0.25], ['a', -1]]]]",
    "[0, 1, 'label', ['m', [0, 0, 3.5, -1, 0.0, 7], true]]",
    "[0, 1, 'label', ['m', [], false]]",
    "[0, 1, 'label', ['m', {}, 'cat']]",
    "[0, 1, 'label', ['m', {1: 1}, 1.0]]",
    "[0, 1, 'label', ['m', {1: 1}, nil]]",
    "[0, 1, 'label', ['m', {1: 18446744073709551615}, -1]]",
    "[0, 1, 'label', ['m', {1: -9223372036854775807}, 1]]",
    "[0, 1, 'label', [7, {1: 1}, 1]]",      /* a bad model name: the handler's to refuse */
    "[0, 1, 'label', ['m', {1: 1}, 2]]",    /* a bad label: pcp_label's to refuse */
    "[0, 2, 'predict', ['m', {'': 1}]]",
    "[0, 3, 'label_batch', ['m', [[{1: 1, 'a': 2}, 1], [[0.5, 0, -1], -1], [[['b', 1]], true]]]]",
    "[2, 'label_batch', ['m', [[{}, 'x'], [[1, 2], 2]]]]",  /* labels are pcp_label's to judge */
    "[0, 4, 'label_batch', ['m', []]]",
    "[0, 5, 'predict_batch', ['m', [{1: 1}, [0, 2.5f], [['c', -3]], {}]]]",
    "[0, 6, 'predict_batch', ['m', []]]",
    "[0, 8, 'predict', ['m', {'a': 1, 3: 2}, {'event': 5}]]",      /* label later */
    "[2, 'predict', ['m', [1, 2], {'event': 'req-1'}]]",
    "[0, 9, 'predict', ['m', {'a': 1}, {'event': -7}]]",
    /* any small map of scalar options: the handler reads what they mean */
    "[0, 1, 'predict', ['m', {'a': 1}, {'event': 1, 'at': 5}]]",
    "[0, 1, 'predict', ['m', {'a': 1}, {'explain': 5}]]",
    "[0, 1, 'predict', ['m', {'a': 1}, {'explain': 3, 'event': 'e', 'at': 9, 'x': nil}]]",
    "[0, 1, 'predict', ['m', {'a': 1}, {'evnt': 1}]]",
    "[0, 1, 'predict', ['m', {'a': 1}, {}]]",
};

/* Messages it must leave to the general path (which accepts or refuses). */
static const char *const declined[] = {
    "[0, 1, 'label', ['m', {1: nan}, 1]]",
    "[0, 1, 'label', ['m', {1: inf}, 1]]",
    "[0, 1, 'label', ['m', {1000: 1}, 1]]",            /* index >= dim */
    "[0, 1, 'label', ['m', {-1: 1}, 1]]",
    "[0, 1, 'label', ['m', {1: 'x'}, 1]]",
    "[0, 1, 'label', ['m', {1.5: 1}, 1]]",
    "[0, 1, 'label', ['m', {nil: 1}, 1]]",
    "[0, 1, 'label', ['m', {b'x': 1}, 1]]",
    "[0, 1, 'label', ['m', [[1, 2], 3], 1]]",
    "[0, 1, 'label', ['m', [1, [2, 3]], 1]]",
    "[0, 1, 'label', ['m', [[1, 2, 3]], 1]]",
    "[0, 1, 'label', ['m', 5, 1]]",
    "[0, 1, 'label', ['m', {1: 1}, [1]]]",
    "[0, 1, 'label', ['m', {1: 1}]]",
    "[0, 1, 'label', ['m', {1: 1}, 1, 2]]",
    "[0, 1, 'predict', ['m', {1: 1}, 1]]",
    "[0, 1, 'labels', ['m', {1: 1}, 1]]",
    "[0, 1, 'info', ['m']]",
    "[0, 4294967296, 'label', ['m', {1: 1}, 1]]",
    "[0, -1, 'label', ['m', {1: 1}, 1]]",
    "[1, 1, 'label', ['m', {1: 1}, 1]]",
    "[0, 1, 'label', ['m', {1: 1}, 1], 9]",
    "[2, 'label', ['m', {1: 1}, 1], 9]",
    "[0, 1, 'label', [['m'], {1: 1}, 1]]",
    "{0: 1}",
    "[0, 1, 'label_batch', ['m', [[{1: 1}]]]]",             /* an item without its label */
    "[0, 1, 'label_batch', ['m', [{1: 1}, 1]]]",            /* not [features, label] pairs */
    "[0, 1, 'label_batch', ['m', [[{1: 1}, 1, 2]]]]",
    "[0, 1, 'label_batch', ['m', [[{1: 1}, [1]]]]]",
    "[0, 1, 'label_batch', ['m', [[{1: nan}, 1]]]]",
    "[0, 1, 'label_batch', ['m', {1: 1}]]",
    "[0, 1, 'label_batch', ['m', [[{1: 1}, 1]], 3]]",
    "[0, 1, 'predict_batch', ['m', [{1: 1}, 5]]]",
    "[0, 1, 'predict_batch', ['m', [{1000: 1}]]]",
    "[0, 1, 'predict_batch', ['m', 'x']]",
    /* predict's options other than a map of at most 4 string keys and scalar
     * values: the general path's (and no names reported before the decline) */
    "[0, 1, 'predict', ['m', {'a': 1}, {'event': [1]}]]",
    "[0, 1, 'predict', ['m', {'a': 1}, {1: 1}]]",
    "[0, 1, 'predict', ['m', {'a': 1}, {'a': 1, 'b': 2, 'c': 3, 'd': 4, 'e': 5}]]",
    "[0, 1, 'predict', ['m', {'a': 1}, {'explain': {'k': 1}}]]",
    "[0, 1, 'predict', ['m', {'a': 1}, nil]]",
    "[0, 1, 'predict', ['m', {'a': 1}, {'event': 1}, 2]]",
    "[0, 1, 'predict_batch', ['m', [{1: 1}], {'event': 1}]]",
};

START_TEST(accepts_the_usual_shapes_as_the_general_path_reads_them)
{
    pcp_limits lim = limits();
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++)
        ck_assert_msg(compare_text(accepted[i], &lim), "declined %s", accepted[i]);
}
END_TEST

START_TEST(declines_the_rest)
{
    pcp_limits lim = limits();
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++)
        ck_assert_msg(!compare_text(declined[i], &lim), "accepted %s", declined[i]);
}
END_TEST

/* Extra bytes after a message are the next message: the length excludes them. */
START_TEST(reads_one_message_of_a_run)
{
    pcp_limits lim = limits();
    bytes b;
    bytes_init(&b);
    bytes_text(&b, "[0, 1, 'label', ['m', {1: 1}, 1]]");
    size_t one = b.sb.size;
    bytes_text(&b, "[0, 2, 'label', ['m', {2: 1}, -1]]");
    size_t len;
    ck_assert(dc_direct_len((const uint8_t *)b.sb.data, b.sb.size, &lim, &len));
    ck_assert_uint_eq(len, one);
    ck_assert(compare((const uint8_t *)b.sb.data, one, &lim, "the first message alone"));
    msgpack_sbuffer_destroy(&b.sb);
}
END_TEST

START_TEST(declines_every_prefix)
{
    pcp_limits lim = limits();
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        bytes b;
        bytes_init(&b);
        bytes_text(&b, accepted[i]);
        for (size_t n = 0; n < b.sb.size; n++)
            ck_assert_msg(!compare((const uint8_t *)b.sb.data, n, &lim, accepted[i]),
                          "accepted %zu of %zu bytes of %s", n, b.sb.size, accepted[i]);
        msgpack_sbuffer_destroy(&b.sb);
    }
}
END_TEST

/* Limits: over any of them, the general path must be the one to say so. */
START_TEST(declines_over_the_limits)
{
    static const char pairs[] = "[0, 1, 'label', ['m', [[1, 1], [2, 1], [3, 1]], 1]]";
    pcp_limits lim = limits();
    ck_assert(compare_text(pairs, &lim));
    lim.max_features = 2;
    ck_assert(!compare_text(pairs, &lim));
    lim = limits();
    lim.max_depth = 3; /* pairs nest 4 deep */
    ck_assert(!compare_text(pairs, &lim));
    bytes b;
    bytes_init(&b);
    bytes_text(&b, pairs);
    lim = limits();
    lim.max_message = b.sb.size - 1;
    ck_assert(!compare((const uint8_t *)b.sb.data, b.sb.size, &lim, "max_message"));
    lim.max_message = b.sb.size;
    ck_assert(compare((const uint8_t *)b.sb.data, b.sb.size, &lim, "max_message exactly"));
    msgpack_sbuffer_destroy(&b.sb);

    /* A batch: max_batch, max_features; its pairs nest 6 deep, its maps 5. */
    static const char batch_pairs[] = "[0, 1, 'label_batch', ['m', [[[[1, 1]], 1], [{2: 1}, -1]]]]";
    static const char batch_maps[] = "[0, 1, 'label_batch', ['m', [[{1: 1}, 1], [{2: 1}, -1]]]]";
    lim = limits();
    ck_assert(compare_text(batch_pairs, &lim));
    lim.max_batch = 1;
    ck_assert(!compare_text(batch_pairs, &lim));
    lim = limits();
    lim.max_features = 0;
    ck_assert(!compare_text(batch_pairs, &lim));
    lim = limits();
    lim.max_depth = 5;
    ck_assert(!compare_text(batch_pairs, &lim));
    ck_assert(compare_text(batch_maps, &lim));
    lim.max_depth = 4;
    ck_assert(!compare_text(batch_maps, &lim));
}
END_TEST

/* Header encodings msgpack-c does not choose for small values, written by
 * hand: map16 / array32 headers, str8 method, int8 key, uint64 msgid. */
START_TEST(reads_wide_encodings)
{
    static const uint8_t msg[] = {
        0xdd, 0, 0, 0, 4,                         /* array32 of 4 */
        0x00,
        0xcf, 0, 0, 0, 0, 0, 0, 0, 9,             /* msgid 9 as uint64 */
        0xd9, 5, 'l', 'a', 'b', 'e', 'l',         /* str8 */
        0xdc, 0, 3,                               /* array16 of 3 */
        0xa1, 'm',
        0xde, 0, 2,                               /* map16 of 2 */
        0xd0, 0x05, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, /* int8 5: 1.0 */
        0xcd, 0x01, 0x00, 0xd1, 0xff, 0xfe,       /* uint16 256: int16 -2 */
        0xd0, 0xff,                               /* label int8 -1 */
    };
    pcp_limits lim = limits();
    ck_assert(compare(msg, sizeof msg, &lim, "wide encodings"));
}
END_TEST

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) { return tu_xorshift(&rng); }

/* Random byte flips, insertions and cuts of the accepted messages: whatever
 * the direct path still accepts, the general path reads the same way. */
START_TEST(mutations_agree_with_the_general_path)
{
    static const uint8_t interesting[] = {0x00, 0x7f, 0x80, 0x90, 0x92, 0xa0, 0xc0, 0xc1,
                                          0xc2, 0xca, 0xcb, 0xcc, 0xcf, 0xd0, 0xd3, 0xd9,
                                          0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff};
    pcp_limits lim = limits();
    lim.max_features = 6;
    uint8_t buf[512];
    unsigned took = 0, runs = 0;
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        bytes b;
        bytes_init(&b);
        bytes_text(&b, accepted[i]);
        for (int r = 0; r < 4000; r++, runs++) {
            size_t n = b.sb.size;
            memcpy(buf, b.sb.data, n);
            for (int k = 1 + (int)(next_rand() % 3); k > 0; k--) {
                size_t at = next_rand() % n;
                uint64_t how = next_rand() % 4;
                uint8_t v = how == 0 ? (uint8_t)next_rand()
                                     : interesting[next_rand() % sizeof interesting];
                if (how == 3 && n < sizeof buf) { /* insert */
                    memmove(buf + at + 1, buf + at, n - at);
                    n++;
                }
                buf[at] = v;
            }
            if (next_rand() % 8 == 0)
                n = next_rand() % n;
            took += compare(buf, n, &lim, accepted[i]);
        }
        msgpack_sbuffer_destroy(&b.sb);
    }
    /* The mutations must also leave much for the direct path to accept,
     * or the agreement above checks little. */
    ck_assert_msg(took > runs / 20, "only %u of %u mutations were read directly", took, runs);
}
END_TEST

static Suite *suite(void)
{
    dc_failed = ck_failed;
    Suite *s = suite_create("direct");
    TU_TCASE(s, "direct", 0, accepts_the_usual_shapes_as_the_general_path_reads_them,
        declines_the_rest, reads_one_message_of_a_run, declines_every_prefix,
        declines_over_the_limits, reads_wide_encodings, mutations_agree_with_the_general_path);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
