/* test_direct.c - proto/direct.c, the one-pass reading of predict and label,
 * against the general path (pcp_scan, msgpack-c, pcp_message_parse,
 * pcp_features, the label param) that it must agree with.
 *
 * The property: whenever the direct path accepts bytes, the general path
 * accepts them too and decodes the same message: msgid, method, model, the
 * features (same pairs in the same order, same norm), the label, the length
 * and the names reported.  Checked on hand-picked messages, on every prefix
 * of them (an incomplete message is always declined), and on random
 * mutations of them.  Every buffer is malloc'ed to its exact size, so a read
 * past the end is an AddressSanitizer (or valgrind) error.
 */
#include "proto/proto.h"

#include "tests/mpnotation.h"
#include "tests/testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DIM 1000u

/* What one path made of a message. */
typedef struct decoded {
    bool notification;
    uint32_t msgid;
    pcp_method_id method;
    char model[80];
    pc_svec x;
    msgpack_object label; /* str pointers point into the message's bytes */
    size_t len;
    uint32_t names;        /* names reported, and a checksum of them */
    uint64_t names_sum;
} decoded;

static void on_name(void *ud, uint32_t idx, const char *name, size_t len)
{
    decoded *d = ud;
    d->names++;
    d->names_sum = d->names_sum * 31 + idx + len + (len ? (uint8_t)name[0] : 0);
}

static void model_of(decoded *d, const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_STR)
        snprintf(d->model, sizeof d->model, "%.*s", (int)o->via.str.size, o->via.str.ptr);
    else
        snprintf(d->model, sizeof d->model, "(type %d)", (int)o->type);
}

/* The general path; false where it reports an error (or frames nothing). */
static bool general(const uint8_t *buf, size_t n, const pcp_limits *lim, decoded *d,
                    msgpack_zone *z)
{
    pcp_scan_state st = {0};
    pcp_error err = {0};
    size_t len;
    if (pcp_scan(&st, buf, n, lim, &len, &err) != 1)
        return false;
    msgpack_object o;
    pcp_message m;
    if (pcp_unpack(buf, len, z, &o, &err) != PCP_OK || pcp_message_parse(&o, &m, &err) != PCP_OK)
        return false;
    if (m.method->id != PCP_M_PREDICT && m.method->id != PCP_M_LABEL)
        return false;
    d->notification = m.notification;
    d->msgid = m.msgid;
    d->method = m.method->id;
    model_of(d, &m.params[0]);
    if (pcp_features(&m.params[1], DIM, lim, &d->x, on_name, d, &err) != PCP_OK)
        return false;
    if (m.method->id == PCP_M_LABEL)
        d->label = m.params[2];
    d->len = len;
    return true;
}

/* The direct path. */
static bool direct(const uint8_t *buf, size_t n, const pcp_limits *lim, decoded *d)
{
    pcp_direct dm;
    if (!pcp_direct_message(buf, n, lim, &dm))
        return false;
    d->notification = dm.notification;
    d->msgid = dm.msgid;
    d->method = dm.method->id;
    model_of(d, &dm.model);
    bool ok = pcp_direct_example(&dm, DIM, lim, &d->x, &d->label, on_name, d, &d->len);
    if (!ok)
        ck_assert_msg(d->x.n == 0 && d->names == 0, "a decline left features or names behind");
    return ok;
}

static void assert_same(const decoded *a, const decoded *b, const char *what)
{
    ck_assert_msg(a->notification == b->notification && a->msgid == b->msgid &&
                      a->method == b->method && strcmp(a->model, b->model) == 0 &&
                      a->len == b->len,
                  "%s: envelope differs", what);
    ck_assert_msg(a->x.n == b->x.n && a->x.norm2 == b->x.norm2, "%s: features differ", what);
    for (uint32_t i = 0; i < a->x.n; i++)
        ck_assert_msg(a->x.idx[i] == b->x.idx[i] && a->x.val[i] == b->x.val[i],
                      "%s: feature %u differs", what, i);
    ck_assert_msg(a->names == b->names && a->names_sum == b->names_sum, "%s: names differ", what);
    if (a->method == PCP_M_LABEL) {
        const msgpack_object *p = &a->label, *q = &b->label;
        ck_assert_msg(p->type == q->type, "%s: label types %d and %d", what, p->type, q->type);
        switch (p->type) {
        case MSGPACK_OBJECT_STR:
            ck_assert(p->via.str.size == q->via.str.size &&
                      memcmp(p->via.str.ptr, q->via.str.ptr, p->via.str.size) == 0);
            break;
        case MSGPACK_OBJECT_FLOAT32:
        case MSGPACK_OBJECT_FLOAT64:
            ck_assert(p->via.f64 == q->via.f64 || (p->via.f64 != p->via.f64 && q->via.f64 != q->via.f64));
            break;
        case MSGPACK_OBJECT_BOOLEAN:
            ck_assert(p->via.boolean == q->via.boolean);
            break;
        case MSGPACK_OBJECT_NIL:
            break;
        default:
            ck_assert(p->via.u64 == q->via.u64);
        }
    }
}

/* Runs both paths on a private copy of exactly n bytes; returns whether the
 * direct path accepted (asserting agreement when it did). */
static bool compare(const uint8_t *msg, size_t n, const pcp_limits *lim, const char *what)
{
    uint8_t *buf = malloc(n ? n : 1);
    memcpy(buf, msg, n);
    decoded a = {0}, b = {0};
    pc_svec_init(&a.x);
    pc_svec_init(&b.x);
    msgpack_zone z;
    ck_assert(msgpack_zone_init(&z, 1024));
    bool took = direct(buf, n, lim, &a);
    if (took) {
        ck_assert_msg(general(buf, n, lim, &b, &z), "%s: direct accepted what the general path refuses",
                      what);
        assert_same(&a, &b, what);
    }
    msgpack_zone_destroy(&z);
    pc_svec_free(&a.x);
    pc_svec_free(&b.x);
    free(buf);
    return took;
}

static pcp_limits limits(void)
{
    pcp_limits l;
    pcp_limits_default(&l);
    return l;
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
};

START_TEST(accepts_the_usual_shapes_as_the_general_path_reads_them)
{
    pcp_limits lim = limits();
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        bytes b;
        bytes_init(&b);
        bytes_text(&b, accepted[i]);
        ck_assert_msg(compare((const uint8_t *)b.sb.data, b.sb.size, &lim, accepted[i]),
                      "declined %s", accepted[i]);
        msgpack_sbuffer_destroy(&b.sb);
    }
}
END_TEST

START_TEST(declines_the_rest)
{
    pcp_limits lim = limits();
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++) {
        bytes b;
        bytes_init(&b);
        bytes_text(&b, declined[i]);
        ck_assert_msg(!compare((const uint8_t *)b.sb.data, b.sb.size, &lim, declined[i]),
                      "accepted %s", declined[i]);
        msgpack_sbuffer_destroy(&b.sb);
    }
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
    decoded d = {0};
    pc_svec_init(&d.x);
    ck_assert(direct((const uint8_t *)b.sb.data, b.sb.size, &lim, &d));
    ck_assert_uint_eq(d.len, one);
    ck_assert_uint_eq(d.msgid, 1);
    pc_svec_free(&d.x);
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
    bytes b;
    bytes_init(&b);
    bytes_text(&b, "[0, 1, 'label', ['m', [[1, 1], [2, 1], [3, 1]], 1]]");
    const uint8_t *p = (const uint8_t *)b.sb.data;
    pcp_limits lim = limits();
    ck_assert(compare(p, b.sb.size, &lim, "within the limits"));
    lim.max_features = 2;
    ck_assert(!compare(p, b.sb.size, &lim, "max_features"));
    lim = limits();
    lim.max_depth = 3; /* pairs nest 4 deep */
    ck_assert(!compare(p, b.sb.size, &lim, "max_depth"));
    lim = limits();
    lim.max_message = b.sb.size - 1;
    ck_assert(!compare(p, b.sb.size, &lim, "max_message"));
    lim.max_message = b.sb.size;
    ck_assert(compare(p, b.sb.size, &lim, "max_message exactly"));
    msgpack_sbuffer_destroy(&b.sb);
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
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

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
    Suite *s = suite_create("direct");
    TCase *tc = tcase_create("direct");
    tcase_add_test(tc, accepts_the_usual_shapes_as_the_general_path_reads_them);
    tcase_add_test(tc, declines_the_rest);
    tcase_add_test(tc, reads_one_message_of_a_run);
    tcase_add_test(tc, declines_every_prefix);
    tcase_add_test(tc, declines_over_the_limits);
    tcase_add_test(tc, reads_wide_encodings);
    tcase_add_test(tc, mutations_agree_with_the_general_path);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
