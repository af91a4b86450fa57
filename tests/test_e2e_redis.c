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

#include <sys/un.h>

#define DIM E2E_DIM
#define WINDOW 32

static char redis_bin[512];

typedef struct rds {
    char dir[40], sock[80], log[80];
    pid_t pid;
} rds;

/* PING over the Unix socket, raw RESP. */
static bool redis_ping(const rds *r)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", r->sock);
    bool ok = false;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(fd, "PING\r\n", 6) == 6) {
        char buf[16] = "";
        ok = read(fd, buf, sizeof buf - 1) > 0 && !strncmp(buf, "+PONG", 5);
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

static void redis_start(rds *r)
{
    r->pid = fork();
    ck_assert(r->pid >= 0);
    if (r->pid == 0) {
        execl(redis_bin, redis_bin, "--port", "0", "--unixsocket", r->sock, "--dir", r->dir,
              "--appendonly", "yes", "--save", "", "--daemonize", "no", "--logfile", r->log,
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) {
        if (redis_ping(r))
            return;
        e2e_sleep_ms(10);
    }
    ck_abort_msg("redis-server did not answer on %s (see %s)", r->sock, r->log);
}

/* SIGTERM: Redis syncs its AOF and exits. */
static void redis_stop(rds *r)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, SIGTERM);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
}

static void redis_init(rds *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/pcd-redis-XXXXXX");
    ck_assert(mkdtemp(r->dir) != NULL);
    snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
    snprintf(r->log, sizeof r->log, "%s/redis.log", r->dir);
    redis_start(r);
}

static void redis_cleanup(rds *r)
{
    redis_stop(r);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", r->dir);
}

/* A daemon on the log, serving patterns (a YAML list, "" for all). */
static void daemon_start(e2e *d, const rds *r, const char *patterns)
{
    char extra[600];
    snprintf(extra, sizeof extra,
             "log: {backend: redis, address: \"unix:%s\"%s%s}\n"
             "template: {rule: pa, dim: %d}\nsnapshot: {interval: 0}\n",
             r->sock, *patterns ? ", models: " : "", patterns, DIM);
    e2e_init(d, extra);
    e2e_start(d);
}

static void example(uint64_t i, double x[DIM], int *y)
{
    e2e_example(i, 7, false, x, y);
}

/* Labels [from, to) of model through c, pipelined in windows; every answer
 * must be a success.  Returns how many were acknowledged. */
static uint64_t feed(pcc_client *c, const char *model, uint64_t from, uint64_t to)
{
    char err[256];
    uint64_t acked = 0;
    for (uint64_t i = from; i < to;) {
        uint64_t n = to - i < WINDOW ? to - i : WINDOW;
        for (uint64_t k = 0; k < n; k++) {
            double x[DIM];
            int y;
            example(i + k, x, &y);
            uint32_t id;
            msgpack_packer *pk = pcc_request(c, "label", 3, &id);
            e2e_str(pk, model);
            e2e_dense(pk, DIM, x);
            msgpack_pack_int(pk, y);
        }
        ck_assert_int_eq(pcc_flush(c, err, sizeof err), 0);
        for (uint64_t k = 0; k < n; k++) {
            uint32_t id;
            const msgpack_object *e, *r;
            ck_assert_msg(pcc_read(c, &id, &e, &r, -1, err, sizeof err) == 0, "%s", err);
            if (e) {
                pcc_error_message(e, err, sizeof err);
                ck_abort_msg("label failed: %s", err);
            }
            acked++;
        }
        i += n;
    }
    return acked;
}

/* info(model)[key] as a string ("" when absent or not a string). */
static void info_str(pcc_client *c, const char *model, const char *key, char *out, size_t outlen)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "info", 1, &id);
    e2e_str(pk, model);
    const msgpack_object *error, *result;
    char err[256];
    out[0] = 0;
    ck_assert_msg(pcc_call(c, id, &error, &result, err, sizeof err) == 0, "%s", err);
    const msgpack_object *v = error ? NULL : pcc_map_get(result, key);
    if (v && v->type == MSGPACK_OBJECT_STR)
        snprintf(out, outlen, "%.*s", (int)v->via.str.size, v->via.str.ptr);
}

static const msgpack_object *log_stat(pcc_client *c, const char *key)
{
    const msgpack_object *r = e2e_admin(c, "stats", NULL, -1);
    const msgpack_object *l = pcc_map_get(r, "log");
    ck_assert_msg(l && l->type == MSGPACK_OBJECT_MAP, "stats has no log map");
    return pcc_map_get(l, key);
}

/* Waits (up to 15 s) until every daemon reports the same log_id and digest
 * for model, and that it has `examples` examples. */
static void wait_agree(e2e **ds, size_t n, const char *model, uint64_t examples)
{
    char id0[64], dg0[64], id[64], dg[64];
    for (int t = 0; t < 1500; t++) {
        bool same = true;
        for (size_t i = 0; i < n && same; i++) {
            pcc_client *c = e2e_connect(ds[i]->sock);
            info_str(c, model, "log_id", i ? id : id0, sizeof id);
            info_str(c, model, "digest", i ? dg : dg0, sizeof dg);
            if (!i)
                same = e2e_info_u64(c, model, "examples") == examples;
            else
                same = !strcmp(id, id0) && !strcmp(dg, dg0);
            pcc_close(c);
        }
        if (same)
            return;
        e2e_sleep_ms(10);
    }
    ck_abort_msg("daemons do not agree on model %s after 15 s (%s %s vs %s %s)", model, id0, dg0,
                 id, dg);
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
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(e2e_stop(&d[i]), 0);
        e2e_cleanup(&d[i]);
    }
    free(d);
    redis_cleanup(&r);
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
    double x[DIM] = {1, 0, 0, 0, 0, 0};
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, "m");
    e2e_dense(pk, DIM, x);
    msgpack_pack_int(pk, 1);
    const msgpack_object *e = e2e_call(c, id, 11);
    char msg[256];
    pcc_error_message(e, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "Redis") && strstr(msg, r.sock), "the refusal does not name Redis: %s",
                  msg);
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

/* redis-server on PATH (or Debian's place), else "". */
static void find_redis(void)
{
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/bin:/usr/sbin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(redis_bin, sizeof redis_bin, "%s/redis-server", d);
        if (access(redis_bin, X_OK) == 0)
            return;
    }
    redis_bin[0] = 0;
}

int main(void)
{
    find_redis();
    if (!redis_bin[0]) {
        printf("SKIP: redis-server is not installed (Debian: apt-get install redis-server); "
               "the Redis Streams log is not tested\n");
        return 77; /* meson's "skipped" */
    }
    Suite *s = suite_create("e2e_redis");
    TCase *tc = tcase_create("redis");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, replicas_agree_and_a_killed_or_fresh_daemon_catches_up);
    tcase_add_test(tc, losing_redis_refuses_writes_serves_reads_and_resumes);
    tcase_add_test(tc, shards_serve_disjoint_models);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
