/* cmd_export.c - `perceptronctl export MODEL FILE`: the model as it is now,
 * written to FILE ('-': stdout) in the snapshot file format (checksummed),
 * which `import` reads back. */
#include "clients/ctl/ctl.h"

#include <errno.h>
#include <string.h>

int ctl_cmd_export(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    const msgpack_object *res;
    if ((rc = ctl_call_simple(ctx, "export", ctx->args[0], &res)))
        return rc;
    if (res->type != MSGPACK_OBJECT_BIN) {
        ctl_errorf(ctx, "the daemon's answer is not a model file");
        return CTL_EXIT_IO;
    }
    const char *path = ctx->args[1];
    bool out = strcmp(path, "-") == 0;
    FILE *f = out ? stdout : fopen(path, "wb");
    if (!f || fwrite(res->via.bin.ptr, 1, res->via.bin.size, f) != res->via.bin.size ||
        (out ? fflush(f) : fclose(f)) != 0) {
        ctl_errorf(ctx, "cannot write %s: %s", path, strerror(errno));
        return CTL_EXIT_DATA;
    }
    if (!out && !ctx->json)
        printf("exported %s to %s (%u bytes)\n", ctx->args[0], path, res->via.bin.size);
    return CTL_EXIT_OK;
}
