/* cmd_reset.c - `perceptronctl reset MODEL`: forget what a model learned,
 * keeping its config and classes.  --json prints the result as is. */
#include "clients/ctl/ctl.h"

int ctl_cmd_reset(ctl_ctx *ctx, int argc, char **argv)
{
    const msgpack_object *res;
    int rc = ctl_simple_command(ctx, argc, argv, "reset", true, &res);
    if (rc != CTL_CONTINUE)
        return rc;
    printf("reset %s\n", ctx->args[0]);
    return CTL_EXIT_OK;
}
