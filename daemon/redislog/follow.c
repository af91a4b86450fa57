/* follow.c - following the streams: each reader prepares the streams it
 * follows, then reads them (XREAD BLOCK 0), and reads again after each
 * reply, handing every entry to apply.c.
 *
 * Before a stream is read (at each connection, and when a model appears),
 * it is prepared: XINFO STREAM gives the entry to catch up to and the
 * stream's entry count (for the lag), and the snapshot published in Redis
 * (redislog/publish.h) is loaded when this daemon has no state of the model,
 * or when the stream was trimmed past what it applied.  Reads are refused
 * (code 12) until every stream has been caught up with once.
 *
 * Preparing and reading share a file because they take turns on one
 * connection and call each other: the preparation's commands go on the
 * reader's connection while it is not blocked in an XREAD (a blocked XREAD
 * hears nothing else), the last of their replies starts the next XREAD,
 * and each XREAD first prepares the streams added since.  A failure goes
 * down to readers.c (the reader lost, or the map stale).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/core/budget.h"
#include "daemon/redislog/internal.h"
#include "daemon/store/snapshot.h"

#define READ_COUNT "256"   /* entries per stream per XREAD: bounds one reply's memory */

/* An XREAD's reply: the entries of each stream applied in order, the reads
 * parked on them answered; then the next XREAD. */
static void on_read(redisAsyncContext *ac, void *reply, void *privdata)
{
    reader *rdr = privdata;
    pcd_redislog *rl = rdr->rl;
    const redisReply *r = reply;
    if (!r || ac != rdr->rd)
        return; /* the connection is going away */
    rdr->reading = false;
    if (r->type == REDIS_REPLY_ERROR) {
        pcd_rl_reader_error(rdr, r->str);
        return;
    }
    rdr->nd->warned = false; /* it works: its next failure is news */
    rdr->error[0] = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *key, *entries;
        if (!pcd_reply_stream(r->element[i], &key, &entries))
            continue;
        stream *st = pcd_rl_stream_find(rl, key->str, (size_t)key->len, false);
        for (size_t k = 0; st && k < entries->elements; k++)
            pcd_rl_apply_entry(rl, st, entries->element[k]);
        if (st)
            pcd_rl_note_lag(rl, st);
        if (st && st->model)
            pcd_after_reached(rl->after, st->model, st->last);
    }
    pcd_rl_check_ready(rl);
    pcd_rl_read_more(rdr);
}

/* One reply of a preparation came: when the last did, reading goes on. */
static void prepared_one(reader *rdr)
{
    if (--rdr->preparing == 0) {
        pcd_rl_check_ready(rdr->rl);
        pcd_rl_read_more(rdr);
    }
}

/* The hiredis callback of a step of st's preparation: the step gets the
 * reply, unless its reader's connection is going away (the stream is then
 * prepared again on the next). */
#define PREP_CALLBACK(callback, step)                                                  \
    static void callback(redisAsyncContext *ac, void *reply, void *privdata)          \
    {                                                                                  \
        stream *st = privdata;                                                         \
        if (reply && ac == st->rdr->rd)                                                \
            step(st, st->rdr, reply);                                                  \
    }

static void prep_info(stream *st, reader *rdr, const redisReply *r)
{
    pcd_redislog *rl = rdr->rl;
    if (r->type == REDIS_REPLY_ERROR && pcd_cluster_redirected(r->str)) {
        pcd_rl_reader_error(rdr, r->str); /* not here (any more): "no such key" would be a lie */
        return;
    }
    sid g;
    bool known = pcd_rl_note_count(st, r, &g);
    st->target = g;
    st->sync = false;
    if (pcd_sid_cmp(st->last, g) >= 0) {
        st->caught_up = true;
        st->pos_known = st->pos_known || (known && !pcd_sid_cmp(st->last, g));
        st->pos = !pcd_sid_cmp(st->last, g) && known ? st->added : st->pos;
    } else if (known && !st->pos_known) {
        st->sync = true;
        st->sync_id = g;
        st->sync_pos = st->added;
    }
    pcd_rl_note_lag(rl, st);
    prepared_one(rdr);
}
PREP_CALLBACK(on_prep_info, prep_info)

/* The model was replaced by a published snapshot: the writes of this
 * daemon still waiting on its stream may be inside it, so their answers
 * are lost; say so rather than leave the clients waiting. */
static void forget_owed(pcd_redislog *rl, stream *st)
{
    for (pend *p = rl->head, *next; p; p = next) {
        next = p->next;
        if (p->st == st)
            pcd_rl_owe_error(rl, p, "log %s: %s", "the model was reloaded from the snapshot "
                             "published in Redis: this write was appended and may be in it, but "
                             "its answer is lost");
    }
}

static void prep_data(stream *st, reader *rdr, const redisReply *r)
{
    pcd_redislog *rl = rdr->rl;
    pcd_server *srv = rl->srv;
    pcd_model tmp = {0};
    char why[300] = "it is gone";
    if (r->type != REDIS_REPLY_STRING ||
        pcd_model_deserialize(&tmp, (const uint8_t *)r->str, (size_t)r->len, why, sizeof why) != 0) {
        pcd_error("log: model %s: the snapshot published in Redis (%s) cannot be loaded (%s): "
                  "reading its stream after %llu-%llu instead", st->model, st->snapkey, why,
                  st->last.ms, st->last.seq);
        prepared_one(rdr);
        return;
    }
    pcd_model *old = pcd_registry_find(&srv->models, st->model, strlen(st->model));
    uint64_t gen = old ? old->generation : pcd_snapshot_latest_generation(srv->cfg.state_dir, st->model);
    if (old)
        pcd_registry_remove(&srv->models, old);
    pcd_model *e = pcd_registry_add_parts(&srv->models, st->model, &tmp);
    if (!e) {
        pcd_rl_reader_lost(rdr, "out of memory loading a published snapshot");
        return;
    }
    pcd_budget_recount(srv, e);
    e->generation = gen;
    e->changes = 1; /* written to the state dir by the next snapshot */
    e->log_ms = st->boot.ms;
    e->log_seq = st->boot.seq;
    e->log_pos = st->boot_pos;
    e->log_pos_known = st->boot_pos_known;
    forget_owed(rl, st);
    st->last = st->boot;
    st->pos = st->boot_pos;
    st->pos_known = st->boot_pos_known;
    if (st->sync && !pcd_sid_cmp(st->last, st->sync_id))
        st->pos = st->sync_pos, st->pos_known = true;
    if (pcd_sid_cmp(st->last, st->target) >= 0)
        st->caught_up = true;
    srv->logst.bootstrapped++;
    pcd_rl_note_lag(rl, st);
    pcd_after_reached(rl->after, st->model, st->last);
    pc_stats stats;
    pc_model_stats(e->model, &stats);
    pcd_info("log: model %s loaded from the snapshot published in Redis at entry %llu-%llu "
             "(%llu examples); reading its stream after it", st->model, st->boot.ms, st->boot.seq,
             (unsigned long long)stats.examples);
    prepared_one(rdr);
}
PREP_CALLBACK(on_prep_data, prep_data)

/* The published snapshot's ID, the stream's trim point: load it when this
 * daemon has nothing of the model yet (a fresh start), or when the stream
 * was trimmed past what it applied. */
static void prep_snap(stream *st, reader *rdr, const redisReply *r)
{
    pcd_redislog *rl = rdr->rl;
    uint64_t ms, seq;
    sid trimmed = {0, 0};
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 && pcd_reply_u64(r->element[0], &ms) &&
        pcd_reply_u64(r->element[1], &seq)) {
        sid p = {ms, seq};
        pcd_sid_parse(r->element[2], &trimmed);
        bool fresh = !st->followed &&
                     !pcd_registry_find(&rl->srv->models, st->model, strlen(st->model));
        bool hole = pcd_sid_cmp(st->last, trimmed) < 0;
        if (pcd_sid_cmp(p, st->last) > 0 && (fresh || hole)) {
            st->boot = p;
            st->boot_pos_known = pcd_reply_u64(r->element[3], &st->boot_pos);
            if (hole && !fresh)
                pcd_warn("log: model %s: its stream was trimmed to %llu-%llu, past entry "
                         "%llu-%llu applied here: loading the published snapshot", st->model,
                         trimmed.ms, trimmed.seq, st->last.ms, st->last.seq);
            if (redisAsyncCommand(rdr->rd, on_prep_data, st, "HGET %s data", st->snapkey) == REDIS_OK)
                rdr->preparing++;
        }
    }
    prepared_one(rdr);
}
PREP_CALLBACK(on_prep_snap, prep_snap)

/* Prepares the reader's streams not prepared since its connection, on that
 * connection (idle between XREADs).  True while replies are owed. */
static bool prepare(reader *rdr)
{
    pcd_redislog *rl = rdr->rl;
    for (size_t i = 0; i < rl->nstreams; i++) {
        stream *st = rl->streams[i];
        if (st->prepared || st->rdr != rdr)
            continue;
        st->prepared = true;
        if (redisAsyncCommand(rdr->rd, on_prep_info, st, "XINFO STREAM %s", st->key) == REDIS_OK)
            rdr->preparing++;
        /* A daemon that has not published yet holds the stream where it
         * starts, so that no trim passes what it is about to read. */
        if (st->model)
            redisAsyncCommand(rdr->rd, NULL, NULL, "HSETNX %s:held %s %llu-%llu", st->key,
                              rl->srv->logst.replica, st->last.ms, st->last.seq);
        if (st->model && redisAsyncCommand(rdr->rd, on_prep_snap, st, "HMGET %s ms seq trimmed pos",
                                           st->snapkey) == REDIS_OK)
            rdr->preparing++;
    }
    return rdr->preparing > 0;
}

/* XREAD BLOCK 0 over the reader's streams, each after its last entry. */
void pcd_rl_read_more(reader *rdr)
{
    pcd_redislog *rl = rdr->rl;
    if (!rdr->rd || !rdr->up || rdr->reading || rdr->preparing || prepare(rdr))
        return;
    size_t n = 0;
    for (size_t i = 0; i < rl->nstreams; i++)
        n += rl->streams[i]->rdr == rdr;
    if (!n)
        return;
    size_t argc = 6 + 2 * n;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *lens = malloc(argc * sizeof *lens);
    char *ids = malloc(n * 48);
    if (!argv || !lens || !ids) {
        free(argv);
        free(lens);
        free(ids);
        pcd_rl_reader_lost(rdr, "out of memory building XREAD");
        return;
    }
    static const char *const head[] = {"XREAD", "COUNT", READ_COUNT, "BLOCK", "0", "STREAMS"};
    for (size_t i = 0; i < 6; i++)
        argv[i] = head[i];
    for (size_t i = 0, k = 0; i < rl->nstreams; i++) {
        stream *st = rl->streams[i];
        if (st->rdr != rdr)
            continue;
        st->followed = true;
        argv[6 + k] = st->key;
        char *id = ids + 48 * k;
        snprintf(id, 48, "%llu-%llu", st->last.ms, st->last.seq);
        argv[6 + n + k++] = id;
    }
    for (size_t i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if (redisAsyncCommandArgv(rdr->rd, on_read, rdr, (int)argc, argv, lens) == REDIS_OK)
        rdr->reading = true;
    free(argv);
    free(lens);
    free(ids);
}

