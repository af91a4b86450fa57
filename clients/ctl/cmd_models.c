/* cmd_models.c - `perceptronctl models`: the models with their rule and
 * error rates.  The names come from `models`; the table's other columns from
 * one `info` per model, pipelined (one round trip for all of them).  --json
 * prints the `models` result as is (an array of names). */
#include <stdlib.h>

#include "clients/ctl/ctl.h"

/* A model dropped between `models` and its `info` keeps its row, with dashes. */
static void row(ctl_table *t, const msgpack_object *name, const msgpack_object *info)
{
    char nm[80] = "?", rule[64], dim[32], cls[32], ex[32], mk[32], rate[32], recent[32];
    if (name->type == MSGPACK_OBJECT_STR)
        snprintf(nm, sizeof nm, "%.*s", (int)name->via.str.size, name->via.str.ptr);
    const char *cells[8] = {nm, "-", "-", "-", "-", "-", "-", "-"};
    if (info) {
        const msgpack_object *classes = pcc_map_get(info, "classes");
        const msgpack_object *r = pcc_map_get(info, "recent");
        cells[1] = ctl_cell(info, "rule", rule, sizeof rule);
        cells[2] = ctl_cell(info, "dim", dim, sizeof dim);
        if (ctl_bool(info, "multiclass") && classes && classes->type == MSGPACK_OBJECT_ARRAY)
            snprintf(cls, sizeof cls, "%u%s", classes->via.array.size,
                     ctl_bool(info, "open_classes") ? "+" : "");
        else
            snprintf(cls, sizeof cls, "binary");
        cells[3] = cls;
        cells[4] = ctl_cell(info, "examples", ex, sizeof ex);
        cells[5] = ctl_cell(info, "mistakes", mk, sizeof mk);
        cells[6] = ctl_fmt_rate(pcc_number(pcc_map_get(info, "mistake_rate")), rate, sizeof rate);
        cells[7] = ctl_fmt_rate(pcc_number(pcc_map_get(r, "mistake_rate")), recent, sizeof recent);
    }
    ctl_table_add(t, cells);
}

int ctl_cmd_models(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    const msgpack_object *res;
    if ((rc = ctl_call_simple(ctx, "models", NULL, &res)))
        return rc;
    if (res->type != MSGPACK_OBJECT_ARRAY)
        return ctl_io_error(ctx, "`models` answered something that is not an array");
    if (ctx->json) {
        ctl_json_print(res);
        return CTL_EXIT_OK;
    }
    uint32_t n = res->via.array.size;
    if (n == 0) {
        printf("no models\n");
        return CTL_EXIT_OK;
    }
    /* The names live in the `models` response, which the next read frees:
     * keep a copy while the `info` answers come in. */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer spk;
    msgpack_packer_init(&spk, &sb, msgpack_sbuffer_write);
    msgpack_pack_object(&spk, *res);
    msgpack_unpacked copy;
    msgpack_unpacked_init(&copy);
    size_t off = 0;
    msgpack_unpack_next(&copy, sb.data, sb.size, &off);
    const msgpack_object names = copy.data;

    uint32_t first = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(ctx->client, "info", 1, &id);
        msgpack_pack_object(pk, names.via.array.ptr[i]);
        if (i == 0)
            first = id;
    }
    char err[512];
    if (pcc_flush(ctx->client, err, sizeof err) != 0) {
        rc = ctl_io_error(ctx, err);
        goto out;
    }
    static const char *const head[] = {"MODEL",    "RULE",     "DIM",  "CLASSES",
                                       "EXAMPLES", "MISTAKES", "RATE", "RECENT"};
    ctl_table t;
    ctl_table_init(&t, 8, head, "llrlrrrr");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t got;
        const msgpack_object *error, *info;
        if (pcc_read(ctx->client, &got, &error, &info, -1, err, sizeof err) != 0) {
            ctl_table_free(&t);
            rc = ctl_io_error(ctx, err);
            goto out;
        }
        if (got != first + i) {
            ctl_table_free(&t);
            rc = ctl_io_error(ctx, "the daemon answered out of order");
            goto out;
        }
        row(&t, &names.via.array.ptr[i], error ? NULL : info);
    }
    ctl_table_print(&t, stdout);
    ctl_table_free(&t);
out:
    msgpack_unpacked_destroy(&copy);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}
