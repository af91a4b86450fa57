/* test_daemon.c - daemon/ parts that need no socket: every method of proto's
 * table has a handler, and the reply maps are whole msgpack objects (a map
 * header with a wrong count would leave bytes over, or want more). */
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

/* A name from the wire is bytes with a length and may hold a NUL: "m\0..."
 * is not "m".  The lookup compared with strncmp, which stops at the NUL, then
 * read the stored name at the wire name's length, past the end of "m"
 * (found by the request fuzz target; this name falls in m's bucket, so the
 * comparison runs). */
START_TEST(registry_find_takes_the_whole_name)
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
    ck_assert_ptr_eq(pcd_registry_find(&r, "m", 1), e);
    ck_assert_ptr_null(pcd_registry_find(&r, "m\0\xcc\xe3\xa3", 5));
    ck_assert_ptr_null(pcd_registry_find(&r, "m\0", 2));
    ck_assert_ptr_null(pcd_registry_find(&r, "", 0));
    pcd_registry_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("daemon");
    TCase *tc = tcase_create("dispatch");
    tcase_add_test(tc, every_method_has_a_handler);
    tcase_add_test(tc, reply_maps_are_whole);
    tcase_add_test(tc, registry_find_takes_the_whole_name);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
