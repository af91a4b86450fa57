/* admin.c - the administrative methods that are a few lines each: models,
 * info, weights, create, drop, reset, save, stats, compare, promote, ping
 * and auth.
 *
 * Each reads its params, asks the part of the daemon that owns the answer
 * (the registry, persist.c, the challengers, auth.c) and packs the result
 * map through replies.c.  The longer ones have files of their own:
 * lifecycle.c (snapshots, rollback, export, import, copy), join.c
 * (label_event), scan.c (weights in slices).
 */
#include "daemon/exec/handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/budget.h"
#include "daemon/core/models.h"
#include "daemon/core/persist.h"
#include "daemon/exec/auth.h"
#include "daemon/exec/position.h"
#include "daemon/exec/replies.h"
#include "daemon/exec/scan.h"
#include "daemon/model/challengers.h"
#include "daemon/model/pending.h"

int pcd_h_models(pcd_req *r)
{
    size_t n;
    pcd_model **all = pcd_registry_list(&r->srv->models, &n);
    if (!all)
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
    pcd_req_ok(r);
    pcd_reply_models(r->pk, all, n);
    free(all);
    return PCP_OK;
}

int pcd_h_info(pcd_req *r)
{
    pcd_req_ok(r);
    pcd_reply_info(r->pk, r->model, pcd_now());
    return PCP_OK;
}

/* weights(model[, class][, top_k]): the largest |weights| with their names. */
int pcd_h_weights(pcd_req *r)
{
    pcd_model *e = r->model;
    size_t cls = 0;
    uint64_t top = 20;
    /* Positional: (model, class or nil, top_k), or (model, top_k).  An
     * integer in the class's place is refused, not read as top_k. */
    uint32_t np = r->msg->nparams;
    const msgpack_object *c = np == 3 ? &r->msg->params[1] : NULL;
    const msgpack_object *k = np == 3 ? &r->msg->params[2] : np == 2 ? &r->msg->params[1] : NULL;
    if (np == 2 && k->type != MSGPACK_OBJECT_POSITIVE_INTEGER) { /* (model, class) */
        c = k;
        k = NULL;
    }
    if (k && k->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        top = k->via.u64;
    else if (k && k->type != MSGPACK_OBJECT_NIL)
        return pcd_req_fail(r, PCP_E_PARAMS, "weights: top_k (the third parameter) must be a "
                                             "positive integer");
    bool multi = pc_model_config_of(e->model)->multiclass;
    if (c && c->type == MSGPACK_OBJECT_STR) {
        const char *s = c->via.str.ptr;
        int len = (int)c->via.str.size;
        int32_t i = pc_model_class_find(e->model, s, (size_t)len);
        if (i < 0)
            return pcd_req_fail(r, PCP_E_LABEL, "model '%s' has no class '%.*s'", e->name, len, s);
        cls = (size_t)i;
    } else if (c && c->type != MSGPACK_OBJECT_NIL) {
        return pcd_req_fail(r, PCP_E_PARAMS, "weights: the class (the second parameter) must be a "
                                             "class name or nil, not %s; top_k goes third",
                            pcp_type_name(c));
    } else if (multi && pc_model_class_count(e->model) > 1) {
        return pcd_req_fail(r, PCP_E_PARAMS, "model '%s' is multiclass: name one of its %zu "
                                             "classes (weights(model, class, top_k))",
                            e->name, pc_model_class_count(e->model));
    }
    if (top < 1 || top > 10000)
        return pcd_req_fail(r, PCP_E_PARAMS, "top_k must be in [1, 10000]");
    /* O(dim) to find, so kept until the model changes (struct pcd_top) */
    struct pcd_top *t = &e->top;
    bool stale = !t->idx || t->changes != e->changes || t->cls != cls || t->k != top;
    if (stale && pcd_scan_wanted(r, cls))
        return pcd_scan_weights(r, cls, top); /* a slice a turn: others are served meanwhile */
    if (stale) {
        uint32_t *idx = realloc(t->idx, top * sizeof *idx);
        if (idx)
            t->idx = idx;
        double *w = idx ? realloc(t->w, top * sizeof *w) : NULL;
        if (w)
            t->w = w;
        if (!idx || !w) {
            t->k = 0; /* not valid */
            return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory for %llu weights",
                                (unsigned long long)top);
        }
        t->n = pc_model_top_weights(e->model, cls, top, t->idx, t->w);
        t->changes = e->changes;
        t->cls = cls;
        t->k = top;
    }
    pcd_req_ok(r);
    pcd_reply_weights(r->pk, e, t->idx, t->w, t->n);
    return PCP_OK;
}

/* create(name[, spec]): a new model from spec (missing keys: the template). */
int pcd_h_create(pcd_req *r)
{
    const msgpack_object *o = &r->msg->params[0];
    if (o->type != MSGPACK_OBJECT_STR)
        return pcd_req_fail(r, PCP_E_PARAMS, "create takes (name, spec): the name must be a string");
    const char *name = o->via.str.ptr;
    size_t len = o->via.str.size;
    if (!pcp_model_name_valid(name, len))
        return pcd_req_fail(r, PCP_E_SPEC, "invalid model name: %s", PCP_MODEL_NAME_RULE);
    if (pcd_registry_find(&r->srv->models, name, len))
        return pcd_req_fail(r, PCP_E_EXISTS, "model '%.*s' exists (drop it first)", (int)len, name);
    pc_model_config cfg = r->srv->cfg.template_model.cfg;
    const pcd_model_def *t = &r->srv->cfg.template_model;
    pcp_spec s = {.join = t->join, .nchallengers = t->nchallengers, .experts = t->experts};
    memcpy(s.challengers, t->challengers, sizeof s.challengers);
    char **classes = NULL;
    if (r->msg->nparams > 1) {
        if (r->msg->params[1].type != MSGPACK_OBJECT_MAP)
            return pcd_req_fail(r, PCP_E_PARAMS, "the model spec must be a map");
        /* keys the spec leaves out: the template's */
        int rc = pcp_model_spec_full(&r->msg->params[1], &r->srv->cfg.template_model.cfg, &s,
                                     &r->err);
        if (rc)
            return rc;
        cfg = s.c;
        classes = s.classes;
    }
    char copy[PCP_MODEL_NAME_MAX + 1];
    memcpy(copy, name, len);
    copy[len] = 0;
    pcd_model *e = pcd_model_admit(r->srv, copy, &cfg, &s.join, s.challengers, s.nchallengers,
                                   &s.experts, &r->err);
    pcp_classes_free(classes);
    if (!e)
        return r->err.code;
    r->model = e; /* the model this write changed (the journal's position) */
    pcd_req_ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_done(r->pk, "created", e->name, pcd_req_position(r, pos));
    return PCP_OK;
}

int pcd_h_drop(pcd_req *r)
{
    char name[PCP_MODEL_NAME_MAX + 1], why[200];
    snprintf(name, sizeof name, "%s", r->model->name);
    int removed = pcd_model_drop(r->srv, r->model, why, sizeof why);
    if (removed < 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "model '%s' dropped, but its snapshots remain: %s", name, why);
    r->model = NULL; /* gone */
    pcd_req_ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_dropped(r->pk, name, (uint64_t)removed, pcd_req_position(r, pos));
    return PCP_OK;
}

int pcd_h_reset(pcd_req *r)
{
    pc_error perr;
    if (pc_model_reset(r->model->model, &perr) != PC_OK)
        return pcd_req_fail(r, PCP_E_INTERNAL, "%s", perr.msg);
    if (r->model->pending) /* their served predictions were the old model's */
        pcd_pending_clear(r->model->pending);
    pcd_challengers_reset(r->model->challengers);
    r->model->changes++;
    pcd_info("model %s reset", r->model->name);
    pcd_req_ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_done(r->pk, "reset", r->model->name, pcd_req_position(r, pos));
    return PCP_OK;
}

int pcd_h_save(pcd_req *r)
{
    char why[200] = "";
    int s = pcd_persist_save(r->srv, r->client, r->msgid, r->notification, why, sizeof why);
    if (s < 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "save failed: %s", why);
    if (s > 0)
        return PCD_WAIT;
    pcd_req_ok(r);
    pcd_reply_saved(r->pk, 0);
    return PCP_OK;
}

int pcd_h_stats(pcd_req *r)
{
    pcd_req_ok(r);
    pcd_reply_stats(r->pk, r->srv, pcd_now());
    return PCP_OK;
}

int pcd_h_compare(pcd_req *r)
{
    pcd_req_ok(r);
    pcd_reply_compare(r->pk, r->model);
    return PCP_OK;
}

/* promote(model, i): challenger i serves; the champion becomes challenger i. */
int pcd_h_promote(pcd_req *r)
{
    pcd_model *e = r->model;
    size_t n = e->challengers ? e->challengers->n : 0;
    const msgpack_object *o = &r->msg->params[1];
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 >= n)
        return pcd_req_fail(r, PCP_E_PARAMS, "model '%s' has %zu challengers: promote takes an "
                            "index in [0, %zu) (see `compare`)", e->name, n, n);
    pcd_challengers_promote(e->challengers, &e->model, (size_t)o->via.u64);
    e->changes++;
    pcd_info("model %s: challenger %llu (%s) promoted", e->name, (unsigned long long)o->via.u64,
             pc_rule_name(pc_model_config_of(e->model)->rule));
    pcd_req_ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_done(r->pk, "promoted", e->name, pcd_req_position(r, pos));
    return PCP_OK;
}

int pcd_h_ping(pcd_req *r)
{
    pcd_req_ok(r);
    pcp_pack_str(r->pk, "pong");
    return PCP_OK;
}

/* auth(token): the token's rights for this connection (the listener's when
 * they are more).  A token that matches none takes back what an earlier auth
 * gave, and is logged without itself. */
int pcd_h_auth(pcd_req *r)
{
    const msgpack_object *o = &r->msg->params[0];
    pcd_client *cl = r->client;
    if (!cl)
        return pcd_req_fail(r, PCP_E_REQUEST, "auth is for connections");
    if (o->type != MSGPACK_OBJECT_STR && o->type != MSGPACK_OBJECT_BIN)
        return pcd_req_fail(r, PCP_E_PARAMS, "auth takes (token): the token must be a string");
    const char *tok = o->type == MSGPACK_OBJECT_STR ? o->via.str.ptr : o->via.bin.ptr;
    size_t len = o->type == MSGPACK_OBJECT_STR ? o->via.str.size : o->via.bin.size;
    const char *name;
    unsigned rights;
    if (!pcd_auth_check(r->srv->auth, tok, len, &name, &rights)) {
        cl->rights = cl->listener_rights;
        cl->user[0] = 0;
        pcd_server *srv = r->srv;
        srv->loop.counters.auth_failures++;
        /* One line a second at most: a client trying tokens must not flood the log. */
        unsigned long long skipped;
        if (pcd_log_limit_ok(&srv->auth_log, 1, &skipped))
            pcd_warn("auth from %s refused: the token matches none of the %zu configured%s "
                     "(%llu more refused since the last such line)", cl->name,
                     pcd_auth_count(srv->auth), srv->auth ? "" : " (auth.tokens_file is not set)",
                     skipped);
        return pcd_req_fail(r, PCP_E_AUTH, "the token is not valid%s",
                            r->srv->auth ? "" : ": this daemon has no tokens (auth.tokens_file)");
    }
    cl->rights = rights > cl->listener_rights ? rights : cl->listener_rights;
    snprintf(cl->user, sizeof cl->user, "%s", name);
    pcd_info("%s authenticated as %s (rights: %s)", cl->name, name, pcp_right_name(cl->rights));
    pcd_req_ok(r);
    msgpack_pack_map(r->pk, 2);
    pcp_pack_str(r->pk, "name");
    pcp_pack_str(r->pk, name);
    pcp_pack_str(r->pk, "rights");
    pcp_pack_str(r->pk, pcp_right_name(cl->rights));
    return PCP_OK;
}
