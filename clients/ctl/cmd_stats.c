/* cmd_stats.c - `perceptronctl stats`: the daemon's counters, one per line
 * in the daemon's order (h_stats), bytes and uptime made readable.  --json
 * prints the result as is. */
#include <string.h>

#include "clients/ctl/ctl.h"

/* One counter: bytes and uptime made readable, anything else as text. */
static void print_entry(const char *key, const msgpack_object *val)
{
    char buf[160];
    const char *v;
    const char *leaf = strrchr(key, '.') ? strrchr(key, '.') + 1 : key;
    double num = pcc_number(val);
    if (strncmp(leaf, "bytes", 5) == 0 && val->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        v = ctl_fmt_bytes(num, buf, sizeof buf);
    else if (strcmp(leaf, "uptime_seconds") == 0)
        v = ctl_fmt_duration(num, buf, sizeof buf);
    else
        v = ctl_text(val, buf, sizeof buf);
    printf("%-34s %s\n", key, v);
}

int ctl_cmd_stats(ctl_ctx *ctx, int argc, char **argv)
{
    const msgpack_object *res;
    int rc = ctl_simple_command(ctx, argc, argv, "stats", false, &res);
    if (rc != CTL_CONTINUE)
        return rc;
    if (res->type != MSGPACK_OBJECT_MAP)
        return ctl_io_error(ctx, "`stats` answered something that is not a map");
    for (uint32_t i = 0; i < res->via.map.size; i++) {
        const msgpack_object_kv *p = &res->via.map.ptr[i];
        if (p->key.type != MSGPACK_OBJECT_STR)
            continue;
        char key[64], buf[160];
        snprintf(key, sizeof key, "%.*s", (int)p->key.via.str.size, p->key.via.str.ptr);
        if (p->val.type == MSGPACK_OBJECT_MAP && strcmp(key, "errors_by_code") == 0) {
            /* "name=count ..." on one line */
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
            printf("%-34s %s\n", key, p->val.via.map.size ? buf : "none");
        } else if (p->val.type == MSGPACK_OBJECT_MAP) {
            /* journal, log: one line per entry, "journal.fsync" */
            for (uint32_t k = 0; k < p->val.via.map.size; k++) {
                const msgpack_object_kv *e = &p->val.via.map.ptr[k];
                if (e->key.type != MSGPACK_OBJECT_STR)
                    continue;
                char sub[128];
                snprintf(sub, sizeof sub, "%s.%.*s", key, (int)e->key.via.str.size, e->key.via.str.ptr);
                print_entry(sub, &e->val);
            }
        } else {
            print_entry(key, &p->val);
        }
    }
    return CTL_EXIT_OK;
}
