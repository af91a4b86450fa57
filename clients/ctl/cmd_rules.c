/* cmd_rules.c - `perceptronctl rules [RULE]`: every update rule with its
 * summary and its parameters (kind, default, range, help), read from the
 * library's one rule table (lib/rules/registry.c and each rule's
 * pc_param_spec rows, through pc_rules() / pc_rule_param()), so this list
 * cannot drift from what the daemon accepts.  The daemon is not contacted:
 * perceptronctl is built with the same library.  `create --help RULE` prints
 * one rule the same way (ctl_rule_print). */
#include <math.h>
#include <string.h>

#include "clients/ctl/ctl.h"
#include "lib/perceptron.h"
#include "proto/proto.h"

static const char *kind_name(pc_param_kind k)
{
    return k == PC_PARAM_INT ? "integer" : k == PC_PARAM_LIST ? "list" : "real";
}

/* "(0, inf)", "[1, 16]": the range as the validator checks it. */
static const char *range(const pc_param_spec *s, char *buf, size_t len)
{
    char lo[32], hi[32];
    if (s->max >= 1e300)
        snprintf(hi, sizeof hi, "inf");
    else
        snprintf(hi, sizeof hi, "%g", s->max);
    if (s->min <= -1e300)
        snprintf(lo, sizeof lo, "-inf");
    else
        snprintf(lo, sizeof lo, "%g", s->min);
    snprintf(buf, len, "%c%s, %s%c", s->min_open ? '(' : '[', lo, hi,
             s->max_open || s->max >= 1e300 ? ')' : ']');
    return buf;
}

static const char *def_text(const pc_param_spec *s, char *buf, size_t len)
{
    if (s->kind == PC_PARAM_LIST) {
        size_t n = 0;
        buf[0] = 0;
        for (size_t i = 0; i < s->def_list_len && n + 1 < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s%g", i ? "," : "", s->def_list[i]);
        return buf;
    }
    if (isnan(s->def))
        return "derived";
    snprintf(buf, len, "%g", s->def);
    return buf;
}

void ctl_rule_print(const pc_rule *r, FILE *out)
{
    fprintf(out, "%s: %s\n", pc_rule_name(r), pc_rule_summary(r));
    fprintf(out, "  averaging %s, batch mode %s%s\n", pc_rule_can_average(r) ? "yes" : "no",
            pc_rule_can_batch(r) ? "yes" : "no",
            pc_rule_has_own_bias(r) ? ", learns its own bias" : "");
    size_t n = pc_rule_param_count(r);
    if (n == 0) {
        fprintf(out, "  no parameters\n");
        return;
    }
    static const char *const head[] = {"  PARAM", "KIND", "DEFAULT", "RANGE", "MEANING"};
    ctl_table t;
    ctl_table_init(&t, 5, head, "lllll");
    for (size_t i = 0; i < n; i++) {
        const pc_param_spec *s = pc_rule_param(r, i);
        char name[80], def[256], rg[80];
        snprintf(name, sizeof name, "  %s", s->name);
        const char *row[] = {name, kind_name(s->kind), def_text(s, def, sizeof def),
                             range(s, rg, sizeof rg), s->help ? s->help : ""};
        ctl_table_add(&t, row);
    }
    ctl_table_print(&t, out);
    ctl_table_free(&t);
}

static void kv_bound(msgpack_packer *pk, const char *k, double v)
{
    ctl_pack_str(pk, k);
    if (fabs(v) >= 1e300)
        msgpack_pack_nil(pk); /* unbounded */
    else
        msgpack_pack_double(pk, v);
}

static void pack_rule(msgpack_packer *pk, const pc_rule *r)
{
    msgpack_pack_map(pk, 6);
    ctl_pack_str(pk, "name");
    ctl_pack_str(pk, pc_rule_name(r));
    ctl_pack_str(pk, "summary");
    ctl_pack_str(pk, pc_rule_summary(r));
    ctl_pack_str(pk, "averaging");
    pc_rule_can_average(r) ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    ctl_pack_str(pk, "batch");
    pc_rule_can_batch(r) ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    ctl_pack_str(pk, "own_bias");
    pc_rule_has_own_bias(r) ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    size_t n = pc_rule_param_count(r);
    ctl_pack_str(pk, "params");
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) {
        const pc_param_spec *s = pc_rule_param(r, i);
        msgpack_pack_map(pk, 8);
        ctl_pack_str(pk, "name");
        ctl_pack_str(pk, s->name);
        ctl_pack_str(pk, "kind");
        ctl_pack_str(pk, kind_name(s->kind));
        ctl_pack_str(pk, "default"); /* null: derived by the rule */
        if (s->kind == PC_PARAM_LIST) {
            msgpack_pack_array(pk, s->def_list_len);
            for (size_t k = 0; k < s->def_list_len; k++)
                msgpack_pack_double(pk, s->def_list[k]);
        } else if (isnan(s->def)) {
            msgpack_pack_nil(pk);
        } else {
            msgpack_pack_double(pk, s->def);
        }
        kv_bound(pk, "min", s->min);
        kv_bound(pk, "max", s->max);
        ctl_pack_str(pk, "min_open");
        s->min_open ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
        ctl_pack_str(pk, "max_open");
        s->max_open ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
        ctl_pack_str(pk, "help");
        ctl_pack_str(pk, s->help ? s->help : "");
    }
}

/* Feature preparation, from the library's tables as the rules are: every
 * rule takes it (docs/config.md, "Feature preparation"). */
static void prep_print(FILE *out)
{
    fprintf(out, "\nFeature preparation, for every rule (create --scale, --transform, --cross):\n"
                 "  scale (default template: %s)\n",
            pc_scale_names[PCP_TEMPLATE_SCALE]);
    for (size_t i = 0; pc_scale_names[i]; i++)
        fprintf(out, "    %-10s %s\n", pc_scale_names[i], pc_scale_help[i]);
    fprintf(out, "  transforms (at most %d; the first whose glob PATTERN matches a feature's name "
                 "applies;\n  default template: %s)\n", PC_TRANSFORMS_MAX, PCP_TEMPLATE_TRANSFORM);
    for (size_t i = 0; pc_transform_names[i]; i++)
        fprintf(out, "    %-10s %s\n", pc_transform_names[i], pc_transform_help[i]);
    fprintf(out, "  crosses (at most %d): PREFIX_A,PREFIX_B adds A_NAME*B_NAME = the product for "
                 "each pair\n    of features so named, at most max_crossed (default %d, up to %d) "
                 "an example\n", PC_CROSSES_MAX, PC_CROSSED_DEFAULT, PC_CROSSED_MAX);
}

int ctl_cmd_rules(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    const pc_rule *one = NULL;
    if (ctx->nargs == 1 && !(one = pc_rule_find(ctx->args[0]))) {
        ctl_errorf(ctx, "no rule is named '%s'; `perceptronctl rules` lists them", ctx->args[0]);
        return CTL_EXIT_USAGE;
    }
    const pc_rule *const *all = pc_rules();
    size_t n = 0;
    while (all[n])
        n++;
    if (ctx->json) {
        ctl_doc d;
        ctl_doc_init(&d);
        if (one) {
            pack_rule(&d.pk, one);
        } else {
            msgpack_pack_array(&d.pk, n);
            for (size_t i = 0; i < n; i++)
                pack_rule(&d.pk, all[i]);
        }
        ctl_doc_print(&d);
        return CTL_EXIT_OK;
    }
    for (size_t i = 0; i < n; i++) {
        if (one && all[i] != one)
            continue;
        if (!one && i)
            fputc('\n', stdout);
        ctl_rule_print(all[i], stdout);
    }
    if (!one) {
        printf("\nSet parameters with `perceptronctl create NAME --rule RULE --param K=V`;\n"
               "docs/algorithms.md says which rule suits which data; \"seed 000\" and the like\n"
               "name the papers listed at its top.\n");
        prep_print(stdout);
    }
    return CTL_EXIT_OK;
}
