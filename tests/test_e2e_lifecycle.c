/* test_e2e_lifecycle.c - a model's lifecycle against the real daemon (issue
 * 14): snapshot generations listed, rollback to one, export and import in the
 * snapshot file format, copy under a new name; each durable across kill -9
 * (the journal replays them) and within max_models. */
#include "tests/e2e.h"
#include "tests/testutil.h"

static e2e d;

#define NPROBE 8
static double probes[NPROBE][E2E_DIM];

static void make_probes(void)
{
    for (int i = 0; i < NPROBE; i++) {
        int y;
        e2e_example(1000 + (uint64_t)i, 77, false, probes[i], &y);
    }
}

static void train(pcc_client *c, const char *model, uint64_t from, uint64_t n)
{
    for (uint64_t i = from; i < from + n; i++) {
        double x[E2E_DIM];
        int y;
        e2e_example(i, 5, true, x, &y);
        e2e_label(c, model, E2E_DIM, x, y);
    }
}

static void scores(pcc_client *c, const char *model, double out[NPROBE])
{
    for (int i = 0; i < NPROBE; i++)
        out[i] = e2e_score(c, model, E2E_DIM, probes[i]);
}

static void same_scores(const double a[NPROBE], const double b[NPROBE])
{
    ck_assert(memcmp(a, b, NPROBE * sizeof *a) == 0);
}

static void start(void)
{
    e2e_init(&d, "journal: {fsync: always}\nsnapshot: {interval: 0, keep: 5}\n"
                 "limits: {max_models: 4}\n");
    e2e_start(&d);
    make_probes();
}

/* kill -9 and start again: what is left is the snapshots and the journal. */
static pcc_client *crash_and_restart(pcc_client *c)
{
    pcc_close(c);
    e2e_kill9(&d);
    e2e_start(&d);
    return e2e_connect(d.sock);
}

static msgpack_sbuffer exported; /* a copy of the last export's bytes */

/* Empty again (and freed): with CK_FORK=no the next test reuses it. */
static void forget_export(void)
{
    msgpack_sbuffer_destroy(&exported);
    msgpack_sbuffer_init(&exported);
}

static void export_model(pcc_client *c, const char *model)
{
    const msgpack_object *r = e2e_admin(c, "export", model, -1);
    ck_assert(r->type == MSGPACK_OBJECT_BIN);
    ck_assert(r->via.bin.size > 24 && memcmp(r->via.bin.ptr, "PCDSNAP\n", 8) == 0);
    forget_export();
    msgpack_sbuffer_write(&exported, r->via.bin.ptr, r->via.bin.size);
}

static const msgpack_object *import_model(pcc_client *c, const char *model, const void *bytes,
                                          size_t len, int replace, int64_t want)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "import", replace >= 0 ? 3 : 2, &id);
    e2e_str(pk, model);
    msgpack_pack_bin(pk, len);
    msgpack_pack_bin_body(pk, bytes, len);
    if (replace > 0)
        msgpack_pack_true(pk);
    else if (replace == 0)
        msgpack_pack_false(pk);
    return e2e_call(c, id, want);
}

START_TEST(export_then_import_is_bit_identical_and_durable)
{
    start();
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "a", "pa1", E2E_DIM, true);
    train(c, "a", 0, 60);
    char da[32], db[32];
    double sa[NPROBE], sb[NPROBE];
    e2e_info_digest(c, "a", da, sizeof da);
    scores(c, "a", sa);
    export_model(c, "a");
    const msgpack_object *r = import_model(c, "b", exported.data, exported.size, -1, -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "imported"), "b"));
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(r, "examples")), 60);
    e2e_info_digest(c, "b", db, sizeof db);
    ck_assert_str_eq(da, db);
    scores(c, "b", sb);
    same_scores(sa, sb);
    /* exists: refused unless replace */
    import_model(c, "b", exported.data, exported.size, 0, 9);
    import_model(c, "b", exported.data, exported.size, 1, -1);
    /* a damaged file is refused and changes nothing */
    exported.data[exported.size - 3] ^= 0x40;
    const msgpack_object *e = import_model(c, "bad", exported.data, exported.size, -1, 4);
    char msg[256];
    pcc_error_message(e, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "CRC"), "%s", msg);
    import_model(c, "bad", "PCDSNAP\n", 8, -1, 4);
    e2e_admin(c, "info", "bad", 5);
    /* the imported model learns on its own; the original does not move */
    train(c, "b", 60, 10);
    scores(c, "a", sb);
    same_scores(sa, sb);
    e2e_info_digest(c, "b", db, sizeof db);
    /* durable: the journal replays the import (with its bytes) after kill -9 */
    c = crash_and_restart(c);
    char again[32];
    e2e_info_digest(c, "b", again, sizeof again);
    ck_assert_str_eq(db, again);
    e2e_info_digest(c, "a", again, sizeof again);
    ck_assert_str_eq(da, again);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    forget_export();
    e2e_cleanup(&d);
}
END_TEST

START_TEST(rollback_restores_a_generations_exact_predictions)
{
    start();
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "r", "perceptron", E2E_DIM, true);
    train(c, "r", 0, 30);
    double gen1[NPROBE], now[NPROBE];
    scores(c, "r", gen1);
    e2e_admin(c, "save", NULL, -1);
    train(c, "r", 30, 30);
    e2e_admin(c, "save", NULL, -1);
    train(c, "r", 60, 5); /* unsaved: a rollback drops it too */
    const msgpack_object *l = e2e_admin(c, "snapshots", "r", -1);
    ck_assert(l->type == MSGPACK_OBJECT_ARRAY && l->via.array.size == 2);
    const msgpack_object *newest = &l->via.array.ptr[0], *oldest = &l->via.array.ptr[1];
    uint64_t g1 = (uint64_t)pcc_number(pcc_map_get(oldest, "generation"));
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(newest, "generation")), g1 + 1);
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(oldest, "examples")), 30);
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(newest, "examples")), 60);
    ck_assert(pcc_number(pcc_map_get(newest, "bytes")) > 0);
    ck_assert(pcc_number(pcc_map_get(newest, "written_at")) > 1.7e9);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "rollback", 2, &id);
    e2e_str(pk, "r");
    msgpack_pack_uint64(pk, g1);
    const msgpack_object *r = e2e_call(c, id, -1);
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(r, "examples")), 30);
    scores(c, "r", now);
    same_scores(gen1, now);
    ck_assert_uint_eq(e2e_info_u64(c, "r", "examples"), 30);
    /* a generation that is not there */
    pk = pcc_request(c, "rollback", 2, &id);
    e2e_str(pk, "r");
    msgpack_pack_uint64(pk, g1 + 99);
    e2e_call(c, id, 4);
    /* durable: after kill -9 the journal installs generation 1's model again
     * (the rollback is journaled with its bytes), then what followed */
    train(c, "r", 100, 3);
    double later[NPROBE];
    scores(c, "r", later);
    /* replay must not need generation 1's file (later saves may prune it) */
    char path[300];
    snprintf(path, sizeof path, "%s/state/r.%llu.snap", d.dir, (unsigned long long)g1);
    ck_assert_int_eq(unlink(path), 0);
    c = crash_and_restart(c);
    scores(c, "r", now);
    same_scores(later, now);
    ck_assert_uint_eq(e2e_info_u64(c, "r", "examples"), 33);
    /* and a snapshot written after it holds the rolled-back history */
    e2e_admin(c, "save", NULL, -1);
    c = crash_and_restart(c);
    scores(c, "r", now);
    same_scores(later, now);
    e2e_down(&d, c);
}
END_TEST

START_TEST(copy_is_identical_independent_durable_and_bounded)
{
    start();
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "src", "margin", E2E_DIM, true);
    train(c, "src", 0, 40);
    char ds[32], dc[32];
    e2e_info_digest(c, "src", ds, sizeof ds);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "copy", 2, &id);
    e2e_str(pk, "dup");
    e2e_str(pk, "src");
    const msgpack_object *r = e2e_call(c, id, -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "copied"), "dup"));
    e2e_info_digest(c, "dup", dc, sizeof dc);
    ck_assert_str_eq(ds, dc);
    train(c, "dup", 40, 7);
    char ds2[32];
    e2e_info_digest(c, "src", ds2, sizeof ds2);
    ck_assert_str_eq(ds, ds2);
    e2e_info_digest(c, "dup", dc, sizeof dc);
    /* copy onto an existing name, from an unknown one */
    pk = pcc_request(c, "copy", 2, &id);
    e2e_str(pk, "dup");
    e2e_str(pk, "src");
    e2e_call(c, id, 9);
    pk = pcc_request(c, "copy", 2, &id);
    e2e_str(pk, "x");
    e2e_str(pk, "nope");
    e2e_call(c, id, 5);
    c = crash_and_restart(c);
    char again[32];
    e2e_info_digest(c, "dup", again, sizeof again);
    ck_assert_str_eq(dc, again);
    /* max_models (4): two more, then refused */
    for (int k = 0; k < 3; k++) {
        pk = pcc_request(c, "copy", 2, &id);
        char nm[8];
        snprintf(nm, sizeof nm, "c%d", k);
        e2e_str(pk, nm);
        e2e_str(pk, "src");
        e2e_call(c, id, k < 2 ? -1 : 8);
    }
    e2e_down(&d, c);
}
END_TEST

static void predict_event(pcc_client *c, const char *model, int64_t ev)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 3, &id);
    e2e_str(pk, model);
    e2e_dense(pk, E2E_DIM, probes[0]);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    msgpack_pack_int64(pk, ev);
    e2e_call(c, id, -1);
}

static void label_event(pcc_client *c, const char *model, int64_t ev, int64_t want)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label_event", 3, &id);
    e2e_str(pk, model);
    msgpack_pack_int64(pk, ev);
    msgpack_pack_int(pk, 1);
    e2e_call(c, id, want);
}

/* What a model holds besides its learners: its challengers (one, pa) and
 * its pending event 7, which a label_event joins. */
static void holds_extras(pcc_client *c, const char *model)
{
    const msgpack_object *r = e2e_admin(c, "compare", model, -1);
    const msgpack_object *ch = pcc_map_get(r, "challengers");
    ck_assert_msg(ch && ch->type == MSGPACK_OBJECT_ARRAY && ch->via.array.size == 1,
                  "model %s lost its challenger", model);
    ck_assert(pcc_str_eq(pcc_map_get(&ch->via.array.ptr[0], "rule"), "pa"));
    label_event(c, model, 7, -1);
}

START_TEST(copy_import_and_rollback_keep_challengers_and_pending_events)
{
    start();
    pcc_client *c = e2e_connect(d.sock);
    e2e_create_with_challenger(c, "x");
    train(c, "x", 0, 20);
    predict_event(c, "x", 7);
    e2e_admin(c, "save", NULL, -1);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "copy", 2, &id);
    e2e_str(pk, "x_copy");
    e2e_str(pk, "x");
    e2e_call(c, id, -1);
    holds_extras(c, "x_copy");
    export_model(c, "x");
    import_model(c, "x_imported", exported.data, exported.size, -1, -1);
    holds_extras(c, "x_imported");
    holds_extras(c, "x");
    label_event(c, "x", 7, 17); /* joined now: no longer pending */
    const msgpack_object *l = e2e_admin(c, "snapshots", "x", -1);
    ck_assert(l->type == MSGPACK_OBJECT_ARRAY && l->via.array.size == 1);
    uint64_t g = (uint64_t)pcc_number(pcc_map_get(&l->via.array.ptr[0], "generation"));
    pk = pcc_request(c, "rollback", 2, &id);
    e2e_str(pk, "x");
    msgpack_pack_uint64(pk, g);
    e2e_call(c, id, -1);
    holds_extras(c, "x"); /* the generation saved still waited for event 7 */
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    forget_export();
    e2e_cleanup(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_lifecycle");
    TU_TCASE(s, "lifecycle", 120, export_then_import_is_bit_identical_and_durable,
        rollback_restores_a_generations_exact_predictions,
        copy_is_identical_independent_durable_and_bounded,
        copy_import_and_rollback_keep_challengers_and_pending_events);
    return tu_run(s);
}
