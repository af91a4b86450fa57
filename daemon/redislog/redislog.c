/* redislog.c - the shared log in Redis Streams (redislog.h says what it
 * is): opening it, closing it, and publishing a model's snapshot.
 *
 * The log is split by job into the files internal.h lists, lowest first,
 * each calling only files before it in that list, so that each can be read
 * (and changed) without the ones after it: the records (streams.c), the
 * appends (append.c), nodes and readers (readers.c), applying entries
 * (apply.c), the lag (lag.c), following the streams (follow.c), the
 * connections (connect.c), the cluster's slot map (slots.c) and the gate
 * (gate.c).  This file is their top: open makes the state, sets the
 * server's hooks (log_gate, on_written, on_snapshot, write_position) and
 * the log's own two calls upwards (rl->route, rl->gate: internal.h says
 * why), then connects; close undoes it all.
 *
 * At each snapshot the model's bytes go to Redis too (publish.c), so that
 * a daemon that starts empty, or finds its stream trimmed past what it
 * applied, loads them (follow.c) rather than the stream from its start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/log.h"
#include "daemon/redislog/internal.h"
#include "daemon/redislog/publish.h"

#define PROBE_S 1          /* seconds between looks at the streams' length (the lag, lag.c) */

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

int pcd_redislog_open(pcd_server *srv, char *err, size_t errlen)
{
    if (strcmp(srv->cfg.log_backend, "redis"))
        return 0;
    pcd_redislog *rl = calloc(1, sizeof *rl);
    if (!rl)
        goto oom;
    srv->rlog = rl;
    rl->srv = srv;
    rl->route = pcd_rl_route;
    rl->gate = pcd_rl_gate;
    rl->backoff = BACKOFF_MIN;
    rl->announce = true;
    if (pcd_redis_auth_load(&srv->cfg, &rl->auth, err, errlen) != 0)
        return -1;
    msgpack_sbuffer_init(&rl->answer);
    /* Names this process's entries: a restarted daemon owes no answers. */
    if (getentropy(&rl->instance, sizeof rl->instance) != 0)
        rl->instance = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
    rl->retry = evtimer_new(srv->base, pcd_rl_on_retry, rl);
    /* One server: one node that serves every slot; a cluster's come with its map. */
    rl->cluster = srv->cfg.log_cluster;
    if (!rl->cluster) {
        node *nd = pcd_rl_node_get(rl, srv->cfg.log_address);
        if (!nd)
            goto oom;
        nd->in_map = true;
    }
    rl->probe = event_new(srv->base, -1, EV_PERSIST, pcd_rl_on_probe_timer, rl);
    struct timeval every = {PROBE_S, 0};
    if (!rl->retry || !rl->probe || event_add(rl->probe, &every) != 0 ||
        !pcd_rl_stream_add(rl, NULL, (sid){0, 0}))
        goto oom;
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
    if (!all)
        goto oom;
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
    if (!(rl->after = pcd_after_new(srv, pcd_rl_run_read, rl)))
        goto oom;
    srv->log_gate = pcd_rl_gate;
    srv->on_written = pcd_rl_on_written;
    srv->on_snapshot = on_snapshot;
    srv->write_position = pcd_rl_write_position;
    snprintf(srv->logst.error, sizeof srv->logst.error, "Redis %s: connecting", srv->cfg.log_address);
    pcd_info("log: Redis %s%s, streams %s{<model>}, serving %s", rl->cluster ? "Cluster " : "",
             srv->cfg.log_address, srv->cfg.log_prefix,
             srv->cfg.nlog_models ? "the models of log.models" : "every model");
    if (rl->cluster)
        pcd_rl_ask_map(rl);
    else
        pcd_rl_connect_all(rl);
    return 0;
oom: /* any of the allocations above */
    snprintf(err, errlen, "log: out of memory");
    return -1;
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
