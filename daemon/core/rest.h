/* rest.h - models at rest (issue 30, first slice): with limits.resident_max
 * on, the least recently used models are written to their snapshot file and
 * freed, and loaded again by the next request that names them.
 *
 * Their registry entry stays (registry.h, pcd_model_resting): the name, the
 * generations and the journal position, so `models`, max_models, the
 * journal's pruning and replay see every model, resident or not.  Eviction
 * runs in the loop; a client's request loads its model off the loop
 * (restio.h), everything else (the journal's replay, a second model a
 * request names, a sliced scan) loads in the loop, here
 * (docs/operations.md, "Models at rest"). */
#ifndef PCD_REST_H
#define PCD_REST_H

#include "daemon/core/server.h"

/* Redis's maxmemory-samples default: the LRU looks at this many resident
 * models picked at random and evicts the least recently used of them. */
#define PCD_REST_SAMPLES 5
/* With max_memory, models start leaving (their writes queued off the loop)
 * once what is held, less what is already on its way to rest, passes
 * max_memory less 1/PCD_REST_LOW_MARK of it: as the kernel's low
 * watermark starts reclaim before allocations must wait for it. */
#define PCD_REST_LOW_MARK 8
/* ... while fewer than this many writes are queued: with the queue's 512
 * (restio.c) a burst of creates left half a second of fsyncs ahead of a load
 * waiting on a pending write (bench_zipf: p99 224 to 446 ms, before such a
 * write could be taken back; since, 32 and 512 measured alike, and 32 holds
 * less memory in flight).  Past it memory climbs to max_memory, whose
 * writes in the loop hold the clients back until the writer is through. */
#define PCD_REST_LOW_MARK_QUEUE 32

/* The model named name[0..len) made resident: loaded from its snapshot when
 * it rests (possibly passing resident_max by one until pcd_rest_trim) and
 * marked used now.  Returns the entry, NULL when there is none (not an
 * error: the caller says "unknown model" or creates it), or NULL with
 * err->code PCP_E_INTERNAL when its load failed (it stays resting). */
pcd_model *pcd_rest_wake(pcd_server *srv, const char *name, size_t len, pcp_error *err);
/* Loads resting e; 0, or -1 with err (PCP_E_INTERNAL). */
int pcd_rest_load(pcd_server *srv, pcd_model *e, pcp_error *err);
/* Evicts sampled least recently used models, never `keep` (may be NULL),
 * until at most limits.resident_max are resident and, with limits.max_memory,
 * what is held is under its low mark (PCD_REST_LOW_MARK: those writes only
 * while restio.c's queue takes them) and under max_memory itself (written
 * here if need be; at least one model stays; budget.c makes the room of a
 * new model or class through srv->evict_one).  A model whose snapshot
 * write fails stays resident (logged, counted) and ends the round. */
void pcd_rest_trim(pcd_server *srv, const pcd_model *keep);
/* The bytes of the resting models' newest snapshot files (their older
 * generations, snapshot.keep, come on top): O(models), for stats and
 * /metrics. */
uint64_t pcd_rest_resting_bytes(const pcd_server *srv);
/* One round of that at max_memory, for pcd_rest_trim and budget.c
 * (srv->evict_one): a model written here and freed; when every other is
 * the snapshot child's, the queued writes waited for, or else one of the
 * child's models.  false when resident_max is off, one model is left, or
 * the pick could not be written. */
bool pcd_rest_evict_one(pcd_server *srv, const pcd_model *keep);
/* The sampling itself (a pure function, tested): among the n entries of
 * `resident`, the least recently used of `samples` picked with *rng
 * (xorshift64, advanced), skipping `keep` and those `skip` refuses;
 * all of them when n <= samples.  NULL when none qualifies. */
pcd_model *pcd_rest_pick(pcd_model *const *resident, size_t n, unsigned samples, uint64_t *rng,
                         const pcd_model *keep, bool (*skip)(const pcd_model *, const void *),
                         const void *ud);

#endif
