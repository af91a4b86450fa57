/* cmd_label.c - one example given on the command line:
 *   perceptronctl label MODEL LABEL FEATURE[:VALUE] ...
 *   perceptronctl predict MODEL FEATURE[:VALUE] ...   (cmd_predict.c)
 * FEATURE is a name (hashed by the daemon) or an integer index; VALUE is 1
 * when left out.  The words are read by the libsvm parser with named
 * features (example.c), so the syntax and its errors are the data files'.
 * `label` prints the daemon's outcome: the prediction made before learning,
 * its score, whether it was a mistake and whether the model changed. */
#include "clients/ctl/example.h"
#include "clients/ctl/stream.h"

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
    if ((rc = ctl_model_probe(ctx, model, false, &k))) {
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
    if ((rc = ctl_answer(ctx, id, &res)) != CTL_CONTINUE)
        return rc;
    char b[300], s[64], pos[80];
    printf("predicted %s (score %s) before learning: %s; %s\n",
           ctl_cell(res, "predicted", b, sizeof b),
           ctl_fmt_real(pcc_number(pcc_map_get(res, "score")), s, sizeof s),
           ctl_bool(res, "mistake") ? "a mistake" : "right",
           ctl_bool(res, "updated") ? "the model changed" : "the model did not change");
    /* where it is in the model's log: a predict {"after": it} reads it, on any replica */
    const msgpack_object *at = pcc_map_get(res, "position");
    if (at && at->type == MSGPACK_OBJECT_STR)
        printf("position %s\n", ctl_text(at, pos, sizeof pos));
    return CTL_EXIT_OK;
}
