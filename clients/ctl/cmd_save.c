/* cmd_save.c - `perceptronctl save`: snapshot every changed model now.  The
 * daemon answers once the snapshot is on disk (it forks a writer), with the
 * number of models written.  --json prints the result as is. */
#include "clients/ctl/ctl.h"

int ctl_cmd_save(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    const msgpack_object *res;
    if ((rc = ctl_call_simple(ctx, "save", NULL, &res)))
        return rc;
    if (ctx->json) {
        ctl_json_print(res);
        return CTL_EXIT_OK;
    }
    uint64_t n = ctl_u64(res, "written");
    if (n == 0)
        printf("saved: every model was already up to date\n");
    else
        printf("saved: %llu model%s written\n", (unsigned long long)n, n == 1 ? "" : "s");
    return CTL_EXIT_OK;
}
