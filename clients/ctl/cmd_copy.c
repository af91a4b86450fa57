/* cmd_copy.c - `perceptronctl copy SOURCE NEW`: a new model NEW, the same as
 * SOURCE now (what it learned, its config, its feature names). */
#include "clients/ctl/ctl.h"

int ctl_cmd_copy(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    if ((rc = ctl_connect(ctx)))
        return rc;
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, "copy", 2, &id);
    ctl_pack_str(pk, ctx->args[1]); /* the method's model is the new one */
    ctl_pack_str(pk, ctx->args[0]);
    const msgpack_object *res;
    if ((rc = ctl_answer(ctx, id, &res)) != CTL_CONTINUE)
        return rc;
    printf("copied %s to %s (%llu examples)\n", ctx->args[0], ctx->args[1],
           (unsigned long long)ctl_u64(res, "examples"));
    return CTL_EXIT_OK;
}
