/* cmd_top.c - `perceptronctl top MODEL [CLASS] [-n K] [--names FILE]`: the
 * K weights of largest magnitude with the feature names the daemon remembers
 * (method `weights`).  A feature whose name is unknown (an integer index, or
 * a name the daemon did not keep) shows as #INDEX, or as its name in a libsvm
 * names file (--names, read by dataset.c).  A multiclass model needs CLASS:
 * the daemon refuses to pick one.  --json prints the result as is (with
 * --names, the names filled in). */
#include <inttypes.h>

#include "clients/ctl/ctl.h"
#include "clients/ctl/dataset.h"

typedef struct opts {
    uint64_t k;
    const char *names;
} opts;

static int on_opt(ctl_ctx *ctx, int opt, const char *arg, void *ud)
{
    opts *o = ud;
    if (opt == 0x4001) {
        o->names = arg;
        return 0;
    }
    if (opt == 'n' && ctl_parse_u64(arg, 1, 10000, &o->k))
        return 0;
    return ctl_usage_error(ctx, "-n wants a count in 1..10000, not '%s'", arg);
}

int ctl_cmd_top(ctl_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {{"count", required_argument, NULL, 'n'},
                                              {"names", required_argument, NULL, 0x4001},
                                              CTL_COMMON_LONGOPTS,
                                              {NULL, 0, NULL, 0}};
    opts op = {.k = 20};
    int rc = ctl_parse(ctx, argc, argv, "n:", longopts, on_opt, &op);
    if (rc != CTL_CONTINUE)
        return rc;
    uint64_t k = op.k;
    char **names = NULL, err[512];
    size_t nnames = 0;
    if (op.names && pcc_ds_names_load(op.names, &names, &nnames, err, sizeof err) != 0) {
        ctl_errorf(ctx, "%s", err);
        return CTL_EXIT_DATA;
    }
    rc = ctl_print_top(ctx, k, (const char *const *)names, nnames);
    pcc_ds_names_free(names, nnames);
    return rc;
}

/* The call and the table; names (may be NULL) name indices. */
int ctl_print_top(ctl_ctx *ctx, uint64_t k, const char *const *names, size_t nnames)
{
    int rc = ctl_connect(ctx);
    if (rc)
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
    if (res->type != MSGPACK_OBJECT_ARRAY)
        return ctl_io_error(ctx, "`weights` answered something that is not an array");
    if (ctx->json && !names) {
        ctl_json_print(res);
        return CTL_EXIT_OK;
    }
    if (ctx->json) { /* the same array, unnamed features named from the file */
        ctl_doc d;
        ctl_doc_init(&d);
        msgpack_pack_array(&d.pk, res->via.array.size);
        for (uint32_t i = 0; i < res->via.array.size; i++) {
            const msgpack_object *w = &res->via.array.ptr[i];
            const msgpack_object *name = pcc_map_get(w, "feature");
            uint64_t ix = ctl_u64(w, "index");
            msgpack_pack_map(&d.pk, 3);
            ctl_pack_str(&d.pk, "index");
            msgpack_pack_uint64(&d.pk, ix);
            ctl_pack_str(&d.pk, "weight");
            msgpack_pack_double(&d.pk, pcc_number(pcc_map_get(w, "weight")));
            ctl_pack_str(&d.pk, "feature");
            if (name && name->type == MSGPACK_OBJECT_STR)
                msgpack_pack_object(&d.pk, *name);
            else if (ix < nnames && names[ix])
                ctl_pack_str(&d.pk, names[ix]);
            else
                msgpack_pack_nil(&d.pk);
        }
        ctl_doc_print(&d);
        return CTL_EXIT_OK;
    }
    static const char *const head[] = {"RANK", "WEIGHT", "FEATURE"};
    ctl_table t;
    ctl_table_init(&t, 3, head, "rrl");
    for (uint32_t i = 0; i < res->via.array.size; i++) {
        const msgpack_object *w = &res->via.array.ptr[i];
        const msgpack_object *name = pcc_map_get(w, "feature");
        char rank[16], weight[64], feature[300];
        snprintf(rank, sizeof rank, "%u", i + 1);
        uint64_t ix = ctl_u64(w, "index");
        if (name && name->type == MSGPACK_OBJECT_STR)
            snprintf(feature, sizeof feature, "%.*s", (int)name->via.str.size, name->via.str.ptr);
        else if (ix < nnames && names[ix])
            snprintf(feature, sizeof feature, "%s", names[ix]);
        else
            snprintf(feature, sizeof feature, "#%" PRIu64, ix);
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
