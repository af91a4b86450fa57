/* test_e2e_join.c - label later, on the real daemon over real sockets:
 * predictions made with event IDs and labelled afterwards, out of order,
 * leave a model bit-identical to a twin fed the same examples by `label` in
 * the order of the outcomes; every refusal has its own code; the ttl expires
 * events with and without a default label (exact counts, and the defaults
 * learned as `label` would); max_pending evicts the oldest; pending events
 * survive kill -9 (journal) and a restart from a snapshot, neither lost nor
 * learned twice. */
#include "tests/e2e.h"
#include "tests/testutil.h"

#define DIM E2E_DIM

/* The wire codes (docs/protocol.md), as a client sees them. */
enum { PCP_E_DENIED = 13, PCP_E_PARAMS = 4, PCP_E_MODEL = 5, PCP_E_LABEL = 7, PCP_E_EXISTS = 9, PCP_E_SPEC = 10,
       PCP_E_EVENT_UNKNOWN = 15, PCP_E_EVENT_EXPIRED = 16, PCP_E_EVENT_DONE = 17 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void example(uint64_t i, double x[DIM], int *y)
{
    e2e_example(i, 3, true, x, y);
}

/* create(name, {rule, hash_bits: 4, join.* given when non-zero}) */
static void create(pcc_client *c, const char *name, const char *rule, uint64_t ttl,
                   int default_label, uint64_t max_pending)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, 2 + (ttl != 0) + (default_label != 0) + (max_pending != 0));
    e2e_str(pk, "rule");
    e2e_str(pk, rule);
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint8(pk, 4);
    if (ttl) {
        e2e_str(pk, "join.ttl");
        msgpack_pack_uint64(pk, ttl);
    }
    if (default_label) {
        e2e_str(pk, "join.default_label");
        msgpack_pack_int(pk, default_label);
    }
    if (max_pending) {
        e2e_str(pk, "join.max_pending");
        msgpack_pack_uint64(pk, max_pending);
    }
    e2e_call(c, id, -1);
}

/* predict(model, x_i, {"event": ev}): the served label, or 0 when refused with code want. */
static int predict_ev_code(pcc_client *c, const char *model, uint64_t i, int64_t ev, int64_t want)
{
    double x[DIM];
    int y;
    example(i, x, &y);
    uint32_t id;
    e2e_pack_event(e2e_request_x(c, "predict", 3, model, x, &id), ev);
    const msgpack_object *r = e2e_call(c, id, want);
    return want < 0 ? (int)pcc_number(pcc_map_get(r, "label")) : 0;
}

static int predict_ev(pcc_client *c, const char *model, uint64_t i, int64_t ev)
{
    return predict_ev_code(c, model, i, ev, -1);
}

/* label_event(model, ev, y): fails unless the answer's code is want (-1: success). */
static const msgpack_object *label_ev(pcc_client *c, const char *model, int64_t ev, int y,
                                      int64_t want)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label_event", 3, &id);
    e2e_str(pk, model);
    msgpack_pack_int64(pk, ev);
    msgpack_pack_int(pk, y);
    return e2e_call(c, id, want);
}

static void label_i(pcc_client *c, const char *model, uint64_t i, int y)
{
    double x[DIM];
    int ignored;
    example(i, x, &ignored);
    e2e_label(c, model, DIM, x, y);
}

static uint64_t join_u64(pcc_client *c, const char *model, const char *key)
{
    const msgpack_object *j = pcc_map_get(e2e_admin(c, "info", model, -1), "join");
    ck_assert(j != NULL);
    double v = pcc_number(pcc_map_get(j, key));
    ck_assert_msg(!isnan(v), "info.join has no numeric '%s'", key);
    return (uint64_t)v;
}

static void same_model(pcc_client *c, const char *a, const char *b)
{
    char da[24], db[24];
    e2e_info_digest(c, a, da, sizeof da);
    e2e_info_digest(c, b, db, sizeof db);
    ck_assert_str_eq(da, db);
    ck_assert_uint_eq(e2e_info_u64(c, a, "examples"), e2e_info_u64(c, b, "examples"));
}

#define N 40

START_TEST(test_out_of_order)
{
    e2e d;
    pcc_client *c = e2e_up(&d);
    create(c, "a", "pa", 0, 0, 0);
    create(c, "twin", "pa", 0, 0, 0);
    int served[N];
    for (int i = 0; i < N; i++) {
        served[i] = predict_ev(c, "a", (uint64_t)i, 1000 + i);
        ck_assert(served[i] == 1 || served[i] == -1);
    }
    ck_assert_uint_eq(join_u64(c, "a", "pending"), N);
    ck_assert_uint_eq(e2e_info_u64(c, "a", "examples"), 0);
    uint64_t mistakes = 0;
    for (int k = 0; k < N; k++) {
        int i = (k * 17) % N; /* every event once, out of order */
        double x[DIM];
        int y;
        example((uint64_t)i, x, &y);
        const msgpack_object *r = label_ev(c, "a", 1000 + i, y, -1);
        ck_assert_int_eq((int)pcc_number(pcc_map_get(r, "served")), served[i]);
        const msgpack_object *m = pcc_map_get(r, "mistake");
        ck_assert(m && m->type == MSGPACK_OBJECT_BOOLEAN);
        ck_assert_int_eq(m->via.boolean, served[i] != y);
        mistakes += served[i] != y;
        ck_assert(pcc_map_get(r, "predicted") && pcc_map_get(r, "updated"));
        ck_assert(pcc_number(pcc_map_get(r, "delay")) >= 0);
        label_i(c, "twin", (uint64_t)i, y);
    }
    same_model(c, "a", "twin");
    ck_assert_uint_eq(e2e_info_u64(c, "a", "examples"), N);
    ck_assert_uint_eq(join_u64(c, "a", "events"), N);
    ck_assert_uint_eq(join_u64(c, "a", "joined"), N);
    ck_assert_uint_eq(join_u64(c, "a", "served_mistakes"), mistakes);
    ck_assert_uint_eq(join_u64(c, "a", "pending"), 0);
    ck_assert_uint_eq(join_u64(c, "a", "pending_bytes"), 0);
    ck_assert(mistakes > 0 && mistakes < N); /* the figure is not trivially 0 or all */

    /* multiclass: the served class, nil before the model knew any */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "mc");
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "open_classes");
    msgpack_pack_true(pk);
    e2e_call(c, id, -1);
    pk = pcc_request(c, "predict", 3, &id);
    e2e_str(pk, "mc");
    e2e_dense(pk, 2, (double[]){1, 2});
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    e2e_str(pk, "first");
    e2e_call(c, id, -1);
    pk = pcc_request(c, "label_event", 3, &id);
    e2e_str(pk, "mc");
    e2e_str(pk, "first");
    e2e_str(pk, "cat");
    const msgpack_object *r = e2e_call(c, id, -1);
    ck_assert(pcc_map_get(r, "served")->type == MSGPACK_OBJECT_NIL);
    ck_assert(pcc_map_get(r, "mistake")->via.boolean);
    ck_assert_uint_eq(e2e_info_u64(c, "mc", "examples"), 1);
    /* stats: the sums over the models */
    const msgpack_object *sj = pcc_map_get(e2e_admin(c, "stats", NULL, -1), "join");
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(sj, "events")), N + 1);
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(sj, "joined")), N + 1);
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(sj, "pending")), 0);
    e2e_down(&d, c);
}
END_TEST

/* predict(model, [1, 2], options as msgpack-c packs them by the callback) */
static void predict_opts(pcc_client *c, const char *model, void (*opts)(msgpack_packer *),
                         int64_t want)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 3, &id);
    e2e_str(pk, model);
    e2e_dense(pk, 2, (double[]){1, 2});
    opts(pk);
    e2e_call(c, id, want);
}

static void o_not_map(msgpack_packer *pk) { msgpack_pack_int(pk, 5); }
static void o_unknown(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "evnt");
    msgpack_pack_int(pk, 1);
}
static void o_float(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    msgpack_pack_double(pk, 1.5);
}
static void o_empty(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    e2e_str(pk, "");
}
static char long_id[130];
static void o_long(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    e2e_str(pk, long_id);
}
static void o_str1(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    e2e_str(pk, "1");
}
static void o_nil(msgpack_packer *pk) { msgpack_pack_nil(pk); }
static void o_event_at(msgpack_packer *pk) /* not the direct path's one shape: the general path */
{
    msgpack_pack_map(pk, 2);
    e2e_str(pk, "event");
    msgpack_pack_int(pk, 99);
    e2e_str(pk, "at");
    msgpack_pack_uint64(pk, 1);
}

/* label_event(model, ev, y, {key: 1}) with an unknown option */
static void label_bad_opt(pcc_client *c, const char *model, int64_t ev)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label_event", 4, &id);
    e2e_str(pk, model);
    msgpack_pack_int64(pk, ev);
    msgpack_pack_int(pk, 1);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "bogus");
    msgpack_pack_int(pk, 1);
    e2e_call(c, id, PCP_E_PARAMS);
}

START_TEST(test_errors)
{
    e2e d;
    pcc_client *c = e2e_up(&d);
    create(c, "e", "perceptron", 1, 0, 0);
    label_ev(c, "nosuch", 1, 1, PCP_E_MODEL);
    label_ev(c, "e", 1, 1, PCP_E_EVENT_UNKNOWN);
    predict_ev(c, "e", 0, 1);
    predict_ev_code(c, "e", 1, 1, PCP_E_EXISTS); /* the same ID while it waits */
    predict_opts(c, "e", o_str1, -1);            /* "1" is not 1 */
    predict_opts(c, "e", o_nil, -1);             /* no options: a plain predict */
    predict_opts(c, "e", o_not_map, PCP_E_PARAMS);
    predict_opts(c, "e", o_unknown, PCP_E_PARAMS);
    predict_opts(c, "e", o_float, PCP_E_PARAMS);
    predict_opts(c, "e", o_empty, PCP_E_PARAMS);
    memset(long_id, 'x', 129);
    long_id[129] = 0;
    predict_opts(c, "e", o_long, PCP_E_PARAMS);
    long_id[128] = 0; /* 128 bytes: the longest ID */
    predict_opts(c, "e", o_long, -1);
    predict_opts(c, "e", o_event_at, -1);
    ck_assert_uint_eq(join_u64(c, "e", "pending"), 4);
    label_ev(c, "e", 99, -1, -1);
    ck_assert_uint_eq(join_u64(c, "e", "pending"), 3);
    label_bad_opt(c, "e", 1);
    /* a label the model refuses leaves the event waiting */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label_event", 3, &id);
    e2e_str(pk, "e");
    msgpack_pack_int(pk, 1);
    e2e_str(pk, "cat");
    e2e_call(c, id, PCP_E_LABEL);
    ck_assert_uint_eq(join_u64(c, "e", "pending"), 3);
    label_ev(c, "e", 1, 1, -1);
    label_ev(c, "e", 1, -1, PCP_E_EVENT_DONE);
    ck_assert_uint_eq(e2e_info_u64(c, "e", "examples"), 2);
    /* negative integer IDs are IDs too; then let one expire */
    predict_ev(c, "e", 2, -5);
    e2e_sleep_ms(1700);
    label_ev(c, "e", -5, 1, PCP_E_EVENT_EXPIRED);
    ck_assert_uint_eq(join_u64(c, "e", "unknown"), 1);
    ck_assert_uint_eq(join_u64(c, "e", "duplicate"), 1);
    ck_assert_uint_eq(join_u64(c, "e", "late"), 1);
    ck_assert_uint_eq(join_u64(c, "e", "expired"), 3); /* "1", the long one and -5 */
    ck_assert_uint_eq(join_u64(c, "e", "pending"), 0);
    ck_assert_uint_eq(e2e_info_u64(c, "e", "examples"), 2);
    /* bad specs */
    pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "bad");
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "join.default_label");
    e2e_str(pk, "cat"); /* a binary model */
    e2e_call(c, id, PCP_E_SPEC);
    pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "bad");
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "join.ttl");
    msgpack_pack_int(pk, 0);
    e2e_call(c, id, PCP_E_SPEC);
    e2e_down(&d, c);
}
END_TEST

static uint64_t bounds_u64(pcc_client *c, const char *key)
{
    const msgpack_object *s = e2e_admin(c, "stats", NULL, -1);
    return (uint64_t)pcc_number(pcc_map_get(pcc_map_get(s, "bounds"), key));
}

START_TEST(test_ttl)
{
    e2e d;
    pcc_client *c = e2e_up(&d);
    create(c, "nod", "pa", 1, 0, 0);
    create(c, "def", "pa", 1, -1, 0);
    create(c, "twin", "pa", 0, 0, 0);
    for (int i = 0; i < 5; i++) {
        predict_ev(c, "nod", (uint64_t)i, i);
        predict_ev(c, "def", (uint64_t)i, i);
        label_i(c, "twin", (uint64_t)i, -1);
    }
    ck_assert_uint_eq(join_u64(c, "def", "pending"), 5);
    e2e_sleep_ms(1700);
    ck_assert_uint_eq(join_u64(c, "nod", "expired"), 5);
    ck_assert_uint_eq(join_u64(c, "nod", "defaulted"), 0);
    ck_assert_uint_eq(join_u64(c, "nod", "pending"), 0);
    ck_assert_uint_eq(e2e_info_u64(c, "nod", "examples"), 0);
    ck_assert_uint_eq(join_u64(c, "def", "expired"), 5);
    ck_assert_uint_eq(join_u64(c, "def", "defaulted"), 5);
    ck_assert_uint_eq(join_u64(c, "def", "joined"), 0);
    ck_assert_uint_eq(join_u64(c, "def", "pending"), 0);
    same_model(c, "def", "twin"); /* the default label learned as `label` would */
    /* A ttl later the sweep forgets the tombstones: max_memory's running
     * total follows (it kept their bytes when the prune did not recount). */
    uint64_t held = bounds_u64(c, "counted_bytes");
    e2e_sleep_ms(1200);
    ck_assert_uint_lt(bounds_u64(c, "counted_bytes"), held);
    ck_assert_uint_eq(bounds_u64(c, "counted_bytes"), bounds_u64(c, "models_bytes"));
    e2e_down(&d, c);
}
END_TEST

/* The journal keeps when each event was made: after a restart an event
 * expires when it would have, not a whole ttl after the restart.  Fails when
 * the time is not journaled (the event would wait until 2 s after the start). */
START_TEST(test_ttl_survives_restart)
{
    e2e d;
    e2e_init(&d, "journal: {enabled: true, fsync: always}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    create(c, "tt", "pa", 3, -1, 0);
    double t0 = now_s();
    predict_ev(c, "tt", 0, 77);
    e2e_sleep_ms(1500);
    e2e_kill9(&d);
    pcc_close(c);
    e2e_start(&d); /* the event comes back at least 1.5 s after it was made */
    c = e2e_connect(d.sock);
    if (now_s() - t0 < 2.9) /* (a slow start, under valgrind, may come after its expiry) */
        ck_assert_uint_eq(join_u64(c, "tt", "pending"), 1);
    /* by then it expired, and a full ttl after the restart it would not have: at 3.6 s after
     * the predict, and at least half a second (a few of the expiry's ticks) after the start */
    double wait = t0 + 3.6 - now_s();
    e2e_sleep_ms(wait > 0.5 ? (int)(wait * 1000) : 500);
    ck_assert_uint_eq(join_u64(c, "tt", "pending"), 0);
    ck_assert_uint_eq(join_u64(c, "tt", "defaulted"), 1);
    ck_assert_uint_eq(e2e_info_u64(c, "tt", "examples"), 1);
    e2e_down(&d, c);
}
END_TEST

/* Remembering an event makes the model learn later: a read-only connection
 * may predict but not with an event, nor label one (13 denied). */
START_TEST(test_rights)
{
    e2e d;
    e2e_init(&d, NULL);
    FILE *f = fopen(d.config, "w");
    ck_assert(f != NULL);
    fprintf(f, "listen:\n  tcp: [{address: \"127.0.0.1:%d\", rights: read}]\n  unix: [\"%s\"]\n"
               "state_dir: %s/state\n", d.port, d.sock, d.dir);
    fclose(f);
    e2e_start(&d);
    pcc_client *u = e2e_connect(d.sock), *t = e2e_connect(d.tcp);
    create(u, "r", "pa", 60, 0, 0);
    predict_ev_code(t, "r", 0, 1, PCP_E_DENIED);
    label_ev(t, "r", 1, 1, PCP_E_DENIED);
    double x[DIM] = {1, 0, 0, 0, 0, 0};
    (void)e2e_score(t, "r", DIM, x);          /* a plain predict is a read */
    e2e_admin(t, "compare", "r", -1);         /* so is compare */
    uint32_t id;
    msgpack_packer *pk = pcc_request(t, "promote", 2, &id);
    e2e_str(pk, "r");
    msgpack_pack_uint8(pk, 0);
    e2e_call(t, id, PCP_E_DENIED);
    ck_assert_uint_eq(join_u64(u, "r", "events"), 0);
    predict_ev(u, "r", 0, 1);                 /* the admin socket may */
    label_ev(u, "r", 1, 1, -1);
    pcc_close(u);
    pcc_close(t);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}
END_TEST

START_TEST(test_max_pending)
{
    e2e d;
    pcc_client *c = e2e_up(&d);
    create(c, "mp", "pa", 1000, 1, 3);
    create(c, "twin", "pa", 0, 0, 0);
    for (int i = 0; i < 5; i++)
        predict_ev(c, "mp", (uint64_t)i, i);
    ck_assert_uint_eq(join_u64(c, "mp", "pending"), 3);
    ck_assert_uint_eq(join_u64(c, "mp", "evicted"), 2);
    ck_assert_uint_eq(join_u64(c, "mp", "defaulted"), 2);
    label_ev(c, "mp", 0, -1, PCP_E_EVENT_EXPIRED);
    label_ev(c, "mp", 1, -1, PCP_E_EVENT_EXPIRED);
    double x[DIM];
    int y;
    example(4, x, &y);
    label_ev(c, "mp", 4, y, -1);
    label_i(c, "twin", 0, 1);
    label_i(c, "twin", 1, 1);
    label_i(c, "twin", 4, y);
    same_model(c, "mp", "twin");
    ck_assert_uint_eq(join_u64(c, "mp", "pending"), 2);
    e2e_down(&d, c);
}
END_TEST

/* kill -9 with events pending (in the journal only, and in a snapshot plus
 * the journal), then a clean restart from the final snapshot: nothing lost,
 * nothing learned twice, and the model equals its twin. */
START_TEST(test_restart)
{
    e2e d;
    e2e_init(&d, "journal: {enabled: true, fsync: always}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    create(c, "r", "pa", 3600, 0, 0);
    create(c, "twin", "pa", 0, 0, 0);
    int ys[30];
    for (int i = 0; i < 30; i++) {
        double x[DIM];
        example((uint64_t)i, x, &ys[i]);
    }
    for (int i = 0; i < 20; i++)
        predict_ev(c, "r", (uint64_t)i, i);
    for (int k = 0; k < 10; k++) {
        int i = (k * 3) % 10;
        label_ev(c, "r", i, ys[i], -1);
        label_i(c, "twin", (uint64_t)i, ys[i]);
    }
    e2e_kill9(&d);
    pcc_close(c);
    e2e_start(&d); /* from the journal alone */
    c = e2e_connect(d.sock);
    ck_assert_uint_eq(join_u64(c, "r", "pending"), 10);
    ck_assert_uint_eq(join_u64(c, "r", "joined"), 10);
    ck_assert_uint_eq(e2e_info_u64(c, "r", "examples"), 10);
    same_model(c, "r", "twin");
    label_ev(c, "r", 3, 1, PCP_E_EVENT_DONE); /* the tombstone came back too */
    e2e_admin(c, "save", NULL, -1);
    for (int i = 20; i < 30; i++)
        predict_ev(c, "r", (uint64_t)i, i);
    label_ev(c, "r", 25, ys[25], -1);
    label_i(c, "twin", 25, ys[25]);
    e2e_kill9(&d);
    pcc_close(c);
    e2e_start(&d); /* the snapshot, then the journal after it */
    c = e2e_connect(d.sock);
    ck_assert_uint_eq(join_u64(c, "r", "pending"), 19);
    ck_assert_uint_eq(e2e_info_u64(c, "r", "examples"), 11);
    for (int i = 10; i < 30; i++) {
        if (i == 25)
            continue;
        label_ev(c, "r", i, ys[i], -1);
        label_i(c, "twin", (uint64_t)i, ys[i]);
    }
    same_model(c, "r", "twin");
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_start(&d); /* the final snapshot */
    c = e2e_connect(d.sock);
    ck_assert_uint_eq(join_u64(c, "r", "pending"), 0);
    ck_assert_uint_eq(join_u64(c, "r", "joined"), 30);
    ck_assert_uint_eq(join_u64(c, "r", "events"), 30);
    ck_assert_uint_eq(e2e_info_u64(c, "r", "examples"), 30);
    same_model(c, "r", "twin");
    e2e_down(&d, c);
}
END_TEST

Suite *join_suite(void);
Suite *join_suite(void)
{
    Suite *s = suite_create("e2e_join");
    TU_TCASE(s, "join", 120, test_out_of_order, test_errors, test_ttl, test_max_pending,
        test_ttl_survives_restart, test_rights, test_restart);
    return s;
}

int main(void)
{
    return tu_run(join_suite());
}
