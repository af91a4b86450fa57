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
    return best;
}

/* A model the running snapshot child is writing is not evicted: the
 * child's result would be applied to an entry that moved on since. */
static bool in_job(const pcd_model *e, const void *ud)
{
    const pcd_snapjob *j = ud;
    return j->pid && e->saving_job == j->serial;
}

int pcd_rest_load(pcd_server *srv, pcd_model *e, pcp_error *err)
{
    if (e->writing) /* its file is not there yet: the queue first */
        pcd_restio_drain(srv);
    if (!pcd_model_resting(e)) /* its write failed: it is back in memory */
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

/* Writes e if it changed since its last snapshot, then frees it.  With
 * `defer`, the write may be left to restio.c's thread; without, it is done
 * here, as room is needed now (max_memory: a model on its way to rest
 * still weighs until written). */
static bool evict(pcd_server *srv, pcd_model *e, bool defer)
{
    double t0 = pcd_monotonic();
    char why[300];
    if (defer && pcd_model_dirty(e) && pcd_restio_evict(srv, e)) {
        srv->rest.evict_seconds += pcd_monotonic() - t0;
        return true; /* counted once written (restio.c) */
    }
    if (pcd_model_dirty(e) && pcd_persist_write(srv, e, why, sizeof why) != 0) {
        srv->rest.evict_failed++;
        unsigned long long skipped;
        if (pcd_log_limit_ok(&srv->rest.fail_log, 1.0, &skipped))
            pcd_error("model %s stays in memory: its snapshot could not be written: %s", e->name,
                      why);
        /* as if just used: the next rounds evict others before it is tried again */
        e->used = ++srv->models.clock;
        return false;
    }
    pcd_registry_rest(&srv->models, e, NULL);
    pcd_budget_recount(srv, e);
    e->evictions++;
    srv->rest.evictions++;
    srv->rest.evict_seconds += pcd_monotonic() - t0;
    return true;
}

static bool over(const pcd_server *srv)
{
    const pcd_registry *r = &srv->models;
    if (r->nresident > srv->cfg.resident_max)
        return true;
    return srv->cfg.max_memory && pcd_budget_held(srv) >= srv->cfg.max_memory &&
           r->nresident > 1;
}

uint64_t pcd_rest_resting_bytes(const pcd_server *srv)
{
    return srv->models.resting_disk_bytes; /* kept by the registry: O(1) */
}

static bool evict_one(pcd_server *srv, const pcd_model *keep, bool defer)
{
    if (!srv->cfg.resident_max || srv->models.nresident <= 1)
        return false;
    pcd_model *v = pcd_rest_pick(srv->models.resident, srv->models.nresident, PCD_REST_SAMPLES,
                                 &srv->rest.rng, keep, in_job, &srv->snap);
    return v && evict(srv, v, defer);
}

bool pcd_rest_evict_one(pcd_server *srv, const pcd_model *keep)
{
    return evict_one(srv, keep, false);
}

void pcd_rest_trim(pcd_server *srv, const pcd_model *keep)
{
    /* one failed write a round at most: the next request goes on.  Past
     * resident_max a model may leave with its write queued; for max_memory
     * it is written here (its bytes weigh until then). */
    while (srv->cfg.resident_max && over(srv) &&
           evict_one(srv, keep, srv->models.nresident > srv->cfg.resident_max))
        ;
}
