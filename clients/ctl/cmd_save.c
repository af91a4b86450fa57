/* cmd_save.c - `perceptronctl save`: snapshot every changed model now.  The
 * daemon answers once the snapshot is on disk (it forks a writer), with the
 * number of models written.  --json prints the result as is. */
#include "clients/ctl/ctl.h"

int ctl_cmd_save(ctl_ctx *ctx, int argc, char **argv)
{
    const msgpack_object *res;
    int rc = ctl_simple_command(ctx, argc, argv, "save", false, &res);
    if (rc != CTL_CONTINUE)
        return rc;
    uint64_t n = ctl_u64(res, "written");
    if (n == 0)
        printf("saved: every model was already up to date\n");
    else
        printf("saved: %llu model%s written\n", (unsigned long long)n, n == 1 ? "" : "s");
    return CTL_EXIT_OK;
}
