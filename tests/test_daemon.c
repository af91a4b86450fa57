/* test_daemon.c - daemon/ parts that need no socket: every method of proto's
 * table has a handler, the reply maps are whole msgpack objects (a map
 * header with a wrong count would leave bytes over, or want more), and the
 * feature name map keeps, serialises and sizes its names. */
#include <check.h>
#include <stdlib.h>

#include "daemon/dispatch.h"
#include "daemon/replies.h"
#include "tests/testutil.h"

START_TEST(every_method_has_a_handler)
{
    ck_assert(pcd_dispatch_complete());
}
END_TEST

/* The packed bytes are exactly one object. */
static void ck_one_object(const msgpack_sbuffer *sb)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    ck_assert_int_eq(msgpack_unpack_next(&u, sb->data, sb->size, &off), MSGPACK_UNPACK_SUCCESS);
    ck_assert_uint_eq(off, sb->size);
    msgpack_unpacked_destroy(&u);
}

START_TEST(reply_maps_are_whole)
{
    pcd_registry r;
    ck_assert_int_eq(pcd_registry_init(&r), 0);
    pc_model_config cfg;
    pc_model_config_default(&cfg, 16);
    pc_model *m;
    pc_error perr;
    ck_assert_int_eq(pc_model_new(&cfg, &m, &perr), PC_OK);
    pcd_model *e = pcd_registry_add(&r, "m", m);
    ck_assert_ptr_nonnull(e);
    pcd_names_note(&e->names, 3, "three", 5);
    pcd_server srv = {0};
    srv.counters.errors_by_code[PCP_E_LIMIT] = 2;
    uint32_t idx[2] = {3, 5};
    double w[2] = {1.5, -0.5};
    for (int which = 0; which < 7; which++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        switch (which) {
        case 0: pcd_reply_info(&pk, e, 100); break;
        case 1: pcd_reply_stats(&pk, &srv, 100); break;
        case 2: pcd_reply_weights(&pk, e, idx, w, 2); break;
        case 3: pcd_reply_models(&pk, &e, 1); break;
        case 4: pcd_reply_learned(&pk, 3, 2, 1); break;
        case 5: pcd_reply_dropped(&pk, "m", 2); break;
        default: pcd_reply_done(&pk, "created", "m"); break;
        }
        ck_one_object(&sb);
        msgpack_sbuffer_destroy(&sb);
    }
    pcd_registry_free(&r);
}
END_TEST

/* Through several table and arena growths: every name kept (the first for
 * an index), long ones refused, the serialised form read back to the same
 * map, and the memory near what the names take. */
START_TEST(feature_names_grow_round_trip_and_stay_compact)
{
    pcd_names n, back;
    pcd_names_init(&n);
    pcd_names_init(&back);
    char name[300];
    for (uint32_t i = 0; i < 20000; i++) {
        int len = snprintf(name, sizeof name, "w%u", i);
        pcd_names_note(&n, i * 37, name, (size_t)len);
        pcd_names_note(&n, i * 37, "other", 5); /* the first name stays */
    }
    memset(name, 'x', 256);
    pcd_names_note(&n, 5, name, 256); /* longer than PCD_NAME_LEN_MAX */
    ck_assert_uint_eq(n.count, 20000);
    ck_assert_ptr_null(pcd_names_get(&n, 5));
    ck_assert_ptr_null(pcd_names_get(&n, UINT32_MAX));
    for (uint32_t i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "w%u", i);
        ck_assert_str_eq(pcd_names_get(&n, i * 37), name);
    }
    /* 32768 slots of 8 bytes and an arena of 128 KiB for ~129 KB of names */
    ck_assert_uint_le(pcd_names_bytes(&n), 32768 * 8 + 131072);
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    ck_assert(pcd_names_append(&n, &buf, &len, &cap));
    ck_assert(pcd_names_parse(&back, buf, len));
    ck_assert_uint_eq(back.count, 20000);
    for (uint32_t i = 0; i < 20000; i += 7)
        ck_assert_str_eq(pcd_names_get(&back, i * 37), pcd_names_get(&n, i * 37));
    ck_assert(!pcd_names_parse(&back, buf, len - 1)); /* truncated */
    free(buf);
    pcd_names_free(&n);
    pcd_names_free(&back);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("daemon");
    TCase *tc = tcase_create("dispatch");
    tcase_add_test(tc, every_method_has_a_handler);
    tcase_add_test(tc, reply_maps_are_whole);
    tcase_add_test(tc, feature_names_grow_round_trip_and_stay_compact);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
