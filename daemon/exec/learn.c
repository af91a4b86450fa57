/* learn.c - the learning methods: predict, label and their batches.
 *
 * The handlers the method table (dispatch.c) calls for the four methods a
 * service sends all day.  The direct path (proto/direct.c) and the general
 * one both end here with the model and the examples already read into the
 * request (request.c); a handler learns or predicts, and packs the answer
 * with what the model adds to it: the experts' vote, the label hint, the
 * explanation, the write's position.  label_event, the fifth, is join.c's.
 */
#include "daemon/exec/handlers.h"

#include "daemon/core/budget.h"
#include "daemon/core/models.h"
#include "daemon/exec/explain.h"
#include "daemon/exec/join.h"
#include "daemon/exec/position.h"
#include "daemon/exec/replies.h"
#include "daemon/model/challengers.h"
#include "daemon/model/hints.h"
#include "daemon/model/pending.h"

/* With {"explain": K}: the loop's explainer made ready for examples of up
 * to max_features features before the answer is packed (*xp stays NULL
 * without). */
static int explainer(pcd_req *r, const pcd_opts *o, size_t max_features, pcd_explainer **xp)
{
    *xp = NULL;
    if (!o->explain)
        return PCP_OK;
    *xp = pcd_explainer_for(&r->srv->loop.explainer, max_features,
                            pc_model_class_count(r->model->model), o->explain);
    return *xp ? PCP_OK : pcd_req_fail(r, PCP_E_INTERNAL, "out of memory explaining");
}

/* Example j's prediction: the experts' when the model combines them (who:
 * the expert followed), else the champion's (its classes' scores in
 * srv->loop.scores). */
static void predict_one(pcd_req *r, uint32_t j, bool combined, pc_prediction *p, size_t *who)
{
    pcd_model *e = r->model;
    *who = 0;
    if (combined)
        pcd_challengers_predict(e->challengers, e->model, &r->srv->loop.xs[j], p, who);
    else
        pc_model_predict(e->model, &r->srv->loop.xs[j], p, r->srv->loop.scores);
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
    const pc_svec *x = &r->srv->loop.xs[j];
    const double *scores = r->srv->loop.scores;
    pc_prediction own;
    if (combined) {
        scores = xp ? xp->scores : NULL;
        pc_model_predict(e->model, x, &own, xp ? xp->scores : NULL);
        p = &own;
    }
    if (xp) {
        pcd_explain(xp, e->model, x, p, scores, explain);
        /* named as this request named them (kept as it was read), else, a
         * feature sent by index, as the model remembers it */
        pcd_req_names(r, j, pcd_explain_name, xp);
        pcd_explain_known_names(xp, &e->names);
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
        pcp_pack_prediction(r->pk, m, p, r->srv->loop.scores, extra);
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

int pcd_h_predict(pcd_req *r)
{
    int rc;
    pcd_opts o;
    pcd_explainer *xp;
    if ((rc = pcd_opts_of(r, 2, PCD_OPT_EVENT | PCD_OPT_AT | PCD_OPT_EXPLAIN | PCD_OPT_AFTER, &o)) ||
        (rc = explainer(r, &o, r->srv->loop.xs[0].n, &xp)))
        return rc;
    pcd_join_prefetch(r, o.event);
    pc_prediction p;
    size_t who;
    bool combined = pcd_challengers_combine(r->model->challengers);
    predict_one(r, 0, combined, &p, &who);
    r->srv->loop.counters.predicts++;
    /* before an event's evictions may teach the model default labels */
    pcd_hint h;
    bool hinted = prediction_extras(r, 0, &p, combined, o.explain, xp, &h);
    /* with an event: remember it under its ID (its label may come: its
     * names are noted now, while they are at hand) */
    if (o.event) {
        uint8_t said = !hinted ? PCD_HINT_NONE : h.ask ? PCD_HINT_ASKED : PCD_HINT_UNASKED;
        if ((rc = pcd_join_remember(r, &o, &p, said)))
            return rc;
        pcd_req_note_names(r, NULL);
    }
    pcd_req_ok(r);
    /* with an event it is a write: its answer says where it is in the log */
    pack_prediction(r, &p, who, combined, hinted, &h, xp, o.event != NULL);
    if (o.event)
        pcd_pack_position(r);
    return PCP_OK;
}

int pcd_h_label(pcd_req *r)
{
    int rc;
    pc_model *m = r->model->model;
    pc_label y;
    if ((rc = pcp_label(&r->label, pc_model_config_of(m)->multiclass, &y, &r->err)))
        return rc;
    if ((rc = pcd_budget_classes(r->srv, r->model, &y, 1, &r->err)))
        return rc;
    pc_outcome o;
    pc_error perr;
    pc_status st = pc_model_label(m, &r->srv->loop.xs[0], &y, &o, &perr);
    if (st != PC_OK)
        return pcd_req_fail(r, pcp_status_code(st, PCP_E_LABEL), "%s", perr.msg);
    pc_outcome said; /* the champion's outcome, or the experts' */
    pcd_model_learned(r->srv, r->model, &r->srv->loop.xs[0], &y, &o, &said);
    pcd_req_note_names(r, &o);
    r->model->changes++;
    r->srv->loop.counters.labels++;
    pcd_req_ok(r);
    pcp_pack_outcome(r->pk, m, &said, 1);
    pcd_pack_position(r);
    return PCP_OK;
}

int pcd_h_predict_batch(pcd_req *r)
{
    int rc;
    pcd_server *srv = r->srv;
    pcd_opts o;
    pcd_explainer *xp;
    size_t widest = 0;
    for (uint32_t j = 0; j < r->n; j++)
        widest = srv->loop.xs[j].n > widest ? srv->loop.xs[j].n : widest;
    if ((rc = pcd_opts_of(r, 2, PCD_OPT_EXPLAIN | PCD_OPT_AFTER, &o)) ||
        (rc = explainer(r, &o, widest, &xp)))
        return rc;
    bool combined = pcd_challengers_combine(r->model->challengers);
    pcd_req_ok(r);
    msgpack_pack_array(r->pk, r->n);
    for (uint32_t j = 0; j < r->n; j++) {
        pc_prediction p;
        size_t who;
        pcd_hint h;
        predict_one(r, j, combined, &p, &who);
        bool hinted = prediction_extras(r, j, &p, combined, o.explain, xp, &h);
        pack_prediction(r, &p, who, combined, hinted, &h, xp, 0);
    }
    srv->loop.counters.predicts += r->n;
    return PCP_OK;
}

/* The model learns all of the examples or none. */
int pcd_h_label_batch(pcd_req *r)
{
    int rc;
    pcd_server *srv = r->srv;
    if ((rc = pcd_budget_classes(srv, r->model, srv->loop.ys, r->n, &r->err)))
        return rc;
    pc_error perr;
    pc_status st = pc_model_label_batch(r->model->model, srv->loop.xs, srv->loop.ys, r->n,
                                        srv->loop.outcomes,
                                        &perr);
    if (st != PC_OK)
        return pcd_req_fail(r, pcp_status_code(st, PCP_E_LABEL), "%s", perr.msg);
    /* each as if labelled alone, in order: example j was learned n - j labels ago */
    for (uint32_t j = 0; j < r->n; j++)
        pcd_hints_learned(r->model, &srv->loop.xs[j], &srv->loop.outcomes[j].pred, r->n - j,
                          srv->loop.outcomes[j].mistake);
    /* the mistakes of the model's answers: the champion's, or the experts' */
    uint64_t mistakes = pcd_challengers_learn_batch(r->model->challengers, srv->loop.xs,
                                                    srv->loop.ys, r->n,
                                                    srv->loop.outcomes);
    pcd_model_auto_promote(srv, r->model);
    pcd_req_note_names(r, srv->loop.outcomes);
    uint64_t updates = 0;
    for (uint32_t j = 0; j < r->n; j++)
        updates += srv->loop.outcomes[j].updated;
    r->model->changes++;
    srv->loop.counters.labels += r->n;
    pcd_req_ok(r);
    char pos[PCP_POSITION_MAX];
    pcd_reply_learned(r->pk, r->n, mistakes, updates, pcd_req_position(r, pos));
    return PCP_OK;
}
