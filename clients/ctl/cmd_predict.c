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
 *    "examples": .., "mistakes": .., "seconds": .., ...} */
#include <math.h>
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

/* `predict MODEL FEATURE[:VALUE] ...`: one example from the command line. */
static int predict_one(ctl_ctx *ctx, const char *model)
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
    msgpack_packer *pk = pcc_request(ctx->client, "predict", 2, &id);
    ctl_pack_str(pk, model);
    ctl_example_pack(pk, &e.ex);
    ctl_example_free(&e);
    const msgpack_object *res;
    if ((rc = ctl_answer(ctx, id, &res)) != CTL_CONTINUE)
        return rc;
    char b[300], s[64], p[64];
    printf("%-12s %s\n%-12s %s\n", "label", ctl_cell(res, "label", b, sizeof b), "score",
           ctl_fmt_real(pcc_number(pcc_map_get(res, "score")), s, sizeof s));
    const msgpack_object *prob = pcc_map_get(res, "probability");
    if (prob)
        printf("%-12s %s  (of the label 1, calibrated on the model's recent stream)\n",
               "probability", ctl_fmt_real(pcc_number(prob), p, sizeof p));
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
    return CTL_EXIT_OK;
}

/* FILE, or the words of one example?  One argument that is "-", names a
 * file that exists or holds a '/' is a file. */
static bool is_file_arg(const ctl_ctx *ctx)
{
    const char *a = ctx->args[1];
    return ctx->nargs == 2 && (strcmp(a, "-") == 0 || access(a, F_OK) == 0 || strchr(a, '/'));
}

int ctl_cmd_predict(ctl_ctx *ctx, int argc, char **argv)
{
    ctl_stream_opts o;
    int rc = ctl_stream_parse(ctx, argc, argv, &o);
    if (rc != CTL_CONTINUE)
        return rc;
    if (!is_file_arg(ctx))
        return predict_one(ctx, ctx->args[0]);
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
