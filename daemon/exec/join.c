/* join.c - predictions remembered under an event ID, and outcomes joined to
 * them (see join.h and docs/label-later.md).
 *
 * Durability: both halves are journaled writes.  A remembered event changes
 * what a later label_event learns, so `predict` with an event is journaled
 * (PCP_F_OPT_WRITES), with the time it was made added to its options, so
 * that after a restart the event expires when it would have; label_event is
 * journaled as it came.  Expiry is
 * journaled too (expiry.c sends it as a label_event with {"expire": true}),
 * so a replay learns the default labels at the places they were learned.
 * Evictions beyond max_pending / max_bytes happen inside the predict that
 * overflows, so replaying that predict evicts the same events.
 */
#include "daemon/exec/join.h"

#include <stdio.h>
#include <string.h>

#include "daemon/base/clock.h"
#include "daemon/core/models.h"
#include "daemon/exec/explain.h"
#include "daemon/exec/options.h"
#include "daemon/exec/position.h"
#include "daemon/exec/replies.h"
#include "daemon/model/challengers.h"
#include "daemon/model/pending.h"
#include "lib/bytes.h"

/* Now in unix ms: once a turn of a connection (server.h), else read. */
static int64_t now_ms(pcd_server *srv)
{
    if (!srv->loop.in_turn)
        return pcd_now_ms();
    if (!srv->loop.turn_ms)
        srv->loop.turn_ms = pcd_now_ms();
    return srv->loop.turn_ms;
}

static int bad_id(pcd_req *r)
{
    return pcd_req_fail(r, PCP_E_PARAMS, "an event ID must be an integer or a string of 1 to %d "
                                         "bytes", PCD_EVENT_ID_MAX);
}

/* The journal keeps a predict with its options replaced by {"event": ID,
 * "at": at}: the time it was made, by which the event expires after a
 * restart.  The direct path's bytes up to the options are kept as they came
 * (its features are neither packed nor copied again: the journal appends
 * raw[0..options_at) and the new options, r->more); a predict decoded on the
 * general path is packed again whole. */
static void journal_at(pcd_req *r, const msgpack_object *event, int64_t at)
{
    msgpack_sbuffer *sb = &r->srv->loop.rewritten;
    sb->size = 0;
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    if (r->msg) {
        msgpack_pack_array(&pk, 3);
        msgpack_pack_uint8(&pk, 2);
        pcp_pack_str(&pk, r->method->name);
        msgpack_pack_array(&pk, 3);
        msgpack_pack_object(&pk, r->msg->params[0]);
        msgpack_pack_object(&pk, r->msg->params[1]);
    }
    msgpack_pack_map(&pk, 2);
    pcp_pack_str(&pk, "event");
    msgpack_pack_object(&pk, *event);
    pcp_pack_str(&pk, "at");
    msgpack_pack_int64(&pk, at);
    if (!sb->data) /* out of memory leaves the request's own bytes: only the time is lost */
        return;
    if (r->msg) {
        r->raw = (const uint8_t *)sb->data;
        r->len = sb->size;
    } else {
        r->len = r->options_at;
        r->more = (const uint8_t *)sb->data;
        r->more_len = sb->size;
    }
}

/* Ends the oldest events while the store is over its bounds: each learns the
 * default label when there is one. */
static void evict(pcd_req *r, pcd_pending *p, int64_t now_ms)
{
    pcd_event *ev;
    while ((ev = pcd_pending_over(p))) {
        if (p->cfg.has_default) {
            pc_label y = {.y = p->cfg.default_label[0] == '-' ? -1 : 1,
                          .cls = p->cfg.default_label,
                          .cls_len = strlen(p->cfg.default_label)};
            pc_svec x;
            pcd_event_example(ev, &x);
            pc_outcome o;
            pc_error perr;
            /* a default the model refuses (a class it lacks) ends the event
             * unlearned: a predict that changed the store must not fail, or
             * the journal would not hold what it changed */
            /* the champion of this moment: promote.auto may change it */
            if (pc_model_label(r->model->model, &x, &y, &o, &perr) == PC_OK) {
                pcd_model_learned(r->srv, r->model, &x, &y, &o, NULL);
                p->st.defaulted++;
                r->srv->loop.counters.labels++;
            }
        }
        p->st.evicted++;
        pcd_pending_end(p, ev, PCD_EV_EXPIRED, now_ms);
    }
}

void pcd_join_prefetch(const pcd_req *r, const msgpack_object *event)
{
    uint8_t buf[8];
    pcd_event_id id;
    if (event && r->model->pending && pcd_event_id_read(event, &id, buf))
        pcd_pending_prefetch(r->model->pending, &id);
}

int pcd_join_remember(pcd_req *r, const pcd_opts *o, const pc_prediction *pred, uint8_t hint)
{
    if (!o->event)
        return PCP_OK;
    uint8_t buf[8];
    pcd_event_id id;
    if (!pcd_event_id_read(o->event, &id, buf))
        return bad_id(r);
    pcd_model *e = r->model;
    pcd_pending *p = pcd_model_pending(e);
    if (!p)
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
    pcd_event *old = pcd_pending_find(p, &id);
    if (old && old->state == PCD_EV_PENDING)
        return pcd_req_fail(r, PCP_E_EXISTS, "event %s is waiting for its outcome already: give "
                                             "each prediction its own ID",
                            id.type ? "(an integer)" : "(a string)");
    int64_t now = now_ms(r->srv);
    int64_t at = o->has_at && o->at_ms < now ? o->at_ms : now;
    if (p->tail && at < p->tail->at_ms)
        at = p->tail->at_ms; /* oldest first: expiry reads the list from its head */
    const pc_model_config *cfg = pc_model_config_of(e->model);
    pcd_event *ev = pcd_pending_add(p, &id, at, &r->srv->loop.xs[0], pred, cfg->multiclass);
    if (!ev)
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory remembering the event");
    ev->hint = hint;
    evict(r, p, at);
    e->changes++;
    if (!o->has_at && r->srv->on_written) /* only a journal keeps the bytes */
        journal_at(r, o->event, at);
    return PCP_OK;
}

static void pack_bool(msgpack_packer *pk, bool b)
{
    if (b)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
}

int pcd_join_label(pcd_req *r)
{
    pcd_opts o;
    int rc;
    if ((rc = pcd_opts_of(r, 3, PCD_OPT_EXPIRE | PCD_OPT_AT | PCD_OPT_EXPLAIN, &o)))
        return rc;
    /* the ID and the label: read from the bytes on the direct path */
    const msgpack_object *idobj = r->msg ? &r->msg->params[1] : &r->event;
    const msgpack_object *lab = r->msg ? &r->msg->params[2] : &r->label;
    uint8_t buf[8];
    pcd_event_id id;
    if (!pcd_event_id_read(idobj, &id, buf))
        return bad_id(r);
    pcd_model *e = r->model;
    pc_model *m = e->model;
    const pc_model_config *cfg = pc_model_config_of(m);
    pc_label y;
    bool learn = lab->type != MSGPACK_OBJECT_NIL;
    if (learn && (rc = pcp_label(lab, cfg->multiclass, &y, &r->err)))
        return rc;
    pcd_pending *p = e->pending;
    pcd_event *ev = p ? pcd_pending_find(p, &id) : NULL;
    if (!ev || ev->state != PCD_EV_PENDING) {
        char q[64];
        if (id.type)
            snprintf(q, sizeof q, "%lld", (long long)pc_get_u64(id.bytes));
        else
            pcp_quote(q, sizeof q, (const char *)id.bytes, id.len);
        if (!ev) {
            if (p)
                p->st.unknown++;
            return pcd_req_fail(r, PCP_E_EVENT_UNKNOWN, "model '%s' has no event %s (never "
                                "predicted with {\"event\": ...}, or forgotten long ago)",
                                e->name, q);
        }
        if (ev->state == PCD_EV_LABELLED) {
            p->st.duplicate++;
            return pcd_req_fail(r, PCP_E_EVENT_DONE, "event %s of model '%s' was labelled "
                                "already", q, e->name);
        }
        p->st.late++;
        return pcd_req_fail(r, PCP_E_EVENT_EXPIRED, "event %s of model '%s' expired before its "
                            "outcome came (join.ttl is %llu s, join.max_pending %llu)", q,
                            e->name, (unsigned long long)p->cfg.ttl,
                            (unsigned long long)p->cfg.max_pending);
    }
    int64_t now = o.has_at ? o.at_ms : now_ms(r->srv);
    pc_outcome out = {.pred = {.y = 0, .cls = -1, .score = ev->score}};
    bool mistake = false;
    pc_svec x;
    pcd_event_example(ev, &x);
    /* {"explain": K}: the champion's score of the example, before it learns it */
    pcd_explainer *xp = NULL;
    if (o.explain) {
        if (!(xp = pcd_explainer_for(&r->srv->loop.explainer, x.n, pc_model_class_count(m),
                                     o.explain)))
            return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory explaining");
        pcd_explain(xp, m, &x, NULL, NULL, o.explain);
        pcd_explain_known_names(xp, &e->names); /* its request's names are long gone */
    }
    if (learn) {
        pc_error perr;
        pc_status st = pc_model_label(m, &x, &y, &out, &perr);
        if (st != PC_OK)
            return pcd_req_fail(r, pcp_status_code(st, PCP_E_LABEL), "%s", perr.msg);
        p->st.hint_unasked_outcomes += ev->hint == PCD_HINT_UNASKED;
        r->srv->loop.counters.labels++;
        mistake = cfg->multiclass ? pc_model_class_find(m, y.cls, y.cls_len) != ev->served
                                  : ev->served != y.y;
        /* the answer label's would be: with experts their combined outcome,
         * not the champion's alone (m and cfg stay the champion that served:
         * promote.auto may change it now) */
        pc_outcome said;
        pcd_model_learned(r->srv, e, &x, &y, &out, &said);
        out = said;
    }
    int64_t delay = now - ev->at_ms;
    if (o.expire) {
        p->st.expired++;
        p->st.defaulted += learn;
    } else if (learn) {
        p->st.joined++;
        p->st.served_mistakes += mistake;
        /* a journaled outcome carries no time (a copy would cost as much as
         * the join): replayed, its delay is unknown and left out */
        if (!r->srv->replay_lsn || o.has_at)
            pcd_pending_delay(p, delay);
    } else {
        p->st.forgotten++;
    }
    pc_prediction served = {.y = cfg->multiclass ? 1 : ev->served,
                            .cls = cfg->multiclass ? ev->served : -1, .score = ev->score};
    pcp_pack_response_ok(r->pk, r->msgid);
    bool hinted = ev->hint != PCD_HINT_NONE;
    msgpack_pack_map(r->pk, 7 + (xp != NULL) + hinted);
    if (hinted) { /* whether the served prediction asked for this label */
        pcp_pack_str(r->pk, "asked");
        pack_bool(r->pk, ev->hint == PCD_HINT_ASKED);
    }
    pcp_pack_str(r->pk, "served");
    pcp_pack_label(r->pk, m, &served);
    pcp_pack_str(r->pk, "predicted");
    if (learn)
        pcp_pack_label(r->pk, m, &out.pred);
    else
        msgpack_pack_nil(r->pk);
    pcp_pack_str(r->pk, "score");
    msgpack_pack_double(r->pk, out.pred.score);
    pcp_pack_str(r->pk, "mistake");
    pack_bool(r->pk, mistake);
    pcp_pack_str(r->pk, "updated");
    pack_bool(r->pk, out.updated);
    pcp_pack_str(r->pk, "delay");
    msgpack_pack_double(r->pk, (double)delay / 1000);
    if (xp)
        pcd_reply_explanation(r->pk, e, xp);
    pcd_pack_position(r);
    pcd_pending_end(p, ev, o.expire ? PCD_EV_EXPIRED : PCD_EV_LABELLED, now);
    e->changes++;
    return PCP_OK;
}
