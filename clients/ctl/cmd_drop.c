/* cmd_drop.c - `perceptronctl drop MODEL`: delete a model and its snapshot
 * files.  --json prints the result as is. */
#include "clients/ctl/ctl.h"

int ctl_cmd_drop(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    const msgpack_object *res;
    if ((rc = ctl_call_simple(ctx, "drop", ctx->args[0], &res)))
        return rc;
    if (ctx->json) {
        ctl_json_print(res);
        return CTL_EXIT_OK;
    }
    uint64_t n = ctl_u64(res, "snapshots_removed");
    printf("dropped %s (%llu snapshot file%s removed)\n", ctx->args[0], (unsigned long long)n,
           n == 1 ? "" : "s");
    return CTL_EXIT_OK;
}
