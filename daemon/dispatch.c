/* dispatch.c - the method handlers, one function per method, in a table.
 *
 * proto/ has already framed the message, checked the envelope and the number
 * of params against the method table; a handler checks the params' types,
 * does the work and packs its result.  A handler either succeeds and packs
 * `[1, msgid, nil, result]`, or returns an error code without packing
 * anything, and the dispatcher packs the error: a response is never half
 * written.  Notifications get a packer that discards.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/server.h"

#define PCD_WAIT 100 /* handler result: the answer comes later (save) */

typedef int (*handler_fn)(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                          pcp_error *err);

static int fail(pcp_error *err, pcp_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(pcp_error *err, pcp_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

bool pcd_scratch(pcd_server *srv, size_t n, size_t k)
{
    if (n > srv->nxs) {
        size_t cap = n > 2 * srv->nxs ? n : 2 * srv->nxs;
        pc_svec *xs = realloc(srv->xs, cap * sizeof *xs);
        if (!xs)
            return false;
        srv->xs = xs;
        for (size_t i = srv->nxs; i < cap; i++)
            pc_svec_init(&xs[i]);
        pc_label *ys = realloc(srv->ys, cap * sizeof *ys);
        if (!ys) {
            srv->nxs = cap; /* xs grew; keep it consistent */
            return false;
        }
        srv->ys = ys;
        pc_outcome *o = realloc(srv->outcomes, cap * sizeof *o);
        if (!o) {
            srv->nxs = cap;
            return false;
        }
        srv->outcomes = o;
        srv->nxs = srv->noutcomes = cap;
    }
    if (k > srv->nscores) {
        double *s = realloc(srv->scores, k * sizeof *s);
        if (!s)
            return false;
        srv->scores = s;
        srv->nscores = k;
    }
    return true;
}

static bool is_str(const msgpack_object *o, const char **p, size_t *len)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return false;
    *p = o->via.str.ptr;
    *len = o->via.str.size;
    return true;
}

/* The model named by params[0]; with create, a valid unknown name gets a new
 * model from the template (when auto_create is on). */
static int model_arg(pcd_server *srv, const msgpack_object *o, bool create, pcd_model **out,
                     pcp_error *err)
{
    const char *name;
    size_t len;
    if (!is_str(o, &name, &len))
        return fail(err, PCP_E_PARAMS, "the model name must be a string");
    pcd_model *e = pcd_registry_find(&srv->models, name, len);
    if (e) {
        *out = e;
        return PCP_OK;
    }
    if (!pcd_model_name_valid(name, len))
        return fail(err, PCP_E_MODEL,
                    "invalid model name: use 1 to 64 of A-Z a-z 0-9 _ . - (not starting with '.')");
    if (!create || !srv->cfg.auto_create)
        return fail(err, PCP_E_MODEL, "unknown model '%.*s' (create it first, or list them with `models`)",
                    (int)len, name);
    char copy[65];
    memcpy(copy, name, len);
    copy[len] = 0;
    e = pcd_model_create(srv, copy, &srv->cfg.template_model.cfg, err);
    if (!e)
        return err->code;
    *out = e;
    return PCP_OK;
}

static void note_name(void *ud, uint32_t idx, const char *name, size_t len)
{
    pcd_names_note(&((pcd_model *)ud)->names, idx, name, len);
}

static int features(pcd_server *srv, pcd_model *e, const msgpack_object *o, pc_svec *x,
                    pcp_error *err)
{
    return pcp_features(o, pc_model_config_of(e->model)->dim, &srv->limits, x, note_name, e, err);
}

static int classes_scratch(pcd_server *srv, const pcd_model *e, size_t n, pcp_error *err)
{
    if (!pcd_scratch(srv, n, pc_model_class_count(e->model) + 1))
        return fail(err, PCP_E_INTERNAL, "out of memory");
    return PCP_OK;
}

/* The answer to predict once srv->xs[0] holds the features. */
static int predicted(pcd_server *srv, pcd_model *e, uint32_t msgid, msgpack_packer *pk)
{
    pc_prediction p;
    pc_model_predict(e->model, &srv->xs[0], &p, srv->scores);
    srv->counters.predicts++;
    pcp_pack_response_ok(pk, msgid);
    pcp_pack_prediction(pk, e->model, &p, srv->scores);
    return PCP_OK;
}

/* The answer to label once srv->xs[0] holds the features. */
static int labelled(pcd_server *srv, pcd_model *e, const msgpack_object *label, uint32_t msgid,
                    msgpack_packer *pk, pcp_error *err)
{
    pc_label y;
    int rc;
    if ((rc = pcp_label(label, pc_model_config_of(e->model)->multiclass, &y, err)))
        return rc;
    pc_outcome o;
    pc_error perr;
    pc_status st = pc_model_label(e->model, &srv->xs[0], &y, &o, &perr);
    if (st != PC_OK)
        return fail(err, st == PC_ENOMEM ? PCP_E_INTERNAL : st == PC_ELIMIT ? PCP_E_LIMIT : PCP_E_LABEL,
                    "%s", perr.msg);
    e->changes++;
    srv->counters.labels++;
    pcp_pack_response_ok(pk, msgid);
    pcp_pack_outcome(pk, e->model, &o);
    return PCP_OK;
}

static int h_predict(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                     pcp_error *err)
{
    (void)c;
    pcd_model *e;
    int rc;
    if ((rc = model_arg(srv, &m->params[0], false, &e, err)) ||
        (rc = classes_scratch(srv, e, 1, err)) ||
        (rc = features(srv, e, &m->params[1], &srv->xs[0], err)))
        return rc;
    return predicted(srv, e, m->msgid, pk);
}

static int h_label(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                   pcp_error *err)
{
    (void)c;
    pcd_model *e;
    int rc;
    if ((rc = model_arg(srv, &m->params[0], true, &e, err)) ||
        (rc = classes_scratch(srv, e, 1, err)) ||
        (rc = features(srv, e, &m->params[1], &srv->xs[0], err)))
        return rc;
    return labelled(srv, e, &m->params[2], m->msgid, pk, err);
}

static int batch_array(pcd_server *srv, const msgpack_object *o, pcp_error *err)
{
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return fail(err, PCP_E_PARAMS, "the batch must be an array");
    if (o->via.array.size > srv->limits.max_batch)
        return fail(err, PCP_E_LIMIT, "batch of %u examples exceeds max_batch (%u)",
                    o->via.array.size, srv->limits.max_batch);
    return PCP_OK;
}

/* The answer to predict_batch once srv->xs[0..n) hold the examples. */
static int batch_predicted(pcd_server *srv, pcd_model *e, uint32_t n, uint32_t msgid,
                           msgpack_packer *pk)
{
    size_t k = pc_model_class_count(e->model);
    pcp_pack_response_ok(pk, msgid);
    msgpack_pack_array(pk, n);
    for (uint32_t j = 0; j < n; j++) {
        pc_prediction p;
        pc_model_predict(e->model, &srv->xs[j], &p, k ? srv->scores : NULL);
        pcp_pack_prediction(pk, e->model, &p, srv->scores);
    }
    srv->counters.predicts += n;
    return PCP_OK;
}

/* The answer to label_batch once srv->xs[0..n) and srv->ys[0..n) hold the
 * examples, all checked: the model learns all of them or none. */
static int batch_labelled(pcd_server *srv, pcd_model *e, uint32_t n, uint32_t msgid,
                          msgpack_packer *pk, pcp_error *err)
{
    pc_error perr;
    pc_status st = pc_model_label_batch(e->model, srv->xs, srv->ys, n, srv->outcomes, &perr);
    if (st != PC_OK)
        return fail(err, st == PC_ENOMEM ? PCP_E_INTERNAL : PCP_E_LABEL, "%s", perr.msg);
    uint64_t mistakes = 0, updates = 0;
    for (uint32_t j = 0; j < n; j++) {
        mistakes += srv->outcomes[j].mistake;
        updates += srv->outcomes[j].updated;
    }
    e->changes++;
    srv->counters.labels += n;
    pcp_pack_response_ok(pk, msgid);
    msgpack_pack_map(pk, 3);
    pcp_pack_str(pk, "examples");
    msgpack_pack_uint64(pk, n);
    pcp_pack_str(pk, "mistakes");
    msgpack_pack_uint64(pk, mistakes);
    pcp_pack_str(pk, "updates");
    msgpack_pack_uint64(pk, updates);
    return PCP_OK;
}

static int h_predict_batch(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                           pcp_error *err)
{
    (void)c;
    pcd_model *e;
    int rc;
    if ((rc = model_arg(srv, &m->params[0], false, &e, err)) ||
        (rc = batch_array(srv, &m->params[1], err)))
        return rc;
    const msgpack_object_array *a = &m->params[1].via.array;
    if ((rc = classes_scratch(srv, e, a->size ? a->size : 1, err)))
        return rc;
    for (uint32_t j = 0; j < a->size; j++)
        if ((rc = features(srv, e, &a->ptr[j], &srv->xs[j], err))) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return fail(err, (pcp_code)rc, "example %u: %s", j, why);
        }
    return batch_predicted(srv, e, a->size, m->msgid, pk);
}

static int h_label_batch(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                         pcp_error *err)
{
    (void)c;
    pcd_model *e;
    int rc;
    if ((rc = model_arg(srv, &m->params[0], true, &e, err)) ||
        (rc = batch_array(srv, &m->params[1], err)))
        return rc;
    const msgpack_object_array *a = &m->params[1].via.array;
    if ((rc = classes_scratch(srv, e, a->size ? a->size : 1, err)))
        return rc;
    bool multiclass = pc_model_config_of(e->model)->multiclass;
    /* Decode every example first: a bad one rejects the batch before
     * anything is learned. */
    for (uint32_t j = 0; j < a->size; j++) {
        const msgpack_object *pair = &a->ptr[j];
        if (pair->type != MSGPACK_OBJECT_ARRAY || pair->via.array.size != 2)
            return fail(err, PCP_E_PARAMS, "example %u: expected [features, label]", j);
        if ((rc = features(srv, e, &pair->via.array.ptr[0], &srv->xs[j], err)) ||
            (rc = pcp_label(&pair->via.array.ptr[1], multiclass, &srv->ys[j], err))) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return fail(err, (pcp_code)rc, "example %u: %s", j, why);
        }
    }
    return batch_labelled(srv, e, a->size, m->msgid, pk, err);
}

static int h_models(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                    pcp_error *err)
{
    (void)c;
    size_t n;
    pcd_model **all = pcd_registry_list(&srv->models, &n);
    if (!all)
        return fail(err, PCP_E_INTERNAL, "out of memory");
    pcp_pack_response_ok(pk, m->msgid);
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++)
        pcp_pack_str(pk, all[i]->name);
    free(all);
    return PCP_OK;
}

static void pack_kv_u64(msgpack_packer *pk, const char *k, uint64_t v)
{
    pcp_pack_str(pk, k);
    msgpack_pack_uint64(pk, v);
}

static void pack_kv_double(msgpack_packer *pk, const char *k, double v)
{
    pcp_pack_str(pk, k);
    if (isfinite(v))
        msgpack_pack_double(pk, v);
    else
        msgpack_pack_nil(pk);
}

static void pack_kv_bool(msgpack_packer *pk, const char *k, bool v)
{
    pcp_pack_str(pk, k);
    if (v)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
}

static void pack_params(msgpack_packer *pk, const pc_model_config *cfg)
{
    size_t n = pc_rule_param_count(cfg->rule);
    msgpack_pack_map(pk, n);
    for (size_t i = 0; i < n; i++) {
        const pc_param_spec *s = pc_rule_param(cfg->rule, i);
        const pc_param_value *v = &cfg->params.val[i];
        pcp_pack_str(pk, s->name);
        if (s->kind == PC_PARAM_LIST) {
            msgpack_pack_array(pk, v->n);
            for (size_t k = 0; k < v->n; k++)
                msgpack_pack_double(pk, v->v[k]);
        } else if (isnan(v->v[0])) {
            msgpack_pack_nil(pk); /* derived by the rule */
        } else {
            msgpack_pack_double(pk, v->v[0]);
        }
    }
}

static void pack_learner(msgpack_packer *pk, const pc_model *m, size_t cls)
{
    pc_learner_info li;
    pc_model_learner_info(m, cls, &li);
    const char *name = pc_model_class_name(m, cls);
    msgpack_pack_map(pk, 6);
    pcp_pack_str(pk, "class");
    if (name)
        pcp_pack_str(pk, name);
    else
        msgpack_pack_nil(pk);
    pack_kv_double(pk, "norm", li.norm);
    pack_kv_double(pk, "bias", li.bias);
    pack_kv_double(pk, "margin", li.margin);
    pack_kv_u64(pk, "updates", li.updates);
    pcp_pack_str(pk, "note");
    if (li.note)
        pcp_pack_str(pk, li.note);
    else
        msgpack_pack_nil(pk);
}

static int h_info(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                  pcp_error *err)
{
    (void)c;
    pcd_model *e;
    int rc;
    if ((rc = model_arg(srv, &m->params[0], false, &e, err)))
        return rc;
    const pc_model_config *cfg = pc_model_config_of(e->model);
    pc_stats st;
    pc_model_stats(e->model, &st);
    size_t k = pc_model_class_count(e->model);
    pcp_pack_response_ok(pk, m->msgid);
    msgpack_pack_map(pk, 20);
    pcp_pack_str(pk, "name");
    pcp_pack_str(pk, e->name);
    pcp_pack_str(pk, "rule");
    pcp_pack_str(pk, pc_rule_name(cfg->rule));
    pcp_pack_str(pk, "params");
    pack_params(pk, cfg);
    pack_kv_u64(pk, "dim", cfg->dim);
    pack_kv_bool(pk, "bias", cfg->bias);
    pack_kv_double(pk, "bias_value", cfg->bias_value);
    pack_kv_bool(pk, "averaged", cfg->averaged);
    pcp_pack_str(pk, "mode");
    pcp_pack_str(pk, cfg->batch ? "batch" : "online");
    pack_kv_bool(pk, "multiclass", cfg->multiclass);
    pack_kv_bool(pk, "open_classes", cfg->open_classes);
    pack_kv_u64(pk, "examples", st.examples);
    pack_kv_u64(pk, "mistakes", st.mistakes);
    pack_kv_double(pk, "mistake_rate", st.examples ? (double)st.mistakes / (double)st.examples : NAN);
    pack_kv_u64(pk, "updates", st.updates);
    pcp_pack_str(pk, "recent");
    msgpack_pack_map(pk, 3);
    pack_kv_u64(pk, "examples", st.recent_examples);
    pack_kv_u64(pk, "mistakes", st.recent_mistakes);
    pack_kv_double(pk, "mistake_rate",
                   st.recent_examples ? (double)st.recent_mistakes / (double)st.recent_examples : NAN);
    pcp_pack_str(pk, "classes");
    msgpack_pack_array(pk, k);
    for (size_t i = 0; i < k; i++) {
        uint64_t ce, cm;
        pc_model_class_stats(e->model, i, &ce, &cm);
        msgpack_pack_map(pk, 3);
        pcp_pack_str(pk, "name");
        pcp_pack_str(pk, pc_model_class_name(e->model, i));
        pack_kv_u64(pk, "examples", ce);
        pack_kv_u64(pk, "mistakes", cm);
    }
    pcp_pack_str(pk, "learners");
    size_t nl = k ? k : 1;
    msgpack_pack_array(pk, nl);
    for (size_t i = 0; i < nl; i++)
        pack_learner(pk, e->model, i);
    pcp_pack_str(pk, "snapshot");
    msgpack_pack_map(pk, 3);
    pack_kv_u64(pk, "generation", e->generation);
    pack_kv_double(pk, "age_seconds", e->saved_at ? (double)(pcd_now() - e->saved_at) : NAN);
    pack_kv_bool(pk, "dirty", pcd_model_dirty(e));
    pack_kv_u64(pk, "feature_names", e->names.count);
    pack_kv_u64(pk, "feature_names_max", PCD_NAMES_MAX);
    return PCP_OK;
}

/* weights(model[, class][, top_k]): the largest |weights| with their names. */
static int h_weights(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                     pcp_error *err)
{
    (void)c;
    pcd_model *e;
    int rc;
    if ((rc = model_arg(srv, &m->params[0], false, &e, err)))
        return rc;
    size_t cls = 0;
    uint64_t top = 20;
    for (uint32_t i = 1; i < m->nparams; i++) {
        const msgpack_object *o = &m->params[i];
        const char *s;
        size_t len;
        if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
            top = o->via.u64;
        } else if (is_str(o, &s, &len)) {
            int32_t k = pc_model_class_find(e->model, s, len);
            if (k < 0)
                return fail(err, PCP_E_LABEL, "model '%s' has no class '%.*s'", e->name, (int)len, s);
            cls = (size_t)k;
        } else if (o->type != MSGPACK_OBJECT_NIL) {
            return fail(err, PCP_E_PARAMS, "weights takes (model, class or nil, top_k)");
        }
    }
    if (top < 1 || top > 10000)
        return fail(err, PCP_E_PARAMS, "top_k must be in [1, 10000]");
    uint32_t *idx = malloc(top * sizeof *idx);
    double *w = malloc(top * sizeof *w);
    if (!idx || !w) {
        free(idx);
        free(w);
        return fail(err, PCP_E_INTERNAL, "out of memory");
    }
    size_t n = pc_model_top_weights(e->model, cls, top, idx, w);
    pcp_pack_response_ok(pk, m->msgid);
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) {
        const char *name = pcd_names_get(&e->names, idx[i]);
        msgpack_pack_map(pk, 3);
        pcp_pack_str(pk, "index");
        msgpack_pack_uint32(pk, idx[i]);
        pcp_pack_str(pk, "feature");
        if (name)
            pcp_pack_str(pk, name);
        else
            msgpack_pack_nil(pk);
        pack_kv_double(pk, "weight", w[i]);
    }
    free(idx);
    free(w);
    return PCP_OK;
}

/* create(name[, spec]): a new model from spec (missing keys: the template). */
static int h_create(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                    pcp_error *err)
{
    (void)c;
    const char *name;
    size_t len;
    if (!is_str(&m->params[0], &name, &len))
        return fail(err, PCP_E_PARAMS, "create takes (name, spec): the name must be a string");
    if (!pcd_model_name_valid(name, len))
        return fail(err, PCP_E_SPEC,
                    "invalid model name: use 1 to 64 of A-Z a-z 0-9 _ . - (not starting with '.')");
    if (pcd_registry_find(&srv->models, name, len))
        return fail(err, PCP_E_EXISTS, "model '%.*s' exists (drop it first)", (int)len, name);
    pc_model_config cfg = srv->cfg.template_model.cfg;
    char **classes = NULL;
    if (m->nparams > 1) {
        if (m->params[1].type != MSGPACK_OBJECT_MAP)
            return fail(err, PCP_E_PARAMS, "the model spec must be a map");
        int rc = pcp_model_spec(&m->params[1], &cfg, &classes, err);
        if (rc)
            return rc;
    }
    char copy[65];
    memcpy(copy, name, len);
    copy[len] = 0;
    pcd_model *e = pcd_model_create(srv, copy, &cfg, err);
    for (size_t i = 0; classes && i < cfg.nclasses; i++)
        free(classes[i]);
    free(classes);
    if (!e)
        return err->code;
    pcp_pack_response_ok(pk, m->msgid);
    msgpack_pack_map(pk, 1);
    pcp_pack_str(pk, "created");
    pcp_pack_str(pk, e->name);
    return PCP_OK;
}

static int h_drop(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                  pcp_error *err)
{
    (void)c;
    pcd_model *e;
    int rc;
    if ((rc = model_arg(srv, &m->params[0], false, &e, err)))
        return rc;
    char name[65];
    snprintf(name, sizeof name, "%s", e->name);
    char why[200];
    int removed = pcd_model_drop(srv, e, why, sizeof why);
    if (removed < 0)
        return fail(err, PCP_E_INTERNAL, "model '%s' dropped, but its snapshots remain: %s", name, why);
    pcp_pack_response_ok(pk, m->msgid);
    msgpack_pack_map(pk, 2);
    pcp_pack_str(pk, "dropped");
    pcp_pack_str(pk, name);
    pack_kv_u64(pk, "snapshots_removed", (uint64_t)removed);
    return PCP_OK;
}

static int h_reset(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                   pcp_error *err)
{
    (void)c;
    pcd_model *e;
    int rc;
    if ((rc = model_arg(srv, &m->params[0], false, &e, err)))
        return rc;
    pc_error perr;
    if (pc_model_reset(e->model, &perr) != PC_OK)
        return fail(err, PCP_E_INTERNAL, "%s", perr.msg);
    e->changes++;
    pcd_info("model %s reset", e->name);
    pcp_pack_response_ok(pk, m->msgid);
    msgpack_pack_map(pk, 1);
    pcp_pack_str(pk, "reset");
    pcp_pack_str(pk, e->name);
    return PCP_OK;
}

static int h_save(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                  pcp_error *err)
{
    char why[200] = "";
    int r = pcd_persist_save(srv, c, m->msgid, m->notification, why, sizeof why);
    if (r < 0)
        return fail(err, PCP_E_INTERNAL, "save failed: %s", why);
    if (r > 0)
        return PCD_WAIT;
    pcp_pack_response_ok(pk, m->msgid);
    msgpack_pack_map(pk, 1);
    pack_kv_u64(pk, "written", 0);
    return PCP_OK;
}

static int h_stats(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                   pcp_error *err)
{
    (void)c;
    (void)err;
    const pcd_counters *k = &srv->counters;
    pcp_pack_response_ok(pk, m->msgid);
    msgpack_pack_map(pk, 19);
    pcp_pack_str(pk, "version");
    pcp_pack_str(pk, PC_VERSION_STRING);
    pack_kv_u64(pk, "uptime_seconds", (uint64_t)(pcd_now() - srv->started_at));
    pack_kv_u64(pk, "models", srv->models.count);
    pack_kv_u64(pk, "connections", srv->nconns);
    pack_kv_u64(pk, "connections_total", k->connections_total);
    pack_kv_u64(pk, "connections_rejected", k->connections_rejected);
    pack_kv_u64(pk, "connections_closed_idle", k->connections_closed_idle);
    pack_kv_u64(pk, "connections_closed_error", k->connections_closed_error);
    pack_kv_u64(pk, "requests", k->requests);
    pack_kv_u64(pk, "notifications", k->notifications);
    pack_kv_u64(pk, "errors", k->errors);
    pack_kv_u64(pk, "labels", k->labels);
    pack_kv_u64(pk, "predicts", k->predicts);
    pack_kv_u64(pk, "bytes_in", k->bytes_in);
    pack_kv_u64(pk, "bytes_out", k->bytes_out);
    pack_kv_u64(pk, "snapshots_written", k->snapshots_written);
    pack_kv_u64(pk, "snapshots_failed", k->snapshots_failed);
    pack_kv_bool(pk, "snapshot_running", srv->snap.pid != 0);
    pcp_pack_str(pk, "errors_by_code");
    size_t nz = 0;
    for (size_t i = 0; i < 16; i++)
        nz += k->errors_by_code[i] != 0;
    msgpack_pack_map(pk, nz);
    for (size_t i = 0; i < 16; i++)
        if (k->errors_by_code[i]) {
            pcp_pack_str(pk, pcp_code_name((pcp_code)i));
            msgpack_pack_uint64(pk, k->errors_by_code[i]);
        }
    return PCP_OK;
}

static int h_ping(pcd_server *srv, pcd_conn *c, const pcp_message *m, msgpack_packer *pk,
                  pcp_error *err)
{
    (void)srv;
    (void)c;
    (void)err;
    pcp_pack_response_ok(pk, m->msgid);
    pcp_pack_str(pk, "pong");
    return PCP_OK;
}

static const handler_fn handlers[PCP_M_COUNT] = {
    [PCP_M_PREDICT] = h_predict,
    [PCP_M_LABEL] = h_label,
    [PCP_M_PREDICT_BATCH] = h_predict_batch,
    [PCP_M_LABEL_BATCH] = h_label_batch,
    [PCP_M_MODELS] = h_models,
    [PCP_M_INFO] = h_info,
    [PCP_M_WEIGHTS] = h_weights,
    [PCP_M_CREATE] = h_create,
    [PCP_M_DROP] = h_drop,
    [PCP_M_RESET] = h_reset,
    [PCP_M_SAVE] = h_save,
    [PCP_M_STATS] = h_stats,
    [PCP_M_PING] = h_ping,
};

static int discard(void *data, const char *buf, size_t len)
{
    (void)data;
    (void)buf;
    (void)len;
    return 0;
}

/* Counts a message and, when it failed, answers with its error (requests) or
 * logs it (notifications): the same ending for both paths. */
static void conclude(pcd_server *srv, int rc, bool notification, bool has_msgid, uint32_t msgid,
                     pcp_error *err, msgpack_packer *pk)
{
    if (rc == PCP_OK)
        return;
    srv->counters.errors++;
    srv->counters.errors_by_code[rc & 15]++;
    err->code = (pcp_code)rc;
    if (has_msgid && !notification)
        pcp_pack_response_error(pk, msgid, err);
    else
        pcd_debug("dropped a bad notification: %s", err->msg);
}

bool pcd_dispatch(pcd_server *srv, pcd_conn *c, const msgpack_object *obj, msgpack_packer *pk)
{
    pcp_message m = {0};
    pcp_error err = {0};
    int rc = pcp_message_parse(obj, &m, &err);
    msgpack_packer null_pk;
    msgpack_packer_init(&null_pk, NULL, discard);
    msgpack_packer *out = m.notification ? &null_pk : pk;
    if (rc == PCP_OK) {
        if (m.notification)
            srv->counters.notifications++;
        else
            srv->counters.requests++;
        rc = handlers[m.method->id](srv, c, &m, out, &err);
        if (rc == PCD_WAIT)
            return false;
    }
    conclude(srv, rc, m.notification, m.has_msgid, m.msgid, &err, pk);
    return true;
}

/* The direct path's examples: one for predict and label, n for the batches,
 * read into srv->xs (and srv->ys); false to decline. */
static bool direct_examples(pcd_server *srv, pcd_model *e, pcp_direct *d, msgpack_object *label,
                            uint32_t *n, size_t *len)
{
    uint32_t dim = pc_model_config_of(e->model)->dim;
    size_t k = pc_model_class_count(e->model) + 1;
    pcp_method_id id = d->method->id;
    if (id == PCP_M_PREDICT || id == PCP_M_LABEL) {
        *n = 1;
        return pcd_scratch(srv, 1, k) &&
               pcp_direct_example(d, dim, &srv->limits, &srv->xs[0], label, note_name, e, len);
    }
    if (!pcp_direct_batch(d, &srv->limits, n) || !pcd_scratch(srv, *n ? *n : 1, k))
        return false;
    bool multiclass = pc_model_config_of(e->model)->multiclass;
    for (uint32_t j = 0; j < *n; j++) {
        pcp_error ignored;
        if (!pcp_direct_item(d, dim, &srv->limits, &srv->xs[j], label, note_name, e) ||
            (id == PCP_M_LABEL_BATCH && pcp_label(label, multiclass, &srv->ys[j], &ignored)))
            return false; /* the general path words the error, naming the example */
    }
    *len = (size_t)(d->features - d->start);
    return true;
}

bool pcd_dispatch_direct(pcd_server *srv, pcp_direct *d, msgpack_packer *pk, size_t *len)
{
    /* Only the plain case: a model that exists and examples that decode.
     * Creating a model, and every error up to the features, is left to the
     * general path, so a decline leaves nothing behind (and a message whose
     * bytes have not all arrived creates nothing).  What can go wrong after,
     * a bad label or the model's refusal, is found and worded by the same
     * functions as in the handlers. */
    const char *name;
    size_t name_len;
    if (!is_str(&d->model, &name, &name_len))
        return false;
    pcd_model *e = pcd_registry_find(&srv->models, name, name_len);
    msgpack_object label;
    uint32_t n;
    if (!e || !direct_examples(srv, e, d, &label, &n, len))
        return false;
    msgpack_packer null_pk;
    msgpack_packer_init(&null_pk, NULL, discard);
    msgpack_packer *out = d->notification ? &null_pk : pk;
    if (d->notification)
        srv->counters.notifications++;
    else
        srv->counters.requests++;
    pcp_error err = {0};
    int rc = PCP_OK;
    switch (d->method->id) {
    case PCP_M_LABEL: rc = labelled(srv, e, &label, d->msgid, out, &err); break;
    case PCP_M_PREDICT: rc = predicted(srv, e, d->msgid, out); break;
    case PCP_M_LABEL_BATCH: rc = batch_labelled(srv, e, n, d->msgid, out, &err); break;
    default: rc = batch_predicted(srv, e, n, d->msgid, out); break;
    }
    conclude(srv, rc, d->notification, !d->notification, d->msgid, &err, pk);
    return true;
}
