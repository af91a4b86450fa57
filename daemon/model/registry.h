/* registry.h - the daemon's named models.
 *
 * A model entry owns its pc_model, the feature names seen, and the counters
 * the snapshot logic uses to know whether it changed since it was last
 * written.  Lookup by name is a hash table (names are validated before they
 * get here: they become file names). */
#ifndef PCD_REGISTRY_H
#define PCD_REGISTRY_H

#include <stdint.h>

#include "daemon/model/names.h"
#include "lib/perceptron.h"

#define PCD_KEPT_MAX 100 /* snapshot.keep's ceiling */

typedef struct pcd_model {
    char *name;              /* owned */
    pc_model *model;         /* owned */
    pcd_names names;         /* feature names by index, owned */
    uint64_t changes;        /* bumped on every learning step, reset or creation */
    uint64_t saved_changes;  /* `changes` as of the last snapshot written */
    uint64_t saving_changes; /* `changes` captured by the snapshot being written */
    uint64_t generation;     /* last generation written (or restored) */
    uint64_t disk_oldest;    /* no generation below it is on disk (0: not known), so
                                a write prunes by number, not by listing the
                                directory (snapshot.h) */
    uint64_t disk_bytes;     /* the size of its newest snapshot file (0: not known) */
    bool writing;            /* resting, its snapshot still being written (core/restio.h) */
    int64_t saved_at;        /* unix time of that snapshot, 0 = never */
    uint64_t lsn;            /* the last journal record applied to it (0: none) */
    uint64_t saving_lsn;     /* `lsn` captured by the snapshot being written */
    uint64_t saved_lsn;      /* `lsn` in the newest snapshot on disk: replay starts after it */
    /* The journal positions of the snapshot generations kept on disk, oldest
     * first: the journal keeps records back to the oldest, so that a fall
     * back to an older generation still replays to the present.  Allocated
     * (snapshot.keep entries, 3 by default), not a fixed array of
     * PCD_KEPT_MAX: the entry is all a model at rest keeps in memory. */
    uint64_t *kept_lsn;
    unsigned nkept, kept_cap;
    /* The shared log's entry ID (ms-seq) of the last entry applied to it
     * (0-0: none); a snapshot stores it and reading resumes after it. */
    uint64_t log_ms, log_seq;
    /* With the shared log (redislog.h): how many entries of the stream lie
     * up to log_ms-log_seq (its position, for a published snapshot), and how
     * many of the stream's entries this daemon had not applied at the last
     * look (replica lag); valid only when the flags say so. */
    uint64_t log_pos, log_behind;
    bool log_pos_known, log_behind_known;
    uint64_t id;             /* this incarnation of the name: unique in the process */
    size_t counted;          /* its bytes as budget.c last counted them (in counted_bytes) */
    struct pcd_challengers *challengers; /* rules learning beside it (challengers.h), owned;
                                            NULL: none */
    struct pcd_pending *pending; /* events waiting for their outcome and how they join
                                    (pending.h), owned; NULL until a join.* key or the
                                    first predict with an event needs it */
    /* The last `weights` answer (O(dim) to find): reused while the model has
     * not changed, so a flood of `weights` costs O(top_k) a request. */
    struct pcd_top {
        uint64_t changes;    /* e->changes it was computed at */
        size_t cls, k, n;
        uint32_t *idx;       /* owned, k entries */
        double *w;
    } top;
    /* Models at rest (core/rest.c): the registry clock's value at the last
     * request that named it (a counter, not a clock read: the approximate
     * LRU compares these), its place in the registry's resident array, the
     * snapshot job that captured it (persist.c: not evicted while that job
     * runs), and how often it was loaded from rest and evicted. */
    uint64_t used;
    uint64_t saving_job;
    size_t slot;
    uint32_t loads, evictions;
    struct pcd_model *next;  /* hash chain */
} pcd_model;

/* A model at rest: its learning state is freed, its snapshot file holds it;
 * the entry keeps its name, generations and journal and log positions. */
static inline bool pcd_model_resting(const pcd_model *e)
{
    return e->model == NULL;
}

typedef struct pcd_registry {
    pcd_model **buckets;
    size_t nbuckets, count;
    uint64_t last_id;        /* ids only grow: a re-created model never reuses one */
    size_t counted_bytes;    /* the sum of the models' `counted` (budget.c) */
    /* The models in memory, in no order (each entry's `slot`): the
     * approximate LRU samples it at random (core/rest.c). */
    pcd_model **resident;
    size_t nresident, resident_cap;
    uint64_t clock;          /* bumped by every request naming a model (`used`) */
    /* The state directory may hold files of a name no entry has (a drop
     * whose files could not all be removed): a new model then lists the
     * directory for the generations to number after (core/models.c). */
    bool strays;
    /* Kept as entries come and go, so that `stats` and /metrics cost
     * O(resident models), not O(models): the names' bytes (with their NULs)
     * of every entry, and the newest snapshot file sizes (disk_bytes) of the
     * resting ones (pcd_registry_set_disk_bytes). */
    size_t name_bytes;
    uint64_t resting_disk_bytes;
} pcd_registry;

/* The seed of a model's draws left unseeded (experts.seed, hints.seed):
 * XXH3-64 of its name, so two models of one spec draw apart, and a model
 * created again under its name (a replay, a replica, a drop and create)
 * draws as before. */
uint64_t pcd_model_name_seed(const char *name);

int pcd_registry_init(pcd_registry *r);
void pcd_registry_free(pcd_registry *r);
pcd_model *pcd_registry_find(const pcd_registry *r, const char *name, size_t len);
/* Adds a model under name, taking ownership of m (freed on failure too).
 * Returns the entry, NULL when out of memory. */
pcd_model *pcd_registry_add(pcd_registry *r, const char *name, pc_model *m);
/* The same for a decoded model (pcd_model_deserialize, a snapshot read):
 * the new entry takes all its parts (model, names, pending events,
 * challengers) and `from` is left empty, on failure too (parts freed). */
pcd_model *pcd_registry_add_parts(pcd_registry *r, const char *name, pcd_model *from);
/* An entry for a model at rest from the start (persist.c): no parts, not
 * resident; NULL when out of memory. */
pcd_model *pcd_registry_add_resting(pcd_registry *r, const char *name);
void pcd_registry_remove(pcd_registry *r, pcd_model *e);
/* Puts e to rest: its cached answers freed, out of the resident array, and
 * its parts freed, or handed to `to` (may be NULL) for a thread that writes
 * them; the entry stays (its snapshot file must hold its state, or be
 * written from those parts before it is read). */
void pcd_registry_rest(pcd_registry *r, pcd_model *e, pcd_model *to);
/* Wakes e (resting) with the parts of a decoded model (`from` left empty);
 * -1 when out of memory (from's parts freed, e still resting). */
int pcd_registry_wake(pcd_registry *r, pcd_model *e, pcd_model *from);
/* Frees the parts of a decoded model that no entry took. */
void pcd_model_parts_free(pcd_model *from);
/* e's parts are replaced by from's (e's freed); `from` is left without
 * parts, its other fields as they were.  e's name, generations and journal
 * position go on. */
void pcd_model_take_parts(pcd_model *e, pcd_model *from);
/* All entries sorted by name into a new array (caller frees the array only):
 * for answers that list models.  O(n log n): a loop that runs every second
 * or so uses pcd_registry_iter or pcd_registry_resident_list instead (a
 * daemon may hold hundreds of thousands of models, most at rest). */
pcd_model **pcd_registry_list(const pcd_registry *r, size_t *n);
/* Every entry in no order, while none is added or removed:
 *   for (pcd_model *e = pcd_registry_iter(r, NULL); e; e = pcd_registry_iter(r, e)) */
pcd_model *pcd_registry_iter(const pcd_registry *r, const pcd_model *e);
/* The resident entries in no order, copied into a new array (caller frees
 * the array only): stable while models are evicted or loaded meanwhile. */
pcd_model **pcd_registry_resident_list(const pcd_registry *r, size_t *n);

/* e's newest snapshot file is `bytes` long (e->disk_bytes: set it here
 * only, so that the resting models' sum follows). */
void pcd_registry_set_disk_bytes(pcd_registry *r, pcd_model *e, uint64_t bytes);

/* A snapshot including journal position lsn is on disk; keep generations. */
void pcd_model_saved(pcd_model *e, uint64_t lsn, unsigned keep);

static inline bool pcd_model_dirty(const pcd_model *e)
{
    return e->changes != e->saved_changes;
}

/* XXH3-64 of the model's pc_model_encode bytes, so that replicas can be
 * compared (0 when out of memory). */
uint64_t pcd_model_digest(const pcd_model *e);
uint64_t pcd_digest(const pc_model *m); /* the same of any pc_model (a challenger) */

/* The snapshot payload of an entry: u64 model length, the pc_model_encode
 * bytes, then the feature names (names.h).  Caller frees *buf. */
int pcd_model_serialize(const pcd_model *e, uint8_t **buf, size_t *len, char *err, size_t errlen);
/* The reverse: a new pc_model and names into e (e->name is set by caller). */
int pcd_model_deserialize(pcd_model *e, const uint8_t *buf, size_t len, char *err, size_t errlen);

#endif
