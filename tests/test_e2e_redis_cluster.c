/* test_e2e_redis_cluster.c - the shared log on a real Redis Cluster: three
 * redis-server masters (cluster-enabled, TCP on free loopback ports, a temp
 * dir each, joined by `redis-cli --cluster create`) and real daemons with
 * `log.cluster: true`.
 *
 * The daemon computes slots itself (redislog/cluster.c): they must be the
 * ones CLUSTER KEYSLOT gives.  Models whose streams sit on different masters,
 * labelled through three daemons, end with equal digests, and a fresh daemon
 * with an empty state dir catches up; a slot migrated (SETSLOT MIGRATING /
 * IMPORTING, MIGRATE, SETSLOT NODE) under running daemons loses no
 * acknowledged label, and writes go on on the new master; a master killed
 * refuses the writes of its models with code 11 while the others are
 * served, and writes resume when it is back.  Skipped (exit 77) only where
 * redis-server or redis-cli is missing. */
#include "tests/e2e.h"

#include <hiredis/hiredis.h>

#define DIM E2E_DIM
#define WINDOW 32
#include "daemon/redislog/cluster.h"
#include "tests/e2e_log.h"
#include "tests/testutil.h"

#define NODES 3 /* masters; a test may add a replica as node NODES */

static char redis_bin[512], cli_bin[512];

typedef struct cluster {
    char dir[40];
    int port[NODES + 1];
    pid_t pid[NODES + 1];
} cluster;

/* A port p with p + 10000 (its cluster bus) free too. */
static int bus_port(void)
{
    for (;;) {
        int p = e2e_free_port();
        if (p + 10000 >= 65536)
            continue;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(p + 10000)),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return p;
    }
}

/* One command to master i; NULL when it does not answer.  Caller frees. */
static redisReply *node_cmd(const cluster *c, int i, const char *fmt, ...)
{
    struct timeval tv = {2, 0};
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", c->port[i], tv);
    if (!ctx || ctx->err) {
        if (ctx)
            redisFree(ctx);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    redisFree(ctx);
    return r;
}

static void node_start(cluster *c, int i)
{
    c->pid[i] = fork();
    ck_assert(c->pid[i] >= 0);
    if (c->pid[i] == 0) {
        char port[16], conf[80], log[80];
        snprintf(port, sizeof port, "%d", c->port[i]);
        snprintf(conf, sizeof conf, "%s/nodes-%d.conf", c->dir, i);
        snprintf(log, sizeof log, "%s/redis-%d.log", c->dir, i);
        char aof[32];
        snprintf(aof, sizeof aof, "aof-%d", i);
        /* require-full-coverage no: a master down leaves the others serving */
        execl(redis_bin, redis_bin, "--port", port, "--bind", "127.0.0.1", "--cluster-enabled",
              "yes", "--cluster-config-file", conf, "--cluster-node-timeout", "1000",
              "--cluster-require-full-coverage", "no", "--dir", c->dir, "--appendonly", "yes",
              "--appenddirname", aof, "--appendfsync", "always", "--save", "", "--daemonize",
              "no", "--logfile", log, (char *)NULL);
        _exit(127);
    }
    for (int t = 0; t < 500; t++) {
        redisReply *r = node_cmd(c, i, "PING");
        bool ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (ok)
            return;
        e2e_sleep_ms(10);
    }
    ck_abort_msg("redis-server on port %d did not answer (see %s)", c->port[i], c->dir);
}

/* Waits (up to 20 s) until every running node says cluster_state:ok and,
 * with all_slots, knows every slot (without: a master may be down and its
 * slots failed). */
static void cluster_wait_ok(const cluster *c, bool all_slots)
{
    for (int t = 0; t < 2000; t++) {
        bool ok = true;
        for (int i = 0; i < NODES + 1 && ok; i++) {
            if (c->pid[i] <= 0)
                continue;
            redisReply *r = node_cmd(c, i, "CLUSTER INFO");
            ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") &&
                 (!all_slots || strstr(r->str, "cluster_slots_ok:16384"));
            if (r)
                freeReplyObject(r);
        }
        if (ok)
            return;
        e2e_sleep_ms(10);
    }
    ck_abort_msg("the Redis Cluster in %s is not ok after 20 s", c->dir);
}

static void cluster_start(cluster *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/pcd-rcl-XXXXXX");
    ck_assert(mkdtemp(c->dir) != NULL);
    for (int i = 0; i < NODES; i++) {
        c->port[i] = bus_port();
        node_start(c, i);
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' --cluster create 127.0.0.1:%d 127.0.0.1:%d 127.0.0.1:%d "
             "--cluster-replicas 0 --cluster-yes > '%s/create.log' 2>&1", cli_bin, c->port[0],
             c->port[1], c->port[2], c->dir);
    ck_assert_msg(system(cmd) == 0, "redis-cli --cluster create failed (see %s/create.log)", c->dir);
    cluster_wait_ok(c, true);
}

static void node_kill9(cluster *c, int i)
{
    kill(c->pid[i], SIGKILL);
    waitpid(c->pid[i], NULL, 0);
    c->pid[i] = 0;
}

static void cluster_cleanup(cluster *c)
{
    for (int i = 0; i < NODES + 1; i++)
        if (c->pid[i] > 0) {
            kill(c->pid[i], SIGTERM);
            waitpid(c->pid[i], NULL, 0);
        }
    char cmd[100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", c->dir);
}

/* The master that holds key's slot: the others answer MOVED. */
static int owner(const cluster *c, const char *key)
{
    for (int i = 0; i < NODES + 1; i++) {
        if (c->pid[i] <= 0)
            continue;
        redisReply *r = node_cmd(c, i, "TYPE %s", key);
        bool here = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (here)
            return i;
    }
    return -1;
}

/* names[i]: a model whose stream pcd:{name} is on master i. */
static void models_on_each_node(const cluster *c, char names[NODES][16])
{
    bool found[NODES] = {false};
    for (int k = 0, left = NODES; left && k < 1000; k++) {
        char name[16], key[32];
        snprintf(name, sizeof name, "m%d", k);
        snprintf(key, sizeof key, "pcd:{%s}", name);
        int o = owner(c, key);
        if (o >= 0 && !found[o]) {
            found[o] = true;
            snprintf(names[o], 16, "%s", name);
            left--;
        }
    }
    for (int i = 0; i < NODES; i++)
        ck_assert_msg(found[i], "no model name found on master %d", i);
}

/* A daemon on the cluster, seeded with master `seed`'s address, more log
 * keys in `more` (", key: value" or ""), more YAML lines in `lines`. */
static void daemon_start_with(e2e *d, const cluster *c, int seed, const char *more,
                              const char *lines)
{
    char extra[600];
    snprintf(extra, sizeof extra,
             "log: {backend: redis, address: \"tcp:127.0.0.1:%d\", cluster: true%s}\n"
             "template: {rule: pa, dim: %d}\nsnapshot: {interval: 0}\n%s",
             c->port[seed], more, DIM, lines);
    e2e_init(d, extra);
    e2e_start(d);
}

static void daemon_start(e2e *d, const cluster *c, int seed)
{
    daemon_start_with(d, c, seed, "", "");
}

/* Waits (up to 20 s) until stats.log.nodes_up is n. */
static void wait_nodes_up(e2e *d, uint64_t n)
{
    pcc_client *c = e2e_connect(d->sock);
    for (int t = 0; t < 2000 && log_u64(c, "nodes_up") != n; t++)
        e2e_sleep_ms(10);
    ck_assert_uint_eq(log_u64(c, "nodes_up"), n);
    pcc_close(c);
}

static long long xlen(const cluster *c, int i, const char *model)
{
    redisReply *r = node_cmd(c, i, "XLEN pcd:{%s}", model);
    ck_assert_msg(r && r->type == REDIS_REPLY_INTEGER, "XLEN pcd:{%s} on master %d: %s", model, i,
                  r && r->type == REDIS_REPLY_ERROR ? r->str : "no answer");
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* A fresh cluster, a model on each master (m), and room for n daemons
 * (calloc'd, for finish). */
static e2e *cluster_with_models(cluster *c, char m[NODES][16], size_t n)
{
    cluster_start(c);
    models_on_each_node(c, m);
    e2e *d = calloc(n, sizeof *d);
    ck_assert(d != NULL);
    return d;
}

static void finish(e2e *d, int n, cluster *c)
{
    e2e_stop_all(d, n);
    cluster_cleanup(c);
}

START_TEST(the_daemon_computes_the_slots_redis_does)
{
    ck_assert_uint_eq(pcd_crc16("123456789", 9), 0x31C3); /* Redis's crc16.c test vector */
    cluster c;
    cluster_start(&c);
    const char *odd[] = {"pcd:models", "{}", "{}x", "a{b", "a{b}c", "{a}{b}", "x{}{y}", "}{a}",
                         "pcd:{m1}:snap", "{user1000}.following", "", "é{ü}"};
    char key[64];
    for (int k = 0; k < 300; k++) {
        const char *kk = key;
        if (k < (int)(sizeof odd / sizeof *odd))
            kk = odd[k];
        else
            snprintf(key, sizeof key, "pcd:{model-%d}", k);
        redisReply *r = node_cmd(&c, 0, "CLUSTER KEYSLOT %b", kk, strlen(kk));
        ck_assert(r && r->type == REDIS_REPLY_INTEGER);
        ck_assert_msg(pcd_key_slot(kk, strlen(kk)) == (unsigned)r->integer, "key '%s': %u, Redis %lld",
                      kk, pcd_key_slot(kk, strlen(kk)), r->integer);
        freeReplyObject(r);
    }
    cluster_cleanup(&c);
}
END_TEST

START_TEST(daemons_on_a_cluster_agree_and_a_fresh_one_catches_up)
{
    cluster c;
    char m[NODES][16];
    e2e *d = cluster_with_models(&c, m, 4);
    for (int i = 0; i < 3; i++)
        daemon_start(&d[i], &c, i); /* each seeded by another master */
    for (int i = 0; i < 3; i++)
        wait_nodes_up(&d[i], NODES);
    /* every daemon labels every model: 3 x 3 x 100 labels */
    uint64_t acked[NODES] = {0};
    for (int i = 0; i < 3; i++) {
        pcc_client *cl = e2e_connect(d[i].sock);
        for (int k = 0; k < NODES; k++)
            acked[k] += feed(cl, m[k], 100 * (uint64_t)i, 100 * (uint64_t)i + 100);
        pcc_close(cl);
    }
    e2e *ds[4] = {&d[0], &d[1], &d[2], &d[3]};
    for (int k = 0; k < NODES; k++) {
        ck_assert_uint_eq(acked[k], 300);
        wait_agree(ds, 3, m[k], 300);
        /* the stream is on its master, with every label (created by the first) */
        char key[64];
        snprintf(key, sizeof key, "pcd:{%.16s}", m[k]);
        ck_assert_int_eq(owner(&c, key), k);
        ck_assert_int_eq(xlen(&c, k, m[k]), 300);
    }
    /* a model whose stream shares m[0]'s slot: a follower blocked in XREAD
     * on that slot must start again to take it in */
    char twin[16] = "", key0[64];
    snprintf(key0, sizeof key0, "pcd:{%.16s}", m[0]);
    for (int k = 0; !*twin && k < 1000000; k++) {
        char key[64];
        snprintf(key, sizeof key, "pcd:{t%d}", k);
        if (pcd_key_slot(key, strlen(key)) == pcd_key_slot(key0, strlen(key0)))
            snprintf(twin, sizeof twin, "t%d", k);
    }
    ck_assert(*twin);
    for (int i = 0; i < 3; i++) {
        pcc_client *cl = e2e_connect(d[i].sock);
        ck_assert_uint_eq(feed(cl, twin, 50 * (uint64_t)i, 50 * (uint64_t)i + 50), 50);
        ck_assert_uint_eq(feed(cl, m[0], 300 + 10 * (uint64_t)i, 310 + 10 * (uint64_t)i), 10);
        pcc_close(cl);
    }
    wait_agree(ds, 3, twin, 150);
    wait_agree(ds, 3, m[0], 330);
    /* a fresh daemon, empty state dir: the catalogue names the models */
    daemon_start(&d[3], &c, 1);
    wait_agree(ds, 4, m[0], 330);
    wait_agree(ds, 4, twin, 150);
    for (int k = 1; k < NODES; k++)
        wait_agree(ds, 4, m[k], 300);
    pcc_client *cl = e2e_connect(d[3].sock);
    ck_assert_uint_eq(log_u64(cl, "streams"), NODES + 1);
    pcc_close(cl);
    finish(d, 4, &c);
}
END_TEST

/* A window of labels of model through cl; errors must be code 11. */
static void window(pcc_client *cl, const char *model, uint64_t *next, uint64_t *acked,
                   uint64_t *uncertain, uint64_t *refused)
{
    uint64_t a = *acked, u = *uncertain;
    feed_tolerant(cl, model, *next, WINDOW, acked, uncertain);
    *refused += WINDOW - (*acked - a) - (*uncertain - u);
    *next += WINDOW;
}

START_TEST(a_slot_migrated_under_running_daemons_loses_no_acknowledged_label)
{
    cluster c;
    char m[NODES][16];
    e2e *d = cluster_with_models(&c, m, 2);
    for (int i = 0; i < 2; i++)
        daemon_start(&d[i], &c, 0);
    for (int i = 0; i < 2; i++)
        wait_nodes_up(&d[i], NODES);
    pcc_client *c0 = e2e_connect(d[0].sock), *c1 = e2e_connect(d[1].sock);
    const char *mv = m[0], *other = m[1]; /* mv moves from master 0 to master 2 */
    uint64_t next = 0, acked = 0, uncertain = 0, refused = 0, oacked = 0;
    window(c0, mv, &next, &acked, &uncertain, &refused);
    window(c1, mv, &next, &acked, &uncertain, &refused);
    ck_assert_uint_eq(acked, 2 * WINDOW);

    char key[64];
    snprintf(key, sizeof key, "pcd:{%.16s}", mv);
    redisReply *r = node_cmd(&c, 0, "CLUSTER KEYSLOT %s", key);
    long long slot = r->integer;
    freeReplyObject(r);
    char id[NODES][64];
    for (int i = 0; i < NODES; i++) {
        r = node_cmd(&c, i, "CLUSTER MYID");
        snprintf(id[i], sizeof id[i], "%s", r->str);
        freeReplyObject(r);
    }
    freeReplyObject(node_cmd(&c, 2, "CLUSTER SETSLOT %lld IMPORTING %s", slot, id[0]));
    freeReplyObject(node_cmd(&c, 0, "CLUSTER SETSLOT %lld MIGRATING %s", slot, id[2]));
    window(c0, mv, &next, &acked, &uncertain, &refused); /* still served by master 0 */
    oacked += feed(c1, other, 0, WINDOW);
    /* every key of the slot (the stream, :held, :snap) moves */
    r = node_cmd(&c, 0, "CLUSTER GETKEYSINSLOT %lld 100", slot);
    ck_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1);
    for (size_t k = 0; k < r->elements; k++) {
        redisReply *mr = node_cmd(&c, 0, "MIGRATE 127.0.0.1 %d %s 0 5000", c.port[2],
                                  r->element[k]->str);
        ck_assert_msg(mr && mr->type == REDIS_REPLY_STATUS, "MIGRATE %s failed", r->element[k]->str);
        freeReplyObject(mr);
    }
    freeReplyObject(r);
    /* moved, not yet announced: master 0 answers ASK, the writes are refused */
    window(c1, mv, &next, &acked, &uncertain, &refused);
    window(c0, mv, &next, &acked, &uncertain, &refused);
    ck_assert_uint_gt(refused, 0);
    oacked += feed(c0, other, WINDOW, 2 * WINDOW); /* the other models are served */
    for (int i = 0; i < NODES; i++)
        freeReplyObject(node_cmd(&c, i, "CLUSTER SETSLOT %lld NODE %s", slot, id[2]));
    /* the daemons read the map again and write to master 2 */
    uint64_t before = acked;
    for (int t = 0; t < 400 && acked - before < 4 * WINDOW; t++) {
        window(t % 2 ? c1 : c0, mv, &next, &acked, &uncertain, &refused);
        if (acked == before)
            e2e_sleep_ms(50);
    }
    ck_assert_msg(acked - before >= 4 * WINDOW, "writes did not resume on the new master");
    ck_assert_int_eq(owner(&c, key), 2);
    /* appendfsync always, no connection lost: nothing uncertain, and the
     * stream holds exactly the acknowledged labels (plus the create) */
    ck_assert_uint_eq(uncertain, 0);
    ck_assert_int_eq(xlen(&c, 2, mv), (long long)acked);
    e2e *ds[2] = {&d[0], &d[1]};
    wait_agree(ds, 2, mv, acked);
    wait_agree(ds, 2, other, oacked);
    ck_assert_uint_eq(oacked, 2 * WINDOW);
    pcc_close(c0);
    pcc_close(c1);
    finish(d, 2, &c);
}
END_TEST

/* GET /readyz on the metrics listener at port: the HTTP status. */
static int readyz(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    const char req[] = "GET /readyz HTTP/1.0\r\n\r\n";
    ck_assert(write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1));
    char buf[512] = "";
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    int status = 0;
    ck_assert_msg(n > 0 && sscanf(buf, "HTTP/1.%*d %d", &status) == 1, "not HTTP: %.80s", buf);
    return status;
}

/* One label of model through cl: 0 acknowledged, else the error code
 * (its message into msg). */
static int64_t one_label(pcc_client *cl, const char *model, uint64_t i, char *msg, size_t len)
{
    send_labels(cl, model, i, 1);
    uint32_t id;
    const msgpack_object *e, *r;
    char err[256];
    ck_assert_msg(pcc_read(cl, &id, &e, &r, -1, err, sizeof err) == 0, "%s", err);
    if (!e)
        return 0;
    pcc_error_message(e, msg, len);
    return pcc_error_code(e);
}

START_TEST(a_master_down_refuses_its_models_and_the_others_are_served)
{
    cluster c;
    char m[NODES][16];
    e2e *d = cluster_with_models(&c, m, 2);
    int mport = e2e_free_port();
    char metrics[80];
    snprintf(metrics, sizeof metrics, "metrics: {listen: \"127.0.0.1:%d\"}\n", mport);
    daemon_start_with(&d[0], &c, 0, "", metrics);
    daemon_start(&d[1], &c, 0);
    for (int i = 0; i < 2; i++)
        wait_nodes_up(&d[i], NODES);
    pcc_client *c0 = e2e_connect(d[0].sock), *c1 = e2e_connect(d[1].sock);
    uint64_t n[NODES];
    for (int k = 0; k < NODES; k++)
        n[k] = feed(c0, m[k], 0, 50) + feed(c1, m[k], 50, 100);
    e2e *ds[2] = {&d[0], &d[1]};
    for (int k = 0; k < NODES; k++)
        wait_agree(ds, 2, m[k], n[k]);

    node_kill9(&c, 1);
    wait_nodes_up(&d[0], NODES - 1);
    wait_nodes_up(&d[1], NODES - 1);
    /* On a loaded machine (valgrind, other work) the live masters can miss
     * each other's heartbeats past cluster-node-timeout and say CLUSTERDOWN
     * for a moment: the writes below wait for them to agree again. */
    cluster_wait_ok(&c, false);
    /* the others take writes and every read is served: still ready */
    ck_assert_int_eq(readyz(mport), 200);
    char msg[400], port[16];
    snprintf(port, sizeof port, ":%d", c.port[1]);
    for (int i = 0; i < 2; i++) {
        pcc_client *cl = i ? c1 : c0;
        int64_t code = one_label(cl, m[1], 1000, msg, sizeof msg);
        ck_assert_msg(code == 11 && strstr(msg, port) && strstr(msg, "refused"),
                      "a write to the stopped master's model: code %lld, %s", (long long)code, msg);
        /* its model is still read from memory */
        ck_assert_uint_eq(e2e_info_u64(cl, m[1], "examples"), n[1]);
        for (int k = 0; k < NODES; k += 2) {
            n[k] += feed(cl, m[k], 100 + 20 * (uint64_t)i, 120 + 20 * (uint64_t)i);
        }
    }
    for (int k = 0; k < NODES; k += 2)
        wait_agree(ds, 2, m[k], n[k]);

    node_start(&c, 1); /* its nodes.conf and AOF bring it back as it was */
    cluster_wait_ok(&c, true);
    uint64_t uncertain = 0; /* refused while it came back, but "may still be applied" */
    for (int i = 0; i < 2; i++) { /* each daemon reads the slot map again in its own time */
        int64_t code = -1;
        for (int t = 0; t < 300 && code; t++) {
            code = one_label(i ? c1 : c0, m[1], 2000 + 400 * (uint64_t)i + (uint64_t)t, msg, sizeof msg);
            ck_assert_msg(code == 0 || code == 11, "code %lld: %s", (long long)code, msg);
            uncertain += code && strstr(msg, "may") != NULL;
            if (code)
                e2e_sleep_ms(50);
        }
        ck_assert_msg(code == 0, "writes to %s through daemon %d did not resume: %s", m[1], i, msg);
    }
    n[1] += feed(c1, m[1], 3000, 3050) + 2;
    for (int k = 0; k < NODES; k += 2)
        wait_agree(ds, 2, m[k], n[k]);
    uint64_t got = wait_same(ds, 2, m[1], -1);
    ck_assert_msg(got >= n[1] && got <= n[1] + uncertain, "%s: %llu examples, %llu acknowledged, "
                  "%llu uncertain", m[1], (unsigned long long)got, (unsigned long long)n[1],
                  (unsigned long long)uncertain);
    pcc_close(c0);
    pcc_close(c1);
    finish(d, 2, &c);
}
END_TEST

/* A replica of master 1 joins as node NODES; returns when it is in sync. */
static void add_replica(cluster *c)
{
    c->port[NODES] = bus_port();
    node_start(c, NODES);
    redisReply *r = node_cmd(c, 1, "CLUSTER MYID");
    ck_assert(r && r->type == REDIS_REPLY_STRING);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' --cluster add-node 127.0.0.1:%d 127.0.0.1:%d --cluster-slave "
             "--cluster-master-id %s > '%s/add.log' 2>&1", cli_bin, c->port[NODES], c->port[0],
             r->str, c->dir);
    freeReplyObject(r);
    ck_assert_msg(system(cmd) == 0, "redis-cli --cluster add-node failed (see %s/add.log)", c->dir);
    for (int t = 0; t < 2000; t++) {
        r = node_cmd(c, NODES, "INFO replication");
        bool up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");
        if (r)
            freeReplyObject(r);
        if (up) {
            cluster_wait_ok(c, true);
            return;
        }
        e2e_sleep_ms(10);
    }
    ck_abort_msg("the replica did not sync with master 1 within 20 s (see %s)", c->dir);
}

START_TEST(a_failover_is_followed_and_waited_writes_survive_it)
{
    cluster c;
    cluster_start(&c);
    add_replica(&c);
    char m[NODES][16];
    models_on_each_node(&c, m);
    e2e *d = calloc(2, sizeof *d);
    ck_assert(d != NULL);
    /* d[0] answers only once a replica has the entry (WAIT per master) */
    daemon_start_with(&d[0], &c, 0, ", wait_replicas: 1, wait_timeout_ms: 200", "");
    daemon_start(&d[1], &c, 0);
    for (int i = 0; i < 2; i++)
        wait_nodes_up(&d[i], NODES);
    pcc_client *c0 = e2e_connect(d[0].sock), *c1 = e2e_connect(d[1].sock);
    /* master 1 has a replica: confirmed; master 0 has none: code 11, yet applied */
    uint64_t waited = feed(c0, m[1], 0, 100);
    char msg[400];
    int64_t code = one_label(c0, m[0], 0, msg, sizeof msg);
    ck_assert_msg(code == 11 && strstr(msg, "0 of the 1 replicas"), "code %lld: %s", (long long)code,
                  msg);
    e2e *ds[2] = {&d[0], &d[1]};
    wait_agree(ds, 2, m[1], waited);
    wait_agree(ds, 2, m[0], 1);

    node_kill9(&c, 1); /* its replica is promoted (cluster-node-timeout 1 s) */
    char key[64];
    snprintf(key, sizeof key, "pcd:{%.16s}", m[1]);
    uint64_t after = 0, uncertain = 0;
    for (int t = 0; t < 400 && !after; t++) {
        code = one_label(c1, m[1], 1000 + (uint64_t)t, msg, sizeof msg);
        ck_assert_msg(code == 0 || code == 11, "code %lld: %s", (long long)code, msg);
        uncertain += code && strstr(msg, "may") != NULL;
        after += code == 0;
        if (code)
            e2e_sleep_ms(50);
    }
    ck_assert_msg(after, "writes to %s did not resume after the failover: %s", m[1], msg);
    ck_assert_int_eq(owner(&c, key), NODES);
    after += feed(c1, m[1], 2000, 2050);
    /* every label WAIT confirmed is on the new master, and the daemons agree */
    uint64_t got = wait_same(ds, 2, m[1], -1);
    ck_assert_msg(got >= waited + after && got <= waited + after + uncertain,
                  "%s: %llu examples, %llu confirmed before the failover, %llu after, %llu uncertain",
                  m[1], (unsigned long long)got, (unsigned long long)waited,
                  (unsigned long long)after, (unsigned long long)uncertain);
    ck_assert_int_eq(xlen(&c, NODES, m[1]), (long long)got);
    pcc_close(c0);
    pcc_close(c1);
    finish(d, 2, &c);
}
END_TEST

int main(void)
{
    find_program("redis-server", redis_bin, sizeof redis_bin);
    find_program("redis-cli", cli_bin, sizeof cli_bin);
    if (!redis_bin[0] || !cli_bin[0]) {
        printf("SKIP: redis-server or redis-cli is not installed (Debian: apt-get install "
               "redis-server); the shared log on a Redis Cluster is not tested\n");
        return 77; /* meson's "skipped" */
    }
    Suite *s = suite_create("e2e_redis_cluster");
    TU_TCASE(s, "cluster", 120, the_daemon_computes_the_slots_redis_does,
        daemons_on_a_cluster_agree_and_a_fresh_one_catches_up,
        a_slot_migrated_under_running_daemons_loses_no_acknowledged_label,
        a_master_down_refuses_its_models_and_the_others_are_served,
        a_failover_is_followed_and_waited_writes_survive_it);
    return tu_run(s);
}
