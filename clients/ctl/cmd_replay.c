/* cmd_replay.c - `perceptronctl replay MODEL FILE`: stream a labelled data
 * file through the daemon as pipelined `label` requests and print the
 * progressive-validation result: every prediction is made before its label is
 * learned, so the mistakes counted are those of the online learner on unseen
 * examples.  Labels are sent as +1/-1 (libsvm 0 is -1; --positive names the
 * +1 class) unless the model is multiclass or --multiclass is given, then as
 * class names.  A model that does not exist is created multiclass when the
 * labels are class names (ctl_stream_prepare).
 *
 * --report adds the evaluation report (report.h) of those progressive
 * predictions.  Its log loss needs the probability the model would have served
 * with each prediction; `label` answers carry no probability, but they carry
 * the score the model calibrates on, so for a binary model this replay created
 * the calibration is run here too (lib/calib.c, the daemon's own code, fed the
 * same progressive scores in the same order): the probabilities are exactly the
 * model's.  A model that existed has a calibration history the client does not
 * know, and gets no log loss rather than a wrong one; --curve FILE draws the mistake rate against the examples
 * (curve.h).  After an error or Ctrl-C the partial figures go to stderr,
 * counting only what the daemon learned. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clients/ctl/curve.h"
#include "clients/ctl/report.h"
#include "clients/ctl/stream.h"
#include "lib/calib.h"

enum { OPT_REPORT = 0x3001, OPT_CURVE };

typedef struct state {
    ctl_stream_opts o;
    bool report_wanted;
    const char *curve_path;
    bool multiclass;
    uint64_t mistakes, updates;
    ctl_report *report;
    ctl_curve *curve;
    bool mirror;    /* binary, created by this replay: calib is the model's own */
    pc_calib calib; /* the model's calibration, replayed */
} state;

static int on_opt(ctl_ctx *ctx, int opt, const char *arg, void *ud)
{
    state *s = ud;
    switch (opt) {
    case OPT_REPORT: s->report_wanted = true; return 0;
    case OPT_CURVE:
        if (!ctl_curve_path_ok(arg))
            return ctl_usage_error(ctx, "--curve draws a .png or .svg file, not '%s'", arg);
        s->curve_path = arg;
        return 0;
    default: return ctl_stream_opt(ctx, opt, arg, &s->o);
    }
}

static int on_result(void *ud, const ctl_stream_item *it)
{
    state *s = ud;
    bool mistake = ctl_bool(it->result, "mistake");
    s->mistakes += mistake;
    s->updates += ctl_bool(it->result, "updated");
    if (s->curve)
        ctl_curve_add(s->curve, mistake);
    if (s->report) {
        char truth[16], pred[300];
        const msgpack_object *p = pcc_map_get(it->result, "predicted");
        const char *t = it->label;
        if (!s->multiclass) {
            snprintf(truth, sizeof truth, "%d", it->y);
            t = truth;
        }
        const char *pt = p && p->type != MSGPACK_OBJECT_NIL ? ctl_text(p, pred, sizeof pred) : NULL;
        double score = pcc_number(pcc_map_get(it->result, "score")), prob = NAN;
        if (s->mirror) {
            /* the probability of the true class before learning, as predict
             * would have answered it; then the model's own calibration step */
            double p1 = pc_calib_prob(&s->calib, score);
            prob = it->y > 0 ? p1 : 1 - p1;
            pc_calib_learn(&s->calib, score, it->y);
        }
        if (!ctl_report_add(s->report, t, pt, score, prob))
            return CTL_EXIT_IO;
    }
    return 0;
}

int ctl_cmd_replay(ctl_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {CTL_STREAM_LONGOPTS,
                                              {"report", no_argument, NULL, OPT_REPORT},
                                              {"curve", required_argument, NULL, OPT_CURVE},
                                              CTL_COMMON_LONGOPTS,
                                              {NULL, 0, NULL, 0}};
    state s = {0};
    ctl_stream_defaults(&s.o);
    int rc = ctl_parse(ctx, argc, argv, CTL_STREAM_SHORTOPTS, longopts, on_opt, &s);
    if (rc != CTL_CONTINUE)
        return rc;
    const ctl_stream_opts *o = &s.o;
    if (o->ds.label_column && strcmp(o->ds.label_column, "none") == 0)
        return ctl_usage_error(ctx, "replay learns from labels: --label-column cannot be none");
    const char *model = ctx->args[0], *path = ctx->args[1];
    ctl_model_kind k;
    if ((rc = ctl_model_probe(ctx, model, false, &k)))
        return rc;
    bool existed = k.exists;
    if ((rc = ctl_stream_prepare(ctx, model, path, o, &k)))
        return rc;
    s.multiclass = k.multiclass || o->multiclass;
    s.mirror = !existed && !s.multiclass;
    if (s.report_wanted && !(s.report = ctl_report_new(!s.multiclass)))
        return ctl_io_error(ctx, "out of memory");
    if (s.curve_path && !(s.curve = malloc(sizeof *s.curve))) {
        ctl_report_free(s.report);
        return ctl_io_error(ctx, "out of memory");
    }
    if (s.curve)
        ctl_curve_init(s.curve);
    ctl_stream_result r;
    ctl_stream_run(ctx, "label", model, path, o, &k, s.multiclass, on_result, &s, &r);
    ctl_stream_warn(o, &r, "replay");
    double rate = r.answered ? (double)s.mistakes / (double)r.answered : NAN;
    double speed = r.seconds > 0 ? (double)r.answered / r.seconds : NAN;
    int status = r.status;
    char cerr[512] = "";
    if (s.curve && ctl_curve_plot(s.curve, s.curve_path, model, cerr, sizeof cerr) != 0) {
        ctl_errorf(ctx, "%s", cerr);
        if (!status)
            status = CTL_EXIT_IO;
    }
    if (ctx->json) {
        ctl_doc d;
        ctl_doc_init(&d);
        msgpack_pack_map(&d.pk, 8 + (r.status != 0) + (s.report != NULL) + (s.curve_path != NULL) +
                                    r.interrupted);
        ctl_doc_kv_str(&d, "model", model);
        ctl_doc_kv_str(&d, "file", path);
        ctl_doc_kv_u64(&d, "examples", r.answered);
        ctl_doc_kv_u64(&d, "mistakes", s.mistakes);
        ctl_doc_kv_double(&d, "mistake_rate", rate);
        ctl_doc_kv_u64(&d, "updates", s.updates);
        ctl_doc_kv_double(&d, "seconds", r.seconds);
        ctl_doc_kv_double(&d, "examples_per_second", speed);
        if (r.interrupted) {
            ctl_pack_str(&d.pk, "interrupted");
            msgpack_pack_true(&d.pk);
        }
        if (s.report) {
            ctl_pack_str(&d.pk, "report");
            ctl_report_pack(s.report, &d.pk);
        }
        if (s.curve_path)
            ctl_doc_kv_str(&d, "curve", cerr[0] ? NULL : s.curve_path);
        if (r.status) {
            ctl_pack_str(&d.pk, "error");
            ctl_stream_pack_error(&d.pk, &r);
        }
        ctl_doc_print(&d);
    } else {
        /* After an error the partial result goes to stderr: stdout holds only
         * complete results. */
        FILE *out = r.status ? stderr : stdout;
        char b[64];
        if (r.interrupted)
            fprintf(out, "interrupted after %llu examples (learned; the rest of the file was not "
                         "sent):\n",
                    (unsigned long long)r.answered);
        else if (r.status)
            fprintf(out, "stopped after %llu examples learned:\n", (unsigned long long)r.answered);
        fprintf(out, "%-14s %llu\n", "examples", (unsigned long long)r.answered);
        fprintf(out, "%-14s %llu\n", "mistakes", (unsigned long long)s.mistakes);
        fprintf(out, "%-14s %s\n", "mistake rate", ctl_fmt_rate(rate, b, sizeof b));
        fprintf(out, "%-14s %llu\n", "updates", (unsigned long long)s.updates);
        fprintf(out, "%-14s %.3f s\n", "elapsed", r.seconds);
        fprintf(out, "%-14s %.0f examples/s\n", "throughput", isnan(speed) ? 0 : speed);
        if (s.report) {
            fprintf(out, "\nprogressive validation report (each prediction before its label)\n");
            ctl_report_print(s.report, out);
        }
        if (s.curve_path && !cerr[0])
            fprintf(out, "curve: %s\n", s.curve_path);
    }
    ctl_report_free(s.report);
    free(s.curve);
    return status;
}
