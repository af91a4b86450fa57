/* params.c - the rule registry's accessors and parameter validation.
 *
 * Every rule declares its parameters as a table (pc_param_spec); this file is
 * the one place that checks values against such a table, so the config file,
 * the `create` method and the library all reject the same things with the
 * same message. */
#include "lib/rule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

extern const pc_rule *const pc_rule_registry[];

const pc_rule *const *pc_rules(void)
{
    return pc_rule_registry;
}

const pc_rule *pc_rule_find(const char *name)
{
    for (const pc_rule *const *r = pc_rule_registry; *r; r++)
        if (strcmp((*r)->name, name) == 0)
            return *r;
    return NULL;
}

const char *pc_rule_name(const pc_rule *r) { return r->name; }
const char *pc_rule_summary(const pc_rule *r) { return r->summary; }
size_t pc_rule_param_count(const pc_rule *r) { return r->nparams; }
bool pc_rule_can_average(const pc_rule *r) { return r->flags & PC_RULE_ADDITIVE; }
bool pc_rule_can_batch(const pc_rule *r) { return r->flags & PC_RULE_BATCH; }
bool pc_rule_has_own_bias(const pc_rule *r) { return r->flags & PC_RULE_OWN_BIAS; }

const pc_param_spec *pc_rule_param(const pc_rule *r, size_t i)
{
    return i < r->nparams ? &r->params[i] : NULL;
}

void pc_params_default(const pc_rule *r, pc_params *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < r->nparams && i < PC_PARAMS_MAX; i++) {
        const pc_param_spec *s = &r->params[i];
        if (s->kind == PC_PARAM_LIST) {
            p->val[i].n = s->def_list_len;
            memcpy(p->val[i].v, s->def_list, s->def_list_len * sizeof(double));
        } else {
            p->val[i].n = 1;
            p->val[i].v[0] = s->def;
        }
    }
}

static bool in_range(const pc_param_spec *s, double v)
{
    if (!isfinite(v))
        return false;
    if (s->min_open ? v <= s->min : v < s->min)
        return false;
    if (s->max_open ? v >= s->max : v > s->max)
        return false;
    return s->kind != PC_PARAM_INT || v == floor(v);
}

pc_status pc_params_set(const pc_rule *r, pc_params *p, const char *name,
                        const double *v, size_t n, pc_error *err)
{
    for (size_t i = 0; i < r->nparams; i++) {
        const pc_param_spec *s = &r->params[i];
        if (strcmp(s->name, name) != 0)
            continue;
        size_t maxn = s->kind == PC_PARAM_LIST ? PC_PARAM_LIST_MAX : 1;
        if (n < 1 || n > maxn) {
            snprintf(err->msg, sizeof err->msg, "%s: parameter '%s' takes %s", r->name, name,
                     maxn == 1 ? "one number" : "a list of 1 to 16 numbers");
            return PC_EINVAL;
        }
        for (size_t k = 0; k < n; k++)
            if (!in_range(s, v[k])) {
                snprintf(err->msg, sizeof err->msg,
                         "%s: parameter '%s' = %g is out of range: it must be %s%s in %c%g, %g%c",
                         r->name, name, v[k], s->kind == PC_PARAM_INT ? "an integer" : "a number",
                         "", s->min_open ? '(' : '[', s->min, s->max, s->max_open ? ')' : ']');
                return PC_EINVAL;
            }
        p->val[i].n = n;
        memcpy(p->val[i].v, v, n * sizeof *v);
        return PC_OK;
    }
    int len = snprintf(err->msg, sizeof err->msg, "%s has no parameter '%s'; it takes:", r->name, name);
    for (size_t i = 0; i < r->nparams && len > 0 && (size_t)len < sizeof err->msg; i++)
        len += snprintf(err->msg + len, sizeof err->msg - (size_t)len, " %s", r->params[i].name);
    if (r->nparams == 0 && len > 0 && (size_t)len < sizeof err->msg)
        snprintf(err->msg + len, sizeof err->msg - (size_t)len, " none");
    return PC_ENOTFOUND;
}

const char *pc_status_name(pc_status s)
{
    switch (s) {
    case PC_OK: return "ok";
    case PC_EINVAL: return "invalid argument";
    case PC_ENOMEM: return "out of memory";
    case PC_EFORMAT: return "malformed data";
    case PC_ENOTFOUND: return "not found";
    case PC_ELIMIT: return "limit exceeded";
    }
    return "unknown error";
}
