/* example.c - one example from command-line words, and an example's
 * features packed for a request (example.h). */
#include "clients/ctl/example.h"

#include <stdlib.h>
#include <string.h>

void ctl_example_free(ctl_example *e)
{
    pcc_ds_close(e->ds);
    if (e->f)
        fclose(e->f);
    free(e->buf);
    memset(e, 0, sizeof *e);
}

int ctl_example_parse(ctl_ctx *ctx, const char *label, char *const *words, int n, ctl_example *e)
{
    memset(e, 0, sizeof *e);
    size_t len = strlen(label ? label : "_") + 2;
    for (int i = 0; i < n; i++) {
        if (!words[i][0] || strpbrk(words[i], " \t\r\n#")) {
            ctl_errorf(ctx, "feature '%s': a word without blanks or '#' (NAME, NAME:VALUE or "
                            "INDEX:VALUE)",
                       words[i]);
            return CTL_EXIT_USAGE;
        }
        len += strlen(words[i]) + 1;
    }
    if (!(e->buf = malloc(len)))
        return ctl_io_error(ctx, "out of memory");
    size_t k = (size_t)snprintf(e->buf, len, "%s", label ? label : "_");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(e->buf + k, len - k, " %s", words[i]);
    pcc_ds_options o = {.format = PCC_DS_LIBSVM, .named = true};
    char err[512];
    if (!(e->f = fmemopen(e->buf, k, "r")) ||
        pcc_ds_open_file(e->f, "command line", &o, &e->ds, err, sizeof err) != 0) {
        ctl_example_free(e);
        return ctl_io_error(ctx, "cannot read the example");
    }
    int r = pcc_ds_next(e->ds, &e->ex, err, sizeof err);
    if (r != 1) {
        /* "command line:1:COL: why": the column counts in the words joined by spaces */
        ctl_errorf(ctx, "%s", r < 0 ? err : "no example given");
        ctl_example_free(e);
        return CTL_EXIT_USAGE;
    }
    return 0;
}

void ctl_example_pack(msgpack_packer *pk, const pcc_ds_example *ex)
{
    msgpack_pack_map(pk, ex->n);
    for (size_t i = 0; i < ex->n; i++) {
        const pcc_ds_feature *f = &ex->f[i];
        if (f->name) {
            msgpack_pack_str(pk, f->name_len);
            msgpack_pack_str_body(pk, f->name, f->name_len);
        } else {
            msgpack_pack_uint32(pk, f->index);
        }
        msgpack_pack_double(pk, f->value);
    }
}
