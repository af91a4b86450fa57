/* budget.c - max_models and max_memory (see budget.h). */
#include "daemon/core/budget.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/model/challengers.h"
#include "daemon/model/pending.h"

/* Adds e's parts to m; a resting model (rest.h) holds none of them. */
static void add_parts(pcd_memory_parts *m, const pcd_model *e)
{
    m->weights += e->model ? pc_model_bytes(e->model) : 0;
    m->names += pcd_names_bytes(&e->names);
    if (e->challengers)
        for (size_t i = 0; i < e->challengers->n; i++)
            m->challengers += pc_model_bytes(e->challengers->ch[i].model);
    if (e->pending)
        m->pending += pcd_pending_held_bytes(e->pending);
}

static size_t parts_sum(const pcd_memory_parts *m)
{
    return m->weights + m->names + m->challengers + m->pending;
}

size_t pcd_model_parts_bytes(const pcd_model *e)
{
    pcd_memory_parts m = {0};
    add_parts(&m, e);
    return parts_sum(&m);
}

size_t pcd_model_bytes(const pcd_model *e)
{
    return sizeof *e + strlen(e->name) + 1 + pcd_model_parts_bytes(e);
}

void pcd_budget_recount(pcd_server *srv, pcd_model *e)
{
    size_t now = pcd_model_bytes(e);
    srv->models.counted_bytes += now - e->counted; /* modular: a shrink subtracts */
    e->counted = now;
}

int pcd_budget_write(pcd_server *srv, pcp_error *err)
{
    size_t max = srv->cfg.max_memory;
    if (!max || srv->applying || pcd_budget_held(srv) < max)
        return PCP_OK;
    srv->loop.counters.refused_memory++;
    return pcp_error_set(err, PCP_E_LIMIT,
                         "limits.max_memory (%zu bytes) reached: the models hold %zu bytes (%zu "
                         "more on their way to rest) and the connections' buffers %zu; drop a "
                         "model, end pending events, or raise the limit (reads are still served)",
                         max, srv->models.counted_bytes, srv->rest.writing_bytes,
                         pcd_budget_buffers(srv));
}

pcd_memory_parts pcd_memory_parts_of(const pcd_server *srv)
{
    pcd_memory_parts m = {0};
    for (size_t k = 0; k < srv->models.nresident; k++) /* a resting model holds no part */
        add_parts(&m, srv->models.resident[k]);
    /* every entry's struct and name (pcd_model_bytes) kept by the registry */
    m.all = srv->models.count * sizeof(pcd_model) + srv->models.name_bytes + parts_sum(&m);
    return m;
}

size_t pcd_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size, resident = 0;
    if (f && fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    if (f)
        fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return (size_t)resident * (size_t)(page > 0 ? page : 4096);
}

int pcd_budget_models(pcd_server *srv, pcp_error *err)
{
    if (srv->applying || srv->models.count < srv->cfg.max_models)
        return PCP_OK;
    srv->loop.counters.refused_models++;
    return pcp_error_set(err, PCP_E_LIMIT,
                         "limits.max_models (%u) reached: drop a model first, or raise the limit",
                         srv->cfg.max_models);
}

int pcd_budget_memory(pcd_server *srv, size_t more, const char *what, const pcd_model *fresh,
                      const pcd_model *keep, pcp_error *err)
{
    size_t max = srv->cfg.max_memory;
    if (!max || srv->applying)
        return PCP_OK;
    size_t models, buffers = pcd_budget_buffers(srv);
    bool evicted = true;
    for (;;) {
        models = srv->models.counted_bytes - (fresh ? fresh->counted : 0);
        if (models + buffers + more <= max)
            return PCP_OK;
        if (!evicted || !srv->evict_one)
            break;
        evicted = srv->evict_one(srv, keep);
    }
    srv->loop.counters.refused_memory++;
    return pcp_error_set(err, PCP_E_LIMIT,
                         "limits.max_memory (%zu bytes) would be exceeded: %s needs %zu bytes, "
                         "the models hold %zu and the connections' buffers %zu",
                         max, what, more, models, buffers);
}

int pcd_budget_classes(pcd_server *srv, const pcd_model *e, const pc_label *ys, size_t n,
                       pcp_error *err)
{
    const pc_model_config *c = pc_model_config_of(e->model);
    if (!srv->cfg.max_memory || srv->applying || !c->multiclass || !c->open_classes)
        return PCP_OK;
    size_t fresh = 0; /* distinct classes new to the model */
    for (size_t j = 0; j < n; j++) {
        if (!ys[j].cls || pc_model_class_find(e->model, ys[j].cls, ys[j].cls_len) >= 0)
            continue;
        bool seen = false;
        for (size_t i = 0; i < j && !seen; i++)
            seen = ys[i].cls && ys[i].cls_len == ys[j].cls_len &&
                   memcmp(ys[i].cls, ys[j].cls, ys[j].cls_len) == 0;
        fresh += !seen;
    }
    if (!fresh)
        return PCP_OK;
    size_t k = pc_model_class_count(e->model);
    /* a class is one more learner like the others (the first: the whole model) */
    size_t each = pc_model_bytes(e->model) / (k ? k : 1);
    char what[64];
    snprintf(what, sizeof what, "%zu new class%s", fresh, fresh > 1 ? "es" : "");
    return pcd_budget_memory(srv, fresh * each, what, NULL, e, err);
}
