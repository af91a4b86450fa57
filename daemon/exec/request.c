/* request.c - what handlers read from a request: the model it names, its
 * examples (from the decoded params or, on the direct path, from the bytes),
 * and the scratch arrays the examples go to (see request.h). */
#include "daemon/exec/request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/models.h"
#include "daemon/exec/explain.h"
#include "lib/grow.h"

int pcd_req_fail(pcd_req *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err.msg, sizeof r->err.msg, fmt, ap);
    va_end(ap);
    r->err.code = (pcp_code)code;
    return code;
}

/* Prefixes the error message with the example it is about. */
static int fail_example(pcd_req *r, int code, uint32_t j)
{
    char why[sizeof r->err.msg];
    snprintf(why, sizeof why, "%s", r->err.msg);
    return pcd_req_fail(r, code, "example %u: %s", j, why);
}

/* The scratch arrays for n examples and k classes, reused by every request:
 * one thread, so no per-request malloc. */
void pcd_req_scratch_free(pcd_server *srv)
{
    for (size_t i = 0; i < srv->loop.nxs; i++)
        pc_svec_free(&srv->loop.xs[i]);
    free(srv->loop.xs);
    free(srv->loop.ys);
    free(srv->loop.outcomes);
    free(srv->loop.scores);
    free(srv->loop.names_at);
    pc_namer_free(&srv->loop.namer);
    pc_svec_free(&srv->loop.derived);
    free(srv->loop.names);
    free(srv->loop.kept);
    free(srv->loop.kept_bytes);
    pcd_explainer_free(srv->loop.explainer);
    srv->loop.explainer = NULL;
    srv->loop.kept = NULL;
    srv->loop.kept_bytes = NULL;
    srv->loop.nkept = srv->loop.kept_cap = srv->loop.kept_len = srv->loop.kept_bytes_cap = 0;
    srv->loop.names_at = NULL;
    srv->loop.names = NULL;
    srv->loop.nnames = srv->loop.names_cap = 0;
    srv->loop.xs = NULL;
    srv->loop.ys = NULL;
    srv->loop.outcomes = NULL;
    srv->loop.scores = NULL;
    srv->loop.nxs = srv->loop.noutcomes = srv->loop.nscores = 0;
    msgpack_sbuffer_destroy(&srv->loop.rewritten);
    msgpack_sbuffer_init(&srv->loop.rewritten);
}

/* Grows scratch array a to cap elements, or returns false (a as it was). */
#define GROW(a, cap)                                   \
    do {                                               \
        void *grown_ = realloc((a), (cap) * sizeof *(a)); \
        if (!grown_)                                   \
            return false;                              \
        (a) = grown_;                                  \
    } while (0)

bool pcd_req_scratch(pcd_server *srv, size_t n, size_t k)
{
    if (n > srv->loop.nxs) {
        size_t cap = n > 2 * srv->loop.nxs ? n : 2 * srv->loop.nxs;
        /* nxs counts only once every array has grown: one that failed
         * leaves those before it larger than used, never one smaller */
        GROW(srv->loop.xs, cap);
        for (size_t i = srv->loop.nxs; i < cap; i++)
            pc_svec_init(&srv->loop.xs[i]); /* empty: nothing to free if the next fails */
        GROW(srv->loop.ys, cap);
        GROW(srv->loop.outcomes, cap);
        GROW(srv->loop.names_at, cap);
        srv->loop.nxs = srv->loop.noutcomes = cap;
    }
    if (k > srv->loop.nscores) {
        GROW(srv->loop.scores, k);
        srv->loop.nscores = k;
    }
    return true;
}

static int classes_scratch(pcd_req *r, size_t n)
{
    if (!pcd_req_scratch(r->srv, n, pc_model_class_count(r->model->model) + 1))
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
    return PCP_OK;
}

int pcd_req_name_at(pcd_req *r, uint32_t i, const char *what, char *out)
{
    const msgpack_object *o = &r->msg->params[i];
    if (o->type != MSGPACK_OBJECT_STR)
        return pcd_req_fail(r, PCP_E_PARAMS, "%s: %s must be a model name (a string)",
                            r->method->name, what);
    if (!pcp_model_name_valid(o->via.str.ptr, o->via.str.size))
        return pcd_req_fail(r, PCP_E_MODEL, "invalid model name: %s", PCP_MODEL_NAME_RULE);
    memcpy(out, o->via.str.ptr, o->via.str.size);
    out[o->via.str.size] = 0;
    return PCP_OK;
}

int pcd_req_name(pcd_req *r)
{
    return pcd_req_name_at(r, 0, "the model", r->name);
}

/* The model named by params[0]; a valid unknown name gets a new model from
 * the template when the method may create (PCP_F_CREATES) and auto_create is on. */
int pcd_req_model(pcd_req *r)
{
    if (r->decoded) /* the direct path found the model */
        return PCP_OK;
    const msgpack_object *o = &r->msg->params[0];
    if (o->type != MSGPACK_OBJECT_STR)
        return pcd_req_fail(r, PCP_E_PARAMS, "the model name must be a string");
    const char *name = o->via.str.ptr;
    size_t len = o->via.str.size;
    pcd_server *srv = r->srv;
    if ((r->model = pcd_registry_find(&srv->models, name, len)))
        return PCP_OK;
    if (!pcp_model_name_valid(name, len))
        return pcd_req_fail(r, PCP_E_MODEL, "invalid model name: %s", PCP_MODEL_NAME_RULE);
    if (!(r->method->flags & PCP_F_CREATES) || !srv->cfg.auto_create)
        return pcd_req_fail(r, PCP_E_MODEL, "unknown model '%.*s' (create it first, or list them with `models`)",
                    (int)len, name);
    /* A new model is the admin's to make, by create or by auto_create: a
     * learner alone cannot fill memory with models by naming them. */
    if (r->client && r->client->rights < PCP_R_ADMIN)
        return pcd_req_fail(r, PCP_E_MODEL, "unknown model '%.*s': auto_create makes a model only "
                            "for a connection with the admin right, and this one has %s (create "
                            "it first, or send auth with an admin token)", (int)len, name,
                            pcp_right_name(r->client->rights));
    char copy[PCP_MODEL_NAME_MAX + 1];
    memcpy(copy, name, len);
    copy[len] = 0;
    const pcd_model_def *t = &srv->cfg.template_model;
    if (!(r->model = pcd_model_admit(srv, copy, &t->cfg, &t->join, t->challengers,
                                     t->nchallengers, &t->experts, &r->err)))
        return r->err.code;
    return PCP_OK;
}

/* Feature names are noted only for the examples that changed the model
 * (`weights` can show no other index), once the handler knows which: on a
 * stream a model mostly gets right, most examples skip the second walk of
 * their features, its hashing and the name map's lookups (cache misses
 * with many models).  Those noted are noted together: their map slots
 * are then fetched side by side. */
static void note_name(pcd_req *r, uint32_t idx, const char *name, size_t len)
{
    pcd_server *srv = r->srv;
    if (!PC_GROW(srv->loop.names, srv->loop.names_cap, srv->loop.nnames, 64)) {
        /* note this one now: names are a convenience, never worth an error */
        pcd_names_note(&r->model->names, idx, name, len);
        return;
    }
    srv->loop.names[srv->loop.nnames++] = (pcd_name_ref){idx, (uint32_t)len, name};
}

/* A derived feature's name: built for this call only, so noted (copied) at once. */
static void note_derived(void *ud, uint32_t idx, const char *name, size_t len)
{
    pcd_req *r = ud;
    pcd_names_note(&r->model->names, idx, name, len);
}

/* A name the request sent (valid while the request is), and through the
 * name step the names the model derives from it ("age#b2", "a*b"). */
static void walk_name(void *ud, uint32_t idx, const char *name, size_t len, double value)
{
    pcd_req *r = ud;
    pcd_server *srv = r->srv;
    if (srv->loop.namer.prep) /* the model derives features from names: note theirs too */
        pc_namer_add(&srv->loop.namer, &srv->loop.derived, name, len, value);
    note_name(r, idx, name, len);
}

/* The name step again over example j, only for its names; the step's
 * entries, in srv->loop.derived, are thrown away. */
static void walk_names(pcd_req *r, uint32_t j)
{
    pcd_server *srv = r->srv;
    pc_namer_for(&srv->loop.namer, r->model->model);
    srv->loop.namer.on_derived = note_derived;
    srv->loop.namer.ud = r;
    pc_namer_start(&srv->loop.namer);
    pcp_names_report(&srv->loop.names_at[j], pc_model_config_of(r->model->model)->dim, &srv->limits,
                     walk_name, r);
    pc_namer_end(&srv->loop.namer, &srv->loop.derived);
    pc_svec_clear(&srv->loop.derived);
    srv->loop.namer.on_derived = NULL;
}

void pcd_req_note_names(pcd_req *r, const pc_outcome *outcomes)
{
    bool all = !outcomes || r->model->challengers;
    r->srv->loop.nnames = 0;
    for (uint32_t j = 0; j < r->n; j++)
        if (all || outcomes[j].updated)
            walk_names(r, j);
    pcd_names_note_all(&r->model->names, r->srv->loop.names, r->srv->loop.nnames);
}

/* An explained request's names, kept in the one pass that hashes them:
 * listing K contributions by name then costs no second walk of the
 * example's names, no hashing and no lookup in the model's names table
 * (cache misses in a large model); a request that does not explain keeps
 * nothing.  Names are a convenience: one that does not fit is left out. */
static void keep(pcd_loop *l, uint32_t idx, const char *name, size_t len, bool copy)
{
    if (!PC_GROW(l->kept, l->kept_cap, l->nkept, 64) ||
        (copy && l->kept_len + len > l->kept_bytes_cap &&
         !PC_RESERVE(l->kept_bytes, l->kept_bytes_cap, 2 * (l->kept_bytes_cap + len))))
        return;
    struct pcd_kept_name *k = &l->kept[l->nkept++];
    *k = (struct pcd_kept_name){copy ? NULL : name, idx, l->kept_example, (uint32_t)len,
                                (uint32_t)l->kept_len};
    if (copy) {
        memcpy(l->kept_bytes + l->kept_len, name, len);
        l->kept_len += len;
    }
}

/* A name as sent: in the request's bytes, which live as long as the request. */
static void keep_name(void *ud, uint32_t idx, const char *name, size_t len)
{
    keep(ud, idx, name, len, false);
}

/* A derived feature's name: built for the call only, so copied. */
static void keep_derived(void *ud, uint32_t idx, const char *name, size_t len)
{
    keep(ud, idx, name, len, true);
}

/* Before example j is read (the namer set for the model): its names kept
 * when the request explains; j 0 starts the request's list. */
static void keep_names(pcd_req *r, uint32_t j)
{
    if (!r->keep_names)
        return;
    pcd_loop *l = &r->srv->loop;
    if (j == 0)
        l->nkept = l->kept_len = 0;
    l->kept_example = j;
    l->namer.on_name = keep_name;
    l->namer.on_derived = keep_derived;
    l->namer.ud = l;
}

static void keep_names_end(pcd_req *r)
{
    r->srv->loop.namer.on_name = r->srv->loop.namer.on_derived = NULL;
}

void pcd_req_names(pcd_req *r, uint32_t j, pcd_name_fn on_name, void *ud)
{
    const pcd_loop *l = &r->srv->loop;
    if (!r->keep_names)
        return;
    for (size_t i = 0; i < l->nkept; i++) {
        const struct pcd_kept_name *k = &l->kept[i];
        if (k->example == j)
            on_name(ud, k->idx, k->name ? k->name : l->kept_bytes + k->at, k->len);
    }
}

/* Example j's features from o into srv->loop.xs[j], and where its names are. */
static int features(pcd_req *r, const msgpack_object *o, uint32_t j)
{
    pcd_server *srv = r->srv;
    pc_namer_for(&srv->loop.namer, r->model->model);
    keep_names(r, j);
    int rc = pcp_features(o, &srv->loop.namer, &srv->limits, &srv->loop.xs[j],
                          &srv->loop.names_at[j], &r->err);
    keep_names_end(r);
    return rc;
}

/* ---- predict, label and their batches: the direct path's methods -------- */

/* predict and label on the general path: the model and srv->loop.xs[0]. */
int pcd_req_example(pcd_req *r)
{
    int rc;
    if (r->decoded)
        return PCP_OK;
    if ((rc = pcd_req_model(r)) || (rc = classes_scratch(r, 1)) ||
        (rc = features(r, &r->msg->params[1], 0)))
        return rc;
    if (r->method->flags & PCP_F_LEARNS)
        r->label = r->msg->params[2];
    r->n = 1;
    return PCP_OK;
}

/* The batches on the general path: the model and srv->loop.xs[0..n) (srv->loop.ys
 * too for label_batch), every example checked before anything is learned. */
int pcd_req_batch(pcd_req *r)
{
    int rc;
    if (r->decoded)
        return PCP_OK;
    if ((rc = pcd_req_model(r)))
        return rc;
    const msgpack_object *o = &r->msg->params[1];
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return pcd_req_fail(r, PCP_E_PARAMS, "the batch must be an array");
    if (o->via.array.size > r->srv->limits.max_batch)
        return pcd_req_fail(r, PCP_E_LIMIT, "batch of %u examples exceeds max_batch (%u)",
                    o->via.array.size, r->srv->limits.max_batch);
    const msgpack_object_array *a = &o->via.array;
    if ((rc = classes_scratch(r, a->size ? a->size : 1)))
        return rc;
    bool learns = r->method->flags & PCP_F_LEARNS;
    bool multiclass = pc_model_config_of(r->model->model)->multiclass;
    for (uint32_t j = 0; j < a->size; j++) {
        const msgpack_object *x = &a->ptr[j];
        if (learns) {
            if (x->type != MSGPACK_OBJECT_ARRAY || x->via.array.size != 2)
                return pcd_req_fail(r, PCP_E_PARAMS, "example %u: expected [features, label]", j);
            x = &a->ptr[j].via.array.ptr[0];
        }
        if ((rc = features(r, x, j)) ||
            (learns && (rc = pcp_label(x + 1, multiclass, &r->srv->loop.ys[j], &r->err))))
            return fail_example(r, rc, j);
    }
    r->n = a->size;
    return PCP_OK;
}

/* The direct path's examples: one for predict and label, n for the batches,
 * read into srv->loop.xs (and srv->loop.ys); false to decline. */
bool pcd_req_direct(pcd_req *r, pcp_direct *d)
{
    pcd_server *srv = r->srv;
    pcd_model *e = r->model;
    const pc_model_config *c = pc_model_config_of(e->model);
    pc_namer_for(&srv->loop.namer, e->model);
    size_t k = pc_model_class_count(e->model) + 1;
    unsigned f = d->method->flags;
    if (d->method->id == PCP_M_LABEL_EVENT) /* no features: the ID and the label */
        return pcp_direct_scalars(d, &r->event, &r->label, &r->len);
    if (!(f & PCP_F_BATCH)) {
        r->n = 1;
        if (!pcd_req_scratch(srv, 1, k))
            return false;
        keep_names(r, 0);
        bool ok = pcp_direct_example(d, &srv->loop.namer, &srv->limits, &srv->loop.xs[0],
                                     &r->label, &srv->loop.names_at[0], &r->len);
        keep_names_end(r);
        if (!ok)
            return false;
        r->options = d->opts.type == MSGPACK_OBJECT_MAP ? &d->opts : NULL; /* predict's */
        r->options_at = (size_t)(d->options - d->start);
        return true;
    }
    if (!pcp_direct_batch(d, &srv->limits, &r->n) || !pcd_req_scratch(srv, r->n ? r->n : 1, k))
        return false;
    bool multiclass = c->multiclass;
    for (uint32_t j = 0; j < r->n; j++) {
        pcp_error ignored;
        bool ok = pcp_direct_item(d, &srv->loop.namer, &srv->limits, &srv->loop.xs[j], &r->label,
                                  &srv->loop.names_at[j]);
        if (!ok || ((f & PCP_F_LEARNS) && pcp_label(&r->label, multiclass, &srv->loop.ys[j],
                                                    &ignored)))
            return false; /* the general path words the error, naming the example */
    }
    r->len = (size_t)(d->features - d->start);
    return true;
}

