/* test_e2e_hints.c - label hints (selective sampling; docs/algorithms.md,
 * "Label hints") against the real daemon: predict answers ask and
 * ask_probability = b / (b + |score|); a label is counted as asked exactly
 * when the prediction of the same example at the same state asked; the
 * answers and the counts are the same after kill -9 (the journal replayed)
 * and after a snapshot; label_event says whether its prediction asked, and
 * outcomes nobody asked for are counted apart; each model draws under its
 * own seed; bad settings are refused naming the key.  (Replicas on Redis:
 * test_e2e_redis.c, label_hints_agree_on_replicas.) */
#include "tests/e2e.h"
#include "tests/testutil.h"

enum { PCP_E_SPEC = 10 }; /* proto.h's, as the wire carries it */

static e2e d;

static void setup(void)
{
    e2e_fixture_start(&d);
}

static void teardown(void)
{
    e2e_fixture_stop(&d);
}

static void create(pcc_client *c, const char *name, double b, uint64_t seed, int64_t want)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, 3 + (seed != 0));
    e2e_str(pk, "rule");
    e2e_str(pk, "pa1");
    e2e_str(pk, "dim");
    msgpack_pack_uint32(pk, E2E_DIM);
    e2e_str(pk, "hints.b");
    msgpack_pack_double(pk, b);
    if (seed) {
        e2e_str(pk, "hints.seed");
        msgpack_pack_uint64(pk, seed);
    }
    e2e_call(c, id, want);
}

typedef struct hint {
    bool ask;
    double p, score;
} hint;

/* predict(model, example i[, {"event": ev}]) -> its hint */
static hint predict(pcc_client *c, const char *model, uint64_t i, int64_t event)
{
    double x[E2E_DIM];
    int y;
    e2e_example(i, 7, true, x, &y);
    uint32_t id;
    msgpack_packer *pk = e2e_request_x(c, "predict", event >= 0 ? 3 : 2, model, x, &id);
    if (event >= 0)
        e2e_pack_event(pk, event);
    const msgpack_object *r = e2e_call(c, id, -1);
    const msgpack_object *ask = pcc_map_get(r, "ask");
    ck_assert(ask && ask->type == MSGPACK_OBJECT_BOOLEAN);
    hint h = {ask->via.boolean, pcc_number(pcc_map_get(r, "ask_probability")),
              pcc_number(pcc_map_get(r, "score"))};
    return h;
}

static void label(pcc_client *c, const char *model, uint64_t i)
{
    double x[E2E_DIM];
    int y;
    e2e_example(i, 7, true, x, &y);
    e2e_label(c, model, E2E_DIM, x, y);
}

static const msgpack_object *hints_of(pcc_client *c, const char *model)
{
    const msgpack_object *j = pcc_map_get(e2e_admin(c, "info", model, -1), "join");
    const msgpack_object *h = pcc_map_get(j, "hints");
    ck_assert(h && h->type == MSGPACK_OBJECT_MAP);
    return h;
}

static uint64_t hint_u64(pcc_client *c, const char *model, const char *key)
{
    return (uint64_t)pcc_number(pcc_map_get(hints_of(c, model), key));
}

/* Predicts each example, then labels it; the counts of labels asked and of
 * their mistakes are what the predictions said. */
START_TEST(labels_are_counted_as_their_predictions_asked)
{
    pcc_client *c = e2e_connect(d.sock);
    create(c, "h", 0.5, 0, -1);
    uint64_t asked = 0;
    for (uint64_t i = 0; i < 400; i++) {
        hint h = predict(c, "h", i, -1);
        /* the rule: b / (b + |score|), 1 at score 0 */
        ck_assert(h.p == 0.5 / (0.5 + fabs(h.score)));
        /* and the same example predicted again, at the same state: the same draw */
        hint again = predict(c, "h", i, -1);
        ck_assert(again.ask == h.ask && again.p == h.p);
        asked += h.ask;
        label(c, "h", i);
    }
    ck_assert_uint_eq(hint_u64(c, "h", "labels"), 400);
    ck_assert_uint_eq(hint_u64(c, "h", "asked"), asked);
    ck_assert_uint_eq(hint_u64(c, "h", "predictions"), 800);
    ck_assert_uint_eq(hint_u64(c, "h", "asked_predictions"), 2 * asked);
    /* confident predictions come with time: fewer asks later than early */
    ck_assert_uint_lt(asked, 400);
    ck_assert_uint_gt(asked, 0);
    pcc_close(c);
}
END_TEST

/* The hints of a probe set, into asks[] and ps[]. */
static void probe(pcc_client *c, const char *model, bool asks[50], double ps[50])
{
    for (uint64_t i = 0; i < 50; i++) {
        hint h = predict(c, model, 10000 + i, -1);
        asks[i] = h.ask;
        ps[i] = h.p;
    }
}

START_TEST(hints_are_the_same_after_kill_9_and_after_a_snapshot)
{
    pcc_client *c = e2e_connect(d.sock);
    create(c, "h", 0.3, 0, -1);
    for (uint64_t i = 0; i < 300; i++)
        label(c, "h", i);
    /* an event predicted, its outcome to come after the restarts */
    hint served = predict(c, "h", 5000, 77);
    bool asks[50], asks2[50];
    double ps[50], ps2[50];
    probe(c, "h", asks, ps);
    uint64_t labels = hint_u64(c, "h", "labels"), asked = hint_u64(c, "h", "asked");
    uint64_t seed = hint_u64(c, "h", "seed");
    pcc_close(c);
    for (int round = 0; round < 2; round++) {
        if (round == 0) {
            e2e_kill9(&d); /* the journal replayed */
        } else {
            c = e2e_connect(d.sock);
            e2e_admin(c, "save", NULL, -1); /* then from the snapshot (PCJ2) */
            pcc_close(c);
            ck_assert_int_eq(e2e_stop(&d), 0);
        }
        e2e_start(&d);
        c = e2e_connect(d.sock);
        probe(c, "h", asks2, ps2);
        for (int i = 0; i < 50; i++)
            ck_assert(asks2[i] == asks[i] && ps2[i] == ps[i]);
        ck_assert_uint_eq(hint_u64(c, "h", "labels"), labels);
        ck_assert_uint_eq(hint_u64(c, "h", "asked"), asked);
        ck_assert_uint_eq(hint_u64(c, "h", "seed"), seed);
        pcc_close(c);
    }
    /* the event's hint came through both */
    c = e2e_connect(d.sock);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label_event", 3, &id);
    e2e_str(pk, "h");
    msgpack_pack_int(pk, 77);
    msgpack_pack_int(pk, 1);
    const msgpack_object *r = e2e_call(c, id, -1);
    const msgpack_object *a = pcc_map_get(r, "asked");
    ck_assert(a && a->type == MSGPACK_OBJECT_BOOLEAN && a->via.boolean == served.ask);
    pcc_close(c);
}
END_TEST

/* label_event says whether the served prediction asked; outcomes it did
 * not ask for are learned all the same and counted apart. */
START_TEST(unasked_outcomes_are_told_and_counted)
{
    pcc_client *c = e2e_connect(d.sock);
    create(c, "h", 0.05, 0, -1); /* a small b: confident predictions seldom ask */
    for (uint64_t i = 0; i < 200; i++)
        label(c, "h", i);
    uint64_t unasked = 0, examples = e2e_info_u64(c, "h", "examples");
    for (int64_t ev = 0; ev < 60; ev++) {
        hint h = predict(c, "h", 1000 + (uint64_t)ev, ev);
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "label_event", 3, &id);
        e2e_str(pk, "h");
        msgpack_pack_int64(pk, ev);
        msgpack_pack_int(pk, 1);
        const msgpack_object *r = e2e_call(c, id, -1);
        ck_assert(pcc_map_get(r, "asked")->via.boolean == h.ask);
        unasked += !h.ask;
    }
    ck_assert_uint_gt(unasked, 0);
    ck_assert_uint_eq(hint_u64(c, "h", "unasked_outcomes"), unasked);
    ck_assert_uint_eq(e2e_info_u64(c, "h", "examples"), examples + 60); /* all learned */
    pcc_close(c);
}
END_TEST

START_TEST(each_model_draws_under_its_own_seed)
{
    pcc_client *c = e2e_connect(d.sock);
    create(c, "a", 1, 0, -1);
    create(c, "b", 1, 0, -1);
    create(c, "s", 1, 12345, -1);
    uint64_t sa = hint_u64(c, "a", "seed"), sb = hint_u64(c, "b", "seed");
    ck_assert_uint_ne(sa, sb);
    ck_assert_uint_eq(hint_u64(c, "s", "seed"), 12345);
    /* at score 0 (nothing learned) p is 1: every draw asks, whatever the seed */
    ck_assert(predict(c, "a", 1, -1).ask && predict(c, "b", 1, -1).ask);
    /* two models of one spec fed alike answer apart somewhere */
    int differ = 0;
    for (uint64_t i = 0; i < 100; i++) {
        label(c, "a", i);
        label(c, "b", i);
        differ += predict(c, "a", 500 + i, -1).ask != predict(c, "b", 500 + i, -1).ask;
    }
    ck_assert_int_gt(differ, 0);
    /* dropped and created again: the same seed */
    e2e_admin(c, "drop", "a", -1);
    create(c, "a", 1, 0, -1);
    ck_assert_uint_eq(hint_u64(c, "a", "seed"), sa);
    /* without hints.b there are no hints */
    e2e_create(c, "plain", "pa1", E2E_DIM, false);
    double x[E2E_DIM] = {1};
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
    e2e_str(pk, "plain");
    e2e_dense(pk, E2E_DIM, x);
    ck_assert(pcc_map_get(e2e_call(c, id, -1), "ask") == NULL);
    pcc_close(c);
}
END_TEST

START_TEST(bad_settings_are_refused_naming_the_key)
{
    pcc_client *c = e2e_connect(d.sock);
    char msg[256];
    create(c, "x", -1, 0, PCP_E_SPEC);
    uint32_t id;
    static const char *const bad[] = {"b-str", "seed-neg", "b-inf"};
    for (int k = 0; k < 3; k++) {
        msgpack_packer *pk = pcc_request(c, "create", 2, &id);
        e2e_str(pk, "x");
        msgpack_pack_map(pk, 1);
        if (k == 0) {
            e2e_str(pk, "hints.b");
            e2e_str(pk, "lots");
        } else if (k == 1) {
            e2e_str(pk, "hints.seed");
            msgpack_pack_int(pk, -3);
        } else {
            e2e_str(pk, "hints.b");
            msgpack_pack_double(pk, INFINITY);
        }
        const msgpack_object *e = e2e_call(c, id, PCP_E_SPEC);
        pcc_error_message(e, msg, sizeof msg);
        ck_assert_msg(strstr(msg, k == 1 ? "hints.seed" : "hints.b") != NULL, "%s: '%s'", bad[k],
                      msg);
    }
    ck_assert_int_eq((int)pcc_number(pcc_map_get(e2e_admin(c, "stats", NULL, -1), "models")), 0);
    pcc_close(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_hints");
    TCase *tc = TU_TCASE(s, "hints", 300, labels_are_counted_as_their_predictions_asked,
        hints_are_the_same_after_kill_9_and_after_a_snapshot,
        unasked_outcomes_are_told_and_counted,
        each_model_draws_under_its_own_seed,
        bad_settings_are_refused_naming_the_key);
    tcase_add_checked_fixture(tc, setup, teardown);
    return tu_run(s);
}
