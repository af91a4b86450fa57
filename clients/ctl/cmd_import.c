/* cmd_import.c - `perceptronctl import MODEL FILE [--replace]`: a model from
 * a file `export` wrote (or a snapshot file), checked by the daemon (magic,
 * CRC, the model decodes) before anything changes. */
#include "clients/ctl/ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ctl_cmd_import(ctl_ctx *ctx, int argc, char **argv)
{
    bool replace = false;
    static const struct option longopts[] = {
        {"replace", no_argument, NULL, 'r'}, CTL_COMMON_LONGOPTS, {0}};
    int rc = ctl_parse(ctx, argc, argv, "r", longopts, ctl_opt_flag, &replace);
    if (rc != CTL_CONTINUE)
        return rc;
    const char *path = ctx->args[1];
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;
    FILE *m = f ? open_memstream(&buf, &len) : NULL;
    int ch;
    while (m && (ch = fgetc(f)) != EOF)
        fputc(ch, m);
    bool bad = !f || !m || ferror(f);
    int e = errno;
    if (m)
        fclose(m);
    if (f && f != stdin)
        fclose(f);
    if (bad) {
        free(buf);
        ctl_errorf(ctx, "cannot read %s: %s", path, strerror(e));
        return CTL_EXIT_DATA;
    }
    if ((rc = ctl_connect(ctx))) {
        free(buf);
        return rc;
    }
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, "import", 3, &id);
    ctl_pack_str(pk, ctx->args[0]);
    msgpack_pack_bin(pk, len);
    msgpack_pack_bin_body(pk, buf, len);
    if (replace)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    free(buf);
    const msgpack_object *res;
    if ((rc = ctl_answer(ctx, id, &res)) != CTL_CONTINUE)
        return rc;
    printf("imported %s from %s (%llu examples)\n", ctx->args[0], path,
           (unsigned long long)ctl_u64(res, "examples"));
    return CTL_EXIT_OK;
}
