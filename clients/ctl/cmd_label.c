/* cmd_label.c - one example given on the command line:
 *   perceptronctl label MODEL LABEL FEATURE[:VALUE] ...
 *   perceptronctl predict MODEL FEATURE[:VALUE] ...   (cmd_predict.c)
 * FEATURE is a name (hashed by the daemon) or an integer index; VALUE is 1
 * when left out.  The words are read by the libsvm parser with named
 * features (dataset.c), so the syntax and its errors are the data files'.
 * `label` prints the daemon's outcome: the prediction made before learning,
 * its score, whether it was a mistake and whether the model changed. */
#include <stdlib.h>
#include <string.h>

#include "clients/ctl/stream.h"

void ctl_example_free(ctl_example *e)
{
    pcc_ds_close(e->ds);
    if (e->f)
        fclose(e->f);
    free(e->buf);
    memset(e, 0, sizeof *e);
}

int ctl_example_parse(ctl_ctx *ctx, const char *label, char *const *words, int n, ctl_example *e)
{
    memset(e, 0, sizeof *e);
    size_t len = strlen(label ? label : "_") + 2;
    for (int i = 0; i < n; i++) {
        if (!words[i][0] || strpbrk(words[i], " \t\r\n#")) {
            ctl_errorf(ctx, "feature '%s': a word without blanks or '#' (NAME, NAME:VALUE or "
                            "INDEX:VALUE)",
                       words[i]);
            return CTL_EXIT_USAGE;
        }
        len += strlen(words[i]) + 1;
    }
    if (!(e->buf = malloc(len)))
        return ctl_io_error(ctx, "out of memory");
    size_t k = (size_t)snprintf(e->buf, len, "%s", label ? label : "_");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(e->buf + k, len - k, " %s", words[i]);
    pcc_ds_options o = {.format = PCC_DS_LIBSVM, .named = true};
    char err[512];
    if (!(e->f = fmemopen(e->buf, k, "r")) ||
        pcc_ds_open_file(e->f, "command line", &o, &e->ds, err, sizeof err) != 0) {
        ctl_example_free(e);
        return ctl_io_error(ctx, "cannot read the example");
    }
    int r = pcc_ds_next(e->ds, &e->ex, err, sizeof err);
    if (r != 1) {
        /* "command line:1:COL: why": the column counts in the words joined by spaces */
        ctl_errorf(ctx, "%s", r < 0 ? err : "no example given");
        ctl_example_free(e);
        return CTL_EXIT_USAGE;
    }
    return 0;
}

void ctl_example_pack(msgpack_packer *pk, const pcc_ds_example *ex)
{
    msgpack_pack_map(pk, ex->n);
    for (size_t i = 0; i < ex->n; i++) {
        const pcc_ds_feature *f = &ex->f[i];
        if (f->name) {
            msgpack_pack_str(pk, f->name_len);
            msgpack_pack_str_body(pk, f->name, f->name_len);
        } else {
            msgpack_pack_uint32(pk, f->index);
        }
        msgpack_pack_double(pk, f->value);
    }
}

int ctl_cmd_label(ctl_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {{"multiclass", no_argument, NULL, 0x5001},
                                              CTL_COMMON_LONGOPTS,
                                              {NULL, 0, NULL, 0}};
    int rc = ctl_parse(ctx, argc, argv, "", longopts, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    const char *model = ctx->args[0], *label = ctx->args[1];
    ctl_example e;
    if ((rc = ctl_example_parse(ctx, label, ctx->args + 2, ctx->nargs - 2, &e)))
        return rc;
    ctl_model_kind k;
    if ((rc = ctl_connect(ctx)) || (rc = ctl_model_probe(ctx, model, false, &k))) {
        ctl_example_free(&e);
        return rc;
    }
    /* a class name for a multiclass model; else the binary label, which a
     * model created on the fly takes too */
    bool as_class = k.multiclass || e.ex.y == 0;
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, "label", 3, &id);
    ctl_pack_str(pk, model);
    ctl_example_pack(pk, &e.ex);
    if (as_class)
        ctl_pack_str(pk, label);
    else
        msgpack_pack_int(pk, e.ex.y);
    ctl_example_free(&e);
    const msgpack_object *res;
    if ((rc = ctl_call(ctx, id, &res)))
        return rc;
    if (ctx->json) {
        ctl_json_print(res);
        return CTL_EXIT_OK;
    }
    char b[300], s[64];
    printf("predicted %s (score %s) before learning: %s; %s\n",
           ctl_cell(res, "predicted", b, sizeof b),
           ctl_fmt_real(pcc_number(pcc_map_get(res, "score")), s, sizeof s),
           ctl_bool(res, "mistake") ? "a mistake" : "right",
           ctl_bool(res, "updated") ? "the model changed" : "the model did not change");
    return CTL_EXIT_OK;
}
