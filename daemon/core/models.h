/* models.h - the model life cycle that touches the registry and the state
 * directory together: create (config, SIGHUP, `create`, auto-create) and drop. */
#ifndef PCD_MODELS_H
#define PCD_MODELS_H

#include "daemon/core/server.h"

/* Creates a model from a definition (config or template); logs.  NULL with
 * err set (PCP_E_SPEC, PCP_E_LIMIT or PCP_E_INTERNAL) when it cannot. */
pcd_model *pcd_model_create(pcd_server *srv, const char *name, const pc_model_config *cfg,
                            pcp_error *err);
/* The same for a client's write (`create`, auto-create), with the rest of
 * its spec (pcd_model_extras: join settings, challengers, experts): within
 * limits.max_models and limits.max_memory (budget.h), else NULL with
 * PCP_E_LIMIT (or the extras' code) and nothing changed. */
pcd_model *pcd_model_admit(pcd_server *srv, const char *name, const pc_model_config *cfg,
                           const pcp_join_config *join, const pcp_challenger *ch, size_t nch,
                           const pcp_experts_config *experts, pcp_error *err);
/* Installs all that `from` holds (model, names, challengers, pending
 * events: taken over, freed on failure)
 * under name: a new model within the bounds, or, with replace, in place of
 * the one of that name (which keeps its generations and journal position).
 * NULL with err (PCP_E_EXISTS, PCP_E_LIMIT, PCP_E_INTERNAL) when refused. */
pcd_model *pcd_model_install(pcd_server *srv, const char *name, pcd_model *from, bool replace,
                             pcp_error *err);
/* The model's store of events waiting for their outcome (label later),
 * created with the default join.* settings when it has none; NULL when out
 * of memory. */
struct pcd_pending *pcd_model_pending(pcd_model *e);
/* Sets how model e joins events to outcomes (the spec's join.* keys); a
 * model that joins as the defaults say gets no store until it needs one.
 * false when out of memory. */
bool pcd_model_join(pcd_model *e, const pcp_join_config *j);
/* The rest of a spec, beyond pc_model_config: the join settings, the
 * challengers and how predict combines them (experts; without
 * experts.seed, the seed of e's name, pcd_model_name_seed).  PCP_OK, or a
 * code with err set (nothing kept). */
int pcd_model_extras(pcd_model *e, const pcp_join_config *j, const pcp_challenger *ch, size_t n,
                     const pcp_experts_config *experts, pcp_error *err);
/* After e's champion learned x with label y (outcome o), one label: what
 * follows every label, in one place.  Its label hint is counted (hints.h),
 * its challengers learn it (said: the answer, the experts' or the
 * champion's; may be NULL), and promote.auto may promote one. */
void pcd_model_learned(pcd_server *srv, pcd_model *e, const pc_svec *x, const pc_label *y,
                       const pc_outcome *o, pc_outcome *said);
/* After model e learned labels: promote.auto's check (challengers.h), logged
 * and counted when it promotes. */
void pcd_model_auto_promote(pcd_server *srv, pcd_model *e);
/* Drops a model and its snapshot files: how many were removed, or -1 (err). */
int pcd_model_drop(pcd_server *srv, pcd_model *e, char *err, size_t errlen);

#endif
