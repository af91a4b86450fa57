/* append.c - the shared log's appends: each write is XADDed to its
 * model's stream on the node that serves it, pipelined (many in flight on
 * one connection, answered when the entry is applied, apply.c), and with
 * log.wait_replicas a WAIT after each loop pass's appends holds their
 * answers until enough replicas have them.
 *
 * An entry's origin ("o": this process's instance and a sequence number)
 * names the write that waits for its answer (streams.c's pends).  An XADD
 * Redis refused, or whose reply never came, is never acknowledged: its
 * client gets code 11 here.  Appends wait in a queue of ours rather than in
 * hiredis's output buffer past OBUF_MAX (below); a node lost fails that
 * queue (pcd_rl_drain with no connection: those never reached Redis).
 *
 * Low in the log's files (internal.h): readers.c closes a node's queue
 * through pcd_rl_drain, and the gate (gate.c) appends through
 * pcd_rl_append, while this file needs only streams.c.
 */
#include <hiredis/sds.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/redislog/internal.h"

/* Appends wait in a queue of ours while hiredis's output buffer holds more
 * than this: hiredis 0.14 moves the unsent rest of that buffer to its start
 * after every partial write, which for megabytes of pipelined label_batch
 * entries cost more than everything else the daemon does. */
#define OBUF_MAX (128 * 1024)

static void on_appended(redisAsyncContext *ac, void *reply, void *privdata);

/* XADD of one write to nd, its origin naming this process and seq. */
static void append(node *nd, stream *st, const uint8_t *raw, size_t len, uint64_t seq, bool owed)
{
    pcd_redislog *rl = nd->rl;
    uint8_t origin[16];
    memcpy(origin, &rl->instance, 8);
    memcpy(origin + 8, &seq, 8);
    const char *argv[] = {"XADD", st->key, "*", "m", (const char *)raw, "o", (const char *)origin};
    size_t lens[] = {4, strlen(st->key), 1, 1, len, 1, sizeof origin};
    if (redisAsyncCommandArgv(nd->wr, on_appended, owed ? (void *)(uintptr_t)seq : NULL, 7, argv,
                              lens) != REDIS_OK) {
        pend *p = owed ? pcd_rl_pend_find(rl, seq) : NULL;
        if (p)
            pcd_rl_owe_error(rl, p, "Redis %s: %s", "the append could not be sent");
        return;
    }
    rl->srv->logst.appended++;
    nd->sent_seq = seq;
    if (nd->wait_ev && owed)
        event_active(nd->wait_ev, 0, 0); /* once, after this loop pass's appends */
}

/* Moves nd's queued appends to hiredis while its buffer has room; with no
 * connection (lost), fails them: they never reached Redis. */
void pcd_rl_drain(node *nd)
{
    pcd_redislog *rl = nd->rl;
    while (nd->qhead && (!nd->wr || sdslen(nd->wr->c.obuf) < OBUF_MAX)) {
        queued *q = nd->qhead;
        nd->qhead = q->next;
        if (!nd->qhead)
            nd->qtail = NULL;
        if (nd->wr) {
            append(nd, q->st, q->raw, q->len, q->seq, q->owed);
        } else {
            pend *p = q->owed ? pcd_rl_pend_find(rl, q->seq) : NULL;
            rl->srv->logst.refused++;
            if (p)
                pcd_rl_owe_error(rl, p, "Redis %s: %s", "the connection was lost before the write "
                                 "was sent: it was not applied");
        }
        free(q);
    }
}

/* A write the gate let through: sent now, or queued behind the appends
 * that wait for room (in order: entries of a stream keep the order of
 * their writes). */
void pcd_rl_append(node *nd, stream *st, const uint8_t *raw, size_t len, uint64_t seq, pend *p)
{
    if (!nd->qhead && sdslen(nd->wr->c.obuf) < OBUF_MAX) {
        append(nd, st, raw, len, seq, p != NULL);
        return;
    }
    queued *q = malloc(sizeof *q + len);
    if (!q) {
        if (p)
            pcd_rl_owe_error(nd->rl, p, "Redis %s: %s", "out of memory queueing the append");
        return;
    }
    *q = (queued){.st = st, .seq = seq, .owed = p != NULL, .len = len};
    memcpy(q->raw, raw, len);
    if (nd->qtail)
        nd->qtail->next = q;
    else
        nd->qhead = q;
    nd->qtail = q;
}

/* An XADD's reply: in the log (answered when applied), or refused: an error
 * reply is never acknowledged; in a cluster a redirection (the slot moved,
 * the cluster is down there) has the map read again. */
static void on_appended(redisAsyncContext *ac, void *reply, void *privdata)
{
    pcd_redislog *rl = ac->data;
    const redisReply *r = reply;
    node *nd = r ? pcd_rl_node_of(rl, ac) : NULL;
    if (nd)
        pcd_rl_drain(nd);
    if (r && r->type != REDIS_REPLY_ERROR) {
        if (nd)
            nd->warned = false; /* it works: its next failure is news */
        return; /* in the log: answered when applied */
    }
    pend *p = privdata ? pcd_rl_pend_find(rl, (uint64_t)(uintptr_t)privdata) : NULL;
    rl->srv->logst.lost++;
    if (r && rl->cluster && pcd_cluster_redirected(r->str))
        pcd_rl_schedule_retry(rl);
    if (p && !r && p->nd && p->nd->refused[0]) /* behind a refused AUTH: NOAUTH, not applied */
        pcd_rl_owe_error(rl, p, "Redis %s %s: the write was not applied", p->nd->refused);
    else if (p)
        pcd_rl_owe_error(rl, p, "Redis %s: %s", r ? r->str : "the connection was lost before the "
                         "write was confirmed (it may still be applied)");
    else if (r)
        pcd_warn("log: Redis %s refused an append: %s", nd ? nd->address : rl->srv->cfg.log_address,
                 r->str);
}

/* A WAIT in flight: the node it went to and the last entry it covers. */
typedef struct waiting {
    node *nd;
    uint64_t upto;
} waiting;

/* WAIT's answer for the entries up to `upto` sent to one node: enough
 * replicas have them, so their answers may go (those applied already go
 * now); else they are refused with code 11, though in the log (and applied
 * here) they are. */
static void on_waited(redisAsyncContext *ac, void *reply, void *privdata)
{
    pcd_redislog *rl = ac->data;
    const redisReply *r = reply;
    waiting w = *(waiting *)privdata;
    free(privdata);
    unsigned want = rl->srv->cfg.log_wait_replicas;
    bool enough = r && r->type == REDIS_REPLY_INTEGER && r->integer >= (long long)want;
    char why[200];
    if (!enough) {
        rl->srv->logst.unconfirmed++;
        if (r && r->type == REDIS_REPLY_INTEGER)
            snprintf(why, sizeof why, "the write is in the log, but %lld of the %u replicas "
                     "log.wait_replicas asks for confirmed it within %u ms (it is applied: a "
                     "failover may lose it)", r->integer, want, rl->srv->cfg.log_wait_timeout_ms);
        else
            snprintf(why, sizeof why, "WAIT failed (%s): the write may still be applied",
                     r ? r->str : "the connection was lost");
    }
    /* pends are in seq order (gate() appends them): those up to `upto` lead */
    for (pend *p = rl->head, *next; p && p->seq <= w.upto; p = next) {
        next = p->next;
        if (p->confirmed || p->nd != w.nd)
            continue;
        if (!enough) {
            pcd_rl_owe_error(rl, p, "Redis %s: %s", why);
        } else if (p->answer) {
            if (p->client)
                p->client->deliver(p->client, p->slot, p->answer, p->answer_len);
            pcd_rl_pend_remove(rl, p);
        } else {
            p->confirmed = true; /* answered when applied */
        }
    }
}

/* After a loop pass's appends: one WAIT for every entry sent to nd so far. */
void pcd_rl_on_wait_event(evutil_socket_t fd, short what, void *arg)
{
    node *nd = arg;
    (void)fd;
    (void)what;
    if (!nd->wr || nd->sent_seq == nd->waited_seq)
        return;
    waiting *w = malloc(sizeof *w);
    if (!w)
        return; /* the next pass's WAIT covers these entries too */
    *w = (waiting){nd, nd->sent_seq};
    char n[16], ms[16];
    snprintf(n, sizeof n, "%u", nd->rl->srv->cfg.log_wait_replicas);
    snprintf(ms, sizeof ms, "%u", nd->rl->srv->cfg.log_wait_timeout_ms);
    const char *argv[] = {"WAIT", n, ms};
    size_t lens[] = {4, strlen(n), strlen(ms)};
    if (redisAsyncCommandArgv(nd->wr, on_waited, w, 3, argv, lens) == REDIS_OK)
        nd->waited_seq = nd->sent_seq;
    else
        free(w);
}

