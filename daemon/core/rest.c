/* rest.c - models at rest: which model leaves memory, writing it before it
 * goes, loading it back (see rest.h).
 *
 * The policy is Redis's approximate LRU, not an exact one: every request
 * that names a model stores the registry's counter in it (registry.h,
 * `used`: one increment and one store, no clock read and no list to relink
 * on the hot path), and eviction samples PCD_REST_SAMPLES resident models at
 * random and evicts the least recently used of them.  An exact LRU would
 * move an entry in a linked list on every request; an LFU needs decaying
 * counts; sampling five gets close to LRU at a constant cost per eviction
 * (Redis's measurements, "Using Redis as an LRU cache"). */
#include "daemon/core/rest.h"

#include <stdio.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/budget.h"
#include "daemon/core/persist.h"
#include "daemon/core/restio.h"

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

pcd_model *pcd_rest_pick(pcd_model *const *resident, size_t n, unsigned samples, uint64_t *rng,
                         const pcd_model *keep, bool (*skip)(const pcd_model *, const void *),
                         const void *ud)
{
    pcd_model *best = NULL;
    bool all = n <= samples;
    for (size_t i = 0; i < (all ? n : samples); i++) {
        pcd_model *e = resident[all ? i : xorshift(rng) % n];
        if (e == keep || (skip && skip(e, ud)))
            continue;
        if (!best || e->used < best->used)
            best = e;
    }
    if (best || all)
        return best;
    /* Every sample refused (a snapshot child saving most of the resident
     * models): the first that qualifies from a random place, rather than
     * none, which under max_memory refused the client's write. */
    size_t start = xorshift(rng) % n;
    for (size_t k = 0; k < n; k++) {
        pcd_model *e = resident[(start + k) % n];
        if (e != keep && !(skip && skip(e, ud)))
            return e;
    }
    return NULL;
}

/* A model the running snapshot child is writing is evicted only when no
 * other can be: its eviction writes it as a newer generation, and the
 * child's result for it is then not applied (persist.c). */
static bool in_job(const pcd_model *e, const void *ud)
{
    const pcd_snapjob *j = ud;
    return j->pid && e->saving_job == j->serial;
}

int pcd_rest_load(pcd_server *srv, pcd_model *e, pcp_error *err)
{
    if (e->writing && !pcd_restio_take_back(srv, e)) /* its file is not there yet: the queue first */
        pcd_restio_drain(srv);
    if (!pcd_model_resting(e)) /* its write taken back, or failed: it is back in memory */
        return 0;
    double t0 = pcd_monotonic();
    char why[300];
    if (pcd_persist_load(srv, e, why, sizeof why) != 0) {
        srv->rest.load_failed++;
        /* Only that generation is read: an older one would miss what the
         * journal holds since.  A start that reads every model whole falls
         * back to an older generation and replays the journal from it. */
        const char *hint = "; starting with limits.resident_max: 0 falls back to an older "
                           "generation";
        pcd_error("cannot load model %s from rest: %s%s", e->name, why, hint);
        err->code = PCP_E_INTERNAL;
        snprintf(err->msg, sizeof err->msg, "model '%s' rests on disk and cannot be loaded: %.100s%s",
                 e->name, why, hint);
        return -1;
    }
    pcd_restio_count_load(srv, e, pcd_monotonic() - t0);
    return 0;
}

pcd_model *pcd_rest_wake(pcd_server *srv, const char *name, size_t len, pcp_error *err)
{
    pcd_model *e = pcd_registry_find(&srv->models, name, len);
    if (!e)
        return NULL;
    if (pcd_model_resting(e) && pcd_rest_load(srv, e, err) != 0)
        return NULL;
    e->used = ++srv->models.clock;
    return e;
}

/* How a model that changed since its last snapshot leaves: with its write
 * queued for restio.c's thread (written here when the queue is full), only
 * if the queue takes it, or written here because room is needed now (a
 * model on its way to rest still weighs until written). */
enum leave { LEAVE_QUEUED, LEAVE_IF_QUEUED, LEAVE_NOW };

/* Writes e if it changed since its last snapshot (as `how` says), then
 * frees it; false when it stays. */
static bool evict(pcd_server *srv, pcd_model *e, enum leave how)
{
    double t0 = pcd_monotonic();
    char why[300];
    bool dirty = pcd_model_dirty(e);
    if (dirty && how != LEAVE_NOW) {
        if (pcd_restio_evict(srv, e)) {
            srv->rest.evict_seconds += pcd_monotonic() - t0;
            return true; /* counted once written (restio.c) */
        }
        if (how == LEAVE_IF_QUEUED)
            return false;
    }
    if (dirty) {
        srv->rest.written_in_loop++;
        if (pcd_persist_write(srv, e, why, sizeof why) != 0) {
            srv->rest.evict_failed++;
            unsigned long long skipped;
            if (pcd_log_limit_ok(&srv->rest.fail_log, 1.0, &skipped))
                pcd_error("model %s stays in memory: its snapshot could not be written: %s",
                          e->name, why);
            /* as if just used: the next rounds evict others before it is tried again */
            e->used = ++srv->models.clock;
            return false;
        }
    }
    pcd_registry_rest(&srv->models, e, NULL);
    pcd_budget_recount(srv, e);
    e->evictions++;
    srv->rest.evictions++;
    srv->rest.evict_seconds += pcd_monotonic() - t0;
    return true;
}

/* What is held is past max_memory (one model at least stays). */
static bool over_max(const pcd_server *srv)
{
    return srv->cfg.max_memory && pcd_budget_held(srv) >= srv->cfg.max_memory &&
           srv->models.nresident > 1;
}

/* What will be held once the queued writes are done is past max_memory's
 * low mark (PCD_REST_LOW_MARK), and the writer is not behind. */
static bool over_low_mark(const pcd_server *srv)
{
    size_t max = srv->cfg.max_memory;
    return max && srv->rest.writing < PCD_REST_LOW_MARK_QUEUE &&
           pcd_budget_held(srv) - srv->rest.writing_bytes >= max - max / PCD_REST_LOW_MARK &&
           srv->models.nresident > 1;
}

uint64_t pcd_rest_resting_bytes(const pcd_server *srv)
{
    return srv->models.resting_disk_bytes; /* kept by the registry: O(1) */
}

/* A resident model to put to rest, never keep: the sampled least recently
 * used of those the snapshot child is not writing, or with held_too of all
 * of them.  NULL when none (or resident_max is off, or one model is left). */
static pcd_model *pick(pcd_server *srv, const pcd_model *keep, bool held_too)
{
    if (!srv->cfg.resident_max || srv->models.nresident <= 1)
        return NULL;
    return pcd_rest_pick(srv->models.resident, srv->models.nresident, PCD_REST_SAMPLES,
                         &srv->rest.rng, keep, held_too ? NULL : in_job, &srv->snap);
}

static bool evict_one(pcd_server *srv, const pcd_model *keep, enum leave how)
{
    pcd_model *v = pick(srv, keep, false);
    return v && evict(srv, v, how);
}

bool pcd_rest_evict_one(pcd_server *srv, const pcd_model *keep)
{
    pcd_model *v = pick(srv, keep, false);
    if (v)
        return evict(srv, v, LEAVE_NOW);
    /* none but the snapshot child's: the queued writes first, whose models
     * weigh until written; then one of the child's all the same, written
     * anew (its file from the child stays, an older generation:
     * pcd_persist_child_exited leaves such an entry alone) */
    if (srv->rest.writing) {
        pcd_restio_drain(srv);
        return true;
    }
    v = pick(srv, keep, true);
    return v && evict(srv, v, LEAVE_NOW);
}

void pcd_rest_trim(pcd_server *srv, const pcd_model *keep)
{
    if (!srv->cfg.resident_max)
        return;
    /* One failed write a round at most: the next request goes on.  Past
     * resident_max a model leaves with its write queued.  Past max_memory's
     * low mark, models leave while the queue takes their writes, so that the
     * writer frees room ahead of need; only past max_memory itself is a
     * model written here, in the loop (about a millisecond: its fsync),
     * which under max_memory alone was every eviction (bench_zipf). */
    bool stuck = false; /* a write failed, or no model could be picked */
    while (!stuck && srv->models.nresident > srv->cfg.resident_max)
        stuck = !evict_one(srv, keep, LEAVE_QUEUED);
    while (!stuck && over_low_mark(srv) && evict_one(srv, keep, LEAVE_IF_QUEUED))
        ;
    while (!stuck && over_max(srv))
        stuck = !pcd_rest_evict_one(srv, keep);
}
