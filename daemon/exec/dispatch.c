/* dispatch.c - the method handlers, one function per method, in a table
 * indexed by proto's method ids.
 *
 * proto/ has already framed the message, checked the envelope and the number
 * of params against the method's row; a handler checks the params' types,
 * does the work and packs its result.  A handler either succeeds and packs
 * `[1, msgid, nil, result]`, or returns an error code without packing
 * anything, and run() packs the error: a response is never half written.
 * Notifications get a packer that discards.  The result maps of the
 * administrative methods are packed by replies.c.
 */
#include "daemon/exec/dispatch.h"
#include "daemon/exec/auth.h"
#include "daemon/exec/explain.h"
#include "daemon/exec/position.h"
#include "daemon/journal/journal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/budget.h"
#include "daemon/core/models.h"
#include "daemon/core/persist.h"
#include "daemon/exec/join.h"
#include "daemon/exec/lifecycle.h"
#include "daemon/exec/replies.h"
#include "daemon/exec/scan.h"
#include "daemon/model/challengers.h"
#include "daemon/model/hints.h"
#include "daemon/model/pending.h"

typedef int (*handler_fn)(pcd_req *r);

static void ok(pcd_req *r)
{
    pcp_pack_response_ok(r->pk, r->msgid);
}

/* With {"explain": K}: an explainer for examples of up to max_features
 * features, allocated before the answer is packed (*xp stays NULL without). */
static int explainer(pcd_req *r, const pcd_opts *o, size_t max_features, pcd_explainer **xp)
{
    *xp = NULL;
    if (!o->explain)
        return PCP_OK;
    *xp = pcd_explainer_new(max_features, pc_model_class_count(r->model->model), o->explain);
    return *xp ? PCP_OK : pcd_req_fail(r, PCP_E_INTERNAL, "out of memory explaining");
}

/* Example j's prediction: the experts' when the model combines them (who:
 * the expert followed), else the champion's (its classes' scores in
 * srv->scores). */
static void predict_one(pcd_req *r, uint32_t j, bool combined, pc_prediction *p, size_t *who)
{
    pcd_model *e = r->model;
    *who = 0;
    if (combined)
        pcd_challengers_predict(e->challengers, e->model, &r->srv->xs[j], p, who);
    else
        pc_model_predict(e->model, &r->srv->xs[j], p, r->srv->scores);
}

/* What the answer to example j's prediction p carries besides it, made
 * before it is packed: the explanation into xp (NULL: not asked) and, with
 * hints on, the hint into *h, counted as answered (true: hinted).  Both
 * are of the champion's score (a vote of experts has none): when combined,
 * the champion predicts once more, for both. */
static bool prediction_extras(pcd_req *r, uint32_t j, const pc_prediction *p, bool combined,
                              uint32_t explain, pcd_explainer *xp, pcd_hint *h)
{
    pcd_model *e = r->model;
    bool hinted = pcd_hints_on(e);
    if (!hinted && !xp)
        return false;
    const pc_svec *x = &r->srv->xs[j];
    const double *scores = r->srv->scores;
    pc_prediction own;
    if (combined) {
        scores = xp ? xp->scores : NULL;
        pc_model_predict(e->model, x, &own, xp ? xp->scores : NULL);
        p = &own;
    }
    if (xp) {
        pcd_explain(xp, e->model, x, p, scores, explain);
        /* the model knows the names of what it learned: the request's are
         * read again only for a listed feature it never learned from */
        if (!pcd_explain_known_names(xp, &e->names))
            pcd_req_names(r, j, pcd_explain_name, xp);
    }
    if (hinted) {
        *h = pcd_hints_decide(e, x, p, pcd_hints_clock(e));
        e->pending->hint_predictions++;
        e->pending->hint_asked_predictions += h->ask;
    }
    return hinted;
}

/* The answer to a prediction: its map (the experts' or the champion's),
 * then the hint and the explanation, and room for `more` entries the caller
 * packs after them. */
static void pack_prediction(pcd_req *r, const pc_prediction *p, size_t who, bool combined,
                            bool hinted, const pcd_hint *h, const pcd_explainer *xp,
                            uint32_t more)
{
    pc_model *m = r->model->model;
    uint32_t extra = 2 * hinted + (xp != NULL) + more;
    if (combined)
        pcd_reply_experts_prediction(r->pk, m, r->model->challengers, p, who, extra);
    else
        pcp_pack_prediction(r->pk, m, p, r->srv->scores, extra);
    if (hinted) {
        pcp_pack_str(r->pk, "ask");
        if (h->ask)
            msgpack_pack_true(r->pk);
        else
            msgpack_pack_false(r->pk);
        pcp_pack_str(r->pk, "ask_probability");
        msgpack_pack_double(r->pk, h->probability);
    }
    if (xp)
        pcd_reply_explanation(r->pk, r->model, xp);
}

static int h_predict(pcd_req *r)
{
    int rc = pcd_req_example(r);
    if (rc)
        return rc;
    pcd_opts o;
    pcd_explainer *xp;
    if ((rc = pcd_opts_of(r, 2, PCD_OPT_EVENT | PCD_OPT_AT | PCD_OPT_EXPLAIN | PCD_OPT_AFTER, &o)) ||
        (rc = explainer(r, &o, r->srv->xs[0].n, &xp)))
        return rc;
    pcd_join_prefetch(r, o.event);
    pc_prediction p;
    size_t who;
    bool combined = pcd_challengers_combine(r->model->challengers);
    predict_one(r, 0, combined, &p, &who);
    r->srv->counters.predicts++;
    /* before an event's evictions may teach the model default labels */
    pcd_hint h;
    bool hinted = prediction_extras(r, 0, &p, combined, o.explain, xp, &h);
    /* with an event: remember it under its ID (its label may come: its
     * names are noted now, while they are at hand) */
    if (o.event) {
        uint8_t said = !hinted ? PCD_HINT_NONE : h.ask ? PCD_HINT_ASKED : PCD_HINT_UNASKED;
        if ((rc = pcd_join_remember(r, &o, &p, said))) {
            pcd_explainer_free(xp);
            return rc;
        }
        pcd_req_note_names(r, NULL);
    }
    ok(r);
    /* with an event it is a write: its answer says where it is in the log */
    pack_prediction(r, &p, who, combined, hinted, &h, xp, o.event != NULL);
    if (o.event)
        pcd_pack_position(r);
    pcd_explainer_free(xp);
    return PCP_OK;
}

static int h_label(pcd_req *r)
{
    int rc = pcd_req_example(r);
    if (rc)
        return rc;
    pc_model *m = r->model->model;
    pc_label y;
    if ((rc = pcp_label(&r->label, pc_model_config_of(m)->multiclass, &y, &r->err)))
        return rc;
    if ((rc = pcd_budget_classes(r->srv, r->model, &y, 1, &r->err)))
        return rc;
    pc_outcome o;
    pc_error perr;
    pc_status st = pc_model_label(m, &r->srv->xs[0], &y, &o, &perr);
    if (st != PC_OK)
        return pcd_req_fail(r, pcp_status_code(st, PCP_E_LABEL), "%s", perr.msg);
    pc_outcome said; /* the champion's outcome, or the experts' */
    pcd_model_learned(r->srv, r->model, &r->srv->xs[0], &y, &o, &said);
    pcd_req_note_names(r, &o);
    r->model->changes++;
    r->srv->counters.labels++;
    ok(r);
    pcp_pack_outcome(r->pk, m, &said, 1);
    pcd_pack_position(r);
    return PCP_OK;
}

static int h_predict_batch(pcd_req *r)
{
    int rc = pcd_req_batch(r);
    if (rc)
        return rc;
    pcd_server *srv = r->srv;
    pcd_opts o;
    pcd_explainer *xp;
    size_t widest = 0;
    for (uint32_t j = 0; j < r->n; j++)
        widest = srv->xs[j].n > widest ? srv->xs[j].n : widest;
    if ((rc = pcd_opts_of(r, 2, PCD_OPT_EXPLAIN | PCD_OPT_AFTER, &o)) ||
        (rc = explainer(r, &o, widest, &xp)))
        return rc;
    bool combined = pcd_challengers_combine(r->model->challengers);
    ok(r);
    msgpack_pack_array(r->pk, r->n);
    for (uint32_t j = 0; j < r->n; j++) {
        pc_prediction p;
        size_t who;
        pcd_hint h;
        predict_one(r, j, combined, &p, &who);
        bool hinted = prediction_extras(r, j, &p, combined, o.explain, xp, &h);
        pack_prediction(r, &p, who, combined, hinted, &h, xp, 0);
    }
    pcd_explainer_free(xp);
    srv->counters.predicts += r->n;
    return PCP_OK;
}

/* The model learns all of the examples or none. */
static int h_label_batch(pcd_req *r)
{
    int rc = pcd_req_batch(r);
    if (rc)
        return rc;
    pcd_server *srv = r->srv;
    if ((rc = pcd_budget_classes(srv, r->model, srv->ys, r->n, &r->err)))
        return rc;
    pc_error perr;
    pc_status st = pc_model_label_batch(r->model->model, srv->xs, srv->ys, r->n, srv->outcomes,
                                        &perr);
    if (st != PC_OK)
        return pcd_req_fail(r, pcp_status_code(st, PCP_E_LABEL), "%s", perr.msg);
    /* each as if labelled alone, in order: example j was learned n - j labels ago */
    for (uint32_t j = 0; j < r->n && pcd_hints_on(r->model); j++)
        pcd_hints_learned(r->model, &srv->xs[j], &srv->outcomes[j].pred, r->n - j,
                          srv->outcomes[j].mistake);
    /* the mistakes of the model's answers: the champion's, or the experts' */
    uint64_t mistakes = pcd_challengers_learn_batch(r->model->challengers, srv->xs, srv->ys, r->n,
                                                    srv->outcomes);
    pcd_model_auto_promote(srv, r->model);
    pcd_req_note_names(r, srv->outcomes);
    uint64_t updates = 0;
    for (uint32_t j = 0; j < r->n; j++)
        updates += srv->outcomes[j].updated;
    r->model->changes++;
    srv->counters.labels += r->n;
    ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_learned(r->pk, r->n, mistakes, updates, pcd_req_position(r, pos));
    return PCP_OK;
}

/* ---- the administrative methods ------------------------------------------ */

static int h_models(pcd_req *r)
{
    size_t n;
    pcd_model **all = pcd_registry_list(&r->srv->models, &n);
    if (!all)
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
    ok(r);
    pcd_reply_models(r->pk, all, n);
    free(all);
    return PCP_OK;
}

static int h_info(pcd_req *r)
{
    int rc = pcd_req_model(r);
    if (rc)
        return rc;
    ok(r);
    pcd_reply_info(r->pk, r->model, pcd_now());
    return PCP_OK;
}

/* weights(model[, class][, top_k]): the largest |weights| with their names. */
static int h_weights(pcd_req *r)
{
    int rc = pcd_req_model(r);
    if (rc)
        return rc;
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
    ok(r);
    pcd_reply_weights(r->pk, e, t->idx, t->w, t->n);
    return PCP_OK;
}

/* create(name[, spec]): a new model from spec (missing keys: the template). */
static int h_create(pcd_req *r)
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
    ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_done(r->pk, "created", e->name, pcd_req_position(r, pos));
    return PCP_OK;
}

static int h_drop(pcd_req *r)
{
    int rc = pcd_req_model(r);
    if (rc)
        return rc;
    char name[PCP_MODEL_NAME_MAX + 1], why[200];
    snprintf(name, sizeof name, "%s", r->model->name);
    int removed = pcd_model_drop(r->srv, r->model, why, sizeof why);
    if (removed < 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "model '%s' dropped, but its snapshots remain: %s", name, why);
    r->model = NULL; /* gone */
    ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_dropped(r->pk, name, (uint64_t)removed, pcd_req_position(r, pos));
    return PCP_OK;
}

static int h_reset(pcd_req *r)
{
    int rc = pcd_req_model(r);
    if (rc)
        return rc;
    pc_error perr;
    if (pc_model_reset(r->model->model, &perr) != PC_OK)
        return pcd_req_fail(r, PCP_E_INTERNAL, "%s", perr.msg);
    if (r->model->pending) /* their served predictions were the old model's */
        pcd_pending_clear(r->model->pending);
    pcd_challengers_reset(r->model->challengers);
    r->model->changes++;
    pcd_info("model %s reset", r->model->name);
    ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_done(r->pk, "reset", r->model->name, pcd_req_position(r, pos));
    return PCP_OK;
}

static int h_save(pcd_req *r)
{
    char why[200] = "";
    int s = pcd_persist_save(r->srv, r->client, r->msgid, r->notification, why, sizeof why);
    if (s < 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "save failed: %s", why);
    if (s > 0)
        return PCD_WAIT;
    ok(r);
    pcd_reply_saved(r->pk, 0);
    return PCP_OK;
}

static int h_stats(pcd_req *r)
{
    ok(r);
    pcd_reply_stats(r->pk, r->srv, pcd_now());
    return PCP_OK;
}

static int h_compare(pcd_req *r)
{
    int rc = pcd_req_model(r);
    if (rc)
        return rc;
    ok(r);
    pcd_reply_compare(r->pk, r->model);
    return PCP_OK;
}

/* promote(model, i): challenger i serves; the champion becomes challenger i. */
static int h_promote(pcd_req *r)
{
    int rc = pcd_req_model(r);
    if (rc)
        return rc;
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
    ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_done(r->pk, "promoted", e->name, pcd_req_position(r, pos));
    return PCP_OK;
}

static int h_ping(pcd_req *r)
{
    ok(r);
    pcp_pack_str(r->pk, "pong");
    return PCP_OK;
}

/* auth(token): the token's rights for this connection (the listener's when
 * they are more).  A token that matches none takes back what an earlier auth
 * gave, and is logged without itself. */
static int h_auth(pcd_req *r)
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
        srv->counters.auth_failures++;
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
    ok(r);
    msgpack_pack_map(r->pk, 2);
    pcp_pack_str(r->pk, "name");
    pcp_pack_str(r->pk, name);
    pcp_pack_str(r->pk, "rights");
    pcp_pack_str(r->pk, pcp_right_name(cl->rights));
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
    [PCP_M_AUTH] = h_auth,
    [PCP_M_LABEL_EVENT] = pcd_join_label,
    [PCP_M_COMPARE] = h_compare,
    [PCP_M_PROMOTE] = h_promote,
    [PCP_M_SNAPSHOTS] = pcd_h_snapshots,
    [PCP_M_ROLLBACK] = pcd_h_rollback,
    [PCP_M_EXPORT] = pcd_h_export,
    [PCP_M_IMPORT] = pcd_h_import,
    [PCP_M_COPY] = pcd_h_copy,
};

bool pcd_dispatch_complete(void)
{
    for (size_t i = 0; i < PCP_M_COUNT; i++)
        if (!handlers[i])
            return false;
    return true;
}

/* ---- the one ending of both paths --------------------------------------- */

static int discard(void *data, const char *buf, size_t len)
{
    (void)data;
    (void)buf;
    (void)len;
    return 0;
}

/* Counts a failed message and answers with its error (requests) or logs it
 * (notifications). */
static void failed(pcd_server *srv, int rc, bool answer, uint32_t msgid, pcp_error *err,
                   msgpack_packer *pk)
{
    srv->counters.errors++;
    srv->counters.errors_by_code[rc & 31]++;
    err->code = (pcp_code)rc;
    if (answer)
        pcp_pack_response_error(pk, msgid, err);
    else
        pcd_debug("dropped a bad notification: %s", err->msg);
}

static void count_latency(pcd_method_counters *mc, double s)
{
    size_t b = 0;
    while (b < PCD_LATENCY_BUCKETS && s > pcd_latency_bounds[b])
        b++;
    mc->le[b]++; /* cumulated when printed */
    mc->seconds += s;
}

/* Runs r's handler; false when the client must wait for its answer. */
static bool run(pcd_req *r, msgpack_packer *pk)
{
    pcd_server *srv = r->srv;
    msgpack_packer null_pk;
    msgpack_packer_init(&null_pk, NULL, discard);
    r->pk = r->notification ? &null_pk : pk;
    if (r->notification)
        srv->counters.notifications++;
    else
        srv->counters.requests++;
    if (r->method->flags & PCP_F_ADMIN)
        pcd_debug("%s from %s", r->method->name, r->client ? r->client->name : "?");
    /* A client's rights first (no client: the journal or log replaying what
     * was allowed when it was written). */
    int rc;
    /* predict's options decide whether it writes: the decoded map (either
     * path's); NULL when not read yet (pcd_dispatch_logged's envelope) */
    const msgpack_object *options =
        r->msg && r->nparams > r->method->min_params ? &r->msg->params[r->method->min_params]
                                                     : r->options;
    bool writes = pcp_method_writes(r->method->id, r->nparams, options);
    pcp_right need = pcp_method_right(r->method, r->nparams, options);
    if (r->client && r->client->rights < need) {
        srv->counters.denied++;
        pcd_debug("%s from %s denied: it has %s", r->method->name, r->client->name,
                  pcp_right_name(r->client->rights));
        rc = pcd_req_fail(r, PCP_E_DENIED, "%s needs the %s right; this connection has %s "
                          "(send auth with a token that grants it)", r->method->name,
                          pcp_right_name(need), pcp_right_name(r->client->rights));
    }
    /* Nothing is changed that the journal could not keep: while it is failed
     * a write is refused before it is applied (reads go on). */
    else if (writes && srv->journal &&
        !pcd_journal_writable(srv->journal, r->err.msg, sizeof r->err.msg))
        rc = PCP_E_INTERNAL;
    /* A client's write that may add to what the daemon holds, once it holds
     * max_memory: refused before it is applied (a drop only frees). */
    else if (writes && r->client && r->method->id != PCP_M_DROP &&
             (rc = pcd_budget_write(srv, &r->err)) != PCP_OK)
        ;
    /* With the shared log a write goes there instead of being applied here:
     * its answer comes when its entry is applied.  The OPEN methods (ping,
     * auth) name no model: the log has nothing to say about them (a token
     * that looks like a model name is still a token). */
    else if (!srv->log_gate || (r->method->flags & PCP_F_OPEN) ||
             (rc = srv->log_gate(srv, r)) == PCP_OK) {
        /* Timed only when someone can read the histogram (metrics.listen):
         * a clock read took 0.1-0.17 us on the 2-core VM (busy), two per
         * request, a few percent of a label's time. */
        double t0 = srv->http ? pcd_monotonic() : 0;
        /* pcd_dispatch_logged's envelope has the model's name alone: it is
         * for the log's gate, which takes or refuses it, never a handler */
        if (r->msg && r->msg->nparams < r->method->min_params)
            rc = pcd_req_fail(r, PCP_E_INTERNAL, "%s reached its handler without its params",
                              r->method->name);
        else
            rc = handlers[r->method->id](r);
        if (srv->http)
            count_latency(&srv->counters.methods[r->method->id], pcd_monotonic() - t0);
    }
    pcd_method_counters *mc = &srv->counters.methods[r->method->id];
    mc->calls++;
    if (rc != PCP_OK && rc != PCD_WAIT && rc != PCD_LOGGED)
        mc->errors[rc & 31]++;
    if (rc == PCD_WAIT)
        return false;
    if (rc == PCD_LOGGED)
        return true;
    if (rc != PCP_OK) {
        failed(srv, rc, !r->notification, r->msgid, &r->err, pk);
        return true;
    }
    /* A WRITES method succeeded: raw[0..len) changed durable state, and
     * replaying those bytes in order redoes it.  This is where a journal
     * appends them.  (A label that failed after auto-creating its model
     * changed state too: the creation is that model's first write.) */
    if (writes && r->model && r->method->id != PCP_M_DROP)
        pcd_budget_recount(srv, r->model);
    if (writes && srv->on_written)
        srv->on_written(srv, r);
    free(r->rewritten);
    return true;
}

bool pcd_dispatch(pcd_server *srv, pcd_client *client, const uint8_t *raw, size_t len,
                  const msgpack_object *obj, msgpack_packer *pk)
{
    pcp_message m = {0};
    pcd_req r = {.srv = srv, .client = client, .raw = raw, .len = len, .msg = &m};
    int rc = pcp_message_parse(obj, &m, &r.err);
    if (rc != PCP_OK) { /* not counted as a request or notification: it is neither */
        failed(srv, rc, m.has_msgid && !m.notification, m.msgid, &r.err, pk);
        return true;
    }
    r.method = m.method;
    r.msgid = m.msgid;
    r.notification = m.notification;
    r.nparams = m.nparams;
    return run(&r, pk);
}

bool pcd_dispatch_logged(pcd_server *srv, pcd_client *client, const uint8_t *raw, size_t len,
                         msgpack_packer *pk)
{
    pcp_direct d;
    if (!srv->log_gate || !pcp_direct_message(raw, len, &srv->limits, &d) ||
        !(d.method->flags & PCP_F_WRITES) || d.model.type != MSGPACK_OBJECT_STR ||
        !pcp_model_name_valid(d.model.via.str.ptr, d.model.via.str.size))
        return false;
    /* the gate reads the method and params[0], the model's name */
    pcp_message m = {.notification = d.notification, .has_msgid = !d.notification,
                     .msgid = d.msgid, .method = d.method, .params = &d.model, .nparams = 1};
    pcd_req r = {.srv = srv, .client = client, .raw = raw, .len = len, .msg = &m,
                 .method = d.method, .msgid = d.msgid, .notification = d.notification,
                 .nparams = d.nparams};
    return run(&r, pk); /* rights, then the gate: appended (answered later) or refused */
}

bool pcd_dispatch_direct(pcd_server *srv, pcd_client *client, pcp_direct *d, msgpack_packer *pk,
                         size_t *len)
{
    /* Only the plain case: a model that exists and examples that decode.
     * Creating a model, and every error up to the features, is left to the
     * general path, so a decline leaves nothing behind (and a message whose
     * bytes have not all arrived creates nothing).  What can go wrong after,
     * a bad label or the model's refusal, is found and worded by the
     * handlers, the same functions as on the general path. */
    if (d->model.type != MSGPACK_OBJECT_STR)
        return false;
    /* With the shared log, writes take the general path (which has the
     * client to answer later), and so do reads until the daemon caught up
     * (the log's gate refuses them). */
    if (srv->log_gate && (pcp_method_writes(d->method->id, d->nparams, NULL) || !srv->logst.ready))
        return false;
    pcd_req r; /* field by field: the hot path, and err.msg need not be zeroed */
    r.srv = srv;
    r.client = client;
    r.method = d->method;
    r.msgid = d->msgid;
    r.notification = d->notification;
    r.err.code = PCP_OK;
    r.err.msg[0] = 0;
    r.raw = d->start;
    r.more_len = 0;
    r.rewritten = NULL;
    r.msg = NULL;
    r.decoded = true;
    r.nparams = d->nparams;
    r.options = NULL;
    r.model = pcd_registry_find(&srv->models, d->model.via.str.ptr, d->model.via.str.size);
    if (!r.model || !pcd_req_direct(&r, d))
        return false;
    *len = r.len;
    run(&r, pk);
    return true;
}
