/* gate.c - the gate before every handler that names a model
 * (server.h's log_gate): where a request meets the shared log.
 *
 * A write of a model served here is not applied where it arrives: it is
 * appended to the model's stream (append.c), its answer's place held until
 * its entry is applied (apply.c), and the handler does not run (PCD_LOGGED).
 * A model new here is named in the catalogue first, for the other daemons.
 * A write is refused (code 11, naming Redis and the error) while the node
 * or the reader of its stream, or of the catalogue's, is not connected.  A
 * read waits (code 12) until this daemon has caught up with every stream,
 * and a predict with {"after": POSITION} is parked until that entry is
 * applied (after.c).  The log's own entries pass the gate: apply.c takes
 * it away while they run.
 *
 * Near the top of the log's files, below redislog.c only: it adds streams,
 * asks readers.c whether a stream takes writes, and appends; so apply.c,
 * below it, puts it back through rl->gate (set at open).
 */
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/exec/request.h"
#include "daemon/exec/options.h"
#include "daemon/redislog/internal.h"

static void on_catalogued(redisAsyncContext *ac, void *reply, void *privdata)
{
    const redisReply *r = reply;
    (void)privdata;
    if (r && r->type == REDIS_REPLY_ERROR)
        pcd_warn("log: Redis %s refused a catalogue entry: %s",
                 ((pcd_redislog *)ac->data)->srv->cfg.log_address, r->str);
}

/* The gate before every handler that names a model (server.h, log_gate). */
int pcd_rl_gate(pcd_server *srv, pcd_req *r)
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

