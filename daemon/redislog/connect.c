/* connect.c - the log's connections to Redis: every one (a node's, a
 * reader's, the cluster's map question) is dialled here, AUTH first, and
 * what becomes of it comes back here: connected, refused, lost.
 *
 * hiredis calls one connect and one disconnect callback per context, whose
 * data is the log, so they find whose context it is (a node's, a reader's,
 * the map question's) and pass a failure down to readers.c (node_lost,
 * reader_lost: writes refused, back-off) or to ctl_lost.  A node that comes
 * up dials its readers, which wait for it; a reader that comes up reads
 * (follow.c).  pcd_rl_route gives a stream added its reader, dialled when
 * its node is up: streams.c reaches it through rl->route, set at open,
 * since its connection's traffic adds streams again.
 */
#include <hiredis/adapters/libevent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/redislog/address.h"
#include "daemon/redislog/internal.h"

static void reader_dial(reader *rdr);

/* The reader whose connection ac is, or NULL (a node's: pcd_rl_node_of). */
static reader *reader_of(pcd_redislog *rl, const redisAsyncContext *ac)
{
    for (size_t i = 0; i < rl->nreaders; i++)
        if (rl->readers[i]->rd == ac)
            return rl->readers[i];
    return NULL;
}

/* The map question failed: ask again later, someone else. */
void pcd_rl_ctl_lost(pcd_redislog *rl, const char *why)
{
    redisAsyncContext *c = rl->ctl;
    rl->ctl = NULL;
    rl->ctl_next++;
    snprintf(rl->srv->logst.error, sizeof rl->srv->logst.error,
             "Redis Cluster %.80s: cannot read its slot map (%.120s)", rl->srv->cfg.log_address, why);
    if (!rl->ctl_warned)
        pcd_warn("log: %s; retrying", rl->srv->logst.error);
    rl->ctl_warned = true;
    rl->announce = true;
    if (c)
        redisAsyncFree(c);
    pcd_rl_schedule_retry(rl);
}

/* ac failed for why; `freed`: hiredis frees it itself (a failed connect, a
 * disconnection), so it is only forgotten here. */
static void conn_failed(pcd_redislog *rl, const redisAsyncContext *ac, const char *why, bool freed)
{
    node *nd = pcd_rl_node_of(rl, ac);
    reader *rdr = nd ? NULL : reader_of(rl, ac);
    if (nd) {
        if (freed)
            nd->wr = NULL;
        pcd_rl_node_lost(nd, why);
    } else if (rdr) {
        if (freed)
            rdr->rd = NULL;
        pcd_rl_reader_lost(rdr, why);
    } else if (ac == rl->ctl) {
        if (freed)
            rl->ctl = NULL;
        pcd_rl_ctl_lost(rl, why);
    }
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    pcd_redislog *rl = ac->data;
    if (status != REDIS_OK) { /* hiredis frees ac after this returns */
        conn_failed(rl, ac, ac->errstr, true);
        return;
    }
    node *nd = pcd_rl_node_of(rl, ac);
    reader *rdr = nd ? NULL : reader_of(rl, ac);
    if (nd) {
        nd->up = true;
        nd->refused[0] = 0;
        for (size_t i = 0; i < rl->nreaders; i++) /* its readers wait for it (route) */
            if (rl->readers[i]->nd == nd && !rl->readers[i]->rd)
                reader_dial(rl->readers[i]);
    }
    if (rdr)
        rdr->up = true;
    pcd_rl_set_up(rl);
    if (rdr)
        pcd_rl_read_more(rdr);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    pcd_redislog *rl = ac->data;
    if (!rl->closing)
        conn_failed(rl, ac, status == REDIS_OK ? "connection closed" : ac->errstr, true);
}

/* AUTH's answer, before any other on that connection: a refusal is a
 * connection that cannot be used (its next commands would fail NOAUTH). */
static void on_auth(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)privdata;
    pcd_redislog *rl = ac->data;
    const redisReply *r = reply;
    if (r && r->type == REDIS_REPLY_ERROR) {
        char why[300];
        snprintf(why, sizeof why, "it refused the password of log.password_%s: %.200s",
                 *rl->srv->cfg.log_password_file ? "file" : "credential", r->str);
        node *nd = pcd_rl_node_of(rl, ac);
        if (nd) /* for the appends behind it, told as the connection closes */
            snprintf(nd->refused, sizeof nd->refused, "refused the password of log.password_%s "
                     "(%.150s)", *rl->srv->cfg.log_password_file ? "file" : "credential", r->str);
        conn_failed(rl, ac, why, false);
    }
}

redisAsyncContext *pcd_rl_dial(pcd_redislog *rl, const char *address, char *why, size_t whylen)
{
    pcd_redis_address a;
    pcd_redis_address_split(address, &a);
    redisAsyncContext *ac = a.path ? redisAsyncConnectUnix(a.path) : redisAsyncConnect(a.host, a.port);
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
    const char *argv[3];
    size_t lens[3];
    int n = pcd_redis_auth_argv(&rl->auth, argv, lens);
    if (n && redisAsyncCommandArgv(ac, on_auth, NULL, n, argv, lens) != REDIS_OK) {
        snprintf(why, whylen, "cannot send AUTH");
        redisAsyncFree(ac);
        return NULL;
    }
    return ac;
}

static void reader_dial(reader *rdr)
{
    char why[256];
    if (!(rdr->rd = pcd_rl_dial(rdr->rl, rdr->nd->address, why, sizeof why)))
        pcd_rl_reader_lost(rdr, why);
}

/* Dials every node of the map not connected; their readers follow once
 * they are up (on_connect). */
void pcd_rl_connect_all(pcd_redislog *rl)
{
    char why[256];
    for (size_t i = 0; i < rl->nnodes; i++) {
        node *nd = rl->nodes[i];
        if (nd->in_map && !nd->wr && !(nd->wr = pcd_rl_dial(rl, nd->address, why, sizeof why)))
            pcd_rl_node_lost(nd, why);
    }
    for (size_t i = 0; i < rl->nreaders; i++) {
        reader *rdr = rl->readers[i];
        if (rdr->nd && rdr->nd->up && !rdr->rd)
            reader_dial(rdr);
    }
}

/* The reader that follows st (made when new), dialled when its node is up;
 * one already blocked in an XREAD without st starts again (a connection
 * blocked in XREAD hears nothing else), unless it follows the catalogue,
 * whose entry naming st wakes it.  False out of memory. */
bool pcd_rl_route(pcd_redislog *rl, stream *st)
{
    int slot = rl->cluster ? (int)pcd_key_slot(st->key, strlen(st->key)) : -1;
    reader *rdr = NULL;
    for (size_t i = 0; i < rl->nreaders && !rdr; i++)
        if (rl->readers[i]->slot == slot)
            rdr = rl->readers[i];
    if (!rdr) {
        reader **v = realloc(rl->readers, (rl->nreaders + 1) * sizeof *v);
        if (!v)
            return false;
        rl->readers = v;
        if (!(rdr = calloc(1, sizeof *rdr)))
            return false;
        *rdr = (reader){.rl = rl, .slot = slot, .nd = pcd_rl_slot_node(rl, slot)};
        snprintf(rdr->error, sizeof rdr->error, "Redis %.100s: connecting", rdr->nd ? rdr->nd->address : "");
        rl->readers[rl->nreaders++] = rdr;
        pcd_rl_set_up(rl);
    }
    st->rdr = rdr;
    if (rdr->reading && rl->nstreams && rdr != rl->streams[0]->rdr)
        pcd_rl_reader_drop(rdr);
    if (!rdr->rd && rdr->nd && rdr->nd->up)
        reader_dial(rdr);
    return true;
}

