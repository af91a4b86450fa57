/* cmd_evaluate.c - `perceptronctl evaluate MODEL FILE`: classify every
 * labelled example of a test file with pipelined `predict` requests (the
 * model does not learn) and print the evaluation report (report.h):
 * accuracy, per-class precision / recall / F1, the confusion matrix, and for
 * a binary model the ROC AUC of its score and the log loss of the calibrated
 * probability the daemon returns (none for a model created with calibrate:
 * false, which answers no probability: the report says so).  --json prints
 * the same as one document. */
#include <math.h>
#include <string.h>

#include "clients/ctl/report.h"
#include "clients/ctl/stream.h"

typedef struct state {
    ctl_ctx *ctx;
    bool multiclass;
    ctl_report *report;
    ctl_stream_result *r;
} state;

/* The probability the model gave the true class; NaN when the answer has none. */
static double prob_of_truth(const msgpack_object *res, bool multiclass, const char *truth, int y)
{
    if (!multiclass) {
        double p = pcc_number(pcc_map_get(res, "probability"));
        return isnan(p) ? NAN : y > 0 ? p : 1 - p;
    }
    const msgpack_object *ps = pcc_map_get(res, "probabilities");
    if (!ps || ps->type != MSGPACK_OBJECT_MAP)
        return NAN;
    double p = pcc_number(pcc_map_get(ps, truth));
    return isnan(p) ? 0 : p; /* a class the model does not know: probability 0 */
}

static int on_result(void *ud, const ctl_stream_item *it)
{
    state *s = ud;
    if (it->after_error)
        return 0;
    if (!it->label) {
        ctl_errorf(s->ctx, "line %llu has no label: evaluate compares predictions with labels",
                   (unsigned long long)it->line);
        return CTL_EXIT_DATA;
    }
    char truth[16], pred[300];
    const char *t = it->label;
    if (!s->multiclass) {
        if (it->y == 0) {
            ctl_errorf(s->ctx,
                       "line %llu: label '%s' is not binary (+1, 1, -1 or 0) and the model is "
                       "binary; --positive LABEL names the +1 class",
                       (unsigned long long)it->line, it->label);
            return CTL_EXIT_DATA;
        }
        snprintf(truth, sizeof truth, "%d", it->y);
        t = truth;
    }
    if (s->multiclass)
        ctl_stream_note_class(s->r, it->result, it->label);
    const msgpack_object *p = pcc_map_get(it->result, "label");
    const char *pt = p && p->type != MSGPACK_OBJECT_NIL ? ctl_text(p, pred, sizeof pred) : NULL;
    double score = pcc_number(pcc_map_get(it->result, "score"));
    if (!ctl_report_add(s->report, t, pt, score,
                        prob_of_truth(it->result, s->multiclass, it->label, it->y)))
        return CTL_EXIT_IO;
    return 0;
}

int ctl_cmd_evaluate(ctl_ctx *ctx, int argc, char **argv)
{
    ctl_stream_opts o;
    int rc = ctl_stream_parse(ctx, argc, argv, &o);
    if (rc != CTL_CONTINUE)
        return rc;
    if (o.ds.label_column && strcmp(o.ds.label_column, "none") == 0)
        return ctl_usage_error(ctx, "evaluate compares with labels: --label-column cannot be none");
    const char *model = ctx->args[0], *path = ctx->args[1];
    ctl_model_kind k;
    if ((rc = ctl_model_probe(ctx, model, true, &k)))
        return rc;
    state s = {.ctx = ctx, .multiclass = k.multiclass, .report = ctl_report_new(!k.multiclass)};
    if (!s.report)
        return ctl_io_error(ctx, "out of memory");
    if (k.uncalibrated)
        ctl_report_no_loss(s.report, "the model has calibrate: false, so no probabilities");
    ctl_stream_result r;
    s.r = &r;
    ctl_stream_run(ctx, "predict", model, path, &o, &k, k.multiclass, on_result, &s, &r);
    ctl_stream_warn(&o, &r, "evaluate");
    if (ctx->json) {
        ctl_doc d;
        ctl_doc_init(&d);
        msgpack_pack_map(&d.pk, 4 + (r.status != 0));
        ctl_doc_kv_str(&d, "model", model);
        ctl_doc_kv_str(&d, "file", path);
        ctl_pack_str(&d.pk, "report");
        ctl_report_pack(s.report, &d.pk);
        ctl_doc_kv_double(&d, "seconds", r.seconds);
        if (r.status) {
            ctl_pack_str(&d.pk, "error");
            ctl_stream_pack_error(&d.pk, &r);
        }
        ctl_doc_print(&d);
    } else {
        FILE *out = r.status ? stderr : stdout;
        if (r.status)
            fprintf(out, "stopped: the report covers the %llu examples before the error:\n",
                    (unsigned long long)ctl_report_examples(s.report));
        fprintf(out, "model %s on %s (the model does not learn)\n", model, path);
        ctl_report_print(s.report, out);
    }
    ctl_report_free(s.report);
    return r.status;
}
