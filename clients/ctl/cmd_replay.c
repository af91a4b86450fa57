/* cmd_replay.c - `perceptronctl replay MODEL FILE`: stream a labelled data
 * file through the daemon as pipelined `label` requests and print the
 * progressive-validation result: every prediction is made before its label is
 * learned, so the mistakes counted are those of the online learner on unseen
 * examples.  Labels are sent as +1/-1 (libsvm 0 is -1) unless the model is
 * multiclass or --multiclass is given, then as class names. */
#include <math.h>
#include <string.h>

#include "clients/ctl/stream.h"

typedef struct counts {
    uint64_t mistakes, updates;
} counts;

static int on_result(void *ud, const ctl_stream_item *it)
{
    counts *c = ud;
    c->mistakes += ctl_bool(it->result, "mistake");
    c->updates += ctl_bool(it->result, "updated");
    return 0;
}

int ctl_cmd_replay(ctl_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {CTL_STREAM_LONGOPTS, CTL_COMMON_LONGOPTS,
                                              {NULL, 0, NULL, 0}};
    ctl_stream_opts o;
    ctl_stream_defaults(&o);
    int rc = ctl_parse(ctx, argc, argv, CTL_STREAM_SHORTOPTS, longopts, ctl_stream_opt, &o);
    if (rc != CTL_CONTINUE)
        return rc;
    if (o.ds.label_column && strcmp(o.ds.label_column, "none") == 0)
        return ctl_usage_error(ctx, "replay learns from labels: --label-column cannot be none");
    if ((rc = ctl_connect(ctx)))
        return rc;
    const char *model = ctx->args[0], *path = ctx->args[1];
    ctl_model_kind k;
    if ((rc = ctl_model_probe(ctx, model, &k)))
        return rc;
    counts c = {0};
    ctl_stream_result r;
    ctl_stream_run(ctx, "label", model, path, &o, &k, k.multiclass || o.multiclass, on_result, &c,
                   &r);
    double rate = r.answered ? (double)c.mistakes / (double)r.answered : NAN;
    double speed = r.seconds > 0 ? (double)r.answered / r.seconds : NAN;
    if (ctx->json) {
        ctl_doc d;
        ctl_doc_init(&d);
        msgpack_pack_map(&d.pk, r.status ? 9 : 8);
        ctl_doc_kv_str(&d, "model", model);
        ctl_doc_kv_str(&d, "file", path);
        ctl_doc_kv_u64(&d, "examples", r.answered);
        ctl_doc_kv_u64(&d, "mistakes", c.mistakes);
        ctl_doc_kv_double(&d, "mistake_rate", rate);
        ctl_doc_kv_u64(&d, "updates", c.updates);
        ctl_doc_kv_double(&d, "seconds", r.seconds);
        ctl_doc_kv_double(&d, "examples_per_second", speed);
        if (r.status) {
            ctl_pack_str(&d.pk, "error");
            msgpack_pack_map(&d.pk, 2);
            ctl_pack_str(&d.pk, "code"); /* null: a data or I/O error, not the daemon's */
            r.error_code >= 0 ? msgpack_pack_int64(&d.pk, r.error_code) : msgpack_pack_nil(&d.pk);
            ctl_doc_kv_str(&d, "message", r.error);
        }
        ctl_doc_print(&d);
        return r.status;
    }
    /* After an error the partial result goes to stderr: stdout holds only
     * complete results. */
    FILE *out = r.status ? stderr : stdout;
    char b[64];
    if (r.status)
        fprintf(out, "stopped after %llu examples:\n", (unsigned long long)r.answered);
    fprintf(out, "%-14s %llu\n", "examples", (unsigned long long)r.answered);
    fprintf(out, "%-14s %llu\n", "mistakes", (unsigned long long)c.mistakes);
    fprintf(out, "%-14s %s\n", "mistake rate", ctl_fmt_rate(rate, b, sizeof b));
    fprintf(out, "%-14s %llu\n", "updates", (unsigned long long)c.updates);
    fprintf(out, "%-14s %.3f s\n", "elapsed", r.seconds);
    fprintf(out, "%-14s %.0f examples/s\n", "throughput", isnan(speed) ? 0 : speed);
    return r.status;
}
