/* models.c - create and drop models: the registry and the state directory
 * change together (see models.h). */
#include "daemon/core/models.h"

#include <stdio.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/core/budget.h"
#include "daemon/model/challengers.h"
#include "daemon/model/experts.h"
#include "daemon/model/hints.h"
#include "daemon/model/pending.h"
#include "daemon/store/snapshot.h"

/* A model new under its name: worth a snapshot even before it learns (its
 * config), numbered after whatever the disk holds of that name. */
static void born(pcd_server *srv, pcd_model *e)
{
    pcd_budget_recount(srv, e);
    e->changes = 1;
    /* The disk holds no file of a name without an entry (start enters every
     * name it finds; a drop removes its files) unless a removal failed:
     * only then is the directory listed, whose size grows with the models. */
    e->generation = srv->models.strays
                        ? pcd_snapshot_latest_generation(srv->cfg.state_dir, e->name)
                        : 0;
    /* A running child may still be writing a dropped model of this name: the
     * new one numbers its generations above that file, whatever the disk
     * shows now, so that the old model can never outrank it. */
    const pcd_snapjob *j = &srv->snap;
    for (size_t i = 0; j->pid && i < j->n; i++)
        if (strcmp(j->names[i], e->name) == 0 && j->generations[i] > e->generation)
            e->generation = j->generations[i];
    /* the first write prunes by number from here (0: it lists) */
    e->disk_oldest = srv->models.strays ? 0 : e->generation + 1;
}

pcd_model *pcd_model_create(pcd_server *srv, const char *name, const pc_model_config *cfg,
                            pcp_error *err)
{
    pc_model *m;
    pc_error perr;
    pc_status st = pc_model_new(cfg, &m, &perr);
    if (st != PC_OK) {
        err->code = pcp_status_code(st, PCP_E_SPEC);
        snprintf(err->msg, sizeof err->msg, "%s", perr.msg);
        return NULL;
    }
    pcd_model *e = pcd_registry_add(&srv->models, name, m);
    if (!e) {
        err->code = PCP_E_INTERNAL;
        snprintf(err->msg, sizeof err->msg, "out of memory creating model %s", name);
        return NULL;
    }
    born(srv, e);
    pcd_info("created model %s (%s, dim %u%s%s)", name, pc_rule_name(cfg->rule), cfg->dim,
             cfg->multiclass ? ", multiclass" : "", cfg->averaged ? ", averaged" : "");
    return e;
}

pcd_model *pcd_model_admit(pcd_server *srv, const char *name, const pc_model_config *cfg,
                           const pcp_join_config *join, const pcp_challenger *ch, size_t nch,
                           const pcp_experts_config *experts, pcp_error *err)
{
    if (pcd_budget_models(srv, err) != PCP_OK)
        return NULL;
    /* Made, then weighed: its weights are calloc'd, so until it learns it
     * costs address space, not memory, and what it would hold is exact. */
    pcd_model *e = pcd_model_create(srv, name, cfg, err);
    if (!e)
        return NULL;
    char what[PCP_MODEL_NAME_MAX + 16];
    snprintf(what, sizeof what, "model '%s'", name);
    if (pcd_model_extras(e, join, ch, nch, experts, err) != PCP_OK || /* its challengers weigh too */
        pcd_budget_memory(srv, pcd_model_bytes(e), what, e, e, err) != PCP_OK) {
        pcd_registry_remove(&srv->models, e);
        pcd_warn("refused model %s: %s", name, err->msg);
        return NULL;
    }
    return e;
}

pcd_model *pcd_model_install(pcd_server *srv, const char *name, pcd_model *from, bool replace,
                             pcp_error *err)
{
    pcd_model *e = pcd_registry_find(&srv->models, name, strlen(name));
    size_t bytes = pcd_model_parts_bytes(from);
    if (e && !replace) {
        pcp_error_set(err, PCP_E_EXISTS, "model '%s' exists (drop it first, or replace it)", name);
        goto refuse;
    }
    if (!e && pcd_budget_models(srv, err) != PCP_OK)
        goto refuse;
    char what[PCP_MODEL_NAME_MAX + 16];
    snprintf(what, sizeof what, "model '%s'", name);
    size_t old = e ? pcd_model_parts_bytes(e) : 0;
    if (bytes > old && pcd_budget_memory(srv, bytes - old, what, NULL, e, err) != PCP_OK)
        goto refuse;
    if (e) { /* in place: its name, generations and journal position go on */
        pcd_model_take_parts(e, from);
        e->changes++;
        return e;
    }
    if (!(e = pcd_registry_add_parts(&srv->models, name, from))) {
        pcp_error_set(err, PCP_E_INTERNAL, "out of memory adding model %s", name);
        return NULL;
    }
    born(srv, e);
    return e;
refuse:
    pcd_model_parts_free(from);
    return NULL;
}

struct pcd_pending *pcd_model_pending(pcd_model *e)
{
    if (!e->pending) {
        pcp_join_config d;
        pcp_join_config_default(&d);
        e->pending = pcd_pending_new(&d);
    }
    return e->pending;
}

bool pcd_model_join(pcd_model *e, const pcp_join_config *j)
{
    pcp_join_config d;
    pcp_join_config_default(&d);
    if (!e->pending && !memcmp(j, &d, sizeof d))
        return true;
    if (!pcd_model_pending(e))
        return false;
    e->pending->cfg = *j;
    /* hints.seed left out: the model's own, from its name (hints.h: two
     * models of one spec draw apart; the same name, dropped and made
     * again, draws alike) */
    if (j->hints_b > 0 && !j->hints_seed)
        e->pending->cfg.hints_seed = pcd_model_name_seed(e->name) | 1; /* 0 means left out */
    return true;
}

int pcd_model_extras(pcd_model *e, const pcp_join_config *j, const pcp_challenger *ch, size_t n,
                     const pcp_experts_config *experts, pcp_error *err)
{
    if (!pcd_model_join(e, j))
        return pcp_error_set(err, PCP_E_INTERNAL, "out of memory");
    /* the one place a model's name becomes its seed: the seed then lives in
     * its state (info, snapshots), whatever creates it (config, create,
     * auto-create, a replay) */
    pcp_experts_config x = *experts;
    if (!x.seed_given)
        x.seed = pcd_model_name_seed(e->name);
    pcd_challengers *cs;
    int rc = pcd_challengers_create(&cs, e->model, ch, n, &x, err);
    if (cs)
        e->challengers = cs;
    return rc;
}

void pcd_model_learned(pcd_server *srv, pcd_model *e, const pc_svec *x, const pc_label *y,
                       const pc_outcome *o, pc_outcome *said)
{
    pcd_hints_learned(e, x, &o->pred, 1, o->mistake);
    pcd_challengers_learn(e->challengers, x, y, o, said);
    pcd_model_auto_promote(srv, e); /* last: it may change the champion */
}

void pcd_model_auto_promote(pcd_server *srv, pcd_model *e)
{
    int i = pcd_challengers_auto_promote(e->challengers, &e->model);
    if (i < 0)
        return;
    srv->loop.counters.auto_promotions++;
    const pcd_challenger *old = &e->challengers->ch[i]; /* the champion until now */
    pcd_info("model %s: challenger %d (%s) promoted automatically: the sequential test finds it "
             "better at %g confidence (%llu / %llu examples only the old champion / only it got "
             "wrong)", e->name, i, pc_rule_name(pc_model_config_of(e->model)->rule),
             e->challengers->experts.cfg.confidence, (unsigned long long)old->c,
             (unsigned long long)old->b);
}

int pcd_model_drop(pcd_server *srv, pcd_model *e, char *err, size_t errlen)
{
    char name[PCP_MODEL_NAME_MAX + 1];
    snprintf(name, sizeof name, "%s", e->name);
    pcd_registry_remove(&srv->models, e);
    int removed = pcd_snapshot_remove(srv->cfg.state_dir, name, err, errlen);
    if (removed < 0)
        srv->models.strays = true; /* born() lists the directory from now on */
    pcd_info("dropped model %s (%d snapshot files removed)", name, removed < 0 ? 0 : removed);
    return removed;
}
