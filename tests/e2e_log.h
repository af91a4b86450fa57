/* e2e_log.h - what the shared-log e2e tests (test_e2e_redis.c, one Redis;
 * test_e2e_redis_cluster.c, a Redis Cluster) do with daemons: send labels,
 * read info and stats.log, wait until replicas agree.  Include after e2e.h,
 * with DIM and WINDOW defined. */
#ifndef PC_E2E_LOG_H
#define PC_E2E_LOG_H

#include "tests/e2e.h"

/* The path of program `name` (redis-server, redis-cli) in PATH or the
 * usual places, into out; "" when it is not installed. */
static inline void find_program(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/bin:/usr/sbin:/usr/local/bin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, len, "%s/%s", d, name);
        if (access(out, X_OK) == 0)
            return;
    }
    out[0] = 0;
}

static inline void example(uint64_t i, double x[DIM], int *y)
{
    e2e_example(i, 7, false, x, y);
}

/* Sends labels [from, from+n) of model through c, pipelined, unanswered. */
static inline void send_labels(pcc_client *c, const char *model, uint64_t from, uint64_t n)
{
    char err[256];
    for (uint64_t k = 0; k < n; k++) {
        double x[DIM];
        int y;
        example(from + k, x, &y);
        uint32_t id;
        msgpack_pack_int(e2e_request_x(c, "label", 3, model, x, &id), y);
    }
    ck_assert_int_eq(pcc_flush(c, err, sizeof err), 0);
}

/* Labels [from, to) of model through c, pipelined in windows; every answer
 * must be a success.  Returns how many were acknowledged. */
static inline uint64_t feed(pcc_client *c, const char *model, uint64_t from, uint64_t to)
{
    char err[256];
    uint64_t acked = 0;
    for (uint64_t i = from; i < to;) {
        uint64_t n = to - i < WINDOW ? to - i : WINDOW;
        send_labels(c, model, i, n);
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
static inline void info_str(pcc_client *c, const char *model, const char *key, char *out, size_t outlen)
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

static inline const msgpack_object *log_stat(pcc_client *c, const char *key)
{
    const msgpack_object *r = e2e_admin(c, "stats", NULL, -1);
    const msgpack_object *l = pcc_map_get(r, "log");
    ck_assert_msg(l && l->type == MSGPACK_OBJECT_MAP, "stats has no log map");
    return pcc_map_get(l, key);
}

/* One window of labels [from, from+n) through c, pipelined; answers that
 * are errors must be code 11 (Redis gone): those whose message says the
 * write may still be applied count as uncertain, the others as refused. */
static inline void feed_tolerant(pcc_client *c, const char *model, uint64_t from, uint64_t n,
                          uint64_t *acked, uint64_t *uncertain)
{
    char err[256];
    send_labels(c, model, from, n);
    for (uint64_t k = 0; k < n; k++) {
        uint32_t id;
        const msgpack_object *e, *r;
        ck_assert_msg(pcc_read(c, &id, &e, &r, -1, err, sizeof err) == 0, "%s", err);
        if (!e) {
            (*acked)++;
            continue;
        }
        pcc_error_message(e, err, sizeof err);
        ck_assert_msg(pcc_error_code(e) == 11, "label failed with code %lld: %s",
                      (long long)pcc_error_code(e), err);
        *uncertain += strstr(err, "may") != NULL;
    }
}

static inline uint64_t log_u64(pcc_client *c, const char *key)
{
    double v = pcc_number(log_stat(c, key));
    ck_assert_msg(!isnan(v), "stats.log has no numeric %s", key);
    return (uint64_t)v;
}

/* Waits (up to 20 s) until stats.log.connected is `up`. */
static inline void wait_connected(pcc_client *c, bool up)
{
    for (int t = 0; t < 2000; t++) {
        const msgpack_object *u = log_stat(c, "connected");
        if (u && u->type == MSGPACK_OBJECT_BOOLEAN && u->via.boolean == up)
            return;
        e2e_sleep_ms(10);
    }
    ck_abort_msg("the daemon did not %s Redis within 20 s", up ? "reconnect to" : "notice it lost");
}

/* info(model).log_lag.entries, -1 when nil or on an error. */
static inline int64_t lag_entries(pcc_client *c, const char *model, double *ms)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "info", 1, &id);
    e2e_str(pk, model);
    const msgpack_object *error, *result;
    char err[256];
    ck_assert_msg(pcc_call(c, id, &error, &result, err, sizeof err) == 0, "%s", err);
    const msgpack_object *l = error ? NULL : pcc_map_get(result, "log_lag");
    if (!l || l->type != MSGPACK_OBJECT_MAP)
        return -1;
    *ms = pcc_number(pcc_map_get(l, "ms"));
    return (int64_t)pcc_number(pcc_map_get(l, "entries"));
}

/* Waits (up to 15 s) until every daemon reports the same log_id and digest
 * for model and, when want >= 0, daemon 0 has `want` examples (else a
 * log_id at all); returns daemon 0's example count. */
static inline uint64_t wait_same(e2e **ds, size_t n, const char *model, int64_t want)
{
    char id0[64] = "", dg0[64] = "", id[64] = "", dg[64] = "";
    for (int t = 0; t < 1500; t++) {
        bool same = true;
        for (size_t i = 0; i < n && same; i++) {
            pcc_client *c = e2e_connect(ds[i]->sock);
            info_str(c, model, "log_id", i ? id : id0, sizeof id);
            info_str(c, model, "digest", i ? dg : dg0, sizeof dg);
            if (i)
                same = !strcmp(id, id0) && !strcmp(dg, dg0);
            else if (want >= 0)
                same = e2e_info_u64(c, model, "examples") == (uint64_t)want;
            else
                same = *id0;
            pcc_close(c);
        }
        if (same && want >= 0)
            return (uint64_t)want;
        if (same) {
            pcc_client *c = e2e_connect(ds[0]->sock);
            uint64_t ex = e2e_info_u64(c, model, "examples");
            pcc_close(c);
            return ex;
        }
        e2e_sleep_ms(10);
    }
    ck_abort_msg("daemons do not agree on model %s after 15 s (%s %s vs %s %s)", model, id0, dg0,
                 id, dg);
    return 0;
}

/* The daemons agree on model, with `examples` examples. */
static inline void wait_agree(e2e **ds, size_t n, const char *model, uint64_t examples)
{
    wait_same(ds, n, model, (int64_t)examples);
}

#endif
