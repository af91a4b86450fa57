/* budget.h - max_models and max_memory: what the models and the connections'
 * buffers hold, and whether a write may add to it (issue 14).
 *
 * Counted, not measured: a model is what pc_model_bytes says its learners
 * (and its challengers') allocated plus its feature names and pending events; the buffers are what conn.c keeps in
 * srv->loop.input_bytes and srv->loop.output_bytes.  Nothing is refused while a write
 * accepted before is applied again (srv->applying). */
#ifndef PCD_BUDGET_H
#define PCD_BUDGET_H

#include "daemon/core/server.h"

size_t pcd_model_bytes(const pcd_model *e);
/* What its learning holds: the model, its feature names, its challengers and
 * pending events (also of a decoded model no entry holds yet). */
size_t pcd_model_parts_bytes(const pcd_model *e);
/* Counts e's bytes again into srv->models.counted_bytes: after every write
 * to it (dispatch.c), when it is made or loaded, and when the expiry sweep
 * prunes its tombstones.  The check of a write then costs O(1), not
 * O(models). */
void pcd_budget_recount(pcd_server *srv, pcd_model *e);
/* PCP_OK when a client's write may run: the models (as counted) and the
 * connections' buffers hold less than max_memory.  A write admitted below
 * it may pass it by what one request adds (docs/operations.md, "Memory").
 * Writes replayed or applied from a log (no client) are never refused. */
int pcd_budget_write(pcd_server *srv, pcp_error *err);
/* What max_memory weighs: the connections' buffers, and those plus the
 * models' counted bytes and the bytes of models on their way to rest
 * (core/restio.c's queued writes): the one sum budget.c, rest.c and conn.c
 * compare. */
static inline size_t pcd_budget_buffers(const pcd_server *srv)
{
    return srv->loop.input_bytes + srv->loop.output_bytes;
}
static inline size_t pcd_budget_held(const pcd_server *srv)
{
    return srv->models.counted_bytes + srv->rest.writing_bytes + pcd_budget_buffers(srv);
}

/* Where the models' memory is, for `stats`: the resident models' parts
 * (pcd_model_parts_bytes, summed), O(resident models), and `all`, every
 * model counted afresh (pcd_model_bytes, summed), which stats shows beside
 * the running total (counted_bytes) so that a drift between the two is
 * seen. */
typedef struct pcd_memory_parts {
    size_t weights;     /* the models' learners, scalers and classes */
    size_t names;       /* feature names kept for `weights` */
    size_t challengers; /* the challengers' learners */
    size_t pending;     /* label-later events waiting */
    size_t all;         /* these, and every entry's struct and name, resting ones too */
} pcd_memory_parts;
pcd_memory_parts pcd_memory_parts_of(const pcd_server *srv);
/* The process's resident set (/proc/self/statm), 0 if unknown. */
size_t pcd_rss_bytes(void);

/* PCP_OK when one more model may exist, else PCP_E_LIMIT in err. */
int pcd_budget_models(pcd_server *srv, pcp_error *err);
/* PCP_OK when `more` bytes for `what` (a model, a class) fit in max_memory
 * beside everything held now, else PCP_E_LIMIT in err naming the figures.
 * `fresh`: a model just made whose bytes are `more` (not counted twice).
 * With models at rest (srv->evict_one), least recently used models are put
 * to rest to make the room first, never `keep` (the model being changed). */
int pcd_budget_memory(pcd_server *srv, size_t more, const char *what, const pcd_model *fresh,
                      const pcd_model *keep, pcp_error *err);

/* PCP_OK when the classes the labels ys[0..n) would add to e (an open
 * multiclass model) fit in max_memory, else PCP_E_LIMIT. */
int pcd_budget_classes(pcd_server *srv, const pcd_model *e, const pc_label *ys, size_t n,
                       pcp_error *err);

#endif
