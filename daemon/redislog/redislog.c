/* redislog.c - the shared log in Redis Streams (redislog.h says what it is).
 *
 * Connections to Redis: per server (a node: the one of log.address, or each
 * master of a Redis Cluster) one appends (XADD, pipelined), and per group of
 * streams one follows (XREAD BLOCK 0, a reader), because a blocked XREAD
 * holds its connection.  On one server one reader follows every stream
 * served plus the catalogue.  A cluster refuses one command over keys of
 * several slots (CROSSSLOT), so there each slot in use has its reader, on the
 * master that serves the slot (redislog/cluster.h: slots and the map, read
 * with CLUSTER SLOTS from log.address or any master known).  One server is
 * the simple case of the same code: one node, one reader of "every slot".
 *
 * An entry has two fields: "m", the request's MessagePack bytes as the
 * client sent them (its msgid included, so the answer packed at apply time
 * is the client's answer), and "o", 16 bytes naming the daemon process that
 * appended it and a sequence number: when a daemon applies one of its own
 * entries it finds the write waiting for that answer (struct pend) and
 * delivers it to the client's held place (conn.c).  Entries are matched by
 * origin rather than by the ID XADD returns, because the XREAD that brings
 * an entry back may be read before the XADD's reply.
 *
 * Before a stream is read (at each connection, and when a model appears),
 * it is prepared: XINFO STREAM gives the entry to catch up to and the
 * stream's entry count (for the lag), and the snapshot published in Redis
 * (redislog/publish.h) is loaded when this daemon has no state of the model,
 * or when the stream was trimmed past what it applied.  Reads are refused
 * (code 12) until every stream has been caught up with once.
 *
 * Failures are per node: a node lost (or a reader's connection) refuses the
 * writes of the streams it serves, answers the appends it did not confirm
 * with code 11, and is dialled again with back-off; in a cluster each retry
 * and each MOVED / ASK / TRYAGAIN / CLUSTERDOWN reads the map again first,
 * so streams whose slot moved are followed on their new master.
 */
#include "daemon/core/budget.h"
#include "daemon/exec/replay.h"
#include "daemon/redislog/address.h"
#include "daemon/redislog/after.h"
#include "daemon/redislog/auth.h"
#include "daemon/redislog/cluster.h"
#include "daemon/redislog/internal.h"
#include "daemon/redislog/publish.h"
#include "daemon/redislog/redislog.h"
#include "daemon/redislog/reply.h"

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/log.h"
#include "daemon/exec/dispatch.h"
#include "daemon/exec/options.h"
#include "daemon/jobs/notify.h"
#include "daemon/store/snapshot.h"

#define PROBE_S 1          /* seconds between looks at the streams' length (the lag) */


/* ---- streams and owed answers ---------------------------------------------- */

/* ---- applying entries ---------------------------------------------------------- */

/* ---- nodes and readers: who serves a stream ------------------------------- */

/* ---- following ------------------------------------------------------------- */

/* ---- preparing a stream: where to catch up to, and bootstrapping ------------ */

/* ---- the lag: the streams' entry counts, once a second ------------------------ */

/* ---- the connections ------------------------------------------------------------ */

/* ---- the cluster's slot map ------------------------------------------------------ */

/* A new map: nodes that left it are closed, readers whose slot moved go to
 * their new master (their streams read on after their last entry there). */
static void apply_map(pcd_redislog *rl, pcd_slot_map *m)
{
    pcd_slot_map_free(&rl->map);
    rl->map = *m;
    rl->mapped = true;
    for (size_t i = 0; i < rl->nnodes; i++)
        rl->nodes[i]->in_map = false;
    for (size_t i = 0; i < m->nnodes; i++) {
        node *nd = pcd_rl_node_get(rl, m->address[i]);
        if (nd)
            nd->in_map = true;
    }
    for (size_t i = 0; i < rl->nnodes; i++)
        if (!rl->nodes[i]->in_map && rl->nodes[i]->wr)
            pcd_rl_node_close(rl->nodes[i]);
    for (size_t i = 0; i < rl->nreaders; i++) {
        reader *rdr = rl->readers[i];
        node *want = pcd_rl_slot_node(rl, rdr->slot);
        if (want != rdr->nd) {
            if (rdr->nd) /* it moved (the first map only places it) */
                pcd_info("log: slot %d moved from %s to %s", rdr->slot, rdr->nd->address,
                         want ? want->address : "no master");
            pcd_rl_reader_drop(rdr);
            rdr->nd = want;
        }
    }
    pcd_rl_set_up(rl);
}

static void on_slots(redisAsyncContext *ac, void *reply, void *privdata)
{
    pcd_redislog *rl = ac->data;
    (void)privdata;
    if (!reply || ac != rl->ctl)
        return;
    pcd_redis_address a;
    pcd_redis_address_split(rl->ctl_next % (rl->map.nnodes + 1) && rl->map.nnodes
                            ? rl->map.address[rl->ctl_next % (rl->map.nnodes + 1) - 1]
                            : rl->srv->cfg.log_address, &a);
    pcd_slot_map *m = malloc(sizeof *m);
    char err[256] = "out of memory";
    if (!m || pcd_slot_map_read(reply, a.path ? "127.0.0.1" : a.host, m, err, sizeof err) != 0) {
        free(m);
        pcd_rl_ctl_lost(rl, err);
        return;
    }
    rl->ctl = NULL;
    redisAsyncFree(ac); /* after this callback (hiredis) */
    apply_map(rl, m);
    free(m);
    pcd_rl_connect_all(rl);
}

/* Reads the map from log.address, or (after a failure) the next master
 * known, in turn: any node of a cluster answers CLUSTER SLOTS. */
static void ask_map(pcd_redislog *rl)
{
    if (rl->ctl)
        return; /* a question is under way */
    size_t k = rl->ctl_next % (rl->map.nnodes + 1);
    const char *address = k ? rl->map.address[k - 1] : rl->srv->cfg.log_address;
    char why[256];
    if (!(rl->ctl = pcd_rl_dial(rl, address, why, sizeof why))) {
        pcd_rl_ctl_lost(rl, why);
        return;
    }
    if (redisAsyncCommand(rl->ctl, on_slots, NULL, "CLUSTER SLOTS") != REDIS_OK)
        pcd_rl_ctl_lost(rl, "cannot send CLUSTER SLOTS");
}

/* The back-off timer: in a cluster the map first (a failure may be a slot
 * that moved), then whatever is not connected. */
static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    pcd_redislog *rl = arg;
    (void)fd;
    (void)what;
    if (rl->cluster)
        ask_map(rl);
    else
        pcd_rl_connect_all(rl);
}

/* ---- appending -------------------------------------------------------------------- */

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
    if (!pcd_rl_served(rl, name))
        return pcd_req_fail(r, PCP_E_MODEL, "model '%s' is not served by this daemon (log.models)", name);
    /* Until it caught up, this daemon's models are stale: reads wait (info
     * shows how far behind), writes queue in the log as always. */
    bool writes = pcp_method_writes(r->method->id, r->nparams,
                                    r->nparams > r->method->min_params
                                        ? &r->msg->params[r->method->min_params] : NULL);
    if (!writes && !r->notification &&
        (r->method->id == PCP_M_PREDICT || r->method->id == PCP_M_PREDICT_BATCH)) {
        /* {"after": POSITION}: answered once that entry is applied here,
         * caught up with the other streams or not */
        pcd_opts o;
        bool has;
        int rc = pcd_opts_peek(r, 2, PCD_OPT_AFTER, &o, &has);
        if (rc)
            return rc;
        if (has) {
            stream *st = pcd_rl_stream_find(rl, name, len, true);
            sid at = {o.after.ms, o.after.seq};
            if (st && pcd_sid_cmp(st->last, at) >= 0)
                return PCP_OK;
            return pcd_after_park(rl->after, r, name, at);
        }
    }
    if (!writes && !srv->logst.ready && r->method->id != PCP_M_INFO)
        return pcd_req_fail(r, PCP_E_BUSY, "this daemon is catching up with the shared log in "
                            "Redis %s: retry shortly (stats.log.ready)", srv->cfg.log_address);
    if (!writes)
        return PCP_OK;
    /* A model new here is named in the catalogue first, for the other
     * daemons: both its stream's node and the catalogue's must take writes. */
    stream *st = pcd_rl_stream_find(rl, name, len, true);
    char buf[300];
    const char *why = !st || !st->catalogued ? pcd_rl_unwritable(rl, rl->streams[0], buf, sizeof buf) : NULL;
    if (!why && !st) {
        if (!(st = pcd_rl_stream_add(rl, name, (sid){0, 0})))
            return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
        st->catalogued = false;
    }
    why = why ? why : pcd_rl_unwritable(rl, st, buf, sizeof buf);
    if (why) {
        srv->logst.refused++;
        return pcd_req_fail(r, PCP_E_INTERNAL, "%s: writes are refused until it is back", why);
    }
    if (!st->catalogued) {
        const char *argv[] = {"XADD", rl->streams[0]->key, "*", "model", name};
        size_t lens[] = {4, strlen(argv[1]), 1, 5, len};
        if (redisAsyncCommandArgv(rl->streams[0]->rdr->nd->wr, on_catalogued, NULL, 5, argv,
                                  lens) == REDIS_OK)
            st->catalogued = true;
    }
    node *nd = st->rdr->nd;
    uint64_t seq = ++rl->seq;
    pend *p = NULL;
    if (!r->notification) {
        p = calloc(1, sizeof *p);
        void *slot = p && r->client && r->client->hold ? r->client->hold(r->client) : NULL;
        if (!slot) {
            free(p);
            return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
        }
        *p = (pend){.prev = rl->tail, .seq = seq, .msgid = r->msgid, .client = r->client,
                    .slot = slot, .st = st, .nd = nd};
        if (rl->tail)
            rl->tail->next = p;
        else
            rl->head = p;
        rl->tail = p;
        srv->logst.waiting++;
    }
    pcd_rl_append(nd, st, r->raw, r->len, seq, p);
    return PCD_LOGGED;
}

/* persist.c's hook after a snapshot file is written (in the snapshot child,
 * or at exit): the same bytes go to Redis for daemons that start empty, and
 * the stream is trimmed below what every replica's snapshot needs.  They go
 * to the node that serves the model's stream (its keys share its slot). */
static void on_snapshot(pcd_server *srv, const pcd_model *e, const uint8_t *buf, size_t len)
{
    const stream *st = pcd_rl_stream_find(srv->rlog, e->name, strlen(e->name), true);
    const node *nd = st ? st->rdr->nd : NULL;
    pcd_publication p = {.address = nd ? nd->address : srv->cfg.log_address,
                         .prefix = srv->cfg.log_prefix,
                         .replica = srv->logst.replica, .model = e->name, .ms = e->log_ms,
                         .seq = e->log_seq, .pos_known = e->log_pos_known, .pos = e->log_pos,
                         .data = buf, .len = len, .auth = &srv->rlog->auth};
    bool newer;
    long long trimmed;
    char err[400];
    if (!nd || !nd->up) { /* not worth a timeout per model (at exit, one after another) */
        pcd_warn("log: model %s: snapshot not published: %s", e->name,
                 nd ? nd->error : srv->logst.error);
        return;
    }
    if (pcd_redislog_publish(&p, &newer, &trimmed, err, sizeof err) != 0)
        pcd_warn("log: model %s: snapshot not published: %s", e->name, err);
    else
        pcd_debug("log: model %s: snapshot at %llu-%llu published%s, %lld entries trimmed", e->name,
                  (unsigned long long)e->log_ms, (unsigned long long)e->log_seq,
                  newer ? "" : " (a newer one is there)", trimmed);
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
    rl->route = pcd_rl_route;
    rl->gate = gate;
    rl->backoff = BACKOFF_MIN;
    rl->announce = true;
    if (pcd_redis_auth_load(&srv->cfg, &rl->auth, err, errlen) != 0)
        return -1;
    msgpack_sbuffer_init(&rl->answer);
    /* Names this process's entries: a restarted daemon owes no answers. */
    if (getentropy(&rl->instance, sizeof rl->instance) != 0)
        rl->instance = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
    rl->retry = evtimer_new(srv->base, on_retry, rl);
    /* One server: one node that serves every slot; a cluster's come with its map. */
    rl->cluster = srv->cfg.log_cluster;
    if (!rl->cluster) {
        node *nd = pcd_rl_node_get(rl, srv->cfg.log_address);
        if (!nd) {
            snprintf(err, errlen, "log: out of memory");
            return -1;
        }
        nd->in_map = true;
    }
    rl->probe = event_new(srv->base, -1, EV_PERSIST, pcd_rl_on_probe_timer, rl);
    struct timeval every = {PROBE_S, 0};
    if (!rl->retry || !rl->probe || event_add(rl->probe, &every) != 0 ||
        !pcd_rl_stream_add(rl, NULL, (sid){0, 0})) {
        snprintf(err, errlen, "log: out of memory");
        return -1;
    }
    size_t n;
    pcd_model **all = pcd_registry_list(&srv->models, &n);
    for (size_t i = 0; all && i < n; i++) {
        if (!pcd_rl_served(rl, all[i]->name)) {
            pcd_info("log: model %s is not served here (log.models): unloaded", all[i]->name);
            pcd_registry_remove(&srv->models, all[i]);
        } else if (!pcd_rl_stream_add(rl, all[i]->name, (sid){all[i]->log_ms, all[i]->log_seq})) {
            all = (free(all), NULL);
        }
    }
    if (!all) {
        snprintf(err, errlen, "log: out of memory");
        return -1;
    }
    free(all);
    if (*srv->cfg.log_replica) {
        snprintf(srv->logst.replica, sizeof srv->logst.replica, "%s", srv->cfg.log_replica);
    } else {
        char host[128] = "?";
        gethostname(host, sizeof host - 1);
        char *dir = realpath(srv->cfg.state_dir, NULL);
        snprintf(srv->logst.replica, sizeof srv->logst.replica, "%s:%s", host, dir ? dir : srv->cfg.state_dir);
        free(dir);
    }
    if (!(rl->after = pcd_after_new(srv, pcd_rl_run_read, rl))) {
        snprintf(err, errlen, "log: out of memory");
        return -1;
    }
    srv->log_gate = gate;
    srv->on_written = pcd_rl_on_written;
    srv->on_snapshot = on_snapshot;
    srv->write_position = pcd_rl_write_position;
    snprintf(srv->logst.error, sizeof srv->logst.error, "Redis %s: connecting", srv->cfg.log_address);
    pcd_info("log: Redis %s%s, streams %s{<model>}, serving %s", rl->cluster ? "Cluster " : "",
             srv->cfg.log_address, srv->cfg.log_prefix,
             srv->cfg.nlog_models ? "the models of log.models" : "every model");
    if (rl->cluster)
        ask_map(rl);
    else
        pcd_rl_connect_all(rl);
    return 0;
}

void pcd_redislog_close(pcd_server *srv)
{
    pcd_redislog *rl = srv->rlog;
    if (!rl)
        return;
    rl->closing = true;
    pcd_redis_auth_clear(&rl->auth);
    for (size_t i = 0; i < rl->nnodes; i++) {
        node *nd = rl->nodes[i];
        for (size_t k = 0; k < rl->nreaders; k++)
            if (rl->readers[k]->nd == nd)
                pcd_rl_reader_drop(rl->readers[k]);
        redisAsyncContext *w = nd->wr;
        nd->wr = NULL;
        if (w)
            redisAsyncFree(w);
        while (nd->qhead) {
            queued *q = nd->qhead;
            nd->qhead = q->next;
            free(q);
        }
    }
    for (size_t i = 0; i < rl->nreaders; i++) { /* those of no node (drops are idempotent) */
        pcd_rl_reader_drop(rl->readers[i]);
        free(rl->readers[i]);
    }
    free(rl->readers);
    if (rl->ctl) {
        redisAsyncContext *c = rl->ctl;
        rl->ctl = NULL;
        redisAsyncFree(c);
    }
    while (rl->head)
        pcd_rl_pend_remove(rl, rl->head);
    pcd_after_free(rl->after);
    for (size_t i = 0; i < rl->nstreams; i++) {
        free(rl->streams[i]->key);
        free(rl->streams[i]->snapkey);
        free(rl->streams[i]->model);
        free(rl->streams[i]);
    }
    free(rl->streams);
    for (size_t i = 0; i < rl->nnodes; i++) {
        if (rl->nodes[i]->wait_ev)
            event_free(rl->nodes[i]->wait_ev);
        free(rl->nodes[i]->address);
        free(rl->nodes[i]);
    }
    free(rl->nodes);
    pcd_slot_map_free(&rl->map);
    if (rl->retry)
        event_free(rl->retry);
    if (rl->probe)
        event_free(rl->probe);
    msgpack_sbuffer_destroy(&rl->answer);
    free(rl);
    srv->rlog = NULL;
    srv->log_gate = NULL;
    srv->on_written = NULL;
    srv->on_snapshot = NULL;
    srv->write_position = NULL;
}
