/* redislog.c - the shared log in Redis Streams (redislog.h says what it is).
 *
 * Two connections to Redis: one appends (XADD, pipelined), one follows
 * (XREAD BLOCK 0 over every stream served plus the catalogue), because a
 * blocked XREAD holds its connection.  An entry has two fields: "m", the
 * request's MessagePack bytes as the client sent them (its msgid included,
 * so the answer packed at apply time is the client's answer), and "o", 16
 * bytes naming the daemon process that appended it and a sequence number:
 * when a daemon applies one of its own entries it finds the write waiting
 * for that answer (struct pend) and delivers it to the client's held place
 * (conn.c).  Entries are matched by origin rather than by the ID XADD
 * returns, because the XREAD that brings an entry back may be read before
 * the XADD's reply.
 */
#include "daemon/redislog.h"
#include "daemon/replay.h"

#include <fnmatch.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/dispatch.h"
#include "daemon/log.h"

#define READ_COUNT "256"   /* entries per stream per XREAD: bounds one reply's memory */
#define BACKOFF_MIN 0.1    /* seconds before the first reconnection, doubled up to */
#define BACKOFF_MAX 2.0

typedef struct sid {
    unsigned long long ms, seq;
} sid;

typedef struct stream {
    char *model;           /* NULL: the catalogue */
    char *key;
    sid last;              /* read after this entry */
} stream;

/* A write this daemon appended whose answer is owed to a client. */
typedef struct pend {
    struct pend *prev, *next;
    uint64_t seq;          /* the "o" sequence number of its entry */
    uint32_t msgid;
    pcd_client *client;    /* NULL once it went away */
    void *slot;            /* its held place (client->hold) */
} pend;

struct pcd_redislog {
    pcd_server *srv;
    redisAsyncContext *wr, *rd; /* appends; follows */
    bool wr_up, rd_up, reading, closing, warned;
    struct event *retry;
    double backoff;
    uint64_t instance, seq;
    stream **streams;      /* streams[0] is the catalogue */
    size_t nstreams, cap;
    pend *head, *tail;
    bool in_apply;         /* the log's own entries pass the gate */
    sid applying;
    msgpack_sbuffer answer;
};

static void lost(pcd_redislog *rl, const char *why);
static void read_more(pcd_redislog *rl);

static int discard(void *data, const char *buf, size_t len)
{
    (void)data;
    (void)buf;
    (void)len;
    return 0;
}

static bool served(const pcd_redislog *rl, const char *name)
{
    const pcd_config *c = &rl->srv->cfg;
    for (size_t i = 0; i < c->nlog_models; i++)
        if (fnmatch(c->log_models[i], name, 0) == 0)
            return true;
    return c->nlog_models == 0;
}

/* ---- streams and owed answers ---------------------------------------------- */

static stream *stream_find(pcd_redislog *rl, const char *key, size_t len, bool by_model)
{
    for (size_t i = 0; i < rl->nstreams; i++) {
        const char *s = by_model ? rl->streams[i]->model : rl->streams[i]->key;
        if (s && strlen(s) == len && !memcmp(s, key, len))
            return rl->streams[i];
    }
    return NULL;
}

/* Follows model's stream (the catalogue when NULL) after entry last. */
static stream *stream_add(pcd_redislog *rl, const char *model, sid last)
{
    if (rl->nstreams == rl->cap) {
        size_t cap = rl->cap ? 2 * rl->cap : 16;
        stream **v = realloc(rl->streams, cap * sizeof *v);
        if (!v)
            return NULL;
        rl->streams = v;
        rl->cap = cap;
    }
    stream *st = calloc(1, sizeof *st);
    const char *prefix = rl->srv->cfg.log_prefix;
    size_t klen = strlen(prefix) + (model ? strlen(model) + 3 : sizeof "models");
    if (st) {
        st->key = malloc(klen);
        st->model = model ? strdup(model) : NULL;
    }
    if (!st || !st->key || (model && !st->model)) {
        if (st) {
            free(st->key);
            free(st->model);
        }
        free(st);
        return NULL;
    }
    /* {model}: the hash tag keeps a model's stream on one Redis Cluster slot */
    if (model)
        snprintf(st->key, klen, "%s{%s}", prefix, model);
    else
        snprintf(st->key, klen, "%smodels", prefix);
    st->last = last;
    rl->streams[rl->nstreams++] = st;
    rl->srv->logst.streams = rl->nstreams - 1;
    return st;
}

static pend *pend_find(pcd_redislog *rl, uint64_t seq)
{
    pend *p = rl->head; /* usually the first: a daemon's entries come back in order per stream */
    while (p && p->seq != seq)
        p = p->next;
    return p;
}

static void pend_remove(pcd_redislog *rl, pend *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        rl->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        rl->tail = p->prev;
    free(p);
    rl->srv->logst.waiting--;
}

/* Answers p with error 11 (the write was not applied by this daemon's
 * hand: refused, or its fate unknown) and forgets it. */
static void owe_error(pcd_redislog *rl, pend *p, const char *fmt, const char *what)
{
    if (p->client) {
        pcp_error err = {.code = PCP_E_INTERNAL};
        snprintf(err.msg, sizeof err.msg, fmt, rl->srv->cfg.log_address, what);
        msgpack_packer pk;
        rl->answer.size = 0;
        msgpack_packer_init(&pk, &rl->answer, msgpack_sbuffer_write);
        pcp_pack_response_error(&pk, p->msgid, &err);
        rl->srv->counters.errors++;
        rl->srv->counters.errors_by_code[PCP_E_INTERNAL]++;
        p->client->deliver(p->client, p->slot, rl->answer.data, rl->answer.size);
    }
    pend_remove(rl, p);
}

void pcd_redislog_forget(pcd_redislog *rl, pcd_client *cl)
{
    for (pend *p = rl->head; p; p = p->next)
        if (p->client == cl)
            p->client = NULL;
}

/* ---- applying entries ---------------------------------------------------------- */

static bool parse_id(const redisReply *r, sid *id)
{
    char buf[48];
    int n = -1;
    if (r->type != REDIS_REPLY_STRING || (size_t)r->len >= sizeof buf)
        return false;
    memcpy(buf, r->str, (size_t)r->len);
    buf[r->len] = 0;
    return sscanf(buf, "%llu-%llu%n", &id->ms, &id->seq, &n) == 2 && (size_t)n == r->len;
}

static const redisReply *field(const redisReply *fields, const char *name)
{
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i];
        if (k->type == REDIS_REPLY_STRING && (size_t)k->len == strlen(name) &&
            !memcmp(k->str, name, (size_t)k->len) && fields->element[i + 1]->type == REDIS_REPLY_STRING)
            return fields->element[i + 1];
    }
    return NULL;
}

/* One entry's message, as a record of the local journal is (replay.c), its
 * answer into pk. */
static bool run_entry(pcd_redislog *rl, const uint8_t *msg, size_t len, msgpack_packer *pk)
{
    rl->in_apply = rl->srv->applying = true;
    bool ok = pcd_replay(rl->srv, msg, len, pk, NULL, NULL) > 0;
    rl->in_apply = rl->srv->applying = false;
    return ok;
}

/* A catalogue entry: a model's stream exists; follow it if served. */
static void catalogued(pcd_redislog *rl, const redisReply *fields)
{
    const redisReply *m = field(fields, "model");
    if (!m || !pcp_model_name_valid(m->str, (size_t)m->len) ||
        stream_find(rl, m->str, (size_t)m->len, true))
        return;
    char name[PCP_MODEL_NAME_MAX + 1];
    memcpy(name, m->str, (size_t)m->len);
    name[m->len] = 0;
    if (served(rl, name) && !stream_add(rl, name, (sid){0, 0}))
        pcd_error("log: out of memory following the stream of model %s", name);
}

static void apply_entry(pcd_redislog *rl, stream *st, const redisReply *e)
{
    sid id;
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !parse_id(e->element[0], &id) ||
        e->element[1]->type != REDIS_REPLY_ARRAY)
        return;
    st->last = id;
    const redisReply *fields = e->element[1];
    if (!st->model) {
        catalogued(rl, fields);
        return;
    }
    const redisReply *m = field(fields, "m"), *o = field(fields, "o");
    pend *p = NULL;
    if (o && o->len == 16 && !memcmp(o->str, &rl->instance, 8)) {
        uint64_t seq;
        memcpy(&seq, o->str + 8, 8);
        p = pend_find(rl, seq);
    }
    msgpack_packer pk;
    rl->answer.size = 0;
    if (p && p->client)
        msgpack_packer_init(&pk, &rl->answer, msgpack_sbuffer_write);
    else
        msgpack_packer_init(&pk, NULL, discard);
    rl->applying = id;
    bool ok = m && run_entry(rl, (const uint8_t *)m->str, (size_t)m->len, &pk);
    rl->srv->logst.applied++;
    rl->srv->logst.apply_failed += !ok;
    if (!p)
        return;
    if (p->client && rl->answer.size) {
        p->client->deliver(p->client, p->slot, rl->answer.data, rl->answer.size);
        pend_remove(rl, p);
    } else if (p->client) {
        owe_error(rl, p, "log %s: %s", "the entry read back from Redis could not be decoded");
    } else {
        pend_remove(rl, p);
    }
}

/* dispatch.c's hook after a write succeeded: while an entry is applied,
 * the model is at that entry (its snapshot will say so). */
static void on_written(pcd_server *srv, const pcd_req *r)
{
    pcd_redislog *rl = srv->rlog;
    if (rl->in_apply && r->model) {
        r->model->log_ms = rl->applying.ms;
        r->model->log_seq = rl->applying.seq;
    }
}

/* ---- the connections ------------------------------------------------------------ */

static void set_up(pcd_redislog *rl)
{
    bool up = rl->wr_up && rl->rd_up;
    if (up && !rl->srv->logst.up) {
        pcd_info("log: connected to Redis %s, following %zu streams", rl->srv->cfg.log_address,
                 rl->nstreams - 1);
        rl->backoff = BACKOFF_MIN;
        rl->warned = false;
    }
    rl->srv->logst.up = up;
}

static void on_read(redisAsyncContext *ac, void *reply, void *privdata)
{
    pcd_redislog *rl = ac->data;
    const redisReply *r = reply;
    (void)privdata;
    if (!r || ac != rl->rd)
        return; /* the connection is going away */
    rl->reading = false;
    if (r->type == REDIS_REPLY_ERROR) {
        lost(rl, r->str);
        return;
    }
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *s = r->element[i];
        if (s->type != REDIS_REPLY_ARRAY || s->elements != 2 ||
            s->element[0]->type != REDIS_REPLY_STRING || s->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        stream *st = stream_find(rl, s->element[0]->str, (size_t)s->element[0]->len, false);
        for (size_t k = 0; st && k < s->element[1]->elements; k++)
            apply_entry(rl, st, s->element[1]->element[k]);
    }
    read_more(rl);
}

/* XREAD BLOCK 0 over every stream followed, each after its last entry. */
static void read_more(pcd_redislog *rl)
{
    if (!rl->rd || !rl->rd_up || rl->reading)
        return;
    size_t n = rl->nstreams, argc = 6 + 2 * n;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *lens = malloc(argc * sizeof *lens);
    char *ids = malloc(n * 48);
    if (!argv || !lens || !ids) {
        free(argv);
        free(lens);
        free(ids);
        lost(rl, "out of memory building XREAD");
        return;
    }
    static const char *const head[] = {"XREAD", "COUNT", READ_COUNT, "BLOCK", "0", "STREAMS"};
    for (size_t i = 0; i < 6; i++)
        argv[i] = head[i];
    for (size_t i = 0; i < n; i++) {
        argv[6 + i] = rl->streams[i]->key;
        char *id = ids + 48 * i;
        snprintf(id, 48, "%llu-%llu", rl->streams[i]->last.ms, rl->streams[i]->last.seq);
        argv[6 + n + i] = id;
    }
    for (size_t i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if (redisAsyncCommandArgv(rl->rd, on_read, NULL, (int)argc, argv, lens) == REDIS_OK)
        rl->reading = true;
    free(argv);
    free(lens);
    free(ids);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    pcd_redislog *rl = ac->data;
    if (status != REDIS_OK) { /* hiredis frees ac after this returns */
        if (ac == rl->wr)
            rl->wr = NULL;
        if (ac == rl->rd)
            rl->rd = NULL;
        lost(rl, ac->errstr);
        return;
    }
    if (ac == rl->wr)
        rl->wr_up = true;
    if (ac == rl->rd)
        rl->rd_up = true;
    set_up(rl);
    read_more(rl);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    pcd_redislog *rl = ac->data;
    bool ours = ac == rl->wr || ac == rl->rd;
    if (ac == rl->wr)
        rl->wr = NULL;
    if (ac == rl->rd)
        rl->rd = NULL;
    if (ours && !rl->closing)
        lost(rl, status == REDIS_OK ? "connection closed" : ac->errstr);
}

static redisAsyncContext *dial(pcd_redislog *rl, char *why, size_t whylen)
{
    const char *a = rl->srv->cfg.log_address;
    redisAsyncContext *ac;
    if (!strncmp(a, "unix:", 5)) {
        ac = redisAsyncConnectUnix(a + 5);
    } else { /* tcp:host:port, checked by the config; [v6] in brackets */
        char host[256];
        const char *h = a + 4, *colon = strrchr(h, ':');
        size_t n = (size_t)(colon - h);
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']')
            h++, n -= 2;
        snprintf(host, sizeof host, "%.*s", (int)n, h);
        ac = redisAsyncConnect(host, atoi(colon + 1));
    }
    if (!ac || ac->err) {
        snprintf(why, whylen, "%s", ac ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        return NULL;
    }
    ac->data = rl;
    if (redisLibeventAttach(ac, rl->srv->base) != REDIS_OK) {
        snprintf(why, whylen, "cannot watch its socket");
        redisAsyncFree(ac);
        return NULL;
    }
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    return ac;
}

static void connect_both(pcd_redislog *rl)
{
    char why[256];
    if (!(rl->wr = dial(rl, why, sizeof why)) || !(rl->rd = dial(rl, why, sizeof why)))
        lost(rl, why);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    connect_both(arg);
}

/* Redis is gone (or never came): writes are refused from now on, the
 * appends it did not confirm are answered with an error (hiredis calls
 * their callbacks with no reply), and a reconnection is scheduled. */
static void lost(pcd_redislog *rl, const char *why)
{
    pcd_server *srv = rl->srv;
    /* bounded so that the line fits logst.error whatever the lengths */
    snprintf(srv->logst.error, sizeof srv->logst.error, "Redis %.100s is unavailable (%.120s)",
             srv->cfg.log_address, why && *why ? why : "unknown error");
    if (!rl->warned)
        pcd_warn("log: %s: writes are refused until it is back; reconnecting", srv->logst.error);
    rl->warned = true;
    srv->logst.up = false;
    redisAsyncContext *w = rl->wr, *r = rl->rd;
    rl->wr = rl->rd = NULL;
    rl->wr_up = rl->rd_up = rl->reading = false;
    if (w)
        redisAsyncFree(w);
    if (r)
        redisAsyncFree(r);
    if (!evtimer_pending(rl->retry, NULL)) {
        double b = rl->backoff;
        struct timeval tv = {(time_t)b, (suseconds_t)((b - (double)(time_t)b) * 1e6)};
        evtimer_add(rl->retry, &tv);
        rl->backoff = b * 2 > BACKOFF_MAX ? BACKOFF_MAX : b * 2;
    }
}

/* ---- appending -------------------------------------------------------------------- */

static void on_appended(redisAsyncContext *ac, void *reply, void *privdata)
{
    pcd_redislog *rl = ac->data;
    const redisReply *r = reply;
    if (r && r->type != REDIS_REPLY_ERROR)
        return; /* in the log: answered when applied */
    pend *p = privdata ? pend_find(rl, (uint64_t)(uintptr_t)privdata) : NULL;
    rl->srv->logst.lost++;
    if (p)
        owe_error(rl, p, "Redis %s: %s", r ? r->str
                  : "the connection was lost before the write was confirmed (it may still be applied)");
    else if (r)
        pcd_warn("log: Redis %s refused an append: %s", rl->srv->cfg.log_address, r->str);
}

static void on_catalogued(redisAsyncContext *ac, void *reply, void *privdata)
{
    const redisReply *r = reply;
    (void)privdata;
    if (r && r->type == REDIS_REPLY_ERROR)
        pcd_warn("log: Redis %s refused a catalogue entry: %s",
                 ((pcd_redislog *)ac->data)->srv->cfg.log_address, r->str);
}

/* The gate before every handler that names a model (server.h, log_gate). */
static int gate(pcd_server *srv, pcd_req *r)
{
    pcd_redislog *rl = srv->rlog;
    if (rl->in_apply || !r->msg || r->msg->nparams < 1 || r->msg->params[0].type != MSGPACK_OBJECT_STR)
        return PCP_OK;
    const char *s = r->msg->params[0].via.str.ptr;
    size_t len = r->msg->params[0].via.str.size;
    if (!pcp_model_name_valid(s, len))
        return PCP_OK; /* the handler words the error, and changes nothing */
    char name[PCP_MODEL_NAME_MAX + 1];
    memcpy(name, s, len);
    name[len] = 0;
    if (!served(rl, name))
        return pcd_req_fail(r, PCP_E_MODEL, "model '%s' is not served by this daemon (log.models)", name);
    if (!(r->method->flags & PCP_F_WRITES))
        return PCP_OK;
    if (!srv->logst.up) {
        srv->logst.refused++;
        return pcd_req_fail(r, PCP_E_INTERNAL, "%s: writes are refused until it is back",
                            srv->logst.error);
    }
    stream *st = stream_find(rl, name, len, true);
    if (!st) { /* a new model: name its stream in the catalogue, for the other daemons */
        if (!(st = stream_add(rl, name, (sid){0, 0})))
            return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
        const char *argv[] = {"XADD", rl->streams[0]->key, "*", "model", name};
        size_t lens[] = {4, strlen(argv[1]), 1, 5, len};
        redisAsyncCommandArgv(rl->wr, on_catalogued, NULL, 5, argv, lens);
    }
    uint64_t seq = ++rl->seq;
    pend *p = NULL;
    if (!r->notification) {
        p = calloc(1, sizeof *p);
        void *slot = p && r->client && r->client->hold ? r->client->hold(r->client) : NULL;
        if (!slot) {
            free(p);
            return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
        }
        *p = (pend){.prev = rl->tail, .seq = seq, .msgid = r->msgid, .client = r->client, .slot = slot};
        if (rl->tail)
            rl->tail->next = p;
        else
            rl->head = p;
        rl->tail = p;
        srv->logst.waiting++;
    }
    uint8_t origin[16];
    memcpy(origin, &rl->instance, 8);
    memcpy(origin + 8, &seq, 8);
    const char *argv[] = {"XADD", st->key, "*", "m", (const char *)r->raw, "o", (const char *)origin};
    size_t lens[] = {4, strlen(st->key), 1, 1, r->len, 1, sizeof origin};
    if (redisAsyncCommandArgv(rl->wr, on_appended, p ? (void *)(uintptr_t)seq : NULL, 7, argv,
                              lens) != REDIS_OK) {
        if (p)
            owe_error(rl, p, "Redis %s: %s", "the append could not be sent");
        return PCD_LOGGED; /* answered (a notification: dropped) */
    }
    srv->logst.appended++;
    return PCD_LOGGED;
}

/* ---- open and close ---------------------------------------------------------------- */

int pcd_redislog_open(pcd_server *srv, char *err, size_t errlen)
{
    if (strcmp(srv->cfg.log_backend, "redis"))
        return 0;
    pcd_redislog *rl = calloc(1, sizeof *rl);
    if (!rl) {
        snprintf(err, errlen, "log: out of memory");
        return -1;
    }
    srv->rlog = rl;
    rl->srv = srv;
    rl->backoff = BACKOFF_MIN;
    msgpack_sbuffer_init(&rl->answer);
    /* Names this process's entries: a restarted daemon owes no answers. */
    if (getentropy(&rl->instance, sizeof rl->instance) != 0)
        rl->instance = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
    rl->retry = evtimer_new(srv->base, on_retry, rl);
    if (!rl->retry || !stream_add(rl, NULL, (sid){0, 0})) {
        snprintf(err, errlen, "log: out of memory");
        return -1;
    }
    size_t n;
    pcd_model **all = pcd_registry_list(&srv->models, &n);
    for (size_t i = 0; all && i < n; i++) {
        if (!served(rl, all[i]->name)) {
            pcd_info("log: model %s is not served here (log.models): unloaded", all[i]->name);
            pcd_registry_remove(&srv->models, all[i]);
        } else if (!stream_add(rl, all[i]->name, (sid){all[i]->log_ms, all[i]->log_seq})) {
            all = (free(all), NULL);
        }
    }
    if (!all) {
        snprintf(err, errlen, "log: out of memory");
        return -1;
    }
    free(all);
    srv->log_gate = gate;
    srv->on_written = on_written;
    snprintf(srv->logst.error, sizeof srv->logst.error, "Redis %s: connecting", srv->cfg.log_address);
    pcd_info("log: Redis %s, streams %s{<model>}, serving %s", srv->cfg.log_address,
             srv->cfg.log_prefix, srv->cfg.nlog_models ? "the models of log.models" : "every model");
    connect_both(rl);
    return 0;
}

void pcd_redislog_close(pcd_server *srv)
{
    pcd_redislog *rl = srv->rlog;
    if (!rl)
        return;
    rl->closing = true;
    redisAsyncContext *w = rl->wr, *r = rl->rd;
    rl->wr = rl->rd = NULL;
    if (w)
        redisAsyncFree(w);
    if (r)
        redisAsyncFree(r);
    while (rl->head)
        pend_remove(rl, rl->head);
    for (size_t i = 0; i < rl->nstreams; i++) {
        free(rl->streams[i]->key);
        free(rl->streams[i]->model);
        free(rl->streams[i]);
    }
    free(rl->streams);
    if (rl->retry)
        event_free(rl->retry);
    msgpack_sbuffer_destroy(&rl->answer);
    free(rl);
    srv->rlog = NULL;
    srv->log_gate = NULL;
    srv->on_written = NULL;
}
