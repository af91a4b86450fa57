/* test_e2e_redis.c - the shared log in Redis Streams, end to end: a real
 * redis-server (temp dir, Unix socket, appendonly yes, no TCP port) and real
 * daemons.  Replicas that take labels through different daemons end with the
 * same log_id and digest; a daemon killed with kill -9 and restarted (from
 * its snapshot) catches up, and so does a fresh one with an empty state dir;
 * with Redis stopped, writes are refused with code 11 naming Redis while
 * predicts are served, and after Redis restarts writes resume with every
 * acknowledged label there; two daemons with disjoint log.models serve
 * disjoint models.  Skipped (exit 77) only where redis-server is missing. */
#include "tests/e2e.h"
#include "tests/testutil.h"

#define DIM E2E_DIM
#define WINDOW 32
#include "tests/e2e_log.h"
#include "tests/e2e_redis.h"

/* Sends label("m", e_1, 1) on c, unanswered yet: its msgid (the tests
 * read its refusal). */
static uint32_t send_label_m(pcc_client *c)
{
    double x[DIM] = {1, 0, 0, 0, 0, 0};
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, "m");
    e2e_dense(pk, DIM, x);
    msgpack_pack_int(pk, 1);
    return id;
}

START_TEST(replicas_agree_and_a_killed_or_fresh_daemon_catches_up)
{
    rds r;
    redis_init(&r);
    e2e *d = calloc(4, sizeof *d);
    ck_assert(d != NULL);
    for (int i = 0; i < 3; i++)
        daemon_start(&d[i], &r, "");
    pcc_client *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = e2e_connect(d[i].sock);
    e2e_create(c[1], "m", "pa", DIM, true);
    /* labels through every daemon in turn */
    uint64_t sent = 0;
    for (int round = 0; round < 6; round++)
        for (int i = 0; i < 3; i++, sent += 50)
            ck_assert_uint_eq(feed(c[i], "m", sent, sent + 50), 50);
    e2e *all[4] = {&d[0], &d[1], &d[2], &d[3]};
    wait_agree(all, 3, "m", sent);
    char id[64], dg[64];
    info_str(c[0], "m", "log_id", id, sizeof id);
    info_str(c[0], "m", "digest", dg, sizeof dg);
    ck_assert_str_ne(id, "0-0");
    ck_assert_uint_eq(strlen(dg), 16);
    /* every replica's lag comes down to nothing (looked at once a second) */
    for (int i = 0; i < 3; i++) {
        double ms = -1;
        int64_t behind = -1;
        for (int t = 0; t < 300 && behind != 0; t++) {
            behind = lag_entries(c[i], "m", &ms);
            if (behind != 0)
                e2e_sleep_ms(10);
        }
        ck_assert_msg(behind == 0, "daemon %d: lag %lld entries after draining", i, (long long)behind);
        ck_assert(ms == 0);
    }
    /* perceptronctl shows them */
    const char *ctl = getenv("PERCEPTRONCTL");
    ck_assert_msg(ctl != NULL, "PERCEPTRONCTL is not set");
    char cmd[600], out[8192] = "";
    snprintf(cmd, sizeof cmd, "'%s' -a 'unix:%s' info m", ctl, d[2].sock);
    FILE *p = popen(cmd, "r");
    ck_assert(p != NULL);
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = 0;
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_msg(strstr(out, "replica lag") && strstr(out, "0 entries, 0 ms") &&
                  strstr(out, id) && strstr(out, dg), "perceptronctl info says:\n%s", out);

    /* d1 saves (its snapshot records the entry ID), dies with kill -9 while
     * the others take more labels, then comes back from its snapshot */
    e2e_admin(c[1], "save", NULL, -1);
    pcc_close(c[1]);
    kill(d[1].pid, SIGKILL);
    waitpid(d[1].pid, NULL, 0);
    d[1].pid = 0;
    ck_assert_uint_eq(feed(c[0], "m", sent, sent + 60), 60);
    ck_assert_uint_eq(feed(c[2], "m", sent + 60, sent + 100), 40);
    sent += 100;
    e2e_start(&d[1]);
    wait_agree(all, 3, "m", sent);
    c[1] = e2e_connect(d[1].sock);
    /* it read on after its snapshot's entry, not from the start */
    ck_assert_uint_eq((uint64_t)pcc_number(log_stat(c[1], "applied")), 100);

    /* a fresh daemon, empty state dir, reads the stream from the start */
    daemon_start(&d[3], &r, "");
    wait_agree(all, 4, "m", sent);
    for (int i = 0; i < 3; i++)
        pcc_close(c[i]);
    finish_all(d, 4, &r);
}
END_TEST

START_TEST(losing_redis_refuses_writes_serves_reads_and_resumes)
{
    rds r;
    redis_init(&r);
    e2e d;
    daemon_start(&d, &r, "");
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "m", "pa", DIM, true);
    uint64_t acked = feed(c, "m", 0, 200);
    e2e *all[1] = {&d};
    wait_agree(all, 1, "m", acked);

    redis_stop(&r);
    const msgpack_object *up = NULL;
    for (int t = 0; t < 500; t++) {
        up = log_stat(c, "connected");
        if (up && up->type == MSGPACK_OBJECT_BOOLEAN && !up->via.boolean)
            break;
        e2e_sleep_ms(10);
    }
    ck_assert_msg(up && up->type == MSGPACK_OBJECT_BOOLEAN && !up->via.boolean,
                  "the daemon did not notice that Redis stopped");
    /* a write is refused, naming Redis; a read is served */
    uint32_t id = send_label_m(c);
    const msgpack_object *e = e2e_call(c, id, 11);
    char msg[256];
    pcc_error_message(e, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "Redis") && strstr(msg, r.sock), "the refusal does not name Redis: %s",
                  msg);
    double x[DIM] = {1, 0, 0, 0, 0, 0};
    ck_assert(isfinite(e2e_score(c, "m", DIM, x)));

    /* Redis comes back: the daemon reconnects, writes resume, nothing
     * acknowledged was lost (the AOF kept it) */
    redis_start(&r);
    bool resumed = false;
    for (int t = 0; t < 1000 && !resumed; t++) {
        const msgpack_object *u = log_stat(c, "connected");
        resumed = u && u->type == MSGPACK_OBJECT_BOOLEAN && u->via.boolean;
        if (!resumed)
            e2e_sleep_ms(10);
    }
    ck_assert_msg(resumed, "the daemon did not reconnect to Redis within 10 s");
    acked += feed(c, "m", 200, 300);
    wait_agree(all, 1, "m", acked);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    /* and a restart from the snapshot written at exit agrees with Redis */
    e2e_start(&d);
    wait_agree(all, 1, "m", acked);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
    redis_cleanup(&r);
}
END_TEST

START_TEST(shards_serve_disjoint_models)
{
    rds r;
    redis_init(&r);
    e2e a, b;
    daemon_start(&a, &r, "[\"a*\"]");
    daemon_start(&b, &r, "[\"b*\"]");
    pcc_client *ca = e2e_connect(a.sock), *cb = e2e_connect(b.sock);
    e2e_create(ca, "alpha", "pa", DIM, true);
    e2e_create(cb, "beta", "pa", DIM, true);
    ck_assert_uint_eq(feed(ca, "alpha", 0, 100), 100);
    ck_assert_uint_eq(feed(cb, "beta", 0, 80), 80);
    /* the other shard's model: refused with code 5, naming the reason */
    double x[DIM] = {1, 0, 0, 0, 0, 0};
    uint32_t id;
    msgpack_packer *pk = pcc_request(ca, "predict", 2, &id);
    e2e_str(pk, "beta");
    e2e_dense(pk, DIM, x);
    char msg[256];
    pcc_error_message(e2e_call(ca, id, 5), msg, sizeof msg);
    ck_assert_msg(strstr(msg, "not served"), "%s", msg);
    e2e_admin(cb, "create", "alpha2", 5);
    e2e_sleep_ms(200); /* time for the catalogue to reach both */
    const msgpack_object *ma = e2e_admin(ca, "models", NULL, -1);
    const msgpack_object *mb = e2e_admin(cb, "models", NULL, -1);
    ck_assert_uint_eq(ma->via.array.size, 1);
    ck_assert(pcc_str_eq(&ma->via.array.ptr[0], "alpha"));
    ck_assert_uint_eq(mb->via.array.size, 1);
    ck_assert(pcc_str_eq(&mb->via.array.ptr[0], "beta"));
    pcc_close(ca);
    pcc_close(cb);
    ck_assert_int_eq(e2e_stop(&a), 0);
    ck_assert_int_eq(e2e_stop(&b), 0);
    e2e_cleanup(&a);
    e2e_cleanup(&b);
    redis_cleanup(&r);
}
END_TEST

START_TEST(a_fresh_daemon_bootstraps_from_the_published_snapshot_and_streams_are_trimmed)
{
    rds r;
    redis_init(&r);
    e2e *d = calloc(3, sizeof *d);
    ck_assert(d != NULL);
    e2e *all[3] = {&d[0], &d[1], &d[2]};
    daemon_start(&d[0], &r, "");
    daemon_start(&d[1], &r, "");
    pcc_client *c0 = e2e_connect(d[0].sock), *c1 = e2e_connect(d[1].sock);
    e2e_create(c0, "m", "pa", DIM, true);
    ck_assert_uint_eq(feed(c0, "m", 0, 300), 300);
    wait_agree(all, 2, "m", 300);
    /* d0's snapshot (the create and 300 labels) is published, but d1 has
     * published nothing: it holds the stream from where it began to read */
    e2e_admin(c0, "save", NULL, -1);
    ck_assert_int_eq(redis_int(&r, "XLEN %s", "pcd:{m}"), 301);
    ck_assert_uint_eq(feed(c1, "m", 300, 400), 100);
    wait_agree(all, 2, "m", 400);
    /* d1's is newer and replaces it, but d0's snapshot still needs the
     * entries after 300: the trim stops there */
    e2e_admin(c1, "save", NULL, -1);
    ck_assert_int_eq(redis_int(&r, "XLEN %s", "pcd:{m}"), 101);
    char rep1[256], rep0[256];
    snprintf(rep1, sizeof rep1, "%s", log_stat(c1, "replica")->via.str.ptr);
    rep1[log_stat(c1, "replica")->via.str.size] = 0;
    snprintf(rep0, sizeof rep0, "%.*s", (int)log_stat(c0, "replica")->via.str.size,
             log_stat(c0, "replica")->via.str.ptr);
    ck_assert_str_ne(rep0, rep1);
    redisReply *by = redis_cmd(&r, "HGET %s by", "pcd:{m}:snap");
    ck_assert_int_eq(by->type, REDIS_REPLY_STRING);
    ck_assert_str_eq(by->str, rep1);
    freeReplyObject(by);
    ck_assert_uint_eq(feed(c0, "m", 400, 450), 50);
    wait_agree(all, 2, "m", 450);

    /* a fresh daemon, empty state dir: loads d1's snapshot (400 labels),
     * then applies only the 50 entries after it */
    daemon_start(&d[2], &r, "");
    wait_agree(all, 3, "m", 450);
    pcc_client *c2 = e2e_connect(d[2].sock);
    ck_assert_uint_eq(log_u64(c2, "bootstrapped"), 1);
    ck_assert_uint_eq(log_u64(c2, "applied"), 50);
    ck_assert(log_stat(c2, "ready")->via.boolean);

    /* d0 dies at its snapshot (300); the operator retires its hold, so the
     * next publication trims past it; started again from its own snapshot
     * it finds the hole and loads the published snapshot instead of
     * reading a stream with entries missing */
    pcc_close(c0);
    e2e_kill9(&d[0]);
    ck_assert_uint_eq(feed(c1, "m", 450, 500), 50);
    wait_agree(&all[1], 2, "m", 500);
    ck_assert_int_eq(redis_int(&r, "HDEL pcd:{m}:held %s", rep0), 1);
    e2e_admin(c2, "save", NULL, -1); /* d2 held the stream at its start too */
    e2e_admin(c1, "save", NULL, -1);
    ck_assert_int_eq(redis_int(&r, "XLEN %s", "pcd:{m}"), 1);
    e2e_start(&d[0]);
    wait_agree(all, 3, "m", 500);
    c0 = e2e_connect(d[0].sock);
    ck_assert_uint_eq(log_u64(c0, "bootstrapped"), 1);
    ck_assert_uint_eq(log_u64(c0, "applied"), 0);
    pcc_close(c0);
    pcc_close(c1);
    pcc_close(c2);
    finish_all(d, 3, &r);
}
END_TEST

/* The snapshot published in Redis holds the model's challengers and its
 * pending joins: a daemon that bootstraps from it has them as the
 * publisher has, trained on the same labels. */
START_TEST(a_model_bootstrapped_from_redis_keeps_its_challengers_and_experts)
{
    rds r;
    redis_init(&r);
    e2e *d = calloc(2, sizeof *d);
    ck_assert(d != NULL);
    e2e *all[2] = {&d[0], &d[1]};
    daemon_start(&d[0], &r, "");
    pcc_client *c0 = e2e_connect(d[0].sock);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c0, "create", 2, &id);
    e2e_str(pk, "m");
    msgpack_pack_map(pk, 6);
    e2e_str(pk, "rule");
    e2e_str(pk, "pa");
    e2e_str(pk, "dim");
    msgpack_pack_uint32(pk, DIM);
    e2e_str(pk, "join.max_pending");
    msgpack_pack_uint8(pk, 4);
    e2e_str(pk, "challengers");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "experts"); /* and its experts' state: the same draws everywhere */
    e2e_str(pk, "randomized");
    e2e_str(pk, "experts.seed");
    msgpack_pack_uint8(pk, 3);
    e2e_call(c0, id, -1);
    ck_assert_uint_eq(feed(c0, "m", 0, 100), 100);
    wait_agree(all, 1, "m", 100);
    e2e_admin(c0, "save", NULL, -1);
    ck_assert_int_eq(redis_int(&r, "EXISTS %s", "pcd:{m}:snap"), 1);

    daemon_start(&d[1], &r, "");
    wait_agree(all, 2, "m", 100);
    pcc_client *c1 = e2e_connect(d[1].sock);
    ck_assert_uint_eq(log_u64(c1, "bootstrapped"), 1);
    pcc_client *cs[2] = {c0, c1};
    char dg[2][64];
    for (int i = 0; i < 2; i++) {
        const msgpack_object *ch = pcc_map_get(e2e_admin(cs[i], "compare", "m", -1), "challengers");
        ck_assert_msg(ch && ch->type == MSGPACK_OBJECT_ARRAY && ch->via.array.size == 1,
                      "daemon %d: the model has no challenger", i);
        const msgpack_object *one = &ch->via.array.ptr[0];
        ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(one, "examples")), 100);
        const msgpack_object *g = pcc_map_get(one, "digest");
        ck_assert(g && g->type == MSGPACK_OBJECT_STR);
        snprintf(dg[i], sizeof dg[i], "%.*s", (int)g->via.str.size, g->via.str.ptr);
    }
    ck_assert_str_eq(dg[0], dg[1]);
    /* more labels through the log: the replica's experts count them alike
     * and every probe follows the same expert on both */
    ck_assert_uint_eq(feed(c0, "m", 100, 160), 60);
    wait_agree(all, 2, "m", 160);
    uint64_t counts[2][3];
    for (int i = 0; i < 2; i++) {
        const msgpack_object *x = pcc_map_get(e2e_admin(cs[i], "compare", "m", -1), "experts");
        ck_assert(x && x->type == MSGPACK_OBJECT_MAP);
        counts[i][0] = (uint64_t)pcc_number(pcc_map_get(x, "rounds"));
        counts[i][1] = (uint64_t)pcc_number(pcc_map_get(x, "mistakes"));
        counts[i][2] = (uint64_t)pcc_number(pcc_map_get(x, "best_expert_mistakes"));
    }
    ck_assert_uint_eq(counts[0][0], 160);
    ck_assert(memcmp(counts[0], counts[1], sizeof counts[0]) == 0);
    for (int k = 0; k < 5; k++) {
        double x[DIM] = {0};
        x[k] = 1;
        x[(k + 3) % DIM] = -0.5;
        double score[2];
        uint64_t expert[2];
        for (int i = 0; i < 2; i++) {
            msgpack_packer *p = pcc_request(cs[i], "predict", 2, &id);
            e2e_str(p, "m");
            e2e_dense(p, DIM, x);
            const msgpack_object *a = e2e_call(cs[i], id, -1);
            score[i] = pcc_number(pcc_map_get(a, "score"));
            expert[i] = (uint64_t)pcc_number(pcc_map_get(a, "expert"));
        }
        ck_assert(score[0] == score[1]);
        ck_assert_uint_eq(expert[0], expert[1]);
    }
    pcc_close(c0);
    pcc_close(c1);
    finish_all(d, 2, &r);
}
END_TEST

/* Labels [from, to) of model through c as named features ("f0".."f7"), so
 * that the model's transforms apply; every answer must be a success. */
static uint64_t feed_named(pcc_client *c, const char *model, uint64_t from, uint64_t to)
{
    char err[256];
    for (uint64_t i = from; i < to; i++) {
        double x[DIM];
        int y;
        example(i, x, &y);
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "label", 3, &id);
        e2e_str(pk, model);
        msgpack_pack_map(pk, DIM);
        for (int j = 0; j < DIM; j++) {
            char name[8];
            snprintf(name, sizeof name, "f%d", j);
            e2e_str(pk, name);
            msgpack_pack_double(pk, 40 * x[j]); /* past 1: the bins differ */
        }
        msgpack_pack_int(pk, y);
    }
    ck_assert_int_eq(pcc_flush(c, err, sizeof err), 0);
    for (uint64_t i = from; i < to; i++) {
        uint32_t id;
        const msgpack_object *e, *r;
        ck_assert_msg(pcc_read(c, &id, &e, &r, -1, err, sizeof err) == 0, "%s", err);
        ck_assert_ptr_null(e);
    }
    return to - from;
}

/* Models that scale their features (scale: std, rms and rms-sent with bins,
 * averaged pa) replicate bit for bit: the statistics are state that each
 * replica rebuilds from the log's entries, through whichever daemon a label
 * came, and a replica that starts later (from the published snapshot) holds
 * them too. */
START_TEST(prepared_models_replicate_bit_identically)
{
    rds r;
    redis_init(&r);
    e2e *d = calloc(3, sizeof *d);
    ck_assert(d != NULL);
    e2e *all[3] = {&d[0], &d[1], &d[2]};
    daemon_start(&d[0], &r, "");
    daemon_start(&d[1], &r, "");
    pcc_client *c0 = e2e_connect(d[0].sock), *c1 = e2e_connect(d[1].sock);
    /* p: scale std; q: scale rms (its count of examples is state too); s:
     * rms-sent with half-octave bins (the bins in a space of their own) */
    static const char *const models[] = {"p", "q", "s"},
                            *const scales[] = {"std", "rms", "rms-sent"};
    for (int k = 0; k < 3; k++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(c0, "create", 2, &id);
        e2e_str(pk, models[k]);
        msgpack_pack_map(pk, k == 2 ? 5 : 4);
        if (k == 2) {
            e2e_str(pk, "transforms");
            msgpack_pack_array(pk, 1);
            e2e_str(pk, "*:logbins");
        }
        e2e_str(pk, "rule");
        e2e_str(pk, "pa");
        e2e_str(pk, "dim");
        msgpack_pack_uint32(pk, DIM);
        e2e_str(pk, "averaged");
        msgpack_pack_true(pk);
        e2e_str(pk, "scale");
        e2e_str(pk, scales[k]);
        e2e_call(c0, id, -1);
    }
    for (int k = 0; k < 3; k++) {
        uint64_t (*f)(pcc_client *, const char *, uint64_t, uint64_t) = k == 2 ? feed_named : feed;
        ck_assert_uint_eq(f(c0, models[k], 0, 150), 150);
        ck_assert_uint_eq(f(c1, models[k], 150, 300), 150);
        wait_agree(all, 2, models[k], 300);
    }
    e2e_admin(c0, "save", NULL, -1);
    for (int k = 0; k < 3; k++)
        ck_assert_uint_eq((k == 2 ? feed_named : feed)(c1, models[k], 300, 350), 50);
    daemon_start(&d[2], &r, "");
    for (int k = 0; k < 3; k++)
        wait_agree(all, 3, models[k], 350);
    const msgpack_object *sc = pcc_map_get(e2e_admin(c1, "info", "p", -1), "scale");
    ck_assert(sc && sc->type == MSGPACK_OBJECT_STR && sc->via.str.size == 3);
    pcc_close(c0);
    pcc_close(c1);
    finish_all(d, 3, &r);
}
END_TEST

/* The hint a daemon gives example i of model m: ask and its probability. */
static void hint_of(pcc_client *c, const char *m, uint64_t i, bool *ask, double *p)
{
    double x[DIM];
    int y;
    example(i, x, &y);
    uint32_t id;
    e2e_request_x(c, "predict", 2, m, x, &id);
    const msgpack_object *r = e2e_call(c, id, -1);
    *ask = pcc_map_get(r, "ask")->via.boolean;
    *p = pcc_number(pcc_map_get(r, "ask_probability"));
}

/* Label hints are a function of the replicated state: two daemons on one
 * stream, fed through both, give every probe the same hint and count the
 * same labels as asked (docs/algorithms.md, "Label hints"). */
START_TEST(label_hints_agree_on_replicas)
{
    rds r;
    redis_init(&r);
    e2e *d = calloc(2, sizeof *d), *all[2];
    ck_assert(d != NULL);
    for (int k = 0; k < 2; k++) {
        all[k] = &d[k];
        daemon_start(&d[k], &r, "");
    }
    pcc_client *c0 = e2e_connect(d[0].sock), *c1 = e2e_connect(d[1].sock);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c0, "create", 2, &id);
    e2e_str(pk, "h");
    msgpack_pack_map(pk, 3);
    e2e_str(pk, "rule");
    e2e_str(pk, "pa1");
    e2e_str(pk, "dim");
    msgpack_pack_uint32(pk, DIM);
    e2e_str(pk, "hints.b");
    msgpack_pack_double(pk, 0.4);
    e2e_call(c0, id, -1);
    ck_assert_uint_eq(feed(c0, "h", 0, 150), 150);
    ck_assert_uint_eq(feed(c1, "h", 150, 300), 150);
    wait_agree(all, 2, "h", 300);
    int asked = 0;
    for (uint64_t i = 1000; i < 1100; i++) {
        bool a0, a1;
        double p0, p1;
        hint_of(c0, "h", i, &a0, &p0);
        hint_of(c1, "h", i, &a1, &p1);
        ck_assert(a0 == a1 && p0 == p1);
        asked += a0;
    }
    ck_assert_int_gt(asked, 0);
    ck_assert_int_lt(asked, 100);
    uint64_t labels_asked[2];
    for (int k = 0; k < 2; k++) {
        const msgpack_object *h =
            pcc_map_get(pcc_map_get(e2e_admin(k ? c1 : c0, "info", "h", -1), "join"), "hints");
        ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(h, "labels")), 300);
        labels_asked[k] = (uint64_t)pcc_number(pcc_map_get(h, "asked"));
    }
    ck_assert_uint_eq(labels_asked[0], labels_asked[1]);
    pcc_close(c0);
    pcc_close(c1);
    finish_all(d, 2, &r);
}
END_TEST

START_TEST(a_daemon_that_has_not_caught_up_refuses_reads)
{
    rds r;
    redis_init(&r);
    e2e a, b;
    daemon_start(&a, &r, "");
    pcc_client *ca = e2e_connect(a.sock);
    e2e_create(ca, "m", "pa", DIM, true);
    ck_assert_uint_eq(feed(ca, "m", 0, 100), 100);
    /* b starts with an empty state dir while Redis is away: it cannot
     * catch up, so its reads are refused (code 12, busy) rather than
     * answered from nothing */
    redis_stop(&r);
    daemon_start(&b, &r, "");
    pcc_client *cb = e2e_connect(b.sock);
    double x[DIM] = {1, 0, 0, 0, 0, 0};
    uint32_t id;
    msgpack_packer *pk = pcc_request(cb, "predict", 2, &id);
    e2e_str(pk, "m");
    e2e_dense(pk, DIM, x);
    char msg[256];
    pcc_error_message(e2e_call(cb, id, 12), msg, sizeof msg);
    ck_assert_msg(strstr(msg, "catching up"), "%s", msg);
    ck_assert(!log_stat(cb, "ready")->via.boolean);
    /* a, which had caught up, goes on serving reads */
    ck_assert(isfinite(e2e_score(ca, "m", DIM, x)));
    redis_start(&r);
    e2e *all[2] = {&a, &b};
    wait_agree(all, 2, "m", 100);
    ck_assert(log_stat(cb, "ready")->via.boolean);
    ck_assert(e2e_score(cb, "m", DIM, x) == e2e_score(ca, "m", DIM, x));
    /* b restarts from its own snapshot while Redis is away: it has the
     * model, but until it caught up its predicts are refused all the same
     * (the direct path too) */
    pcc_close(cb);
    ck_assert_int_eq(e2e_stop(&b), 0);
    wait_connected(ca, true); /* a reconnects with back-off */
    ck_assert_uint_eq(feed(ca, "m", 100, 150), 50);
    redis_stop(&r);
    e2e_start(&b);
    cb = e2e_connect(b.sock);
    wait_connected(cb, false);
    pk = pcc_request(cb, "predict", 2, &id);
    e2e_str(pk, "m");
    e2e_dense(pk, DIM, x);
    e2e_call(cb, id, 12);
    ck_assert_uint_eq(e2e_info_u64(cb, "m", "examples"), 100); /* info is served */
    redis_start(&r);
    wait_agree(all, 2, "m", 150);
    ck_assert(e2e_score(cb, "m", DIM, x) == e2e_score(ca, "m", DIM, x));
    pcc_close(ca);
    pcc_close(cb);
    ck_assert_int_eq(e2e_stop(&a), 0);
    ck_assert_int_eq(e2e_stop(&b), 0);
    e2e_cleanup(&a);
    e2e_cleanup(&b);
    redis_cleanup(&r);
}
END_TEST

START_TEST(redis_killed_under_three_daemons_loses_no_acknowledged_label)
{
    rds r;
    redis_init_with(&r, true, false);
    e2e *d = calloc(3, sizeof *d); /* not on the stack: gcc's truncation check */
    ck_assert(d != NULL);
    e2e *all[3] = {&d[0], &d[1], &d[2]};
    pcc_client *c[3];
    for (int i = 0; i < 3; i++) {
        daemon_start(&d[i], &r, "");
        c[i] = e2e_connect(d[i].sock);
    }
    e2e_create(c[0], "m", "pa", DIM, true);
    uint64_t acked = 0, uncertain = 0, next = 0;
    for (int i = 0; i < 3; i++, next += WINDOW)
        feed_tolerant(c[i], "m", next, WINDOW, &acked, &uncertain);
    ck_assert_uint_eq(acked, 3 * WINDOW);
    /* writes in flight on every daemon when Redis dies: labels on two, and
     * on d0 label_batches of BATCH examples, more bytes than the daemon
     * gives hiredis at once (its own queue holds the rest) */
    enum { BATCH = 64, BATCHES = 64 };
    for (int i = 0; i < 3; i++) {
        double x[DIM];
        int y;
        char err[256];
        for (int k = 0; k < (i ? WINDOW : BATCHES); k++) {
            uint32_t id;
            msgpack_packer *pk = pcc_request(c[i], i ? "label" : "label_batch", i ? 3 : 2, &id);
            e2e_str(pk, "m");
            if (!i)
                msgpack_pack_array(pk, BATCH);
            for (int b = 0; b < (i ? 1 : BATCH); b++, next++) {
                example(next, x, &y);
                if (!i)
                    msgpack_pack_array(pk, 2);
                e2e_dense(pk, DIM, x);
                msgpack_pack_int(pk, y);
            }
        }
        ck_assert_int_eq(pcc_flush(c[i], err, sizeof err), 0);
    }
    redis_kill9(&r);
    /* while it is away every write is refused (on connections of their
     * own: answers on one connection keep their order, so these would
     * wait behind the writes in flight) */
    for (int i = 0; i < 3; i++) {
        pcc_client *fresh = e2e_connect(d[i].sock);
        wait_connected(fresh, false);
        uint64_t refused_acked = 0, refused_uncertain = 0;
        feed_tolerant(fresh, "m", next, 8, &refused_acked, &refused_uncertain);
        ck_assert_uint_eq(refused_acked + refused_uncertain, 0);
        pcc_close(fresh);
    }
    next += 8;
    /* Redis comes back: the writes it confirmed before it died are applied
     * and answered, the others were answered with code 11 */
    redis_start(&r);
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < (i ? WINDOW : BATCHES); k++) {
            uint32_t id;
            const msgpack_object *e, *res;
            char err[256];
            ck_assert_msg(pcc_read(c[i], &id, &e, &res, -1, err, sizeof err) == 0, "%s", err);
            uint64_t n = i ? 1 : BATCH;
            if (!e) {
                acked += n;
                continue;
            }
            pcc_error_message(e, err, sizeof err);
            ck_assert_msg(pcc_error_code(e) == 11, "%s", err);
            uncertain += strstr(err, "may") ? n : 0;
        }
    for (int i = 0; i < 3; i++)
        wait_connected(c[i], true);
    for (int i = 0; i < 3; i++, next += WINDOW)
        feed_tolerant(c[i], "m", next, WINDOW, &acked, &uncertain);
    uint64_t examples = wait_same(all, 3, "m", -1);
    ck_assert_msg(examples >= acked && examples <= acked + uncertain,
                  "%llu examples for %llu acknowledged labels (%llu uncertain)",
                  (unsigned long long)examples, (unsigned long long)acked,
                  (unsigned long long)uncertain);
    for (int i = 0; i < 3; i++)
        pcc_close(c[i]);
    finish_all(d, 3, &r);
}
END_TEST

START_TEST(a_write_without_the_learn_right_never_reaches_the_log)
{
    rds r;
    redis_init(&r);
    e2e d;
    e2e_init(&d, NULL);
    /* the Unix socket may only read; TCP (loopback) may learn */
    FILE *f = fopen(d.config, "w");
    ck_assert(f != NULL);
    fprintf(f,
            "listen:\n  tcp: [\"127.0.0.1:%d\"]\n  unix: [{path: \"%s\", rights: read}]\n"
            "state_dir: %s/state\nlog: {backend: redis, address: \"unix:%s\"}\n"
            "template: {rule: pa, dim: %d}\nsnapshot: {interval: 0}\n",
            d.port, d.sock, d.dir, r.sock, DIM);
    fclose(f);
    e2e_start(&d);
    pcc_client *ro = e2e_connect(d.sock), *rw = e2e_connect(d.tcp);
    double x[DIM] = {1, 0, 0, 0, 0, 0};
    uint32_t id;
    msgpack_packer *pk = pcc_request(ro, "label", 3, &id);
    e2e_str(pk, "m");
    e2e_dense(pk, DIM, x);
    msgpack_pack_int(pk, 1);
    e2e_call(ro, id, 13);
    ck_assert_int_eq(redis_int(&r, "XLEN %s", "pcd:{m}"), 0);
    ck_assert_uint_eq(log_u64(ro, "appended"), 0);
    ck_assert_uint_eq(feed(rw, "m", 0, 10), 10);
    ck_assert_int_eq(redis_int(&r, "XLEN %s", "pcd:{m}"), 10);
    pcc_close(ro);
    pcc_close(rw);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
    redis_cleanup(&r);
}
END_TEST

/* A daemon whose log.password_file holds `secret` (mode 0600). */
static void daemon_start_with_password(e2e *d, const rds *r, const char *secret)
{
    e2e_init(d, NULL);
    char pw[300], extra[900];
    snprintf(pw, sizeof pw, "%s/redis-password", d->dir);
    FILE *f = fopen(pw, "w");
    ck_assert(f != NULL);
    fprintf(f, "%s\n", secret);
    fclose(f);
    ck_assert_int_eq(chmod(pw, 0600), 0);
    snprintf(extra, sizeof extra,
             "log: {backend: redis, address: \"unix:%s\", password_file: \"%s\"}\n"
             "template: {rule: pa, dim: %d}\nsnapshot: {interval: 0}\n",
             r->sock, pw, DIM);
    e2e_write_config(d, extra);
    e2e_start(d);
}

/* log.password_file: Redis's password (requirepass) or an ACL user's
 * ("USER PASSWORD") lets a daemon append, follow and publish, and the two
 * agree; a wrong one gets writes refused with code 11 saying Redis refused
 * the password; a password file others may read stops the start. */
START_TEST(the_password_reaches_redis_and_a_wrong_one_is_refused)
{
    rds r;
    redis_init_with(&r, false, true);
    e2e a, b, c;
    daemon_start_with_password(&a, &r, REDIS_PASSWORD);
    daemon_start_with_password(&b, &r, REDIS_USER " " REDIS_USER_PASSWORD);
    pcc_client *ca = e2e_connect(a.sock), *cb = e2e_connect(b.sock);
    ck_assert_uint_eq(feed(ca, "m", 0, 40), 40);
    ck_assert_uint_eq(feed(cb, "m", 40, 80), 80 - 40);
    char ida[64] = "", idb[64] = "", da[32], db[32];
    for (int t = 0; t < 200 && (!*ida || strcmp(ida, idb)); t++) {
        info_str(ca, "m", "log_id", ida, sizeof ida);
        info_str(cb, "m", "log_id", idb, sizeof idb);
        e2e_sleep_ms(20);
    }
    ck_assert_str_eq(ida, idb);
    info_str(ca, "m", "digest", da, sizeof da);
    info_str(cb, "m", "digest", db, sizeof db);
    ck_assert_str_eq(da, db);
    e2e_admin(cb, "save", NULL, -1); /* published from the snapshot child, with AUTH */
    ck_assert_int_eq(redis_int(&r, "HEXISTS %s data", "pcd:{m}:snap"), 1);
    daemon_start_with_password(&c, &r, "not-the-password");
    pcc_client *cc = e2e_connect(c.sock);
    uint32_t id = send_label_m(cc);
    char msg[300];
    pcc_error_message(e2e_call(cc, id, 11), msg, sizeof msg);
    ck_assert_msg(strstr(msg, "refused the password of log.password_file") && strstr(msg, "WRONGPASS"),
                  "%s", msg);
    ck_assert_int_eq(redis_int(&r, "XLEN %s", "pcd:{m}"), 80);
    pcc_close(cc);
    ck_assert_int_eq(e2e_stop(&c), 0);
    char pw[300], cmd[900];
    snprintf(pw, sizeof pw, "%s/redis-password", c.dir);
    ck_assert_int_eq(chmod(pw, 0644), 0);
    snprintf(cmd, sizeof cmd, "'%s' --config '%s' --check-config >'%s' 2>&1", getenv("PERCEPTROND"),
             c.config, c.log);
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 0, "the daemon accepted the config");
    ck_assert(e2e_log_has(&c, "the Redis password"));
    ck_assert(e2e_log_has(&c, "are open to other users (mode 0644)"));
    ck_assert(!e2e_log_has(&c, "not-the-password"));
    e2e_cleanup(&c);
    pcc_close(ca);
    pcc_close(cb);
    ck_assert_int_eq(e2e_stop(&a), 0);
    ck_assert_int_eq(e2e_stop(&b), 0);
    e2e_cleanup(&a);
    e2e_cleanup(&b);
    redis_cleanup(&r);
}
END_TEST

/* A write sent behind a refused AUTH on the same connection (pipelined
 * while Redis had not answered yet) was never applied: Redis answers it
 * NOAUTH.  Its answer says the password was refused and that the write was
 * not applied, not that the connection was lost and it "may still be
 * applied".  Redis is stopped (SIGSTOP) while the daemon connects and the
 * label arrives, so both wait in the connection until it continues. */
START_TEST(a_write_behind_a_refused_password_is_told_why)
{
    rds r;
    redis_init_with(&r, false, true);
    ck_assert_int_eq(kill(r.pid, SIGSTOP), 0);
    e2e c;
    daemon_start_with_password(&c, &r, "not-the-password");
    pcc_client *cc = e2e_connect(c.sock);
    e2e_sleep_ms(300); /* the daemon dialled: its AUTH waits in the socket */
    uint32_t id = send_label_m(cc);
    char err[256];
    ck_assert_int_eq(pcc_flush(cc, err, sizeof err), 0);
    e2e_sleep_ms(300); /* the label reached the daemon, and its XADD the socket */
    ck_assert_int_eq(kill(r.pid, SIGCONT), 0);
    char msg[300];
    pcc_error_message(e2e_call(cc, id, 11), msg, sizeof msg);
    ck_assert_msg(strstr(msg, "WRONGPASS") && !strstr(msg, "may still be applied"), "%s", msg);
    ck_assert_int_eq(redis_int(&r, "XLEN %s", "pcd:{m}"), 0);
    pcc_close(cc);
    ck_assert_int_eq(e2e_stop(&c), 0);
    e2e_cleanup(&c);
    redis_cleanup(&r);
}
END_TEST

/* log.wait_replicas: 1 with a Redis replica.  While the replica follows,
 * every acknowledged label is on it when the answer arrives; stopped
 * (SIGSTOP), labels are answered with code 11 (after the 2 s timeout: under
 * load a replica can take more than 300 ms to confirm) saying 0 of 1 replicas
 * confirmed (in the log and applied all the same: the daemon and the
 * primary have them); continued, labels are acknowledged again. */
START_TEST(wait_replicas_holds_answers_until_a_replica_has_the_entry)
{
    rds p = {.port = e2e_free_port()}, rep = {.port = 0};
    redis_init_dir(&p);
    redis_start(&p);
    rep.primary = p.port;
    redis_init_dir(&rep);
    redis_start(&rep);
    for (int t = 0; t < 500; t++) { /* the replica's first sync */
        redisReply *i = redis_cmd(&rep, "INFO replication");
        bool up = strstr(i->str, "master_link_status:up") != NULL;
        freeReplyObject(i);
        if (up)
            break;
        ck_assert_msg(t < 499, "the replica did not connect (see %s)", rep.log);
        e2e_sleep_ms(20);
    }
    e2e d;
    char extra[600];
    snprintf(extra, sizeof extra,
             "log: {backend: redis, address: \"unix:%s\", wait_replicas: 1, wait_timeout_ms: 2000}\n"
             "template: {rule: pa, dim: %d}\nsnapshot: {interval: 0}\n",
             p.sock, DIM);
    e2e_init(&d, extra);
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    for (uint64_t i = 0; i < 20; i++) { /* one at a time: each answer means "on the replica" */
        ck_assert_uint_eq(feed(c, "m", i, i + 1), 1);
        ck_assert_int_eq(redis_int(&rep, "XLEN %s", "pcd:{m}"), (long long)i + 1);
    }
    ck_assert_uint_eq(feed(c, "m", 20, 120), 100); /* pipelined: WAITs cover passes */
    ck_assert_int_eq(redis_int(&rep, "XLEN %s", "pcd:{m}"), 120);
    kill(rep.pid, SIGSTOP);
    double x[DIM];
    int y;
    example(120, x, &y);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, "m");
    e2e_dense(pk, DIM, x);
    msgpack_pack_int(pk, y);
    char msg[400];
    pcc_error_message(e2e_call(c, id, 11), msg, sizeof msg);
    ck_assert_msg(strstr(msg, "0 of the 1 replicas log.wait_replicas asks for confirmed it within "
                         "2000 ms"), "%s", msg);
    ck_assert_int_eq(redis_int(&p, "XLEN %s", "pcd:{m}"), 121);
    ck_assert_uint_eq(e2e_info_u64(c, "m", "examples"), 121);
    ck_assert_uint_eq(log_u64(c, "wait_unconfirmed"), 1);
    kill(rep.pid, SIGCONT);
    ck_assert_uint_eq(feed(c, "m", 121, 130), 9);
    ck_assert_int_eq(redis_int(&rep, "XLEN %s", "pcd:{m}"), 130);
    /* the primary killed while a WAIT waits (the replica stopped again): the
     * label is answered with code 11, not left hanging */
    kill(rep.pid, SIGSTOP);
    send_labels(c, "m", 130, 1);
    e2e_sleep_ms(50);
    redis_kill9(&p);
    kill(rep.pid, SIGCONT);
    const msgpack_object *error, *result;
    char err[256];
    ck_assert_msg(pcc_read(c, &id, &error, &result, 10000, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(error && pcc_error_code(error) == 11, "a label whose WAIT was cut off: %s",
                  error ? "another error" : "acknowledged");
    e2e_down(&d, c);
    redis_cleanup(&rep);
    redis_cleanup(&p);
}
END_TEST

/* redis-server on PATH (or Debian's place), else "". */
/* stats' rest map [key] of the daemon behind c. */
static uint64_t rest_stat(pcc_client *c, const char *key)
{
    const msgpack_object *r = pcc_map_get(e2e_admin(c, "stats", NULL, -1), "rest");
    ck_assert_msg(r && r->type == MSGPACK_OBJECT_MAP, "stats has no rest map");
    return (uint64_t)pcc_number(pcc_map_get(r, key));
}

/* Models at rest on the shared log (issue 30): d1 and d2 keep one model
 * resident (limits.resident_max: 1), d0 keeps all three.  Labels for three
 * models come through d1 and d2 in turn, so each write lands on a daemon
 * where its model rests (loaded, the write logged and applied, another
 * model put to rest) while the entries of the other two models reach the
 * resting ones; every daemon ends bit-identical with d0, over several
 * rounds.  Then d2, killed with kill -9, comes back from its snapshot files
 * and catches up on the entries it missed, each model loaded by its
 * stream's next entry and put back to rest after it. */
START_TEST(replicas_rest_models_and_agree_bit_identically)
{
    rds r;
    redis_init(&r);
    e2e *d = calloc(3, sizeof *d);
    ck_assert(d != NULL);
    e2e *all[3] = {&d[0], &d[1], &d[2]};
    static const char rest[] = "limits: {resident_max: 1}\n";
    daemon_start(&d[0], &r, "");
    daemon_start_with(&d[1], &r, "", rest);
    daemon_start_with(&d[2], &r, "", rest);
    pcc_client *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = e2e_connect(d[i].sock);
    static const char *const models[] = {"a", "b", "c"};
    for (int k = 0; k < 3; k++)
        e2e_create(c[1], models[k], "pa", DIM, true);
    uint64_t sent = 0;
    for (int round = 0; round < 4; round++, sent += 40)
        for (int k = 0; k < 3; k++) {
            ck_assert_uint_eq(feed(c[1 + (round + k) % 2], models[k], sent, sent + 20), 20);
            ck_assert_uint_eq(feed(c[1 + (round + k + 1) % 2], models[k], sent + 20, sent + 40),
                              20);
        }
    for (int k = 0; k < 3; k++)
        wait_agree(all, 3, models[k], sent);
    for (int i = 1; i < 3; i++) {
        ck_assert_uint_le(rest_stat(c[i], "resident"), 2); /* the trim runs after a request */
        ck_assert_uint_ge(rest_stat(c[i], "evictions"), 8);
        ck_assert_uint_ge(rest_stat(c[i], "loads"), 8);
        ck_assert_uint_eq(rest_stat(c[i], "load_failed"), 0);
    }

    /* d2 dies while its models rest; the others take more labels */
    pcc_close(c[2]);
    kill(d[2].pid, SIGKILL);
    waitpid(d[2].pid, NULL, 0);
    d[2].pid = 0;
    for (int k = 0; k < 3; k++)
        ck_assert_uint_eq(feed(c[1], models[k], sent, sent + 30), 30);
    sent += 30;
    e2e_start(&d[2]);
    for (int k = 0; k < 3; k++)
        wait_agree(all, 3, models[k], sent);
    c[2] = e2e_connect(d[2].sock);
    /* each model its entries woke went back to rest after them */
    ck_assert_uint_le(rest_stat(c[2], "resident"), 1);
    ck_assert_uint_eq(rest_stat(c[2], "load_failed"), 0);
    for (int i = 0; i < 3; i++)
        pcc_close(c[i]);
    finish_all(d, 3, &r);
}
END_TEST

int main(void)
{
    find_program("redis-server", redis_bin, sizeof redis_bin);
    if (!redis_bin[0]) {
        printf("SKIP: redis-server is not installed (Debian: apt-get install redis-server); "
               "the Redis Streams log is not tested\n");
        return 77; /* meson's "skipped" */
    }
    Suite *s = suite_create("e2e_redis");
    TU_TCASE(s, "redis", 120, replicas_agree_and_a_killed_or_fresh_daemon_catches_up,
        losing_redis_refuses_writes_serves_reads_and_resumes, shards_serve_disjoint_models,
        a_fresh_daemon_bootstraps_from_the_published_snapshot_and_streams_are_trimmed,
        a_model_bootstrapped_from_redis_keeps_its_challengers_and_experts,
        prepared_models_replicate_bit_identically, a_daemon_that_has_not_caught_up_refuses_reads,
        redis_killed_under_three_daemons_loses_no_acknowledged_label,
        a_write_without_the_learn_right_never_reaches_the_log,
        the_password_reaches_redis_and_a_wrong_one_is_refused,
        wait_replicas_holds_answers_until_a_replica_has_the_entry, label_hints_agree_on_replicas,
        a_write_behind_a_refused_password_is_told_why,
        replicas_rest_models_and_agree_bit_identically);
    return tu_run(s);
}
