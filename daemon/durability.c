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
#include "daemon/durability.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/dispatch.h"
#include "daemon/journal.h"
#include "daemon/log.h"

static int discard(void *data, const char *buf, size_t len)
{
    (void)data;
    (void)buf;
    (void)len;
    return 0;
}

/* The model a journaled message names (params[0]), or NULL. */
static pcd_model *named_model(pcd_server *srv, const msgpack_object *obj)
{
    pcp_message m = {0};
    pcp_error err;
    if (pcp_message_parse(obj, &m, &err) != PCP_OK || m.nparams < 1 ||
        m.params[0].type != MSGPACK_OBJECT_STR)
        return NULL;
    return pcd_registry_find(&srv->models, m.params[0].via.str.ptr, m.params[0].via.str.size);
}

/* One record: framed and bounded by proto's scanner, decoded, then run as a
 * notification would be (its answer discarded). */
static int apply(void *ud, uint64_t lsn, const uint8_t *msg, size_t len)
{
    pcd_server *srv = ud;
    pcp_scan_state scan = {0};
    pcp_error err;
    size_t framed;
    pcp_limits lim = srv->limits;
    lim.max_message = len; /* a record was accepted under the limits of its day */
    if (pcp_scan(&scan, msg, len, &lim, &framed, &err) != 1 || framed != len)
        return -1;
    msgpack_object obj;
    size_t pos = 0;
    int rc = -1;
    if (msgpack_unpack((const char *)msg, len, &pos, &srv->zone, &obj) == MSGPACK_UNPACK_SUCCESS) {
        pcd_model *e = named_model(srv, &obj);
        if (e && e->lsn >= lsn) {
            rc = 0; /* its snapshot includes this record */
        } else {
            uint64_t errors = srv->counters.errors;
            msgpack_packer null_pk;
            msgpack_packer_init(&null_pk, NULL, discard);
            srv->replay_lsn = lsn;
            pcd_dispatch(srv, NULL, msg, len, &obj, &null_pk);
            srv->replay_lsn = 0;
            rc = srv->counters.errors == errors ? 0 : -1;
        }
    }
    msgpack_zone_clear(&srv->zone);
    return rc;
}

/* dispatch.c's hook after a WRITES method succeeded. */
static void on_written(pcd_server *srv, const pcd_req *r)
{
    uint64_t lsn = srv->replay_lsn;
    if (!lsn) {
        lsn = pcd_journal_append(srv->journal, r->raw, r->len);
        if (!lsn) {
            pcd_error("journal: out of memory appending a %s: it is applied but not journaled",
                      r->method->name);
            return;
        }
    }
    if (r->model)
        r->model->lsn = lsn;
}

uint64_t pcd_durability_needed_lsn(const pcd_server *srv)
{
    uint64_t needed = srv->journal ? pcd_journal_next_lsn(srv->journal) : 0;
    size_t n;
    pcd_model **all = pcd_registry_list(&srv->models, &n);
    if (!all)
        return 0; /* out of memory: prune nothing */
    for (size_t i = 0; i < n; i++) {
        /* back to the oldest generation kept, which a restart may fall back to */
        uint64_t oldest = all[i]->nkept ? all[i]->kept_lsn[0] : 0;
        if (all[i]->lsn > oldest && oldest + 1 < needed)
            needed = oldest + 1;
    }
    free(all);
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
    size_t n;
    pcd_model **all = pcd_registry_list(&srv->models, &n);
    for (size_t i = 0; all && i < n; i++)
        if (all[i]->lsn >= min_next)
            min_next = all[i]->lsn + 1;
    free(all);
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
    if (pcd_journal_open(&o, srv->base, &srv->journal, err, errlen) != 0) {
        srv->on_written = NULL;
        return -1;
    }
    pcd_info("journal %s: fsync %s, next LSN %llu", dir, srv->cfg.journal_fsync,
             (unsigned long long)pcd_journal_next_lsn(srv->journal));
    return 0;
}

void pcd_durability_tick(pcd_server *srv)
{
    if (!srv->journal)
        return;
    if (!pcd_journal_writable(srv->journal, NULL, 0))
        pcd_journal_retry(srv->journal);
    pcd_journal_tick(srv->journal);
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
    return rc;
}
