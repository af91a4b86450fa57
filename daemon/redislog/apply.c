/* apply.c - applying the entries of the shared log, as every daemon that
 * serves the model does, in the stream's order.
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
 * An entry runs as a record of the local journal is replayed (replay.c),
 * with the gate out of the way: the log's own entries pass it.  The gate
 * is gate.c's, above this file (it adds streams and appends), so it is put
 * back through rl->gate, set at open.  follow.c hands each entry read here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/exec/replay.h"
#include "daemon/jobs/notify.h"
#include "daemon/redislog/internal.h"

/* The answer of an entry no client here waits for: packed to nowhere. */
static int discard(void *data, const char *buf, size_t len)
{
    (void)data;
    (void)buf;
    (void)len;
    return 0;
}

/* One entry's message, as a record of the local journal is (replay.c), its
 * answer into pk. */
static bool run_entry(pcd_redislog *rl, const uint8_t *msg, size_t len, msgpack_packer *pk)
{
    /* no gate while the log's own entries run: so the direct path takes
     * them, as it takes a live request without the log */
    rl->in_apply = rl->srv->applying = true;
    rl->srv->log_gate = NULL;
    bool ok = pcd_replay(rl->srv, msg, len, pk, NULL, NULL) > 0;
    rl->srv->log_gate = rl->gate;
    rl->in_apply = rl->srv->applying = false;
    return ok;
}

/* A read parked until its "after" entry was applied (after.h): run as an
 * entry is, past the gate, which would park it again. */
void pcd_rl_run_read(void *ud, const uint8_t *msg, size_t len, msgpack_packer *pk)
{
    pcd_redislog *rl = ud;
    rl->srv->log_gate = NULL;
    pcd_replay(rl->srv, msg, len, pk, NULL, NULL);
    rl->srv->log_gate = rl->gate;
}

/* The write being applied is at the entry being applied (position.h). */
bool pcd_rl_write_position(const pcd_server *srv, pcp_position *out)
{
    const pcd_redislog *rl = srv->rlog;
    *out = (pcp_position){.entry = true, .ms = rl->applying.ms, .seq = rl->applying.seq};
    return rl->in_apply;
}

/* A catalogue entry: a model's stream exists; follow it if served. */
static void catalogued(pcd_redislog *rl, const redisReply *fields)
{
    const redisReply *m = pcd_reply_field(fields, "model");
    if (!m || !pcp_model_name_valid(m->str, (size_t)m->len) ||
        pcd_rl_stream_find(rl, m->str, (size_t)m->len, true))
        return;
    char name[PCP_MODEL_NAME_MAX + 1];
    memcpy(name, m->str, (size_t)m->len);
    name[m->len] = 0;
    if (pcd_rl_served(rl, name) && !pcd_rl_stream_add(rl, name, (sid){0, 0}))
        pcd_error("log: out of memory following the stream of model %s", name);
}

/* The stream is at entry id: its count and whether it caught up. */
static void advance(stream *st, sid id)
{
    st->last = id;
    st->pos++; /* meaningful once pos_known */
    if (st->sync && pcd_sid_cmp(id, st->sync_id) >= 0) {
        st->pos_known = st->pos_known || !pcd_sid_cmp(id, st->sync_id);
        st->pos = pcd_sid_cmp(id, st->sync_id) ? st->pos : st->sync_pos;
        st->sync = false;
    }
    if (pcd_sid_cmp(id, st->target) >= 0)
        st->caught_up = true;
}

/* Reads are served once every stream followed has caught up with the entry
 * it had when it was prepared (sticky: a daemon that lost Redis later
 * serves what it has, as it did before). */
void pcd_rl_check_ready(pcd_redislog *rl)
{
    if (rl->srv->logst.ready)
        return;
    for (size_t i = 0; i < rl->nstreams; i++)
        if (!rl->streams[i]->caught_up)
            return;
    rl->srv->logst.ready = true;
    pcd_info("log: caught up with %zu streams: serving reads", rl->nstreams - 1);
    if (rl->srv->ready) /* started: now ready for systemd too (notify.c) */
        pcd_notify_ready(rl->srv);
}

void pcd_rl_apply_entry(pcd_redislog *rl, stream *st, const redisReply *e)
{
    sid id;
    const redisReply *fields;
    if (!pcd_reply_entry(e, &id, &fields))
        return;
    advance(st, id);
    if (!st->model) {
        catalogued(rl, fields);
        return;
    }
    const redisReply *m = pcd_reply_field(fields, "m"), *o = pcd_reply_field(fields, "o");
    pend *p = NULL;
    if (o && o->len == 16 && !memcmp(o->str, &rl->instance, 8)) {
        uint64_t seq;
        memcpy(&seq, o->str + 8, 8);
        p = pcd_rl_pend_find(rl, seq);
    }
    msgpack_packer pk;
    rl->answer.size = 0;
    if (p && p->client)
        msgpack_packer_init(&pk, &rl->answer, msgpack_sbuffer_write);
    else
        msgpack_packer_init(&pk, NULL, discard);
    rl->applying = id;
    rl->cur = st;
    bool ok = m && run_entry(rl, (const uint8_t *)m->str, (size_t)m->len, &pk);
    rl->srv->logst.applied++;
    rl->srv->logst.apply_failed += !ok;
    if (!p)
        return;
    if (p->client && rl->answer.size && rl->srv->cfg.log_wait_replicas && !p->confirmed) {
        if ((p->answer = malloc(rl->answer.size))) { /* delivered by on_waited */
            memcpy(p->answer, rl->answer.data, rl->answer.size);
            p->answer_len = rl->answer.size;
        } else {
            pcd_rl_owe_error(rl, p, "log %s: %s", "out of memory holding the answer for WAIT");
        }
    } else if (p->client && rl->answer.size) {
        p->client->deliver(p->client, p->slot, rl->answer.data, rl->answer.size);
        pcd_rl_pend_remove(rl, p);
    } else if (p->client) {
        pcd_rl_owe_error(rl, p, "log %s: %s", "the entry read back from Redis could not be decoded");
    } else {
        pcd_rl_pend_remove(rl, p);
    }
}

/* dispatch.c's hook after a write succeeded: while an entry is applied,
 * the model is at that entry (its snapshot will say so). */
void pcd_rl_on_written(pcd_server *srv, const pcd_req *r)
{
    pcd_redislog *rl = srv->rlog;
    if (rl->in_apply && r->model) {
        r->model->log_ms = rl->applying.ms;
        r->model->log_seq = rl->applying.seq;
        r->model->log_pos = rl->cur->pos;
        r->model->log_pos_known = rl->cur->pos_known;
    }
}

