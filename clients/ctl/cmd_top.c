/* cmd_top.c - `perceptronctl top MODEL [CLASS] [-n K]`: the K weights of
 * largest magnitude with the feature names the daemon remembers (method
 * `weights`).  A feature whose name is unknown (an integer index, or a name
 * the daemon did not keep) shows as #INDEX.  --json prints the result as is. */
#include <inttypes.h>

#include "clients/ctl/ctl.h"

static int on_opt(ctl_ctx *ctx, int opt, const char *arg, void *ud)
{
    if (opt == 'n' && ctl_parse_u64(arg, 1, 10000, ud))
        return 0;
    return ctl_usage_error(ctx, "-n wants a count in 1..10000, not '%s'", arg);
}

int ctl_cmd_top(ctl_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {{"count", required_argument, NULL, 'n'},
                                              CTL_COMMON_LONGOPTS,
                                              {NULL, 0, NULL, 0}};
    uint64_t k = 20;
    int rc = ctl_parse(ctx, argc, argv, "n:", longopts, on_opt, &k);
    if (rc != CTL_CONTINUE || (rc = ctl_connect(ctx)))
        return rc;
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, "weights", 3, &id);
    ctl_pack_str(pk, ctx->args[0]);
    if (ctx->nargs > 1)
        ctl_pack_str(pk, ctx->args[1]);
    else
        msgpack_pack_nil(pk);
    msgpack_pack_uint64(pk, k);
    const msgpack_object *res;
    if ((rc = ctl_call(ctx, id, &res)))
        return rc;
    if (ctx->json) {
        ctl_json_print(res);
        return CTL_EXIT_OK;
    }
    if (res->type != MSGPACK_OBJECT_ARRAY)
        return ctl_io_error(ctx, "`weights` answered something that is not an array");
    static const char *const head[] = {"RANK", "WEIGHT", "FEATURE"};
    ctl_table t;
    ctl_table_init(&t, 3, head, "rrl");
    for (uint32_t i = 0; i < res->via.array.size; i++) {
        const msgpack_object *w = &res->via.array.ptr[i];
        const msgpack_object *name = pcc_map_get(w, "feature");
        char rank[16], weight[64], feature[300];
        snprintf(rank, sizeof rank, "%u", i + 1);
        if (name && name->type == MSGPACK_OBJECT_STR)
            snprintf(feature, sizeof feature, "%.*s", (int)name->via.str.size, name->via.str.ptr);
        else
            snprintf(feature, sizeof feature, "#%" PRIu64, ctl_u64(w, "index"));
        const char *row[] = {
            rank, ctl_fmt_real(pcc_number(pcc_map_get(w, "weight")), weight, sizeof weight),
            feature};
        ctl_table_add(&t, row);
    }
    if (t.nrows)
        ctl_table_print(&t, stdout);
    else
        printf("no weights (the model has not learned anything yet)\n");
    ctl_table_free(&t);
    return CTL_EXIT_OK;
}
