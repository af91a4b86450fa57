/* cmd_info.c - `perceptronctl info MODEL`: a model's config and state.
 * The `info` result (daemon/exec/dispatch.c h_info) laid out for people: config,
 * counts and rates, snapshot state, then one row per learner (one per class
 * for multiclass models) with its norm, bias, margin (when the rule keeps
 * one) and updates.  --json prints the result as is. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "clients/ctl/ctl.h"

static void kv(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kv(const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%-14s ", key);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

static void print_params(const msgpack_object *params)
{
    printf("%-14s ", "params");
    if (!params || params->type != MSGPACK_OBJECT_MAP || params->via.map.size == 0) {
        printf("(none)\n");
        return;
    }
    for (uint32_t i = 0; i < params->via.map.size; i++) {
        const msgpack_object_kv *p = &params->via.map.ptr[i];
        char buf[64];
        printf("%s%.*s=", i ? " " : "", (int)p->key.via.str.size,
               p->key.type == MSGPACK_OBJECT_STR ? p->key.via.str.ptr : "?");
        if (p->val.type == MSGPACK_OBJECT_NIL) {
            printf("auto");
        } else if (p->val.type == MSGPACK_OBJECT_ARRAY) {
            for (uint32_t k = 0; k < p->val.via.array.size; k++)
                printf("%s%s", k ? "," : "",
                       ctl_fmt_real(pcc_number(&p->val.via.array.ptr[k]), buf, sizeof buf));
        } else {
            printf("%s", ctl_fmt_real(pcc_number(&p->val), buf, sizeof buf));
        }
    }
    putchar('\n');
}

static void print_classes(const msgpack_object *res)
{
    const msgpack_object *classes = pcc_map_get(res, "classes");
    if (!ctl_bool(res, "multiclass")) {
        kv("classes", "binary (+1 / -1)");
        return;
    }
    uint32_t n = classes && classes->type == MSGPACK_OBJECT_ARRAY ? classes->via.array.size : 0;
    printf("%-14s %u%s", "classes", n,
           ctl_bool(res, "open_classes") ? " (open: new labels add classes)" : "");
    for (uint32_t i = 0; i < n && i < 20; i++) {
        const msgpack_object *nm = pcc_map_get(&classes->via.array.ptr[i], "name");
        if (nm && nm->type == MSGPACK_OBJECT_STR)
            printf("%s%.*s", i ? ", " : ": ", (int)nm->via.str.size, nm->via.str.ptr);
    }
    printf("%s\n", n > 20 ? ", ..." : "");
}

static void print_snapshot(const msgpack_object *res)
{
    const msgpack_object *s = pcc_map_get(res, "snapshot");
    char age[32];
    double secs = pcc_number(pcc_map_get(s, "age_seconds"));
    bool dirty = ctl_bool(s, "dirty");
    if (isnan(secs))
        kv("snapshot", "never saved%s", dirty ? " (has unsaved changes)" : "");
    else
        kv("snapshot", "generation %llu, saved %s ago%s",
           (unsigned long long)ctl_u64(s, "generation"), ctl_fmt_duration(secs, age, sizeof age),
           dirty ? " (has unsaved changes)" : " (up to date)");
    /* feature_names may sit in the snapshot map or beside it. */
    const msgpack_object *holder = pcc_map_get(s, "feature_names") ? s : res;
    if (pcc_map_get(holder, "feature_names"))
        kv("feature names", "%llu remembered (of at most %llu)",
           (unsigned long long)ctl_u64(holder, "feature_names"),
           (unsigned long long)ctl_u64(res, "feature_names_max"));
}

/* One row per learner; per-class counts from "classes" (same order). */
static void print_learners(const msgpack_object *res)
{
    const msgpack_object *ls = pcc_map_get(res, "learners");
    const msgpack_object *classes = pcc_map_get(res, "classes");
    if (!ls || ls->type != MSGPACK_OBJECT_ARRAY || ls->via.array.size == 0)
        return;
    bool margin = false, note = false, multi = ctl_bool(res, "multiclass");
    for (uint32_t i = 0; i < ls->via.array.size; i++) {
        const msgpack_object *m = pcc_map_get(&ls->via.array.ptr[i], "margin");
        const msgpack_object *n = pcc_map_get(&ls->via.array.ptr[i], "note");
        margin |= m && m->type != MSGPACK_OBJECT_NIL;
        note |= n && n->type == MSGPACK_OBJECT_STR;
    }
    const char *head[9];
    char align[10];
    size_t nc = 0;
#define COL(h, a) (head[nc] = (h), align[nc++] = (a))
    COL("CLASS", 'l');
    if (multi) {
        COL("EXAMPLES", 'r');
        COL("MISTAKES", 'r');
        COL("RATE", 'r');
    }
    COL("NORM", 'r');
    COL("BIAS", 'r');
    if (margin)
        COL("MARGIN", 'r');
    COL("UPDATES", 'r');
    if (note)
        COL("NOTE", 'l');
#undef COL
    align[nc] = 0;
    ctl_table t;
    ctl_table_init(&t, nc, head, align);
    for (uint32_t i = 0; i < ls->via.array.size; i++) {
        const msgpack_object *l = &ls->via.array.ptr[i];
        const msgpack_object *c = classes && classes->type == MSGPACK_OBJECT_ARRAY &&
                                          i < classes->via.array.size
                                      ? &classes->via.array.ptr[i]
                                      : NULL;
        char b[9][64];
        const char *row[9];
        size_t k = 0;
        row[k] = multi ? ctl_cell(l, "class", b[k], sizeof b[k]) : "(binary)";
        k++;
        if (multi) {
            row[k] = ctl_cell(c, "examples", b[k], sizeof b[k]);
            k++;
            row[k] = ctl_cell(c, "mistakes", b[k], sizeof b[k]);
            k++;
            uint64_t e = ctl_u64(c, "examples");
            row[k] = ctl_fmt_rate(e ? (double)ctl_u64(c, "mistakes") / (double)e : NAN, b[k],
                                  sizeof b[k]);
            k++;
        }
        row[k] = ctl_fmt_real(pcc_number(pcc_map_get(l, "norm")), b[k], sizeof b[k]);
        k++;
        row[k] = ctl_fmt_real(pcc_number(pcc_map_get(l, "bias")), b[k], sizeof b[k]);
        k++;
        if (margin) {
            row[k] = ctl_fmt_real(pcc_number(pcc_map_get(l, "margin")), b[k], sizeof b[k]);
            k++;
        }
        row[k] = ctl_cell(l, "updates", b[k], sizeof b[k]);
        k++;
        if (note) {
            row[k] = ctl_cell(l, "note", b[k], sizeof b[k]);
            k++;
        }
        ctl_table_add(&t, row);
    }
    putchar('\n');
    ctl_table_print(&t, stdout);
    ctl_table_free(&t);
}

/* A list of strings as "a, b", or "none". */
static const char *texts(const msgpack_object *a, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; a && a->type == MSGPACK_OBJECT_ARRAY && i < a->via.array.size; i++) {
        const msgpack_object *t = &a->via.array.ptr[i];
        if (t->type == MSGPACK_OBJECT_STR && n + 1 < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%.*s", n ? ", " : "", (int)t->via.str.size,
                                  t->via.str.ptr);
    }
    return n ? buf : "none";
}

/* The feature preparation (docs/config.md), when the daemon reports it. */
static void print_prep(const msgpack_object *res)
{
    if (!pcc_map_get(res, "scale"))
        return;
    char sc[32], tr[600], cr[600], mc[32];
    kv("scale", "%s", ctl_cell(res, "scale", sc, sizeof sc));
    kv("transforms", "%s", texts(pcc_map_get(res, "transforms"), tr, sizeof tr));
    const msgpack_object *c = pcc_map_get(res, "crosses");
    if (c && c->type == MSGPACK_OBJECT_ARRAY && c->via.array.size)
        kv("crosses", "%s (at most %s an example)", texts(c, cr, sizeof cr),
           ctl_cell(res, "max_crossed", mc, sizeof mc));
    else
        kv("crosses", "none");
}

int ctl_cmd_info(ctl_ctx *ctx, int argc, char **argv)
{
    const msgpack_object *res;
    int rc = ctl_simple_command(ctx, argc, argv, "info", true, &res);
    if (rc != CTL_CONTINUE)
        return rc;
    char b1[64], b2[64], b3[64];
    const msgpack_object *recent = pcc_map_get(res, "recent");
    kv("model", "%s", ctl_cell(res, "name", b1, sizeof b1));
    kv("rule", "%s", ctl_cell(res, "rule", b1, sizeof b1));
    print_params(pcc_map_get(res, "params"));
    kv("dimension", "%s", ctl_cell(res, "dim", b1, sizeof b1));
    if (ctl_bool(res, "bias"))
        kv("bias", "yes (feature value %s)",
           ctl_fmt_real(pcc_number(pcc_map_get(res, "bias_value")), b1, sizeof b1));
    else
        kv("bias", "no");
    kv("averaged", "%s", ctl_bool(res, "averaged") ? "yes" : "no");
    kv("mode", "%s", ctl_cell(res, "mode", b1, sizeof b1));
    if (pcc_map_get(res, "storage"))
        kv("storage", "%s, %s bytes%s", ctl_cell(res, "storage", b1, sizeof b1),
           ctl_cell(res, "bytes", b2, sizeof b2),
           pcc_map_get(res, "weights") && !strcmp(ctl_cell(res, "weights", b3, sizeof b3), "float32")
               ? ", float32 weights" : "");
    print_prep(res);
    print_classes(res);
    kv("examples", "%s", ctl_cell(res, "examples", b1, sizeof b1));
    kv("mistakes", "%s (%s)", ctl_cell(res, "mistakes", b1, sizeof b1),
       ctl_fmt_rate(pcc_number(pcc_map_get(res, "mistake_rate")), b2, sizeof b2));
    kv("recent", "%s mistakes in the last %s examples (%s)",
       ctl_cell(recent, "mistakes", b1, sizeof b1), ctl_cell(recent, "examples", b2, sizeof b2),
       ctl_fmt_rate(pcc_number(pcc_map_get(recent, "mistake_rate")), b3, sizeof b3));
    kv("updates", "%s", ctl_cell(res, "updates", b1, sizeof b1));
    /* label hints (hints.b): how many labels the rule asked for, and the mistakes */
    const msgpack_object *h = pcc_map_get(pcc_map_get(res, "join"), "hints");
    if (h && h->type == MSGPACK_OBJECT_MAP) {
        char v[8][64]; /* one buffer a value: they are all read by the one printf */
        kv("label hints", "b %s: %s of %s labels asked for (%s); mistakes %s (%s), on the asked "
           "%s (%s)", ctl_cell(h, "b", v[0], 64), ctl_cell(h, "asked", v[1], 64),
           ctl_cell(h, "labels", v[2], 64),
           ctl_fmt_rate(pcc_number(pcc_map_get(h, "asked_rate")), v[3], 64),
           ctl_cell(h, "mistakes", v[4], 64),
           ctl_fmt_rate(pcc_number(pcc_map_get(h, "mistake_rate")), v[5], 64),
           ctl_cell(h, "asked_mistakes", v[6], 64),
           ctl_fmt_rate(pcc_number(pcc_map_get(h, "asked_mistake_rate")), v[7], 64));
    }
    /* replicas on a shared log agree when both of these do (scale-out.md) */
    if (pcc_map_get(res, "log_id"))
        kv("log entry", "%s", ctl_cell(res, "log_id", b1, sizeof b1));
    const msgpack_object *lag = pcc_map_get(res, "log_lag");
    if (lag && lag->type == MSGPACK_OBJECT_MAP)
        kv("replica lag", "%s entries, %s ms", ctl_cell(lag, "entries", b1, sizeof b1),
           ctl_cell(lag, "ms", b2, sizeof b2));
    if (pcc_map_get(res, "digest"))
        kv("digest", "%s", ctl_cell(res, "digest", b1, sizeof b1));
    print_snapshot(res);
    print_learners(res);
    return CTL_EXIT_OK;
}
