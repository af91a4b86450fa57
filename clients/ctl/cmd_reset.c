/* cmd_reset.c - `perceptronctl reset MODEL`: forget what a model learned,
 * keeping its config and classes.  --json prints the result as is. */
#include "clients/ctl/ctl.h"

int ctl_cmd_reset(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    const msgpack_object *res;
    if ((rc = ctl_call_simple(ctx, "reset", ctx->args[0], &res)))
        return rc;
    if (ctx->json)
        ctl_json_print(res);
    else
        printf("reset %s\n", ctx->args[0]);
    return CTL_EXIT_OK;
}
