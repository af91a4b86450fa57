/* dispatch.c - from a message to its method's handler: the table of
 * handlers indexed by proto's method ids, and run(), the one ending of the
 * general, the direct and the logged path.
 *
 * proto/ has already framed the message, checked the envelope and the number
 * of params against the method's row; a handler checks the params' types,
 * does the work and packs its result.  A handler either succeeds and packs
 * `[1, msgid, nil, result]`, or returns an error code without packing
 * anything, and run() packs the error: a response is never half written.
 * Notifications get a packer that discards.  run() is also the one place
 * that knows "this method succeeded": it checks the client's rights, the
 * journal, max_memory and the shared log's gate before, and counts the
 * model's bytes and hands a write to the journal after.  The handlers live
 * by kind: learn.c (predict, label, their batches), admin.c (the short
 * administrative methods), lifecycle.c, join.c.
 */
#include "daemon/exec/dispatch.h"

#include <stdlib.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/budget.h"
#include "daemon/core/rest.h"
#include "daemon/exec/handlers.h"
#include "daemon/exec/join.h"
#include "daemon/exec/options.h"
#include "daemon/journal/journal.h"

typedef int (*handler_fn)(pcd_req *r);

/* Whether a request on the general path asks for an explanation, known
 * before its examples are read so that their names are kept as they are
 * hashed (request.c): its options are the param after the required ones. */
static bool explains(const pcp_message *m, const pcp_method *method)
{
    uint32_t i = method->min_params;
    return m->nparams > i && pcd_opts_has(&m->params[i], PCD_OPT_EXPLAIN);
}

/* A method's row: what reads its params before the handler runs
 * (request.c: the model params[0] names, with its example or its batch, or
 * its name alone), NULL where the handler reads them itself; and the
 * handler. */
typedef struct method_row {
    handler_fn read;
    handler_fn run;
} method_row;

static const method_row methods[PCP_M_COUNT] = {
    [PCP_M_PREDICT] = {pcd_req_example, pcd_h_predict},
    [PCP_M_LABEL] = {pcd_req_example, pcd_h_label},
    [PCP_M_PREDICT_BATCH] = {pcd_req_batch, pcd_h_predict_batch},
    [PCP_M_LABEL_BATCH] = {pcd_req_batch, pcd_h_label_batch},
    [PCP_M_MODELS] = {NULL, pcd_h_models},
    [PCP_M_INFO] = {pcd_req_model, pcd_h_info},
    [PCP_M_WEIGHTS] = {pcd_req_model, pcd_h_weights},
    [PCP_M_CREATE] = {NULL, pcd_h_create},
    [PCP_M_DROP] = {pcd_req_model, pcd_h_drop},
    [PCP_M_RESET] = {pcd_req_model, pcd_h_reset},
    [PCP_M_SAVE] = {NULL, pcd_h_save},
    [PCP_M_STATS] = {NULL, pcd_h_stats},
    [PCP_M_PING] = {NULL, pcd_h_ping},
    [PCP_M_AUTH] = {NULL, pcd_h_auth},
    [PCP_M_LABEL_EVENT] = {pcd_req_model, pcd_join_label},
    [PCP_M_COMPARE] = {pcd_req_model, pcd_h_compare},
    [PCP_M_PROMOTE] = {pcd_req_model, pcd_h_promote},
    [PCP_M_SNAPSHOTS] = {pcd_req_name, pcd_h_snapshots},
    [PCP_M_ROLLBACK] = {pcd_req_name, pcd_h_rollback},
    [PCP_M_EXPORT] = {pcd_req_name, pcd_h_export},
    [PCP_M_IMPORT] = {pcd_req_name, pcd_h_import},
    [PCP_M_COPY] = {NULL, pcd_h_copy},
};

bool pcd_dispatch_complete(void)
{
    for (size_t i = 0; i < PCP_M_COUNT; i++)
        if (!methods[i].run)
            return false;
    return true;
}

/* ---- the one ending of both paths --------------------------------------- */

static int discard(void *data, const char *buf, size_t len)
{
    (void)data;
    (void)buf;
    (void)len;
    return 0;
}

/* Counts a failed message and answers with its error (requests) or logs it
 * (notifications). */
static void failed(pcd_server *srv, int rc, bool answer, uint32_t msgid, pcp_error *err,
                   msgpack_packer *pk)
{
    srv->loop.counters.errors++;
    srv->loop.counters.errors_by_code[rc & 31]++;
    err->code = (pcp_code)rc;
    if (answer)
        pcp_pack_response_error(pk, msgid, err);
    else
        pcd_debug("dropped a bad notification: %s", err->msg);
}

/* Models at rest (core/rest.h): the models a request names (params[0],
 * and copy's source) are loaded before anything reads them, so no handler
 * meets a resting model; *named is the first, kept by the trim after. */
static int wake_named(pcd_req *r, pcd_model **named)
{
    if (!r->msg || (r->method->flags & PCP_F_OPEN))
        return PCP_OK; /* the direct path declines resting models */
    for (size_t i = 0; i < r->nparams && i < (r->method->id == PCP_M_COPY ? 2u : 1u); i++) {
        const msgpack_object *o = &r->msg->params[i];
        if (o->type != MSGPACK_OBJECT_STR)
            continue;
        pcd_model *e = pcd_rest_wake(r->srv, o->via.str.ptr, o->via.str.size, &r->err);
        if (!e && r->err.code)
            return r->err.code;
        if (i == 0)
            *named = e;
    }
    return PCP_OK;
}

/* Runs r's handler; false when the client must wait for its answer. */
static bool run(pcd_req *r, msgpack_packer *pk)
{
    pcd_server *srv = r->srv;
    msgpack_packer null_pk;
    msgpack_packer_init(&null_pk, NULL, discard);
    r->pk = r->notification ? &null_pk : pk;
    if (r->notification)
        srv->loop.counters.notifications++;
    else
        srv->loop.counters.requests++;
    if (r->method->flags & PCP_F_ADMIN)
        pcd_debug("%s from %s", r->method->name, r->client ? r->client->name : "?");
    /* A client's rights first (no client: the journal or log replaying what
     * was allowed when it was written). */
    int rc;
    /* predict's options decide whether it writes: the decoded map (either
     * path's); NULL when not read yet (pcd_dispatch_logged's envelope) */
    const msgpack_object *options =
        r->msg && r->nparams > r->method->min_params ? &r->msg->params[r->method->min_params]
                                                     : r->options;
    bool writes = pcp_method_writes(r->method->id, r->nparams, options);
    pcp_right need = pcp_method_right(r->method, r->nparams, options);
    pcd_model *named = r->model; /* the direct path's */
    if (r->client && r->client->rights < need) {
        srv->loop.counters.denied++;
        pcd_debug("%s from %s denied: it has %s", r->method->name, r->client->name,
                  pcp_right_name(r->client->rights));
        rc = pcd_req_fail(r, PCP_E_DENIED, "%s needs the %s right; this connection has %s "
                          "(send auth with a token that grants it)", r->method->name,
                          pcp_right_name(need), pcp_right_name(r->client->rights));
    }
    /* Some model rests (or may, once resident_max is on) */
    else if ((srv->cfg.resident_max || srv->models.nresident != srv->models.count) &&
             (rc = wake_named(r, &named)) != PCP_OK)
        ;
    /* Nothing is changed that the journal could not keep: while it is failed
     * a write is refused before it is applied (reads go on). */
    else if (writes && srv->journal &&
        !pcd_journal_writable(srv->journal, r->err.msg, sizeof r->err.msg))
        rc = PCP_E_INTERNAL;
    /* A client's write that may add to what the daemon holds, once it holds
     * max_memory: refused before it is applied (a drop only frees). */
    else if (writes && r->client && r->method->id != PCP_M_DROP &&
             (pcd_rest_trim(srv, named), rc = pcd_budget_write(srv, &r->err)) != PCP_OK)
        ;
    /* With the shared log a write goes there instead of being applied here:
     * its answer comes when its entry is applied.  The OPEN methods (ping,
     * auth) name no model: the log has nothing to say about them (a token
     * that looks like a model name is still a token). */
    else if (!srv->log_gate || (r->method->flags & PCP_F_OPEN) ||
             (rc = srv->log_gate(srv, r)) == PCP_OK) {
        /* Timed only when someone can read the histogram (metrics.listen):
         * a clock read took 0.1-0.17 us on the 2-core VM (busy), two per
         * request, a few percent of a label's time. */
        double t0 = srv->http ? pcd_monotonic() : 0;
        const method_row *row = &methods[r->method->id];
        if (r->msg) /* the direct path knew before it read the example */
            r->keep_names = explains(r->msg, r->method);
        /* pcd_dispatch_logged's envelope has the model's name alone: it is
         * for the log's gate, which takes or refuses it, never a handler */
        if (r->msg && r->msg->nparams < r->method->min_params)
            rc = pcd_req_fail(r, PCP_E_INTERNAL, "%s reached its handler without its params",
                              r->method->name);
        else if (!row->read || (rc = row->read(r)) == PCP_OK)
            rc = row->run(r);
        if (srv->http)
            pcd_latency_add(&srv->loop.counters.methods[r->method->id].time,
                            pcd_monotonic() - t0);
    }
    pcd_method_counters *mc = &srv->loop.counters.methods[r->method->id];
    mc->calls++;
    if (rc != PCP_OK && rc != PCD_WAIT && rc != PCD_LOGGED)
        mc->errors[rc & 31]++;
    if (rc != PCP_OK) /* a model loaded for a request that failed goes back too */
        pcd_rest_trim(srv, named);
    if (rc == PCD_WAIT)
        return false;
    if (rc == PCD_LOGGED)
        return true;
    if (rc != PCP_OK) {
        failed(srv, rc, !r->notification, r->msgid, &r->err, pk);
        return true;
    }
    /* A WRITES method succeeded: raw[0..len) changed durable state, and
     * replaying those bytes in order redoes it.  This is where a journal
     * appends them.  (A label that failed after auto-creating its model
     * changed state too: the creation is that model's first write.) */
    if (writes && r->model && r->method->id != PCP_M_DROP)
        pcd_budget_recount(srv, r->model);
    if (writes && srv->on_written)
        srv->on_written(srv, r);
    free(r->rewritten);
    /* after the journal took its position: an evicted model's snapshot covers it */
    pcd_rest_trim(srv, r->model && r->method->id != PCP_M_DROP ? r->model : named);
    return true;
}

bool pcd_dispatch(pcd_server *srv, pcd_client *client, const uint8_t *raw, size_t len,
                  const msgpack_object *obj, msgpack_packer *pk)
{
    pcp_message m = {0};
    pcd_req r = {.srv = srv, .client = client, .raw = raw, .len = len, .msg = &m};
    int rc = pcp_message_parse(obj, &m, &r.err);
    if (rc != PCP_OK) { /* not counted as a request or notification: it is neither */
        failed(srv, rc, m.has_msgid && !m.notification, m.msgid, &r.err, pk);
        return true;
    }
    r.method = m.method;
    r.msgid = m.msgid;
    r.notification = m.notification;
    r.nparams = m.nparams;
    return run(&r, pk);
}

pcd_model *pcd_dispatch_resting(pcd_server *srv, const msgpack_object *obj)
{
    if (!srv->restio || srv->models.nresident == srv->models.count)
        return NULL; /* the common case: no model rests */
    pcp_message m = {0};
    pcp_error err;
    if (pcp_message_parse(obj, &m, &err) != PCP_OK || (m.method->flags & PCP_F_OPEN) ||
        m.nparams < 1 || m.params[0].type != MSGPACK_OBJECT_STR)
        return NULL;
    pcd_model *e = pcd_registry_find(&srv->models, m.params[0].via.str.ptr, m.params[0].via.str.size);
    return e && pcd_model_resting(e) ? e : NULL;
}

bool pcd_dispatch_logged(pcd_server *srv, pcd_client *client, const uint8_t *raw, size_t len,
                         msgpack_packer *pk)
{
    pcp_direct d;
    if (!srv->log_gate || !pcp_direct_message(raw, len, &srv->limits, &d) ||
        !(d.method->flags & PCP_F_WRITES) || d.model.type != MSGPACK_OBJECT_STR ||
        !pcp_model_name_valid(d.model.via.str.ptr, d.model.via.str.size))
        return false;
    /* the gate reads the method and params[0], the model's name */
    pcp_message m = {.notification = d.notification, .has_msgid = !d.notification,
                     .msgid = d.msgid, .method = d.method, .params = &d.model, .nparams = 1};
    pcd_req r = {.srv = srv, .client = client, .raw = raw, .len = len, .msg = &m,
                 .method = d.method, .msgid = d.msgid, .notification = d.notification,
                 .nparams = d.nparams};
    return run(&r, pk); /* rights, then the gate: appended (answered later) or refused */
}

bool pcd_dispatch_direct(pcd_server *srv, pcd_client *client, pcp_direct *d, msgpack_packer *pk,
                         size_t *len)
{
    /* Only the plain case: a model that exists and examples that decode.
     * Creating a model, and every error up to the features, is left to the
     * general path, so a decline leaves nothing behind (and a message whose
     * bytes have not all arrived creates nothing).  What can go wrong after,
     * a bad label or the model's refusal, is found and worded by the
     * handlers, the same functions as on the general path. */
    if (d->model.type != MSGPACK_OBJECT_STR)
        return false;
    /* With the shared log, writes take the general path (which has the
     * client to answer later), and so do reads until the daemon caught up
     * (the log's gate refuses them). */
    if (srv->log_gate && (pcp_method_writes(d->method->id, d->nparams, NULL) || !srv->logst.ready))
        return false;
    pcd_req r; /* field by field: the hot path, and err.msg need not be zeroed */
    r.srv = srv;
    r.client = client;
    r.method = d->method;
    r.msgid = d->msgid;
    r.notification = d->notification;
    r.err.code = PCP_OK;
    r.err.msg[0] = 0;
    r.raw = d->start;
    r.more_len = 0;
    r.rewritten = NULL;
    r.msg = NULL;
    r.decoded = true;
    r.nparams = d->nparams;
    r.options = NULL;
    /* predict's options, read ahead only when it has some */
    r.keep_names = d->nparams > d->method->min_params && pcp_direct_options(d, &srv->limits) &&
                   pcd_opts_has(&d->opts, PCD_OPT_EXPLAIN);
    r.model = pcd_registry_find(&srv->models, d->model.via.str.ptr, d->model.via.str.size);
    if (!r.model || pcd_model_resting(r.model) || !pcd_req_direct(&r, d))
        return false; /* a resting model is loaded on the general path (wake_named) */
    r.model->used = ++srv->models.clock; /* the LRU's mark (core/rest.c) */
    *len = r.len;
    run(&r, pk);
    return true;
}
