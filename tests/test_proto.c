/* test_proto.c - the wire protocol layer: the bounded scanner (every prefix,
 * resumption cost, hostile headers, depth, size, a deterministic fuzz loop
 * checked against msgpack-c), the envelope, features in the three encodings,
 * labels, batches, model specs, and responses decoded back by msgpack-c.
 *
 * Messages are written in a small JSON-like notation packed by mp() below:
 *   [..] arrays, {k: v} maps, 'str', b'bin', 1, -1, 1.5, 1.5f (float32),
 *   true, false, nil, nan, inf, -inf.
 */
#include "proto/proto.h"   /* first: the public header compiles on its own */

/* Namers that hash every name as it is (no feature preparation). */
static pc_namer nm64 = {.dim = 64}, nm32 = {.dim = 32}, nm8 = {.dim = 8};

#include "tests/testutil.h"

#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mpnotation.h"

/* An unpacked object kept alive with its bytes and zone. */
typedef struct obj {
    bytes b;
    msgpack_zone z;
    msgpack_object o;
} obj;

static void obj_unpack(obj *ob)
{
    pcp_scan_state st = {0};
    size_t len = 0;
    pcp_error err = {0};
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_message = PCP_MAX_MESSAGE_CEILING;
    lim.max_depth = PCP_MAX_DEPTH_CEILING;
    int r = pcp_scan(&st, (const uint8_t *)ob->b.sb.data, ob->b.sb.size, &lim, &len, &err);
    ck_assert_msg(r == 1, "scan of a built message: %d %s", r, err.msg);
    ck_assert_uint_eq(len, ob->b.sb.size);
    ck_assert(msgpack_zone_init(&ob->z, 1024));
    ck_assert_int_eq(pcp_unpack((const uint8_t *)ob->b.sb.data, len, &ob->z, &ob->o, &err), PCP_OK);
}

static const msgpack_object *obj_make(obj *ob, const char *text)
{
    bytes_init(&ob->b);
    bytes_text(&ob->b, text);
    obj_unpack(ob);
    return &ob->o;
}

static void obj_free(obj *ob)
{
    msgpack_zone_destroy(&ob->z);
    msgpack_sbuffer_destroy(&ob->b.sb);
}

/* Hex text ("dd 00 01") to bytes; returns the length. */
static size_t hex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (*s) {
        if (*s == ' ') {
            s++;
            continue;
        }
        ck_assert(n < cap && s[1]);
        char h[3] = {s[0], s[1], 0};
        out[n++] = (uint8_t)strtoul(h, NULL, 16);
        s += 2;
    }
    return n;
}

static int scan_once(const uint8_t *buf, size_t n, const pcp_limits *lim, size_t *len,
                     pcp_error *err)
{
    pcp_scan_state st = {0};
    return pcp_scan(&st, buf, n, lim, len, err);
}

/* ---- scanner ------------------------------------------------------------- */

/* Every header form of the format, and some nesting. */
static const char *const valid_hex[] = {
    "00", "7f", "e0", "ff", "c0", "c2", "c3",
    "cc 01", "cd 01 02", "ce 01 02 03 04", "cf 01 02 03 04 05 06 07 08",
    "d0 ff", "d1 ff ff", "d2 ff ff ff ff", "d3 ff ff ff ff ff ff ff ff",
    "ca 3f 80 00 00", "cb 3f f0 00 00 00 00 00 00",
    "a0", "a3 61 62 63", "d9 03 61 62 63", "da 00 03 61 62 63", "db 00 00 00 03 61 62 63",
    "c4 00", "c4 02 01 02", "c5 00 02 01 02", "c6 00 00 00 02 01 02",
    "d4 01 02", "d5 01 02 03", "d6 01 02 03 04 05", "d7 01 01 02 03 04 05 06 07 08",
    "d8 01 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f",
    "c7 00 05", "c7 02 01 02 03", "c8 00 02 01 02 03", "c9 00 00 00 02 01 02 03",
    "90", "92 01 02", "dc 00 00", "dc 00 02 01 02", "dd 00 00 00 02 01 02",
    "80", "81 01 02", "de 00 01 01 02", "df 00 00 00 01 a1 61 c0",
    "92 91 90 81 a1 61 92 c3 c2",
    "94 00 01 a7 70 72 65 64 69 63 74 92 a1 6d 82 a1 61 cb 3f f8 00 00 00 00 00 00 03 ca 3f 00 00 00",
    "93 db 00 00 00 01 78 dd 00 00 00 01 c6 00 00 00 01 ff df 00 00 00 01 c9 00 00 00 01 05 00 c0",
};

START_TEST(scan_every_prefix_of_valid_messages)
{
    for (size_t t = 0; t < sizeof valid_hex / sizeof *valid_hex; t++) {
        uint8_t buf[128];
        size_t n = hex(valid_hex[t], buf, sizeof buf - 2);
        size_t len = 0;
        pcp_error err = {0};
        /* one shot on each prefix */
        for (size_t k = 0; k < n; k++)
            ck_assert_msg(scan_once(buf, k, NULL, &len, &err) == 0, "%s: prefix %zu", valid_hex[t], k);
        ck_assert_msg(scan_once(buf, n, NULL, &len, &err) == 1, "%s: %s", valid_hex[t], err.msg);
        ck_assert_uint_eq(len, n);
        /* resumed, one more byte each call */
        pcp_scan_state st = {0};
        for (size_t k = 0; k < n; k++)
            ck_assert_int_eq(pcp_scan(&st, buf, k, NULL, &len, &err), 0);
        ck_assert_int_eq(pcp_scan(&st, buf, n, NULL, &len, &err), 1);
        ck_assert_uint_eq(len, n);
        /* a pipelined next object does not change the answer */
        buf[n] = 0x93;
        buf[n + 1] = 0xc1;
        ck_assert_int_eq(scan_once(buf, n + 2, NULL, &len, &err), 1);
        ck_assert_uint_eq(len, n);
        /* and the state was reset: the next object scans from buf + len */
        ck_assert_int_eq(pcp_scan(&st, buf + n, 1, NULL, &len, &err), 0);
        /* msgpack-c agrees on the length */
        msgpack_zone z;
        msgpack_zone_init(&z, 256);
        msgpack_object o;
        size_t off = 0;
        ck_assert_int_eq(msgpack_unpack((const char *)buf, n, &off, &z, &o), MSGPACK_UNPACK_SUCCESS);
        ck_assert_uint_eq(off, n);
        msgpack_zone_destroy(&z);
    }
}
END_TEST

START_TEST(scan_resumes_in_linear_time)
{
    /* A 1 MiB label request with 60000 named float features, fed one byte at
     * a time: 1 MiB calls.  A rescanning design would read ~5e11 bytes. */
    bytes b;
    bytes_init(&b);
    msgpack_packer *pk = &b.pk;
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, 0);
    msgpack_pack_uint32(pk, 1);
    msgpack_pack_str_with_body(pk, "label", 5);
    msgpack_pack_array(pk, 3);
    msgpack_pack_str_with_body(pk, "m", 1);
    uint32_t nf = 65000;
    msgpack_pack_map(pk, nf);
    for (uint32_t i = 0; i < nf; i++) {
        char name[16];
        int l = snprintf(name, sizeof name, "f%u", i);
        msgpack_pack_str_with_body(pk, name, (size_t)l);
        msgpack_pack_double(pk, i * 0.5);
    }
    msgpack_pack_int(pk, 1);
    size_t n = b.sb.size;
    ck_assert_uint_gt(n, 1000000);
    ck_assert_uint_le(n, PCP_DEFAULT_MAX_MESSAGE);
    const uint8_t *buf = (const uint8_t *)b.sb.data;
    pcp_scan_state st = {0};
    size_t len = 0;
    pcp_error err = {0};
    /* Plain ifs in the hot loops: Check records every assertion's location. */
    for (size_t k = 1; k < n; k++)
        if (pcp_scan(&st, buf, k, NULL, &len, &err) != 0)
            ck_abort_msg("complete or refused early at %zu of %zu: %s", k, n, err.msg);
    ck_assert_int_eq(pcp_scan(&st, buf, n, NULL, &len, &err), 1);
    ck_assert_uint_eq(len, n);
    /* Only headers are read: 2 per feature, plus re-reads of split ones. */
    ck_assert_msg(st.examined <= n / 4, "examined %llu bytes of %zu", (unsigned long long)st.examined, n);
    msgpack_sbuffer_destroy(&b.sb);

    /* Worst case for re-reading: back-to-back 5-byte headers (bin32 of 0). */
    size_t m = 5 + 5 * 200000;
    uint8_t *w = malloc(m);
    ck_assert_ptr_nonnull(w);
    hex("dd 00 03 0d 40", w, 5);
    for (size_t i = 5; i < m; i += 5)
        memcpy(w + i, "\xc6\0\0\0\0", 5);
    memset(&st, 0, sizeof st);
    for (size_t k = 1; k < m; k++)
        if (pcp_scan(&st, w, k, NULL, &len, &err) != 0)
            ck_abort_msg("complete or refused early at %zu of %zu: %s", k, m, err.msg);
    ck_assert_int_eq(pcp_scan(&st, w, m, NULL, &len, &err), 1);
    ck_assert_uint_eq(len, m);
    ck_assert_msg(st.examined <= 3 * m, "examined %llu of %zu", (unsigned long long)st.examined, m);
    free(w);
}
END_TEST

START_TEST(scan_refuses_huge_headers_at_once)
{
    static const struct { const char *hex; int want; } cases[] = {
        {"dd ff ff ff ff", -1},       /* msgpack-c #1013: 4G elements = 96 GB */
        {"dd ff 00 00 00", -1},
        {"dd 00 10 00 00", -1},       /* 1 Mi elements + 5 header bytes > 1 MiB */
        {"dd 00 0f ff fb", 0},        /* exactly fits: waits for the elements */
        {"df ff ff ff ff", -1},
        {"df 00 08 00 00", -1},       /* 512 Ki pairs need 1 MiB + header */
        {"db ff ff ff ff", -1},
        {"db 00 10 00 00", -1},
        {"c6 ff ff ff ff", -1},
        {"c9 ff ff ff ff 01", -1},
        {"c9 ff ff ff ff", -1},       /* refused before the type byte arrives */
        {"dc ff ff", 0},              /* 65535 elements fit in 1 MiB */
        {"dd ff", 0},                 /* a split header: wait for it */
        {"dd", 0},
        {"91 dd ff ff ff ff", -1},
        {"92 dd 00 0f ff fa", -1},    /* the outer array's second element needs a byte too */
        {"92 dd 00 0f ff f9", 0},
        {"c1", -1},
        {"92 01 c1", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t buf[16];
        size_t n = hex(cases[i].hex, buf, sizeof buf);
        size_t len = 0;
        pcp_error err = {0};
        int r = scan_once(buf, n, NULL, &len, &err);
        ck_assert_msg(r == cases[i].want, "%s: got %d (%s)", cases[i].hex, r, err.msg);
        if (r < 0) {
            bool parse = buf[n - 1] == 0xc1;
            ck_assert_int_eq(err.code, parse ? PCP_E_PARSE : PCP_E_LIMIT);
            ck_assert(strstr(err.msg, parse ? "0xc1" : "max_message") != NULL);
        }
    }
    /* A small limit: a 65535-element array no longer fits. */
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_message = 1000;
    uint8_t buf[8];
    size_t n = hex("dc ff ff", buf, sizeof buf), len;
    pcp_error err = {0};
    ck_assert_int_eq(scan_once(buf, n, &lim, &len, &err), -1);
    ck_assert(strstr(err.msg, "array of 65535 elements") && strstr(err.msg, "(1000 bytes)"));
    /* A limit above the ceiling is clamped: 2 GiB of string is refused. */
    lim.max_message = SIZE_MAX;
    n = hex("db 7f ff ff ff", buf, sizeof buf);
    ck_assert_int_eq(scan_once(buf, n, &lim, &len, &err), -1);
    ck_assert_int_eq(err.code, PCP_E_LIMIT);
}
END_TEST

static size_t nest(uint8_t *buf, unsigned depth, bool maps)
{
    size_t n = 0;
    for (unsigned i = 1; i < depth; i++) {
        if (maps) {
            buf[n++] = 0x81;
            buf[n++] = 0x00;   /* key 0, value: the next level */
        } else {
            buf[n++] = 0x91;
        }
    }
    buf[n++] = maps ? 0x80 : 0x90;
    return n;
}

START_TEST(scan_depth_limit)
{
    uint8_t buf[128];
    size_t len;
    pcp_error err = {0};
    for (int maps = 0; maps < 2; maps++) {
        size_t n = nest(buf, 16, maps);
        ck_assert_int_eq(scan_once(buf, n, NULL, &len, &err), 1);
        ck_assert_uint_eq(len, n);
        n = nest(buf, 17, maps);
        ck_assert_int_eq(scan_once(buf, n, NULL, &len, &err), -1);
        ck_assert_int_eq(err.code, PCP_E_LIMIT);
        ck_assert(strstr(err.msg, "max_depth (16)") != NULL);
        /* refused as soon as the 17th header is read, before the rest */
        ck_assert_int_eq(scan_once(buf, maps ? 33 : 17, NULL, &len, &err), -1);
    }
    /* The ceiling follows msgpack-c's fixed 32-level stack: 32 unpacks, 33 is refused. */
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_depth = 1000;
    size_t n = nest(buf, 32, false);
    ck_assert_int_eq(scan_once(buf, n, &lim, &len, &err), 1);
    msgpack_zone z;
    msgpack_zone_init(&z, 256);
    msgpack_object o;
    ck_assert_int_eq(pcp_unpack(buf, len, &z, &o, &err), PCP_OK);
    msgpack_zone_destroy(&z);
    n = nest(buf, 33, false);
    ck_assert_int_eq(scan_once(buf, n, &lim, &len, &err), -1);
    ck_assert(strstr(err.msg, "max_depth (32)") != NULL);
}
END_TEST

START_TEST(scan_size_limit)
{
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_message = 100;
    uint8_t buf[512];
    size_t len;
    pcp_error err = {0};
    /* a str of 100 bytes total fits, 101 does not (refused from the header) */
    size_t n = hex("d9 62", buf, sizeof buf);
    memset(buf + n, 'x', 0x62);
    ck_assert_int_eq(scan_once(buf, n + 0x62, &lim, &len, &err), 1);
    ck_assert_uint_eq(len, 100);
    hex("d9 63", buf, sizeof buf);
    ck_assert_int_eq(scan_once(buf, 2, &lim, &len, &err), -1);
    ck_assert_int_eq(err.code, PCP_E_LIMIT);
    ck_assert(strstr(err.msg, "str of 99 bytes") != NULL);
    /* many small objects: 100 bytes fit, the 101st byte is refused */
    n = hex("dc 00 61", buf, sizeof buf);
    memset(buf + n, 0x01, 0x61);
    ck_assert_int_eq(scan_once(buf, n + 0x61, &lim, &len, &err), 1);
    ck_assert_uint_eq(len, 100);
    n = hex("dc 00 21", buf, sizeof buf); /* 33 elements */
    for (int i = 0; i < 33; i++)
        hex("cb 00 00 00 00 00 00 00 00", buf + n + 9 * i, 9);
    ck_assert_int_eq(scan_once(buf, n + 9 * 33, &lim, &len, &err), -1);
    ck_assert_int_eq(err.code, PCP_E_LIMIT);
    ck_assert(strstr(err.msg, "larger than max_message (100 bytes)") != NULL);
    /* after an error the stream stays dead */
    pcp_scan_state st = {0};
    ck_assert_int_eq(pcp_scan(&st, buf, 2, &lim, &len, &err), 0);
    hex("db 00 01 00 00", buf, sizeof buf);
    ck_assert_int_eq(pcp_scan(&st, buf, 5, &lim, &len, &err), -1);
    buf[0] = 0x01;
    ck_assert_int_eq(pcp_scan(&st, buf, 1, &lim, &len, &err), -1);
    ck_assert_int_eq(err.code, PCP_E_PARSE);
}
END_TEST

/* Bytes msgpack-c's unpacker asked of its zone for o: 24 per array element,
 * 48 per map pair (strings, bins and exts point into the message). */
static size_t zone_demand(const msgpack_object *o)
{
    size_t d = 0;
    if (o->type == MSGPACK_OBJECT_ARRAY) {
        d += o->via.array.size * sizeof(msgpack_object);
        for (uint32_t i = 0; i < o->via.array.size; i++)
            d += zone_demand(&o->via.array.ptr[i]);
    } else if (o->type == MSGPACK_OBJECT_MAP) {
        d += o->via.map.size * sizeof(msgpack_object_kv);
        for (uint32_t i = 0; i < o->via.map.size; i++)
            d += zone_demand(&o->via.map.ptr[i].key) + zone_demand(&o->via.map.ptr[i].val);
    }
    return d;
}

/* Bytes the zone really took from malloc.  Relies on msgpack-c's zone.c: each
 * chunk is one malloc whose first member is the next pointer. */
static size_t zone_malloced(const msgpack_zone *z)
{
    size_t total = 0;
    for (void *c = z->chunk_list.head; c; c = *(void **)c)
        total += malloc_usable_size(c);
    return total;
}

START_TEST(scanned_messages_bound_the_unpackers_memory)
{
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_message = 1 << 16;
    size_t max = lim.max_message;
    uint8_t *buf = malloc(max + 16);
    ck_assert_ptr_nonnull(buf);
    for (int shape = 0; shape < 4; shape++) {
        size_t n;
        uint32_t count;
        switch (shape) {
        case 0: /* array of one-byte elements: the densest demand */
            count = (uint32_t)(max - 5);
            n = hex("dd", buf, 1);
            memset(buf + 5, 0x01, count);
            break;
        case 1: /* map of one-byte pairs */
            count = (uint32_t)((max - 5) / 2);
            n = hex("df", buf, 1);
            memset(buf + 5, 0x01, 2 * (size_t)count);
            break;
        case 2: /* array of [1] */
            count = (uint32_t)((max - 5) / 2);
            n = hex("dd", buf, 1);
            for (size_t i = 0; i < count; i++)
                memcpy(buf + 5 + 2 * i, "\x91\x01", 2);
            break;
        default: /* array of empty maps */
            count = (uint32_t)(max - 5);
            n = hex("dd", buf, 1);
            memset(buf + 5, 0x80, count);
            break;
        }
        (void)n;
        buf[1] = (uint8_t)(count >> 24), buf[2] = (uint8_t)(count >> 16);
        buf[3] = (uint8_t)(count >> 8), buf[4] = (uint8_t)count;
        size_t len = 0;
        pcp_error err = {0};
        size_t total = 5 + (size_t)count * (shape == 1 || shape == 2 ? 2 : 1);
        ck_assert_int_eq(scan_once(buf, total, &lim, &len, &err), 1);
        ck_assert_uint_eq(len, total);
        /* one element more no longer fits (the scanner counts one byte per
         * element, so for [1] elements the bound is only on memory) */
        uint32_t more = count + 1;
        uint8_t hdr[5] = {buf[0], (uint8_t)(more >> 24), (uint8_t)(more >> 16), (uint8_t)(more >> 8),
                          (uint8_t)more};
        ck_assert_int_eq(scan_once(hdr, 5, &lim, &len, &err), shape == 2 ? 0 : -1);

        msgpack_zone z;
        ck_assert(msgpack_zone_init(&z, 1024));
        msgpack_object o;
        ck_assert_int_eq(pcp_unpack(buf, total, &z, &o, &err), PCP_OK);
        size_t demand = zone_demand(&o), got = zone_malloced(&z);
        /* 24 bytes per message byte at most; the zone rounds a large request
         * up to a power-of-two chunk, so malloc may see up to twice that. */
        ck_assert_msg(demand <= 24 * len, "shape %d: demand %zu for %zu bytes", shape, demand, len);
        ck_assert_msg(got <= 48 * len + 4096, "shape %d: malloc %zu for %zu bytes", shape, got, len);
        msgpack_zone_destroy(&z);
    }
    free(buf);
}
END_TEST

/* ---- fuzz ---------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) { return tu_xorshift(&rng); }

static void name_cb(void *ud, uint32_t idx, const char *name, size_t len, double value)
{
    (void)idx, (void)name, (void)len, (void)value;
    ++*(int *)ud;
}

/* pcp_features, then on_name for the names of the example it accepted. */
static pcp_code features_named(const msgpack_object *o, uint32_t dim, const pcp_limits *lim,
                               pc_svec *x, pcp_name_cb on_name, void *ud, pcp_error *err)
{
    pcp_names_at at;
    pc_namer nm = pc_namer_plain(dim);
    pcp_code c = pcp_features(o, &nm, lim, x, &at, err);
    if (c != PCP_OK)
        ck_assert(!at.obj && !at.start);
    pcp_names_report(&at, dim, lim, on_name, ud);
    return c;
}

/* Scans buf one-shot and one byte at a time (the answers must agree); when
 * complete, msgpack-c must unpack exactly that span, and every decoder runs on
 * the result (under ASan/valgrind this is the memory-safety proof). */
static void fuzz_one(const uint8_t *buf, size_t n, int *complete)
{
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_message = 4096;
    lim.max_features = 64;
    lim.max_batch = 8;
    size_t len = 0, len2 = 0;
    pcp_error err = {0};
    int r = scan_once(buf, n, &lim, &len, &err);
    pcp_scan_state st = {0};
    int r2 = 0;
    for (size_t k = 0; k <= n && r2 == 0; k++)
        r2 = pcp_scan(&st, buf, k, &lim, &len2, &err);
    ck_assert_int_eq(r, r2);
    if (r != 1)
        return;
    ck_assert_uint_eq(len, len2);
    ++*complete;
    msgpack_zone z;
    msgpack_zone_init(&z, 512);
    msgpack_object o;
    ck_assert_msg(pcp_unpack(buf, len, &z, &o, &err) == PCP_OK, "msgpack-c disagrees: %s", err.msg);
    pcp_message m;
    pcp_code c = pcp_message_parse(&o, &m, &err);
    ck_assert(c == PCP_OK || err.msg[0]);
    const msgpack_object *targets[4] = {&o, NULL, NULL, NULL};
    size_t nt = 1;
    if (c == PCP_OK)
        for (uint32_t i = 0; i < m.nparams && nt < 4; i++)
            targets[nt++] = &m.params[i];
    pc_svec x;
    pc_svec_init(&x);
    for (size_t t = 0; t < nt; t++) {
        int names = 0;
        features_named(targets[t], 1024, &lim, &x, name_cb, &names, &err);
        pc_label l;
        pcp_label(targets[t], false, &l, &err);
        pcp_label(targets[t], true, &l, &err);
        pc_model_config cfg;
        char **classes = NULL;
        if (pcp_model_spec(targets[t], NULL, &cfg, &classes, &err) == PCP_OK)
            pcp_classes_free(classes);
        const msgpack_object *items;
        uint32_t ni;
        if (pcp_batch(targets[t], true, &lim, &items, &ni, &err) == PCP_OK)
            for (uint32_t i = 0; i < ni; i++) {
                pcp_features(&items[i].via.array.ptr[0], &nm64, &lim, &x, NULL, &err);
                pcp_label(&items[i].via.array.ptr[1], false, &l, &err);
            }
        const char *s;
        size_t sl;
        pcp_model_name(targets[t], &s, &sl, &err);
    }
    pc_svec_free(&x);
    msgpack_zone_destroy(&z);
}

static const uint8_t interesting[] = {
    0x00, 0x01, 0x7f, 0x80, 0x81, 0x82, 0x8f, 0x90, 0x91, 0x92, 0x94, 0x9f, 0xa1, 0xa5, 0xbf, 0xc0,
    0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0,
    0xd3, 0xd4, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff, 0x61, 0x02,
};

START_TEST(fuzz_random_buffers)
{
    uint8_t buf[64];
    int complete = 0;
    for (int it = 0; it < 4000; it++) {
        size_t n = 1 + next_rand() % sizeof buf;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = next_rand();
            buf[i] = r & 1 ? interesting[(r >> 8) % sizeof interesting] : (uint8_t)(r >> 16);
            if ((r >> 40) % 4 == 0)
                buf[i] = (uint8_t)((r >> 24) & 0x0f);   /* small lengths keep objects completable */
        }
        fuzz_one(buf, n, &complete);
    }
    ck_assert_int_gt(complete, 500);
}
END_TEST

static const char *const seeds[] = {
    "[0, 1, 'predict', ['m', {'a': 1.5, 'b': -2, 3: 0.25}]]",
    "[0, 2, 'label', ['m', [['a', 1], [7, 2.5f]], 1]]",
    "[2, 'label', ['m', [0, 1.5, 0, -3], -1]]",
    "[0, 3, 'label', ['mc', {'x': 1}, 'cat']]",
    "[0, 4, 'label_batch', ['m', [[{'a': 1}, 1], [[1, 2], -1], [{'b': 2}, true]]]]",
    "[0, 5, 'predict_batch', ['m', [{'a': 1}, [1, 2]]]]",
    "[0, 6, 'create', ['m2', {'rule': 'perceptron', 'params': {'eta': 0.5}, 'hash_bits': 12, "
    "'bias': true, 'bias_value': 1, 'averaged': false, 'mode': 'online', 'classes': ['a', 'b'], "
    "'open_classes': true}]]",
    "[0, 7, 'weights', ['m', 'cls', 10]]",
    "[0, 8, 'ping', []]",
    "[0, 9, 'info', [b'bin']]",
};

START_TEST(fuzz_mutated_messages)
{
    int complete = 0;
    uint8_t buf[512];
    for (size_t s = 0; s < sizeof seeds / sizeof *seeds; s++) {
        bytes b;
        bytes_init(&b);
        bytes_text(&b, seeds[s]);
        ck_assert_uint_lt(b.sb.size, 256);
        /* the seed itself decodes */
        fuzz_one((const uint8_t *)b.sb.data, b.sb.size, &complete);
        for (int it = 0; it < 400; it++) {
            size_t n = b.sb.size;
            memcpy(buf, b.sb.data, n);
            int muts = 1 + (int)(next_rand() % 4);
            for (int k = 0; k < muts && n > 0; k++) {
                uint64_t r = next_rand();
                size_t at = (size_t)((r >> 8) % n);
                switch (r % 6) {
                case 0: buf[at] ^= (uint8_t)(1u << ((r >> 32) % 8)); break;
                case 1: buf[at] = interesting[(r >> 32) % sizeof interesting]; break;
                case 2: n = at + 1; break;                               /* truncate */
                case 3: memmove(buf + at, buf + at + 1, n - at - 1); n--; break; /* delete */
                case 4:                                                  /* duplicate a run */
                    if (n + 8 < sizeof buf) {
                        size_t run = 1 + (r >> 40) % 8;
                        if (at + run > n)
                            run = n - at;
                        memmove(buf + at + run, buf + at, n - at);
                        n += run;
                    }
                    break;
                default: buf[at] = (uint8_t)(r >> 48); break;
                }
            }
            fuzz_one(buf, n, &complete);
        }
        msgpack_sbuffer_destroy(&b.sb);
    }
    ck_assert_int_gt(complete, 300);
}
END_TEST

/* ---- envelope ----------------------------------------------------------- */

START_TEST(method_table_is_complete)
{
    for (int i = 0; i < PCP_M_COUNT; i++) {
        const pcp_method *m = &pcp_methods[i];
        ck_assert_ptr_nonnull(m->name);
        ck_assert_int_eq(m->id, i);
        ck_assert_uint_le(m->min_params, m->max_params);
        ck_assert_ptr_nonnull(m->params_doc);
        ck_assert_ptr_nonnull(m->result_doc);
        ck_assert_ptr_eq(pcp_method_find(m->name, strlen(m->name)), m);
        /* every arity in range parses, one more does not */
        for (int np = 0; np <= m->max_params + 1; np++) {
            char text[128] = "";
            int len = snprintf(text, sizeof text, "[0, 5, '%s', [", m->name);
            for (int k = 0; k < np; k++)
                len += snprintf(text + len, sizeof text - (size_t)len, "%s1", k ? ", " : "");
            snprintf(text + len, sizeof text - (size_t)len, "]]");
            obj ob;
            pcp_message msg;
            pcp_error err = {0};
            pcp_code c = pcp_message_parse(obj_make(&ob, text), &msg, &err);
            bool ok = np >= m->min_params && np <= m->max_params;
            ck_assert_msg(c == (ok ? PCP_OK : PCP_E_PARAMS), "%s: %d %s", text, c, err.msg);
            if (ok) {
                ck_assert_ptr_eq(msg.method, m);
                ck_assert_uint_eq(msg.nparams, (unsigned)np);
            } else {
                ck_assert(strstr(err.msg, m->name) != NULL);
            }
            obj_free(&ob);
        }
    }
    ck_assert_ptr_null(pcp_method_find("predic", 6));
    ck_assert_ptr_null(pcp_method_find("predictx", 8));
    ck_assert_ptr_null(pcp_method_find("ping\0", 5));
    ck_assert_ptr_null(pcp_method_find("", 0));
    ck_assert((pcp_methods[PCP_M_CREATE].flags & PCP_F_ADMIN) &&
              (pcp_methods[PCP_M_SAVE].flags & PCP_F_ADMIN));
    ck_assert(!(pcp_methods[PCP_M_PREDICT].flags & PCP_F_ADMIN) &&
              !(pcp_methods[PCP_M_LABEL].flags & PCP_F_ADMIN));
}
END_TEST

/* The flags say what the rest of the code relies on: the direct path reads
 * exactly the traffic methods (label_event's scalars too), a batch is direct, and the methods that
 * change durable state (what a journal records) are exactly these ten (the lifecycle's rollback, import, copy), and
 * predict when it is given an event. */
START_TEST(method_flags_are_consistent)
{
    unsigned direct = 0, writes = 0;
    for (int i = 0; i < PCP_M_COUNT; i++) {
        unsigned f = pcp_methods[i].flags;
        if (f & PCP_F_DIRECT)
            direct |= 1u << i;
        if (f & PCP_F_WRITES)
            writes |= 1u << i;
        if (f & PCP_F_BATCH)
            ck_assert(f & PCP_F_DIRECT);
        if (f & (PCP_F_LEARNS | PCP_F_CREATES))
            ck_assert(f & PCP_F_WRITES);
        if (f & PCP_F_CREATES)
            ck_assert(f & PCP_F_DIRECT);
        if (f & PCP_F_OPT_WRITES) /* only predict with an event: a write only with its options */
            ck_assert(i == PCP_M_PREDICT);
    }
    ck_assert_uint_eq(direct, 1u << PCP_M_PREDICT | 1u << PCP_M_LABEL | 1u << PCP_M_PREDICT_BATCH |
                                  1u << PCP_M_LABEL_BATCH | 1u << PCP_M_LABEL_EVENT);
    ck_assert_uint_eq(writes, 1u << PCP_M_LABEL | 1u << PCP_M_LABEL_BATCH | 1u << PCP_M_CREATE |
                                  1u << PCP_M_DROP | 1u << PCP_M_RESET | 1u << PCP_M_LABEL_EVENT |
                                  1u << PCP_M_PROMOTE | 1u << PCP_M_ROLLBACK | 1u << PCP_M_IMPORT |
                                  1u << PCP_M_COPY);
    ck_assert(!pcp_method_writes(PCP_M_PREDICT, 2, NULL) && pcp_method_writes(PCP_M_PREDICT, 3, NULL));
    ck_assert(pcp_method_writes(PCP_M_LABEL, 3, NULL) && !pcp_method_writes(PCP_M_INFO, 1, NULL));
    /* decoded options: an event makes predict a write, {"explain": K} alone does not */
    msgpack_object_kv ev = {.key = {.type = MSGPACK_OBJECT_STR, .via.str = {5, "event"}},
                            .val = {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 7}};
    msgpack_object_kv ex = {.key = {.type = MSGPACK_OBJECT_STR, .via.str = {7, "explain"}},
                            .val = {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 3}};
    msgpack_object_kv both[2] = {ex, ev};
    msgpack_object o_ev = {.type = MSGPACK_OBJECT_MAP, .via.map = {1, &ev}};
    msgpack_object o_ex = {.type = MSGPACK_OBJECT_MAP, .via.map = {1, &ex}};
    msgpack_object o_both = {.type = MSGPACK_OBJECT_MAP, .via.map = {2, both}};
    msgpack_object o_nil = {.type = MSGPACK_OBJECT_NIL};
    ck_assert(pcp_method_writes(PCP_M_PREDICT, 3, &o_ev));
    ck_assert(pcp_method_writes(PCP_M_PREDICT, 3, &o_both));
    ck_assert(!pcp_method_writes(PCP_M_PREDICT, 3, &o_ex));
    ck_assert(!pcp_method_writes(PCP_M_PREDICT, 3, &o_nil));
    ck_assert(!pcp_method_writes(PCP_M_PREDICT_BATCH, 3, &o_ex));
    ck_assert_int_eq(pcp_method_right(&pcp_methods[PCP_M_PREDICT], 3, &o_ex), PCP_R_READ);
    ck_assert_int_eq(pcp_method_right(&pcp_methods[PCP_M_PREDICT], 3, &o_both), PCP_R_LEARN);
}
END_TEST

/* Each method's right, from its flags (docs/security.md's table), and a
 * row that writes without ADMIN or LEARNS still needs admin. */
START_TEST(method_rights)
{
    static const pcp_right want[PCP_M_COUNT] = {
        [PCP_M_PREDICT] = PCP_R_READ,  [PCP_M_LABEL] = PCP_R_LEARN,
        [PCP_M_PREDICT_BATCH] = PCP_R_READ, [PCP_M_LABEL_BATCH] = PCP_R_LEARN,
        [PCP_M_MODELS] = PCP_R_READ,   [PCP_M_INFO] = PCP_R_READ,
        [PCP_M_WEIGHTS] = PCP_R_READ,  [PCP_M_CREATE] = PCP_R_ADMIN,
        [PCP_M_DROP] = PCP_R_ADMIN,    [PCP_M_RESET] = PCP_R_ADMIN,
        [PCP_M_SAVE] = PCP_R_ADMIN,    [PCP_M_STATS] = PCP_R_READ,
        [PCP_M_PING] = PCP_R_NONE,     [PCP_M_AUTH] = PCP_R_NONE,
        [PCP_M_LABEL_EVENT] = PCP_R_LEARN, [PCP_M_COMPARE] = PCP_R_READ,
        [PCP_M_PROMOTE] = PCP_R_ADMIN, /* (predict with an event: learn, below) */
        [PCP_M_SNAPSHOTS] = PCP_R_ADMIN, [PCP_M_ROLLBACK] = PCP_R_ADMIN,
        [PCP_M_EXPORT] = PCP_R_ADMIN,  [PCP_M_IMPORT] = PCP_R_ADMIN,
        [PCP_M_COPY] = PCP_R_ADMIN,
    };
    /* a method added without a line here fails below (none would be its want) */
    for (int i = 0; i < PCP_M_COUNT; i++) {
        const pcp_method *m = &pcp_methods[i];
        ck_assert_msg(pcp_method_right(m, m->min_params, NULL) == want[i], "%s needs %s",
                      m->name, pcp_right_name(pcp_method_right(m, m->min_params, NULL)));
    }
    /* predict with an event makes the model learn later: learn, not read */
    ck_assert_int_eq(pcp_method_right(&pcp_methods[PCP_M_PREDICT], 3, NULL), PCP_R_LEARN);
    ck_assert_int_eq(pcp_method_right(&pcp_methods[PCP_M_PREDICT], 2, NULL), PCP_R_READ);
    pcp_method forgot = {"x", PCP_M_COUNT, 0, 0, PCP_F_WRITES, "", ""};
    ck_assert_int_eq(pcp_method_right(&forgot, 0, NULL), PCP_R_ADMIN);
    ck_assert_int_eq(pcp_right_find("learn"), PCP_R_LEARN);
    ck_assert_int_eq(pcp_right_find("root"), -1);
    ck_assert_str_eq(pcp_right_name(PCP_R_ADMIN), "admin");
}
END_TEST

START_TEST(envelope_errors)
{
    static const struct {
        const char *text;
        pcp_code code;
        bool has_msgid;
        uint32_t msgid;
        bool notification;
    } cases[] = {
        {"5", PCP_E_REQUEST, false, 0, false},
        {"{'a': 1}", PCP_E_REQUEST, false, 0, false},
        {"[]", PCP_E_REQUEST, false, 0, false},
        {"['x', 1, 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[1, 1, nil, nil]", PCP_E_REQUEST, false, 0, false},      /* a response */
        {"[3, 1, 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[-1, 1, 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[0.0, 1, 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[0]", PCP_E_REQUEST, false, 0, false},
        {"[0, -1, 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[0, 4294967296, 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[0, 1.0, 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[0, 'a', 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[0, nil, 'ping', []]", PCP_E_REQUEST, false, 0, false},
        {"[0, 7, 'ping']", PCP_E_REQUEST, true, 7, false},
        {"[0, 7]", PCP_E_REQUEST, true, 7, false},
        {"[0, 7, 'ping', [], 1]", PCP_E_REQUEST, true, 7, false},
        {"[0, 7, 5, []]", PCP_E_REQUEST, true, 7, false},
        {"[0, 7, b'ping', []]", PCP_E_REQUEST, true, 7, false},
        {"[0, 7, nil, []]", PCP_E_REQUEST, true, 7, false},
        {"[0, 7, 'ping', {}]", PCP_E_REQUEST, true, 7, false},
        {"[0, 7, 'ping', nil]", PCP_E_REQUEST, true, 7, false},
        {"[0, 7, 'ping', 'x']", PCP_E_REQUEST, true, 7, false},
        {"[0, 7, 'nope', []]", PCP_E_METHOD, true, 7, false},
        {"[0, 7, 'PING', []]", PCP_E_METHOD, true, 7, false},
        {"[0, 7, 'ping', [1]]", PCP_E_PARAMS, true, 7, false},
        {"[0, 7, 'predict', ['m']]", PCP_E_PARAMS, true, 7, false},
        {"[0, 7, 'label', ['m', {}]]", PCP_E_PARAMS, true, 7, false},
        {"[0, 7, 'weights', []]", PCP_E_PARAMS, true, 7, false},
        {"[0, 7, 'weights', ['m', 'c', 3, 4]]", PCP_E_PARAMS, true, 7, false},
        {"[2, 'label']", PCP_E_REQUEST, false, 0, true},
        {"[2, 'label', ['m', [1]], 1]", PCP_E_REQUEST, false, 0, true},
        {"[2, 1, []]", PCP_E_REQUEST, false, 0, true},
        {"[2, 'nope', []]", PCP_E_METHOD, false, 0, true},
        {"[2, 'label', ['m', [1]]]", PCP_E_PARAMS, false, 0, true},
        /* valid ones */
        {"[2, 'label', ['m', [1], 1]]", PCP_OK, false, 0, true},
        {"[0, 0, 'predict', ['m', {}]]", PCP_OK, true, 0, false},
        {"[0, 4294967295, 'ping', []]", PCP_OK, true, 4294967295u, false},
        {"[0, 9, 'weights', ['m', 'c', 3]]", PCP_OK, true, 9, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        obj ob;
        pcp_message m;
        pcp_error err = {0};
        pcp_code c = pcp_message_parse(obj_make(&ob, cases[i].text), &m, &err);
        ck_assert_msg(c == cases[i].code, "%s: code %d (%s), want %d", cases[i].text, c, err.msg,
                      cases[i].code);
        ck_assert_msg(m.has_msgid == cases[i].has_msgid, "%s: has_msgid", cases[i].text);
        ck_assert_uint_eq(m.msgid, cases[i].msgid);
        ck_assert_msg(m.notification == cases[i].notification, "%s: notification", cases[i].text);
        if (c != PCP_OK) {
            ck_assert_int_eq(err.code, c);
            ck_assert(strlen(err.msg) > 10);
        }
        obj_free(&ob);
    }
    /* the unknown method's name is quoted, escaped and cut */
    obj ob;
    pcp_message m;
    pcp_error err = {0};
    bytes_init(&ob.b);
    msgpack_pack_array(&ob.b.pk, 4);
    msgpack_pack_int(&ob.b.pk, 0);
    msgpack_pack_int(&ob.b.pk, 1);
    char name[300];
    memset(name, 'x', sizeof name);
    name[0] = '\n';
    name[1] = 0;
    msgpack_pack_str_with_body(&ob.b.pk, name, sizeof name);
    msgpack_pack_array(&ob.b.pk, 0);
    obj_unpack(&ob);
    ck_assert_int_eq(pcp_message_parse(&ob.o, &m, &err), PCP_E_METHOD);
    ck_assert_msg(strstr(err.msg, "'\\x0a\\x00xxx") && strstr(err.msg, "...'"), "%s", err.msg);
    obj_free(&ob);
}
END_TEST

START_TEST(params_accessors_and_model_names)
{
    obj ob;
    pcp_message m;
    pcp_error err = {0};
    ck_assert_int_eq(pcp_message_parse(obj_make(&ob, "[0, 1, 'weights', ['m', 5, -1]]"), &m, &err),
                     PCP_OK);
    const char *s;
    size_t len;
    uint64_t v;
    ck_assert_int_eq(pcp_param_str(&m, 0, "model", &s, &len, &err), PCP_OK);
    ck_assert(len == 1 && s[0] == 'm');
    ck_assert_int_eq(pcp_param_str(&m, 1, "class", &s, &len, &err), PCP_E_PARAMS);
    ck_assert(strstr(err.msg, "weights: param 2 (class) must be a string, not an integer"));
    ck_assert_int_eq(pcp_param_uint(&m, 1, "top_k", 10, &v, &err), PCP_OK);
    ck_assert_uint_eq(v, 5);
    ck_assert_int_eq(pcp_param_uint(&m, 1, "top_k", 4, &v, &err), PCP_E_PARAMS);
    ck_assert_int_eq(pcp_param_uint(&m, 2, "top_k", 10, &v, &err), PCP_E_PARAMS);
    ck_assert(strstr(err.msg, "top_k") && strstr(err.msg, "negative"));
    ck_assert_int_eq(pcp_param_str(&m, 3, "extra", &s, &len, &err), PCP_E_PARAMS);
    ck_assert(strstr(err.msg, "missing"));
    obj_free(&ob);

    static const struct { const char *text; pcp_code code; } names[] = {
        {"'good-name_1.v2'", PCP_OK},
        {"'1234567890123456789012345678901234567890123456789012345678901234'", PCP_OK},
        {"'12345678901234567890123456789012345678901234567890123456789012345'", PCP_E_MODEL},
        {"''", PCP_E_MODEL},
        {"'.hidden'", PCP_E_MODEL},
        {"'..'", PCP_E_MODEL},
        {"'a/b'", PCP_E_MODEL},
        {"'a b'", PCP_E_MODEL},
        {"'caf\xc3\xa9'", PCP_E_MODEL},
        {"5", PCP_E_PARAMS},
        {"b'm'", PCP_E_PARAMS},
        {"nil", PCP_E_PARAMS},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const msgpack_object *o = obj_make(&ob, names[i].text);
        s = NULL;
        pcp_code c = pcp_model_name(o, &s, &len, &err);
        ck_assert_msg(c == names[i].code, "%s: %d %s", names[i].text, c, err.msg);
        ck_assert(c != PCP_OK || (s == o->via.str.ptr && len == o->via.str.size));
        obj_free(&ob);
    }
}
END_TEST

START_TEST(errors_codes_and_quoting)
{
    for (int c = 0; c < PCP_CODE_COUNT; c++)
        ck_assert_str_ne(pcp_code_name((pcp_code)c), "unknown");
    ck_assert_str_eq(pcp_code_name(PCP_E_LIMIT), "limit");
    ck_assert_str_eq(pcp_code_name((pcp_code)99), "unknown");
    ck_assert_str_eq(pcp_code_name((pcp_code)-1), "unknown");
    char q[64];
    ck_assert_str_eq(pcp_quote(q, sizeof q, "ab'\\\x01", 5), "'ab\\x27\\x5c\\x01'");
    char big[100];
    memset(big, 'y', sizeof big);
    pcp_quote(q, sizeof q, big, sizeof big);
    ck_assert_uint_lt(strlen(q), sizeof q);
    ck_assert(strstr(q, "yyy...'") != NULL);
    char tiny[10];
    memset(big, 0x01, sizeof big);
    pcp_quote(tiny, sizeof tiny, big, sizeof big);   /* 9 bytes + NUL at most */
    ck_assert_uint_lt(strlen(tiny), sizeof tiny);
    char none[4] = "abc";
    pcp_quote(none, sizeof none, "x", 1);
    ck_assert_str_eq(none, "");
    ck_assert_int_eq(pcp_error_set(NULL, PCP_E_BUSY, "x"), PCP_E_BUSY);
    pcp_error err;
    ck_assert_int_eq(pcp_error_set(&err, PCP_E_SPEC, "key %s", "dim"), PCP_E_SPEC);
    ck_assert(err.code == PCP_E_SPEC && strcmp(err.msg, "key dim") == 0);
    pcp_limits l;
    pcp_limits_default(&l);
    ck_assert(l.max_message == 1u << 20 && l.max_features == 100000 && l.max_depth == 16 &&
              l.max_batch == 100000);
    ck_assert_int_eq(pcp_limits_check(&l, &err), PCP_OK);
    static const struct { size_t msg; uint32_t depth, feats, batch; const char *says; } bad[] = {
        {63, 16, 1, 1, "max_message 63 is out of range [64, 1073741824]"},
        {(1u << 30) + 1, 16, 1, 1, "max_message"},
        {1024, 2, 1, 1, "max_depth 2 is out of range [3, 32]"},
        {1024, 33, 1, 1, "max_depth 33"},
        {1024, 16, 0, 1, "max_features"},
        {1024, 16, 1, 0, "max_batch"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pcp_limits b = {bad[i].msg, bad[i].feats, bad[i].depth, bad[i].batch};
        ck_assert_int_eq(pcp_limits_check(&b, &err), PCP_E_LIMIT);
        ck_assert_msg(strstr(err.msg, bad[i].says), "%s", err.msg);
    }
    pcp_limits edge = {64, 1, 3, 1};
    ck_assert_int_eq(pcp_limits_check(&edge, &err), PCP_OK);
    edge.max_message = 1u << 30, edge.max_depth = 32;
    ck_assert_int_eq(pcp_limits_check(&edge, &err), PCP_OK);
}
END_TEST

/* ---- features ------------------------------------------------------------ */

/* Equal as sets of (index, value): the order of features is the order given. */
static void assert_svec_eq(pc_svec *a, pc_svec *b)
{
    pc_svec_sort(a);
    pc_svec_sort(b);
    ck_assert_uint_eq(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        ck_assert_uint_eq(a->idx[i], b->idx[i]);
        ck_assert(a->val[i] == b->val[i]);
    }
    ck_assert(a->norm2 == b->norm2);
}

static pcp_code feats(const char *text, uint32_t dim, const pcp_limits *lim, pc_svec *x,
                      pcp_error *err)
{
    obj ob;
    pc_namer nm = pc_namer_plain(dim);
    pcp_code c = pcp_features(obj_make(&ob, text), &nm, lim, x, NULL, err);
    obj_free(&ob);
    return c;
}

typedef struct seen_names {
    int n;
    uint32_t idx[8];
    char name[8][8];
    double value[8];
} seen_names;

static void remember(void *ud, uint32_t idx, const char *name, size_t len, double value)
{
    seen_names *s = ud;
    ck_assert_int_lt(s->n, 8);
    ck_assert_uint_lt(len, 8);
    s->idx[s->n] = idx;
    s->value[s->n] = value;
    memcpy(s->name[s->n], name, len);
    s->name[s->n][len] = 0;
    s->n++;
}

START_TEST(features_three_encodings_agree)
{
    const uint32_t dim = 64;
    pc_svec a, b, c;
    pc_svec_init(&a), pc_svec_init(&b), pc_svec_init(&c);
    pcp_error err = {0};
    /* integer keys: map, pairs, dense */
    ck_assert_int_eq(feats("{1: 2.0, 5: -1, 3: 0.5f}", dim, NULL, &a, &err), PCP_OK);
    ck_assert_int_eq(feats("[[5, -1], [1, 2], [3, 0.5]]", dim, NULL, &b, &err), PCP_OK);
    ck_assert_int_eq(feats("[0, 2.0, 0, 0.5, 0, -1]", dim, NULL, &c, &err), PCP_OK);
    assert_svec_eq(&a, &b);
    assert_svec_eq(&a, &c);
    ck_assert(a.n == 3 && a.idx[0] == 1 && a.idx[1] == 3 && a.idx[2] == 5 && a.norm2 == 5.25);

    /* string names hash with pc_hash_feature; the dense form of the same vector */
    uint32_t ha = pc_hash_feature("alpha", 5, dim), hb = pc_hash_feature("beta", 4, dim);
    ck_assert_int_eq(feats("{'alpha': 1.5, 'beta': -2}", dim, NULL, &a, &err), PCP_OK);
    ck_assert_int_eq(feats("[['beta', -2], ['alpha', 1.5]]", dim, NULL, &b, &err), PCP_OK);
    char dense[512];
    int len = snprintf(dense, sizeof dense, "[");
    for (uint32_t i = 0; i < dim; i++)
        len += snprintf(dense + len, sizeof dense - (size_t)len, "%s%g", i ? ", " : "",
                        (i == ha ? 1.5 : 0) + (i == hb ? -2 : 0));
    snprintf(dense + len, sizeof dense - (size_t)len, "]");
    ck_assert_int_eq(feats(dense, dim, NULL, &c, &err), PCP_OK);
    assert_svec_eq(&a, &b);
    assert_svec_eq(&a, &c);

    /* duplicates are summed, zeros dropped, names and indices mix */
    ck_assert_int_eq(feats("{'alpha': 1, 'alpha': 2, 7: 1, 7: -1}", dim, NULL, &a, &err), PCP_OK);
    ck_assert(a.n == 1 && a.idx[0] == ha && a.val[0] == 3);
    ck_assert_int_eq(feats("[['alpha', 1], [7, 1], ['alpha', 2], [7, -1]]", dim, NULL, &b, &err),
                     PCP_OK);
    assert_svec_eq(&a, &b);

    /* value types: unsigned, negative, float32, float64, large (2^64, the bound) */
    ck_assert_int_eq(feats("[18446744073709551615, -9223372036854775808, 0.25f, 1e19]", dim, NULL,
                           &a, &err), PCP_OK);
    ck_assert(a.n == 4 && a.val[0] == 18446744073709551615.0 && a.val[1] == -9223372036854775808.0 &&
              a.val[2] == 0.25 && a.val[3] == 1e19);

    /* empty examples are valid */
    ck_assert_int_eq(feats("{}", dim, NULL, &a, &err), PCP_OK);
    ck_assert_uint_eq(a.n, 0);
    ck_assert_int_eq(feats("[]", dim, NULL, &a, &err), PCP_OK);
    ck_assert_uint_eq(a.n, 0);
    pc_svec_free(&a), pc_svec_free(&b), pc_svec_free(&c);
}
END_TEST

START_TEST(features_report_names_of_valid_examples_only)
{
    pc_svec x;
    pc_svec_init(&x);
    pcp_error err = {0};
    obj ob;
    seen_names s = {0};
    ck_assert_int_eq(features_named(obj_make(&ob, "{'a': 1, 3: 2, 'bc': 0.5}"), 32, NULL, &x, remember,
                                  &s, &err), PCP_OK);
    obj_free(&ob);
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(s.name[0], "a");
    ck_assert_str_eq(s.name[1], "bc");
    ck_assert_uint_eq(s.idx[0], pc_hash_feature("a", 1, 32));
    ck_assert_uint_eq(s.idx[1], pc_hash_feature("bc", 2, 32));
    ck_assert(s.value[0] == 1 && s.value[1] == 0.5); /* each name with its value */
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(features_named(obj_make(&ob, "[['zz', 1], [2, 2]]"), 32, NULL, &x, remember, &s,
                                  &err), PCP_OK);
    obj_free(&ob);
    ck_assert(s.n == 1 && strcmp(s.name[0], "zz") == 0);
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(features_named(obj_make(&ob, "{'a': 1, 'b': nan}"), 32, NULL, &x, remember, &s,
                                  &err), PCP_E_FEATURES);
    obj_free(&ob);
    ck_assert_int_eq(s.n, 0);
    ck_assert_uint_eq(x.n, 0);
    /* indices and dense rows: valid, and nothing to name */
    static const char *const unnamed[] = {"{1: 1, 3: 2}", "[[1, 1], [3, 2]]", "[0.5, 0, 2]"};
    for (size_t i = 0; i < 3; i++) {
        pcp_names_at at = {.depth = 9};
        ck_assert_int_eq(pcp_features(obj_make(&ob, unnamed[i]), &nm32, NULL, &x, &at, &err), PCP_OK);
        obj_free(&ob);
        ck_assert(x.n > 0 && !at.obj && !at.start);
    }
    pc_svec_free(&x);
}
END_TEST

START_TEST(features_bad_input)
{
    static const struct { const char *text; pcp_code code; const char *says; } cases[] = {
        {"{'a': nan}", PCP_E_FEATURES, "feature 'a': the value nan is not finite"},
        {"{'a': inf}", PCP_E_FEATURES, "not finite"},
        {"[['a', -inf]]", PCP_E_FEATURES, "not finite"},
        {"[1, nan]", PCP_E_FEATURES, "feature 1: the value nan"},
        {"{'a': true}", PCP_E_FEATURES, "must be a number, not a boolean"},
        {"{'a': 'x'}", PCP_E_FEATURES, "not a string"},
        {"{'a': nil}", PCP_E_FEATURES, "not nil"},
        {"{'a': [1]}", PCP_E_FEATURES, "not an array"},
        {"{'a': {}}", PCP_E_FEATURES, "not a map"},
        {"{'a': b'1'}", PCP_E_FEATURES, "not binary"},
        {"[1, true]", PCP_E_FEATURES, "feature 1"},
        {"[1, 'x']", PCP_E_FEATURES, "feature 1"},
        {"[1, nil]", PCP_E_FEATURES, "feature 1"},
        {"{16: 1}", PCP_E_FEATURES, "index 16 is outside the model's dimension 16"},
        {"[[16, 1]]", PCP_E_FEATURES, "index 16"},
        {"{4294967296: 1}", PCP_E_FEATURES, "index 4294967296"},
        {"{18446744073709551615: 1}", PCP_E_FEATURES, "outside"},
        {"{-1: 1}", PCP_E_FEATURES, "index -1 is negative"},
        {"[[-3, 1]]", PCP_E_FEATURES, "negative"},
        {"{1.5: 1}", PCP_E_FEATURES, "not a float"},
        {"{nil: 1}", PCP_E_FEATURES, "not nil"},
        {"{true: 1}", PCP_E_FEATURES, "not a boolean"},
        {"{b'a': 1}", PCP_E_FEATURES, "not binary"},
        {"{[1]: 1}", PCP_E_FEATURES, "not an array"},
        {"[['a']]", PCP_E_FEATURES, "item 0 must be a [name, value] pair"},
        {"[['a', 1, 2]]", PCP_E_FEATURES, "of another length"},
        {"[['a', 1], 5]", PCP_E_FEATURES, "item 1 must be a [name, value] pair"},
        {"[['a', 1], {}]", PCP_E_FEATURES, "item 1"},
        {"[1, [2, 3]]", PCP_E_FEATURES, "item 1 is an array but item 0 is a number"},
        {"'abc'", PCP_E_FEATURES, "features must be a map"},
        {"nil", PCP_E_FEATURES, "not nil"},
        {"5", PCP_E_FEATURES, "not an integer"},
        {"true", PCP_E_FEATURES, "not a boolean"},
        {"{'a': 1e300, 'b': 1e300}", PCP_E_FEATURES, "feature 'a': the value 1e+300 is too large"},
        {"{'a': -2e19}", PCP_E_FEATURES, "at most 2^64"},
        {"[1, 18446744073709555712.0]", PCP_E_FEATURES, "feature 1: the value"}, /* 2^64 + 4096 */
        {"{'a': 1.5e19, 'a': 1.5e19}", PCP_E_FEATURES, "values sum to 3e+19"},
        /* the bound itself, and any 64-bit integer */
        {"{'a': 18446744073709551615, 'b': -9223372036854775808}", PCP_OK, NULL},
        {"{'a': 18446744073709551616.0, 'b': -18446744073709551616.0}", PCP_OK, NULL},
        {"{'a': 1, 'b': 1, 'c': 1, 'd': 1, 'e': 1}", PCP_E_LIMIT, "5 features exceed max_features (4)"},
        {"[['a', 1], ['b', 1], ['c', 1], ['d', 1], ['e', 1]]", PCP_E_LIMIT, "max_features (4)"},
        {"[1, 2, 3, 4, 5]", PCP_E_LIMIT, "max_features (4)"},
        {"[0, 0, 0, 0, 0]", PCP_E_LIMIT, "max_features (4)"},
        /* exactly at the limit */
        {"{'a': 1, 'b': 1, 'c': 1, 'd': 1}", PCP_OK, NULL},
        {"[1, 2, 3, 4]", PCP_OK, NULL},
    };
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_features = 4;
    pc_svec x;
    pc_svec_init(&x);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pcp_error err = {0};
        ck_assert_int_eq(pc_svec_push(&x, 1, 1), PC_OK);   /* left over from a previous example */
        pcp_code c = feats(cases[i].text, 16, &lim, &x, &err);
        ck_assert_msg(c == cases[i].code, "%s: %d %s", cases[i].text, c, err.msg);
        if (c != PCP_OK) {
            ck_assert_int_eq(err.code, c);
            ck_assert_msg(strstr(err.msg, cases[i].says), "%s: message '%s' lacks '%s'",
                          cases[i].text, err.msg, cases[i].says);
            ck_assert_uint_eq(x.n, 0);
        }
    }
    /* a dense row longer than the dimension */
    pcp_error err = {0};
    ck_assert_int_eq(feats("[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]", 16, NULL, &x, &err),
                     PCP_E_FEATURES);
    ck_assert(strstr(err.msg, "17 values but the model's dimension is 16"));
    ck_assert_int_eq(feats("[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]", 16, NULL, &x, &err),
                     PCP_OK);
    ck_assert(x.n == 1 && x.idx[0] == 15);
    pc_svec_free(&x);
}
END_TEST

START_TEST(batches)
{
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_batch = 3;
    pcp_error err = {0};
    const msgpack_object *items;
    uint32_t n;
    obj ob;
    ck_assert_int_eq(pcp_batch(obj_make(&ob, "[[{'a': 1}, 1], [[1, 2], -1], [[], true]]"), true, &lim,
                               &items, &n, &err), PCP_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(items[1].via.array.ptr[1].type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
    obj_free(&ob);
    ck_assert_int_eq(pcp_batch(obj_make(&ob, "[{'a': 1}, [1, 2]]"), false, &lim, &items, &n, &err),
                     PCP_OK);
    ck_assert_uint_eq(n, 2);
    obj_free(&ob);
    ck_assert_int_eq(pcp_batch(obj_make(&ob, "[]"), true, &lim, &items, &n, &err), PCP_OK);
    ck_assert_uint_eq(n, 0);
    obj_free(&ob);
    static const struct { const char *text; bool labelled; pcp_code code; const char *says; } bad[] = {
        {"[1, 2, 3, 4]", false, PCP_E_LIMIT, "4 examples exceeds max_batch (3)"},
        {"{}", false, PCP_E_PARAMS, "must be an array of features, not a map"},
        {"nil", true, PCP_E_PARAMS, "[features, label] pairs"},
        {"[[{}, 1], [{}]]", true, PCP_E_PARAMS, "batch item 1 must be a [features, label] pair"},
        {"[[{}, 1, 2]]", true, PCP_E_PARAMS, "of another length"},
        {"[{}]", true, PCP_E_PARAMS, "not a map"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pcp_code c = pcp_batch(obj_make(&ob, bad[i].text), bad[i].labelled, &lim, &items, &n, &err);
        ck_assert_msg(c == bad[i].code && strstr(err.msg, bad[i].says), "%s: %d %s", bad[i].text, c,
                      err.msg);
        obj_free(&ob);
    }
}
END_TEST

/* ---- labels -------------------------------------------------------------- */

START_TEST(labels)
{
    static const struct { const char *text; int y; } good[] = {
        {"1", 1}, {"-1", -1}, {"1.0", 1}, {"-1.0", -1}, {"1.0f", 1}, {"-1.0f", -1},
        {"true", 1}, {"false", -1},
    };
    pc_label l;
    pcp_error err = {0};
    obj ob;
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        memset(&l, 0x55, sizeof l);
        ck_assert_int_eq(pcp_label(obj_make(&ob, good[i].text), false, &l, &err), PCP_OK);
        ck_assert_int_eq(l.y, good[i].y);
        ck_assert_ptr_null(l.cls);
        obj_free(&ob);
    }
    static const struct { const char *text; bool multi; const char *says; } bad[] = {
        {"0", false, "not 0: map 0/1 labels to -1/1"},
        {"2", false, "not 2"},
        {"-2", false, "not -2"},
        {"0.5", false, "not 0.5"},
        {"nan", false, "not nan"},
        {"'yes'", false, "this model is binary"},
        {"nil", false, "not nil"},
        {"[1]", false, "not an array"},
        {"{}", false, "not a map"},
        {"b'1'", false, "not binary"},
        {"1", true, "send numbered classes as strings"},
        {"-1", true, "send numbered classes as strings"},
        {"true", true, "not a boolean"},
        {"nil", true, "not nil"},
        {"b'cat'", true, "not binary"},
        {"''", true, "1 to 255 bytes"},
        {"'1234567890123456789012345678901234567890123456789012345678901234567890123456789012345"
         "6789012345678901234567890123456789012345678901234567890123456789012345678901234567890"
         "1234567890123456789012345678901234567890123456789012345678901234567890123456789012345"
         "6'", true, "got 256 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pcp_code c = pcp_label(obj_make(&ob, bad[i].text), bad[i].multi, &l, &err);
        ck_assert_msg(c == PCP_E_LABEL && strstr(err.msg, bad[i].says), "%s: %d %s", bad[i].text, c,
                      err.msg);
        obj_free(&ob);
    }
    const msgpack_object *o = obj_make(&ob, "'cat'");
    ck_assert_int_eq(pcp_label(o, true, &l, &err), PCP_OK);
    ck_assert(l.cls == o->via.str.ptr && l.cls_len == 3 && l.y == 0);
    obj_free(&ob);
    /* a class name with a NUL inside */
    bytes_init(&ob.b);
    msgpack_pack_str_with_body(&ob.b.pk, "a\0b", 3);
    obj_unpack(&ob);
    ck_assert_int_eq(pcp_label(&ob.o, true, &l, &err), PCP_E_LABEL);
    obj_free(&ob);
}
END_TEST

/* ---- model specs ---------------------------------------------------------- */

START_TEST(spec_with_every_key)
{
    obj ob;
    pc_model_config c;
    char **classes = NULL;
    pcp_error err = {0};
    const msgpack_object *o = obj_make(&ob,
        "{'params': {'eta': 0.5}, 'rule': 'perceptron', 'hash_bits': 10, 'bias': false, "
        "'bias_value': 2, 'averaged': true, 'mode': 'batch', 'classes': ['cat', 'dog'], "
        "'open_classes': true, 'storage': 'sparse', 'weights': 'float64'}");
    ck_assert_msg(pcp_model_spec(o, NULL, &c, &classes, &err) == PCP_OK, "%s", err.msg);
    obj_free(&ob);   /* the config and classes do not point into the message */
    ck_assert_ptr_eq(c.rule, pc_rule_find("perceptron"));
    ck_assert(c.params.val[0].n == 1 && c.params.val[0].v[0] == 0.5);
    ck_assert_uint_eq(c.dim, 1024);
    ck_assert(!c.bias && c.bias_value == 2 && c.averaged && c.batch);
    ck_assert_int_eq(c.storage, PC_STORAGE_SPARSE);
    ck_assert(c.multiclass && c.open_classes && c.nclasses == 2);
    ck_assert_ptr_eq((const void *)c.classes, (const void *)classes);
    ck_assert(strcmp(classes[0], "cat") == 0 && strcmp(classes[1], "dog") == 0 && !classes[2]);
    pc_model *m = NULL;
    pc_error pe;
    ck_assert_msg(pc_model_new(&c, &m, &pe) == PC_OK, "%s", pe.msg);
    ck_assert_uint_eq(pc_model_class_count(m), 2);
    pc_model_free(m);
    pcp_classes_free(classes);

    /* the empty spec is the default config; dim directly; a list param of one */
    pc_model_config d;
    pc_model_config_default(&d, 1u << 20);
    ck_assert_int_eq(pcp_model_spec(obj_make(&ob, "{}"), NULL, &c, &classes, &err), PCP_OK);
    ck_assert(memcmp(&c, &d, sizeof c) == 0 && classes == NULL);
    obj_free(&ob);
    ck_assert_int_eq(pcp_model_spec(obj_make(&ob, "{'dim': 100, 'params': {'eta': [2]}, "
                                                  "'mode': 'online', 'open_classes': false}"),
                                    NULL, &c, &classes, &err), PCP_OK);
    ck_assert(c.dim == 100 && c.params.val[0].v[0] == 2 && !c.batch && !c.multiclass);
    obj_free(&ob);
    ck_assert_int_eq(pcp_model_spec(obj_make(&ob, "{'open_classes': true}"), NULL, &c, &classes, &err),
                     PCP_OK);
    ck_assert(c.multiclass && c.open_classes && c.nclasses == 0 && !classes);
    obj_free(&ob);
    /* pc_model_new finishes the validation */
    ck_assert_int_eq(pcp_model_spec(obj_make(&ob, "{'bias_value': 0}"), NULL, &c, &classes, &err), PCP_OK);
    ck_assert_int_eq(pc_model_new(&c, &m, &pe), PC_EINVAL);
    obj_free(&ob);
}
END_TEST

START_TEST(spec_bad_keys_and_types)
{
    static const struct { const char *text; const char *says; } bad[] = {
        {"5", "a model spec must be a map"},
        {"['rule']", "not an array"},
        {"{'rule': 5}", "'rule' must be a rule name"},
        {"{'rule': 'nosuch'}", "unknown rule 'nosuch'; rules are: perceptron"},
        {"{'rule': ''}", "unknown rule"},
        {"{'rule': 'perceptron perceptron perceptron perceptron perceptron perceptron x'}",
         "unknown rule"},
        {"{'params': 5}", "'params' must be a map"},
        {"{'storage': 'compact'}", "'storage' must be \"dense\", \"sparse\" or \"auto\""},
        {"{'storage': 1}", "'storage' must be"},
        {"{'weights': 'double'}", "'weights' must be \"float64\" or \"float32\""},
        {"{'params': {'eta': 'x'}}", "'params.eta' must be a finite number"},
        {"{'params': {'eta': nan}}", "'params.eta'"},
        {"{'params': {'eta': true}}", "'params.eta'"},
        {"{'params': {'eta': [nan]}}", "'params.eta': value 0 must be a finite number"},
        {"{'params': {'eta': [1, 'x']}}", "value 1"},
        {"{'params': {'eta': -1}}", "'eta' = -1 is out of range"},
        {"{'params': {'eta': 0}}", "out of range"},
        {"{'params': {'eta': [1, 2]}}", "takes one number"},
        {"{'params': {'eta': []}}", "takes one number"},
        {"{'params': {'eta': [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}}", "at most 16"},
        {"{'params': {'nosuch': 1}}", "has no parameter 'nosuch'; it takes: eta"},
        {"{'params': {5: 1}}", "names must be strings"},
        {"{'dim': 0}", "'dim' must be an integer in [1, 268435456]"},
        {"{'dim': -1}", "'dim'"},
        {"{'dim': 'x'}", "'dim'"},
        {"{'dim': 1.0}", "'dim'"},
        {"{'dim': 268435457}", "'dim'"},
        {"{'hash_bits': 0}", "'hash_bits' must be an integer in [1, 28]"},
        {"{'hash_bits': 29}", "'hash_bits'"},
        {"{'hash_bits': 1.5}", "'hash_bits'"},
        {"{'dim': 5, 'hash_bits': 3}", "give one"},
        {"{'hash_bits': 3, 'dim': 5}", "give one"},
        {"{'bias': 1}", "'bias' must be true or false, not an integer"},
        {"{'bias_value': 'x'}", "'bias_value' must be a finite number"},
        {"{'bias_value': inf}", "'bias_value'"},
        {"{'averaged': 'yes'}", "'averaged' must be true or false"},
        {"{'mode': 'fast'}", "'mode' must be \"online\" or \"batch\", not 'fast'"},
        {"{'mode': 1}", "'mode'"},
        {"{'classes': 'a'}", "'classes' must be a list of class names"},
        {"{'classes': ['a', 'a']}", "class 'a' is listed twice"},
        {"{'classes': ['a', 1]}", "class 1 must be a string"},
        {"{'classes': ['']}", "class 0 must be 1 to 255 bytes"},
        {"{'open_classes': 1}", "'open_classes' must be true or false"},
        {"{'nosuch': 1}", "unknown spec key 'nosuch'; keys are: rule, params, dim"},
        {"{'name': 'm'}", "unknown spec key 'name'"},
        {"{1: 2}", "unknown spec key (an integer)"},
        {"{'dim': 5, 'dim': 6}", "'dim' is given twice"},
        {"{'classes': ['a'], 'classes': ['b']}", "given twice"},
        {"{'classes': ['a', 'b'], 'mode': 'x'}", "'mode'"},   /* classes copied, then freed */
        /* what only the whole spec shows names the key to blame (pcp_spec_finish) */
        {"{'classes': []}", "spec key 'classes': a multiclass model needs classes"},
        {"{'join.default_label': 'cat'}", "spec key 'join.default_label': the default label"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        obj ob;
        pc_model_config c;
        memset(&c, 0xab, sizeof c);
        pc_model_config before = c;
        char **classes = (char **)&c;   /* a sentinel that must not change */
        pcp_error err = {0};
        pcp_code code = pcp_model_spec(obj_make(&ob, bad[i].text), NULL, &c, &classes, &err);
        ck_assert_msg(code == PCP_E_SPEC && err.code == PCP_E_SPEC, "%s: %d %s", bad[i].text, code,
                      err.msg);
        ck_assert_msg(strstr(err.msg, bad[i].says), "%s: message '%s' lacks '%s'", bad[i].text,
                      err.msg, bad[i].says);
        ck_assert(memcmp(&c, &before, sizeof c) == 0 && classes == (char **)&c);
        obj_free(&ob);
    }
}
END_TEST

/* ---- encoding ------------------------------------------------------------ */

/* Unpacks the single object in b and checks it is [1, msgid, err, result]. */
static const msgpack_object *response(bytes *b, msgpack_unpacked *u, uint32_t msgid)
{
    size_t len = 0;
    pcp_error err = {0};
    ck_assert_int_eq(scan_once((const uint8_t *)b->sb.data, b->sb.size, NULL, &len, &err), 1);
    ck_assert_uint_eq(len, b->sb.size);
    size_t off = 0;
    msgpack_unpacked_init(u);
    ck_assert_int_eq(msgpack_unpack_next(u, b->sb.data, b->sb.size, &off), MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *o = &u->data;
    ck_assert(o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 4);
    ck_assert(o->via.array.ptr[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
              o->via.array.ptr[0].via.u64 == 1);
    ck_assert(o->via.array.ptr[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
              o->via.array.ptr[1].via.u64 == msgid);
    return o->via.array.ptr;
}

static const msgpack_object *map_get(const msgpack_object *m, const char *key)
{
    ck_assert_int_eq(m->type, MSGPACK_OBJECT_MAP);
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        const msgpack_object *k = &m->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
            return &m->via.map.ptr[i].val;
    }
    return NULL;
}

static bool str_is(const msgpack_object *o, const char *s)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
           memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

START_TEST(encode_responses)
{
    bytes b;
    msgpack_unpacked u;
    bytes_init(&b);
    pcp_pack_response_ok(&b.pk, 4294967295u);
    pcp_pack_str(&b.pk, "pong");
    const msgpack_object *r = response(&b, &u, 4294967295u);
    ck_assert(r[2].type == MSGPACK_OBJECT_NIL && str_is(&r[3], "pong"));
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&b.sb);

    bytes_init(&b);
    pcp_error err;
    pcp_error_set(&err, PCP_E_LIMIT, "5 features exceed max_features (4)");
    pcp_pack_response_error(&b.pk, 17, &err);
    r = response(&b, &u, 17);
    ck_assert(r[2].type == MSGPACK_OBJECT_MAP && r[2].via.map.size == 2 &&
              r[3].type == MSGPACK_OBJECT_NIL);
    const msgpack_object *code = map_get(&r[2], "code");
    ck_assert(code && code->type == MSGPACK_OBJECT_POSITIVE_INTEGER && code->via.u64 == PCP_E_LIMIT);
    ck_assert(str_is(map_get(&r[2], "message"), "5 features exceed max_features (4)"));
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&b.sb);
}
END_TEST

START_TEST(encode_predictions_and_outcomes)
{
    pcp_error err = {0};
    pc_error pe;
    pc_svec x;
    pc_svec_init(&x);
    obj ob;
    ck_assert_int_eq(pcp_features(obj_make(&ob, "{1: 1, 2: -0.5}"), &nm8, NULL, &x, NULL, &err),
                     PCP_OK);
    obj_free(&ob);

    /* binary: label 1/-1, score, no scores */
    pc_model *m = tu_model("perceptron", 8, true);
    pc_label y = {.y = -1};
    pc_outcome out;
    ck_assert_int_eq(pc_model_label(m, &x, &y, &out, &pe), PC_OK);
    bytes b;
    msgpack_unpacked u;
    bytes_init(&b);
    pcp_pack_response_ok(&b.pk, 1);
    pcp_pack_outcome(&b.pk, m, &out, 0);
    const msgpack_object *r = response(&b, &u, 1);
    ck_assert_uint_eq(r[3].via.map.size, 4);
    const msgpack_object *v = map_get(&r[3], "predicted");
    ck_assert(v && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 == 1); /* score 0 -> +1 */
    v = map_get(&r[3], "score");
    ck_assert(v && v->type == MSGPACK_OBJECT_FLOAT64 && v->via.f64 == out.pred.score);
    v = map_get(&r[3], "mistake");
    ck_assert(v && v->type == MSGPACK_OBJECT_BOOLEAN && v->via.boolean == out.mistake && out.mistake);
    v = map_get(&r[3], "updated");
    ck_assert(v && v->type == MSGPACK_OBJECT_BOOLEAN && v->via.boolean);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&b.sb);

    pc_prediction p;
    pc_model_predict(m, &x, &p, NULL);
    bytes_init(&b);
    pcp_pack_response_ok(&b.pk, 2);
    pcp_pack_prediction(&b.pk, m, &p, NULL, 0);
    r = response(&b, &u, 2);
    ck_assert_uint_eq(r[3].via.map.size, 3);
    v = map_get(&r[3], "label");
    ck_assert(v && v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && v->via.i64 == -1);
    v = map_get(&r[3], "score");
    ck_assert(v && v->via.f64 == p.score && p.score < 0);
    ck_assert_ptr_null(map_get(&r[3], "scores"));
    /* the calibrated probability (binary: of the label +1) */
    v = map_get(&r[3], "probability");
    ck_assert(v && v->type == MSGPACK_OBJECT_FLOAT64 &&
              v->via.f64 == pc_model_probability(m, 0, p.score) && v->via.f64 > 0 &&
              v->via.f64 < 1);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&b.sb);
    pc_model_free(m);

    /* multiclass: class names and the scores map */
    pc_model_config c;
    char **classes = NULL;
    ck_assert_int_eq(pcp_model_spec(obj_make(&ob, "{'dim': 8, 'classes': ['cat', 'dog', 'eel']}"),
                                    NULL, &c, &classes, &err), PCP_OK);
    obj_free(&ob);
    ck_assert_int_eq(pc_model_new(&c, &m, &pe), PC_OK);
    pcp_classes_free(classes);
    const msgpack_object *lo = obj_make(&ob, "'dog'");
    ck_assert_int_eq(pcp_label(lo, true, &y, &err), PCP_OK);
    ck_assert_int_eq(pc_model_label(m, &x, &y, &out, &pe), PC_OK);
    obj_free(&ob);
    double scores[3];
    pc_model_predict(m, &x, &p, scores);
    bytes_init(&b);
    pcp_pack_response_ok(&b.pk, 3);
    pcp_pack_prediction(&b.pk, m, &p, scores, 0);
    r = response(&b, &u, 3);
    ck_assert(str_is(map_get(&r[3], "label"), "dog"));
    v = map_get(&r[3], "scores");
    ck_assert(v && v->type == MSGPACK_OBJECT_MAP && v->via.map.size == 3);
    ck_assert(map_get(v, "cat")->via.f64 == scores[0] && map_get(v, "dog")->via.f64 == scores[1] &&
              map_get(v, "eel")->via.f64 == scores[2]);
    ck_assert(map_get(&r[3], "score")->via.f64 == scores[1]);
    /* probabilities per class, normalized as pc_model_probabilities does */
    double probs[3];
    pc_model_probabilities(m, scores, probs);
    v = map_get(&r[3], "probabilities");
    ck_assert(v && v->type == MSGPACK_OBJECT_MAP && v->via.map.size == 3);
    ck_assert(map_get(v, "cat")->via.f64 == probs[0] && map_get(v, "dog")->via.f64 == probs[1] &&
              map_get(v, "eel")->via.f64 == probs[2]);
    ck_assert(fabs(probs[0] + probs[1] + probs[2] - 1) < 1e-12);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&b.sb);
    pc_model_free(m);

    /* calibrate: false (the spec key): the answers leave the probabilities out */
    static const char *const uncal[] = {"{'dim': 8, 'calibrate': false}",
                                        "{'dim': 8, 'calibrate': false, 'classes': ['cat', 'dog']}"};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(pcp_model_spec(obj_make(&ob, uncal[k]), NULL, &c, &classes, &err), PCP_OK);
        obj_free(&ob);
        ck_assert(!c.calibrate);
        ck_assert_int_eq(pc_model_new(&c, &m, &pe), PC_OK);
        pcp_classes_free(classes);
        pc_model_predict(m, &x, &p, scores);
        bytes_init(&b);
        pcp_pack_response_ok(&b.pk, 5);
        pcp_pack_prediction(&b.pk, m, &p, k ? scores : NULL, 0);
        r = response(&b, &u, 5);
        ck_assert_uint_eq(r[3].via.map.size, k ? 3 : 2); /* label, score (, scores) */
        ck_assert(map_get(&r[3], "label") && map_get(&r[3], "score"));
        ck_assert(!k || map_get(&r[3], "scores"));
        ck_assert_ptr_null(map_get(&r[3], "probability"));
        ck_assert_ptr_null(map_get(&r[3], "probabilities"));
        msgpack_unpacked_destroy(&u);
        msgpack_sbuffer_destroy(&b.sb);
        pc_model_free(m);
    }

    /* an open multiclass model with no class yet predicts nil */
    ck_assert_int_eq(pcp_model_spec(obj_make(&ob, "{'dim': 8, 'open_classes': true}"), NULL, &c, &classes,
                                    &err), PCP_OK);
    obj_free(&ob);
    ck_assert_int_eq(pc_model_new(&c, &m, &pe), PC_OK);
    pc_model_predict(m, &x, &p, NULL);
    bytes_init(&b);
    pcp_pack_response_ok(&b.pk, 4);
    pcp_pack_prediction(&b.pk, m, &p, NULL, 0);
    r = response(&b, &u, 4);
    v = map_get(&r[3], "label");
    ck_assert(v && v->type == MSGPACK_OBJECT_NIL);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&b.sb);
    pc_model_free(m);
    pc_svec_free(&x);
}
END_TEST

/* A whole request through every step: bytes -> scan -> unpack -> envelope ->
 * params -> model -> response bytes -> msgpack-c. */
START_TEST(request_round_trip)
{
    obj ob;
    pcp_message msg;
    pcp_error err = {0};
    pc_error pe;
    ck_assert_int_eq(pcp_message_parse(obj_make(&ob, "[0, 42, 'label', ['m', [['w', 1], [3, 2.0]], true]]"),
                                       &msg, &err), PCP_OK);
    ck_assert(msg.method->id == PCP_M_LABEL && msg.msgid == 42 && !msg.notification);
    const char *name;
    size_t nl;
    ck_assert_int_eq(pcp_model_name(&msg.params[0], &name, &nl, &err), PCP_OK);
    ck_assert(nl == 1 && name[0] == 'm');
    pc_model *m = tu_model("perceptron", 16, false);
    pc_svec x;
    pc_svec_init(&x);
    seen_names s = {0};
    ck_assert_int_eq(features_named(&msg.params[1], 16, NULL, &x, remember, &s, &err), PCP_OK);
    ck_assert(s.n == 1 && s.idx[0] == pc_hash_feature("w", 1, 16));
    pc_label y;
    ck_assert_int_eq(pcp_label(&msg.params[2], false, &y, &err), PCP_OK);
    pc_outcome out;
    ck_assert_int_eq(pc_model_label(m, &x, &y, &out, &pe), PC_OK);
    bytes b;
    msgpack_unpacked u;
    bytes_init(&b);
    pcp_pack_response_ok(&b.pk, msg.msgid);
    pcp_pack_outcome(&b.pk, m, &out, 0);
    const msgpack_object *r = response(&b, &u, 42);
    ck_assert(map_get(&r[3], "updated")->via.boolean);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&b.sb);
    obj_free(&ob);
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("proto");
    TU_TCASE(s, "scan", 0, scan_every_prefix_of_valid_messages, scan_resumes_in_linear_time,
        scan_refuses_huge_headers_at_once, scan_depth_limit, scan_size_limit,
        scanned_messages_bound_the_unpackers_memory);
    TU_TCASE(s, "fuzz", 0, fuzz_random_buffers, fuzz_mutated_messages);
    TU_TCASE(s, "envelope", 0, method_table_is_complete, method_flags_are_consistent, method_rights,
        envelope_errors, params_accessors_and_model_names, errors_codes_and_quoting);
    TU_TCASE(s, "decode", 0, features_three_encodings_agree,
        features_report_names_of_valid_examples_only, features_bad_input, batches, labels,
        spec_with_every_key, spec_bad_keys_and_types);
    TU_TCASE(s, "encode", 0, encode_responses, encode_predictions_and_outcomes, request_round_trip);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
