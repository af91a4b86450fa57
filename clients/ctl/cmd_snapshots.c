/* cmd_snapshots.c - `perceptronctl snapshots MODEL`: the snapshot
 * generations on disk, newest first (time, examples, size).  --json prints
 * the result as is. */
#include "clients/ctl/ctl.h"

#include <time.h>

int ctl_cmd_snapshots(ctl_ctx *ctx, int argc, char **argv)
{
    const msgpack_object *res;
    int rc = ctl_simple_command(ctx, argc, argv, "snapshots", true, &res);
    if (rc != CTL_CONTINUE)
        return rc;
    static const char *const head[] = {"GENERATION", "WRITTEN", "EXAMPLES", "BYTES"};
    ctl_table t;
    ctl_table_init(&t, 4, head, "rlrr");
    for (uint32_t i = 0; res->type == MSGPACK_OBJECT_ARRAY && i < res->via.array.size; i++) {
        const msgpack_object *g = &res->via.array.ptr[i];
        char gen[32], when[32] = "", ex[32] = "", by[32] = "";
        snprintf(gen, sizeof gen, "%llu", (unsigned long long)ctl_u64(g, "generation"));
        if (pcc_map_get(g, "error")) {
            ctl_cell(g, "error", when, sizeof when);
        } else {
            time_t at = (time_t)ctl_u64(g, "written_at");
            struct tm tm;
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&at, &tm));
            snprintf(ex, sizeof ex, "%llu", (unsigned long long)ctl_u64(g, "examples"));
            snprintf(by, sizeof by, "%llu", (unsigned long long)ctl_u64(g, "bytes"));
        }
        const char *row[] = {gen, when, ex, by};
        ctl_table_add(&t, row);
    }
    ctl_table_print(&t, stdout);
    ctl_table_free(&t);
    return CTL_EXIT_OK;
}
