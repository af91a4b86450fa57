/* lag.c - how far behind its stream this daemon is, per model (`info`,
 * the model's log_behind): the stream's entry count (XINFO STREAM's
 * entries-added, Redis >= 7) less the count of the entries applied.
 *
 * The applied count is known once an entry whose count Redis gave is
 * applied (a stream's pos and sync, internal.h; apply.c and follow.c keep
 * them); the stream's count is looked at once a second (rl->probe, set at
 * open), on the appending connection of the stream's node, which is never
 * blocked in an XREAD.  A look that finds the slot moved is ignored: the
 * reader finds out too and the map is read again.
 */
#include <string.h>

#include "daemon/redislog/internal.h"

/* The model's view of its stream's lag, for `info`. */
void pcd_rl_note_lag(pcd_redislog *rl, const stream *st)
{
    pcd_model *e = st->model ? pcd_registry_find(&rl->srv->models, st->model, strlen(st->model)) : NULL;
    if (!e)
        return;
    e->log_behind_known = st->pos_known && st->added_known;
    e->log_behind = e->log_behind_known && st->added > st->pos ? st->added - st->pos : 0;
}

/* XINFO STREAM's reply r (a preparation's, follow.c, or a look's): the
 * stream's entry count now, when Redis gives it, into st (added,
 * added_known), and its last entry into *last.  False without a count. */
bool pcd_rl_note_count(stream *st, const redisReply *r, sid *last)
{
    bool known;
    uint64_t added;
    pcd_reply_stream_info(r, last, &known, &added);
    st->added_known = known;
    st->added = added;
    return known;
}

/* XINFO STREAM's answer: the stream's count now; the count applied too,
 * when the stream is at its last entry (or once the entry named here is
 * applied: sync). */
static void on_probe(redisAsyncContext *ac, void *reply, void *privdata)
{
    stream *st = privdata;
    pcd_redislog *rl = st->rdr->rl;
    const redisReply *r = reply;
    if (!r || !st->rdr->nd || ac != st->rdr->nd->wr)
        return;
    if (r->type == REDIS_REPLY_ERROR && pcd_cluster_redirected(r->str))
        return; /* moved: the reader finds out and the map is read again */
    sid g;
    bool known = pcd_rl_note_count(st, r, &g);
    if (known && !st->pos_known && !pcd_sid_cmp(st->last, g))
        st->pos_known = true, st->pos = st->added;
    else if (known && !st->pos_known && !st->sync && pcd_sid_cmp(st->last, g) < 0)
        st->sync = true, st->sync_id = g, st->sync_pos = st->added;
    pcd_rl_note_lag(rl, st);
}

/* Every PROBE_S (redislog.c): a look at each model's stream prepared on a
 * node that is up. */
void pcd_rl_on_probe_timer(evutil_socket_t fd, short what, void *arg)
{
    pcd_redislog *rl = arg;
    (void)fd;
    (void)what;
    for (size_t i = 1; i < rl->nstreams; i++) {
        stream *st = rl->streams[i];
        if (st->prepared && st->rdr->nd && st->rdr->nd->up)
            redisAsyncCommand(st->rdr->nd->wr, on_probe, st, "XINFO STREAM %s", st->key);
    }
}

