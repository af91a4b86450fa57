/* cmd_predict.c - `perceptronctl predict MODEL FILE`: classify every example
 * of a data file with pipelined `predict` requests; one line per example on
 * stdout, in file order: the predicted label, the score and the calibrated
 * probability of that label ("-" for a model created with calibrate: false,
 * which answers none), separated by tabs.  The summary
 * goes to stderr (stdout stays data): examples, throughput and, when the file
 * has labels, the mistakes against them (an evaluation on a test set; the
 * model does not learn).
 *
 * --json: one document, streamed so any file size fits:
 *   {"predictions": [{"line": 1, "label": .., "score": .., "scores": {..},
 *                     "probability" or "probabilities": ..}, ...],
 *    "examples": .., "mistakes": .., "seconds": .., ...}
 *
 * `perceptronctl predict MODEL FEATURE[:VALUE]... [--explain K]`: one example
 * from the command line; --explain K also prints the K largest contributions
 * of its features to the score, the bias and the rest (docs/protocol.md,
 * "Explanations"), per class for the predicted class and the runner-up. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/ctl/example.h"
#include "clients/ctl/stream.h"

typedef struct state {
    bool json;
    uint64_t n, mistakes, compared;
} state;

static int on_result(void *ud, const ctl_stream_item *it)
{
    state *s = ud;
    if (it->after_error)
        return 0;
    const msgpack_object *label = pcc_map_get(it->result, "label");
    double score = pcc_number(pcc_map_get(it->result, "score"));
    if (s->json) {
        fputs(s->n ? ",\n    " : "\n    ", stdout);
        fprintf(stdout, "{\"line\": %llu, \"label\": ", (unsigned long long)it->line);
        if (label)
            ctl_json_write(stdout, label, -1);
        else
            fputs("null", stdout);
        fputs(", \"score\": ", stdout);
        ctl_json_number(stdout, score);
        const msgpack_object *scores = pcc_map_get(it->result, "scores");
        if (scores) { /* multiclass: every class's score */
            fputs(", \"scores\": ", stdout);
            ctl_json_write(stdout, scores, -1);
        }
        /* calibrated: binary P(label 1), multiclass one per class */
        const msgpack_object *prob = pcc_map_get(it->result, "probability");
        const msgpack_object *probs = pcc_map_get(it->result, "probabilities");
        if (prob) {
            fputs(", \"probability\": ", stdout);
            ctl_json_write(stdout, prob, -1);
        }
        if (probs) {
            fputs(", \"probabilities\": ", stdout);
            ctl_json_write(stdout, probs, -1);
        }
        fputc('}', stdout);
    } else {
        /* third column: the calibrated probability of the predicted label */
        char b[300];
        double p = NAN;
        const msgpack_object *prob = pcc_map_get(it->result, "probability");
        const msgpack_object *probs = pcc_map_get(it->result, "probabilities");
        if (prob) {
            p = pcc_number(prob);
            if (pcc_number(label) < 0)
                p = 1 - p;
        } else if (probs && label && label->type == MSGPACK_OBJECT_STR) {
            for (uint32_t i = 0; probs->type == MSGPACK_OBJECT_MAP && i < probs->via.map.size; i++) {
                const msgpack_object *k = &probs->via.map.ptr[i].key;
                if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == label->via.str.size &&
                    memcmp(k->via.str.ptr, label->via.str.ptr, k->via.str.size) == 0)
                    p = pcc_number(&probs->via.map.ptr[i].val);
            }
        }
        if (!prob && !probs) /* calibrate: false: the answer has no probability */
            printf("%s\t%.10g\t-\n", ctl_text(label, b, sizeof b), score);
        else
            printf("%s\t%.10g\t%.10g\n", ctl_text(label, b, sizeof b), score, p);
    }
    s->n++;
    /* Mistakes against the file's labels, where they can be compared. */
    if (it->label && label) {
        bool wrong;
        if (label->type == MSGPACK_OBJECT_STR) {
            wrong = label->via.str.size != strlen(it->label) ||
                    memcmp(label->via.str.ptr, it->label, label->via.str.size) != 0;
        } else {
            if (it->y == 0)
                return 0;
            wrong = pcc_number(label) != it->y;
        }
        s->compared++;
        s->mistakes += wrong;
    }
    return ferror(stdout) ? CTL_EXIT_IO : 0;
}

/* One class's explanation as a table: the listed features, the bias and the rest. */
static void print_explanation(const msgpack_object *ex)
{
    static const char *const head[] = {"FEATURE", "INDEX", "VALUE", "SCALED", "WEIGHT",
                                       "CONTRIBUTION"};
    char b[300], i[32], v[64], sv[64], w[64], c[64];
    const msgpack_object *cls = pcc_map_get(ex, "class");
    if (cls)
        printf("\nclass %s: score %s\n", ctl_text(cls, b, sizeof b),
               ctl_fmt_real(pcc_number(pcc_map_get(ex, "score")), v, sizeof v));
    else
        printf("\nscore %s =\n", ctl_fmt_real(pcc_number(pcc_map_get(ex, "score")), v, sizeof v));
    ctl_table t;
    ctl_table_init(&t, 6, head, "lrrrrr");
    const msgpack_object *fs = pcc_map_get(ex, "features");
    for (uint32_t k = 0; fs && fs->type == MSGPACK_OBJECT_ARRAY && k < fs->via.array.size; k++) {
        const msgpack_object *f = &fs->via.array.ptr[k];
        const msgpack_object *name = pcc_map_get(f, "feature");
        snprintf(i, sizeof i, "%.0f", pcc_number(pcc_map_get(f, "index")));
        const char *row[] = {name && name->type == MSGPACK_OBJECT_STR ? ctl_text(name, b, sizeof b)
                                                                      : "?",
                             i, ctl_fmt_real(pcc_number(pcc_map_get(f, "value")), v, sizeof v),
                             ctl_fmt_real(pcc_number(pcc_map_get(f, "scaled")), sv, sizeof sv),
                             ctl_fmt_real(pcc_number(pcc_map_get(f, "weight")), w, sizeof w),
                             ctl_fmt_real(pcc_number(pcc_map_get(f, "contribution")), c, sizeof c)};
        ctl_table_add(&t, row);
    }
    const char *bias[] = {"(bias)", "", "", "", "", ctl_fmt_real(pcc_number(pcc_map_get(ex, "bias")),
                                                            c, sizeof c)};
    ctl_table_add(&t, bias);
    snprintf(b, sizeof b, "(rest: %.0f more)", pcc_number(pcc_map_get(ex, "others")));
    const char *rest[] = {b, "", "", "", "", ctl_fmt_real(pcc_number(pcc_map_get(ex, "rest")), w,
                                                      sizeof w)};
    ctl_table_add(&t, rest);
    ctl_table_print(&t, stdout);
    ctl_table_free(&t);
}

/* `predict MODEL FEATURE[:VALUE] ...`: one example from the command line;
 * explain > 0: with the K largest contributions. */
static int predict_one(ctl_ctx *ctx, const char *model, uint32_t explain)
{
    ctl_example e;
    int rc = ctl_example_parse(ctx, NULL, ctx->args + 1, ctx->nargs - 1, &e);
    if (rc)
        return rc;
    if ((rc = ctl_connect(ctx))) {
        ctl_example_free(&e);
        return rc;
    }
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, "predict", explain ? 3 : 2, &id);
    ctl_pack_str(pk, model);
    ctl_example_pack(pk, &e.ex);
    ctl_example_free(&e);
    if (explain) {
        msgpack_pack_map(pk, 1);
        ctl_pack_str(pk, "explain");
        msgpack_pack_uint32(pk, explain);
    }
    const msgpack_object *res;
    if ((rc = ctl_answer(ctx, id, &res)) != CTL_CONTINUE)
        return rc;
    if (ctx->json) { /* the answer as it came */
        ctl_json_write(stdout, res, 2);
        putchar('\n');
        return CTL_EXIT_OK;
    }
    char b[300], s[64], p[64];
    printf("%-12s %s\n%-12s %s\n", "label", ctl_cell(res, "label", b, sizeof b), "score",
           ctl_fmt_real(pcc_number(pcc_map_get(res, "score")), s, sizeof s));
    const msgpack_object *prob = pcc_map_get(res, "probability");
    if (prob)
        printf("%-12s %s  (of the label 1, calibrated on the model's recent stream)\n",
               "probability", ctl_fmt_real(pcc_number(prob), p, sizeof p));
    const msgpack_object *ask = pcc_map_get(res, "ask"); /* a model with hints.b */
    if (ask && ask->type == MSGPACK_OBJECT_BOOLEAN)
        printf("%-12s %s  (label hint, asked with probability %s)\n", "ask",
               ask->via.boolean ? "yes: its label is worth having" : "no",
               ctl_fmt_real(pcc_number(pcc_map_get(res, "ask_probability")), p, sizeof p));
    const msgpack_object *probs = pcc_map_get(res, "probabilities");
    if (probs && probs->type == MSGPACK_OBJECT_MAP) {
        static const char *const head[] = {"CLASS", "PROBABILITY"};
        ctl_table t;
        ctl_table_init(&t, 2, head, "lr");
        for (uint32_t i = 0; i < probs->via.map.size; i++) {
            char k[300];
            const char *row[] = {ctl_text(&probs->via.map.ptr[i].key, k, sizeof k),
                                 ctl_fmt_real(pcc_number(&probs->via.map.ptr[i].val), p, sizeof p)};
            ctl_table_add(&t, row);
        }
        putchar('\n');
        ctl_table_print(&t, stdout);
        ctl_table_free(&t);
    }
    const msgpack_object *ex = pcc_map_get(res, "explain");
    if (ex && ex->type == MSGPACK_OBJECT_MAP)
        print_explanation(ex);
    for (uint32_t i = 0; ex && ex->type == MSGPACK_OBJECT_ARRAY && i < ex->via.array.size; i++)
        print_explanation(&ex->via.array.ptr[i]);
    return CTL_EXIT_OK;
}

/* FILE, or the words of one example?  One argument that is "-", names a
 * file that exists or holds a '/' is a file. */
static bool is_file_arg(const ctl_ctx *ctx)
{
    const char *a = ctx->args[1];
    return ctx->nargs == 2 && (strcmp(a, "-") == 0 || access(a, F_OK) == 0 || strchr(a, '/'));
}

/* predict's options: a stream's, and --explain K. */
typedef struct predict_opts {
    ctl_stream_opts stream;
    uint32_t explain;
} predict_opts;

#define OPT_EXPLAIN 0x2101

static int predict_opt(ctl_ctx *ctx, int opt, const char *arg, void *ud)
{
    predict_opts *o = ud;
    if (opt != OPT_EXPLAIN)
        return ctl_stream_opt(ctx, opt, arg, &o->stream);
    char *end;
    unsigned long k = strtoul(arg, &end, 10);
    if (*arg < '0' || *arg > '9' || *end || k < 1 || k > 256)
        return ctl_usage_error(ctx, "--explain wants the number of contributions to show, 1 to "
                               "256, not '%s'", arg);
    o->explain = (uint32_t)k;
    return 0;
}

int ctl_cmd_predict(ctl_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {CTL_STREAM_LONGOPTS,
                                              {"explain", required_argument, NULL, OPT_EXPLAIN},
                                              CTL_COMMON_LONGOPTS, {NULL, 0, NULL, 0}};
    predict_opts po = {.explain = 0};
    ctl_stream_defaults(&po.stream);
    int rc = ctl_parse(ctx, argc, argv, CTL_STREAM_SHORTOPTS, longopts, predict_opt, &po);
    if (rc != CTL_CONTINUE)
        return rc;
    ctl_stream_opts o = po.stream;
    if (!is_file_arg(ctx))
        return predict_one(ctx, ctx->args[0], po.explain);
    if (po.explain) /* a file's answers stream as lines: one example's table would not */
        return ctl_usage_error(ctx, "--explain is for one example given on the command line, "
                               "not a file");
    o.ds.labels_optional = true; /* unlabelled lines are classified too */
    const char *model = ctx->args[0], *path = ctx->args[1];
    ctl_model_kind k;
    if ((rc = ctl_model_probe(ctx, model, true, &k)))
        return rc;
    state s = {.json = ctx->json};
    if (s.json)
        fputs("{\n  \"predictions\": [", stdout);
    ctl_stream_result r;
    ctl_stream_run(ctx, "predict", model, path, &o, &k, k.multiclass, on_result, &s, &r);
    /* examples: the predictions written (answers after an error are not) */
    double speed = r.seconds > 0 ? (double)s.n / r.seconds : NAN;
    double rate = s.compared ? (double)s.mistakes / (double)s.compared : NAN;
    if (s.json) {
        fputs(s.n ? "\n  ],\n" : "],\n", stdout);
        printf("  \"model\": ");
        ctl_json_string(stdout, model, strlen(model));
        printf(",\n  \"examples\": %llu,\n  \"labelled\": %llu,\n  \"mistakes\": %llu,\n",
               (unsigned long long)s.n, (unsigned long long)s.compared,
               (unsigned long long)s.mistakes);
        printf("  \"mistake_rate\": ");
        ctl_json_number(stdout, rate);
        printf(",\n  \"seconds\": ");
        ctl_json_number(stdout, r.seconds);
        printf(",\n  \"examples_per_second\": ");
        ctl_json_number(stdout, speed);
        if (r.status) {
            printf(",\n  \"error\": ");
            ctl_doc e;
            ctl_doc_init(&e);
            ctl_stream_pack_error(&e.pk, &r);
            ctl_doc_write(&e, stdout, -1);
        }
        printf("\n}\n");
        return r.status;
    }
    char b[32];
    fprintf(stderr, "%llu examples in %.3f s (%.0f examples/s)", (unsigned long long)s.n,
            r.seconds, isnan(speed) ? 0 : speed);
    if (s.compared)
        fprintf(stderr, "; %llu mistakes against the file's %llu labels (%s)",
                (unsigned long long)s.mistakes, (unsigned long long)s.compared,
                ctl_fmt_rate(rate, b, sizeof b));
    fputc('\n', stderr);
    return r.status;
}
