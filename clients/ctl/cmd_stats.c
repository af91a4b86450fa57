/* cmd_stats.c - `perceptronctl stats`: the daemon's counters, one per line
 * in the daemon's order (h_stats), bytes and uptime made readable.  --json
 * prints the result as is. */
#include <string.h>

#include "clients/ctl/ctl.h"

int ctl_cmd_stats(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    const msgpack_object *res;
    if ((rc = ctl_call_simple(ctx, "stats", NULL, &res)))
        return rc;
    if (ctx->json) {
        ctl_json_print(res);
        return CTL_EXIT_OK;
    }
    if (res->type != MSGPACK_OBJECT_MAP)
        return ctl_io_error(ctx, "`stats` answered something that is not a map");
    for (uint32_t i = 0; i < res->via.map.size; i++) {
        const msgpack_object_kv *p = &res->via.map.ptr[i];
        if (p->key.type != MSGPACK_OBJECT_STR)
            continue;
        char key[64], buf[128];
        snprintf(key, sizeof key, "%.*s", (int)p->key.via.str.size, p->key.via.str.ptr);
        const char *v;
        double num = pcc_number(&p->val);
        if (strncmp(key, "bytes_", 6) == 0)
            v = ctl_fmt_bytes(num, buf, sizeof buf);
        else if (strcmp(key, "uptime_seconds") == 0)
            v = ctl_fmt_duration(num, buf, sizeof buf);
        else if (p->val.type == MSGPACK_OBJECT_MAP) {
            /* errors_by_code: "name=count ..." */
            size_t off = 0;
            buf[0] = 0;
            for (uint32_t k = 0; k < p->val.via.map.size && off < sizeof buf; k++) {
                const msgpack_object_kv *e = &p->val.via.map.ptr[k];
                char n[64];
                int w = snprintf(buf + off, sizeof buf - off, "%s%.*s=%s", k ? " " : "",
                                 e->key.type == MSGPACK_OBJECT_STR ? (int)e->key.via.str.size : 1,
                                 e->key.type == MSGPACK_OBJECT_STR ? e->key.via.str.ptr : "?",
                                 ctl_fmt_real(pcc_number(&e->val), n, sizeof n));
                off += w > 0 ? (size_t)w : 0;
            }
            v = p->val.via.map.size ? buf : "none";
        } else {
            v = ctl_text(&p->val, buf, sizeof buf);
        }
        printf("%-26s %s\n", key, v);
    }
    return CTL_EXIT_OK;
}
