/* cmd_compare.c - `perceptronctl compare MODEL`: the model (the champion)
 * and its challengers side by side, from the daemon's `compare` (see
 * docs/protocol.md, Challengers): examples, progressive mistakes, the recent
 * window, and each challenger against the champion: the always-valid
 * sequential test (the one to watch) and McNemar's one-look test; with
 * experts, each one's weight and the combination's mistakes beside seed
 * 001's bound.  --json prints the result as is.  And `promote`, which acts on what compare shows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/ctl/ctl.h"

static void row(ctl_table *t, const char *who, const msgpack_object *l, bool challenger)
{
    char b[11][64];
    const char *r[11];
    r[0] = who;
    char rule[64];
    snprintf(rule, sizeof rule, "%s%s", ctl_cell(l, "rule", b[1], sizeof b[1]),
             ctl_bool(l, "averaged") ? " (averaged)" : "");
    r[1] = rule;
    r[2] = ctl_cell(l, "examples", b[2], sizeof b[2]);
    r[3] = ctl_cell(l, "mistakes", b[3], sizeof b[3]);
    r[4] = ctl_fmt_rate(pcc_number(pcc_map_get(l, "mistake_rate")), b[4], sizeof b[4]);
    r[5] = ctl_fmt_rate(pcc_number(pcc_map_get(l, "recent_mistake_rate")), b[5], sizeof b[5]);
    if (challenger) {
        snprintf(b[6], sizeof b[6], "%llu/%llu",
                 (unsigned long long)ctl_u64(l, "champion_only_wrong"),
                 (unsigned long long)ctl_u64(l, "challenger_only_wrong"));
        r[6] = b[6];
        double p = pcc_number(pcc_map_get(l, "p_value"));
        snprintf(b[7], sizeof b[7], "%.3g", p);
        r[7] = b[7];
        const msgpack_object *better = pcc_map_get(l, "better");
        r[8] = better && better->type == MSGPACK_OBJECT_STR
                   ? ctl_cell(l, "better", b[8], sizeof b[8])
                   : "not significant";
        const msgpack_object *seq = pcc_map_get(l, "sequential_better");
        r[9] = seq && seq->type == MSGPACK_OBJECT_STR
                   ? ctl_cell(l, "sequential_better", b[9], sizeof b[9])
                   : "not yet";
    } else {
        r[6] = r[7] = r[8] = r[9] = "";
    }
    ctl_table_add(t, r);
}

/* The experts' lines: nothing when the model answers alone. */
static void print_experts(const msgpack_object *x)
{
    if (!x || x->type != MSGPACK_OBJECT_MAP)
        return;
    char how[32], rate[32];
    const msgpack_object *all = pcc_map_get(x, "experts");
    printf("\nexperts: %s, eta %.4g%s; %llu rounds, %llu mistakes (%s), the best expert %llu",
           ctl_cell(x, "combination", how, sizeof how), pcc_number(pcc_map_get(x, "eta")),
           ctl_bool(x, "eta_scheduled") ? " (scheduled)" : "",
           (unsigned long long)ctl_u64(x, "rounds"), (unsigned long long)ctl_u64(x, "mistakes"),
           ctl_fmt_rate(pcc_number(pcc_map_get(x, "mistake_rate")), rate, sizeof rate),
           (unsigned long long)ctl_u64(x, "best_expert_mistakes"));
    const msgpack_object *b = pcc_map_get(x, "bound");
    if (b && b->type != MSGPACK_OBJECT_NIL)
        printf("; seed 001's bound %.1f", pcc_number(b));
    printf("\n");
    for (uint32_t i = 0; all && all->type == MSGPACK_OBJECT_ARRAY && i < all->via.array.size; i++) {
        const msgpack_object *e = &all->via.array.ptr[i];
        char who[32] = "champion    ";
        if (i)
            snprintf(who, sizeof who, "challenger %u", i - 1);
        printf("  %s: weight %.4f, %llu mistakes\n", who, pcc_number(pcc_map_get(e, "weight")),
               (unsigned long long)ctl_u64(e, "mistakes"));
    }
}

int ctl_cmd_compare(ctl_ctx *ctx, int argc, char **argv)
{
    const msgpack_object *res;
    int rc = ctl_simple_command(ctx, argc, argv, "compare", true, &res);
    if (rc != CTL_CONTINUE)
        return rc;
    static const char *const head[] = {"", "RULE", "EXAMPLES", "MISTAKES", "RATE", "RECENT",
                                       "B/C", "P", "ONE LOOK", "BETTER"};
    ctl_table t;
    ctl_table_init(&t, 10, head, "llrrrrrrll");
    row(&t, "champion", pcc_map_get(res, "champion"), false);
    const msgpack_object *cs = pcc_map_get(res, "challengers");
    uint32_t n = cs && cs->type == MSGPACK_OBJECT_ARRAY ? cs->via.array.size : 0;
    for (uint32_t i = 0; i < n; i++) {
        char who[32];
        snprintf(who, sizeof who, "challenger %u", i);
        row(&t, who, &cs->via.array.ptr[i], true);
    }
    ctl_table_print(&t, stdout);
    ctl_table_free(&t);
    if (!n)
        printf("\n(no challengers: give the model's spec a `challengers` list)\n");
    else
        printf("\nB/C: examples only the champion got wrong / only the challenger got wrong.\n"
               "BETTER: the sequential test at 95 %% confidence, valid however often you look;\n"
               "ONE LOOK and P: McNemar's test, valid only for one look at a sample fixed in "
               "advance.\n");
    print_experts(pcc_map_get(res, "experts"));
    return CTL_EXIT_OK;
}

/* `perceptronctl promote MODEL INDEX`: challenger INDEX becomes the champion. */
int ctl_cmd_promote(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    uint64_t i;
    if (!ctl_parse_u64(ctx->args[1], 0, UINT64_MAX, &i)) {
        ctl_errorf(ctx, "INDEX must be a challenger's index (see `perceptronctl compare %s`)",
                   ctx->args[0]);
        return CTL_EXIT_USAGE;
    }
    const msgpack_object *res;
    if ((rc = ctl_call_model_u64(ctx, "promote", ctx->args[0], i, &res)))
        return rc;
    if (ctx->json)
        ctl_json_print(res);
    else
        printf("challenger %llu of %s promoted: it answers predictions now\n", (unsigned long long)i,
               ctx->args[0]);
    return CTL_EXIT_OK;
}
