/* cmd_drop.c - `perceptronctl drop MODEL`: delete a model and its snapshot
 * files.  --json prints the result as is. */
#include "clients/ctl/ctl.h"

int ctl_cmd_drop(ctl_ctx *ctx, int argc, char **argv)
{
    const msgpack_object *res;
    int rc = ctl_simple_command(ctx, argc, argv, "drop", true, &res);
    if (rc != CTL_CONTINUE)
        return rc;
    uint64_t n = ctl_u64(res, "snapshots_removed");
    printf("dropped %s (%llu snapshot file%s removed)\n", ctx->args[0], (unsigned long long)n,
           n == 1 ? "" : "s");
    return CTL_EXIT_OK;
}
