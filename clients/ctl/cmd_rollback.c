/* cmd_rollback.c - `perceptronctl rollback MODEL GENERATION`: the model
 * becomes what that snapshot generation holds.  --json prints the result. */
#include "clients/ctl/ctl.h"

int ctl_cmd_rollback(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    uint64_t gen;
    if (!ctl_parse_u64(ctx->args[1], 1, UINT64_MAX, &gen))
        return ctl_usage_error(ctx, "GENERATION must be a number >= 1, got '%s'", ctx->args[1]);
    const msgpack_object *res;
    if ((rc = ctl_call_model_u64(ctx, "rollback", ctx->args[0], gen, &res)))
        return rc;
    if (ctx->json)
        ctl_json_print(res);
    else
        printf("rolled %s back to generation %llu (%llu examples)\n", ctx->args[0],
               (unsigned long long)gen, (unsigned long long)ctl_u64(res, "examples"));
    return CTL_EXIT_OK;
}
