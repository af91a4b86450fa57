/* durability.c - the daemon's side of the journal: which requests it
 * records, replay at start through the same dispatch as live requests, the
 * 1 s timer (everysec syncs, retries after a failure, pruning), and closing.
 *
 * Positions: every model remembers the LSN of the last record applied to it
 * (pcd_model.lsn); a snapshot stores that LSN, and replay skips a record for
 * a model whose snapshot already includes it.  Records for a model that is
 * not there (dropped since, or never snapshotted) are applied in order, so a
 * drop and a re-create come back as they happened.  Segments are deleted once
 * every model's newest snapshot has passed them: the snapshots are the
 * journal's rewrite.
 */
#include "daemon/exec/durability.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/exec/replay.h"
#include "daemon/exec/request.h"
#include "daemon/journal/journal.h"

/* Skips a record for a model whose snapshot already includes it. */
static bool included(pcd_server *srv, const msgpack_object *obj, void *ud)
{
    uint64_t lsn = *(const uint64_t *)ud;
    pcp_message m = {0};
    pcp_error err;
    if (pcp_message_parse(obj, &m, &err) != PCP_OK || m.nparams < 1 ||
        m.params[0].type != MSGPACK_OBJECT_STR)
        return false;
    pcd_model *e = pcd_registry_find(&srv->models, m.params[0].via.str.ptr, m.params[0].via.str.size);
    return e && e->lsn >= lsn;
}

/* One record, through the same dispatch as a live request (replay.c). */
static int apply(void *ud, uint64_t lsn, const uint8_t *msg, size_t len)
{
    pcd_server *srv = ud;
    srv->replay_lsn = lsn;
    srv->applying = true;
    int rc = pcd_replay(srv, msg, len, NULL, included, &lsn);
    srv->applying = false;
    srv->replay_lsn = 0;
    return rc < 0 ? -1 : 0;
}

/* dispatch.c's hook after a WRITES method succeeded. */
static void on_written(pcd_server *srv, const pcd_req *r)
{
    uint64_t lsn = srv->replay_lsn;
    if (!lsn) {
        lsn = pcd_journal_append_parts(srv->journal, r->raw, r->len, r->more, r->more_len);
        if (!lsn) {
            pcd_error("journal: out of memory appending a %s: it is applied but not journaled",
                      r->method->name);
            return;
        }
    }
    if (r->model)
        r->model->lsn = lsn;
}

/* The position of the write being run (position.h): the record run()
 * appends right after its handler, or the one being replayed. */
static bool position(const pcd_server *srv, pcp_position *out)
{
    *out = (pcp_position){.seq = srv->replay_lsn ? srv->replay_lsn
                                                 : pcd_journal_next_lsn(srv->journal)};
    return true;
}

uint64_t pcd_durability_needed_lsn(const pcd_server *srv)
{
    uint64_t needed = srv->journal ? pcd_journal_next_lsn(srv->journal) : 0;
    for (const pcd_model *e = pcd_registry_iter(&srv->models, NULL); e;
         e = pcd_registry_iter(&srv->models, e)) {
        /* back to the oldest generation kept, which a restart may fall back to */
        uint64_t oldest = e->nkept ? e->kept_lsn[0] : 0;
        if (e->lsn > oldest && oldest + 1 < needed)
            needed = oldest + 1;
    }
    return needed;
}

int pcd_durability_open(pcd_server *srv, pcd_journal_durable_fn durable, char *err, size_t errlen)
{
    if (!srv->cfg.journal_enabled)
        return 0;
    char dir[4200];
    if (srv->cfg.journal_dir[0] == '/')
        snprintf(dir, sizeof dir, "%s", srv->cfg.journal_dir);
    else
        snprintf(dir, sizeof dir, "%s/%s", srv->cfg.state_dir, srv->cfg.journal_dir);
    /* Appends continue above every snapshot's position, even when the
     * journal lost its tail (everysec and a power loss). */
    uint64_t min_next = 1;
    for (const pcd_model *e = pcd_registry_iter(&srv->models, NULL); e;
         e = pcd_registry_iter(&srv->models, e))
        if (e->lsn >= min_next)
            min_next = e->lsn + 1;
    size_t mode = 0;
    while (pcd_fsync_names[mode] && strcmp(pcd_fsync_names[mode], srv->cfg.journal_fsync))
        mode++;
    pcd_journal_options o = {
        .dir = dir,
        .fsync = (pcd_fsync_mode)mode,
        .segment_bytes = srv->cfg.journal_segment_bytes,
        .truncate_corrupt = !strcmp(srv->cfg.journal_on_corrupt, "truncate"),
        .min_next_lsn = min_next,
        .apply = apply,
        .durable = durable,
        .ud = srv,
    };
    srv->on_written = on_written; /* replay sets the models' positions too */
    srv->write_position = position;
    if (pcd_journal_open(&o, srv->base, &srv->journal, err, errlen) != 0) {
        srv->on_written = NULL;
        srv->write_position = NULL;
        return -1;
    }
    pcd_info("journal %s: fsync %s, next LSN %llu", dir, srv->cfg.journal_fsync,
             (unsigned long long)pcd_journal_next_lsn(srv->journal));
    return 0;
}

/* Seconds between two walks of every model for the pruning position: one
 * a second up to 20,000 models, then one per 20,000 models a second, at
 * most 30.  The walk holds the loop (41 ms for 200,000 models on the
 * 2-core VM, mostly cache misses); pruning later only keeps the journal a
 * little longer, never loses a record. */
static double prune_interval(const pcd_server *srv)
{
    double s = (double)srv->models.count / 20000;
    return s < 1 ? 1 : s > 30 ? 30 : s;
}

void pcd_durability_tick(pcd_server *srv)
{
    if (!srv->journal)
        return;
    if (!pcd_journal_writable(srv->journal, NULL, 0))
        pcd_journal_retry(srv->journal);
    pcd_journal_tick(srv->journal);
    double now = pcd_monotonic();
    if (now - srv->journal_pruned_at < prune_interval(srv) - 0.5) /* ticks come about 1 s apart */
        return;
    srv->journal_pruned_at = now;
    pcd_journal_prune(srv->journal, pcd_durability_needed_lsn(srv));
}

int pcd_durability_close(pcd_server *srv)
{
    if (!srv->journal)
        return 0;
    pcd_journal_prune(srv->journal, pcd_durability_needed_lsn(srv));
    int rc = pcd_journal_close(srv->journal);
    srv->journal = NULL;
    srv->on_written = NULL;
    srv->write_position = NULL;
    return rc;
}
