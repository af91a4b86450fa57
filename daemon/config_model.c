/* config_model.c - model definitions in the config: the `template:` and each entry of `models:`.
 *
 * A definition starts from the built-in default (pcd_model_def_default) and takes the keys it
 * gives.  Keys are read in a fixed order whatever their order in the file (rule before params,
 * since the rule decides which parameters exist), each checked where it stands so the message can
 * name its line; then the whole definition is built once with pc_model_new, which checks what
 * only the rule knows (averaging, batch mode, cross-parameter constraints).
 */
#include "daemon/config_internal.h"
#include "proto/proto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_HASH_BITS 20u

void pcd_model_def_default(pcd_model_def *d)
{
    memset(d, 0, sizeof *d);
    pc_model_config_default(&d->cfg, 1u << DEFAULT_HASH_BITS);
    d->hash_bits = DEFAULT_HASH_BITS;
}

void pcd_model_def_free(pcd_model_def *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nclasses; i++)
        free(d->classes[i]);
    free(d->classes);
    free(d->name);
    memset(d, 0, sizeof *d);
}

int pcd_model_def_copy(pcd_model_def *dst, const pcd_model_def *src, const char *name)
{
    pcd_model_def d = *src;
    d.name = NULL;
    d.classes = NULL;
    d.nclasses = 0;
    d.cfg.classes = NULL;
    d.cfg.nclasses = 0;
    if (name || src->name) {
        if (!(d.name = strdup(name ? name : src->name)))
            goto fail;
    }
    if (src->nclasses) {
        if (!(d.classes = calloc(src->nclasses, sizeof *d.classes)))
            goto fail;
        for (; d.nclasses < src->nclasses; d.nclasses++)
            if (!(d.classes[d.nclasses] = strdup(src->classes[d.nclasses])))
                goto fail;
        d.cfg.classes = (const char *const *)d.classes;
        d.cfg.nclasses = d.nclasses;
    }
    *dst = d;
    return 0;
fail:
    pcd_model_def_free(&d);
    memset(dst, 0, sizeof *dst);
    return -1;
}

/* ---- reading one definition ------------------------------------------- */

enum { K_RULE, K_PARAMS, K_DIM, K_HASH_BITS, K_BIAS, K_BIAS_VALUE, K_AVERAGED, K_MODE, K_CLASSES,
       K_OPEN_CLASSES, K_COUNT };
static const char *const model_keys[K_COUNT] = {
    [K_RULE] = "rule", [K_PARAMS] = "params", [K_DIM] = "dim", [K_HASH_BITS] = "hash_bits",
    [K_BIAS] = "bias", [K_BIAS_VALUE] = "bias_value", [K_AVERAGED] = "averaged", [K_MODE] = "mode",
    [K_CLASSES] = "classes", [K_OPEN_CLASSES] = "open_classes",
};
static const char *const modes[] = {"online", "batch", NULL};

static int read_rule(pcd_yctx *y, const yaml_node_t *n, const char *key, pcd_model_def *d)
{
    const char *s = pcd_yscalar(n, NULL);
    const pc_rule *r = s && !pcd_yis_null(n) ? pc_rule_find(s) : NULL;
    if (r) {
        d->cfg.rule = r;
        pc_params_default(r, &d->cfg.params);
        return 0;
    }
    char list[512];
    int len = 0;
    for (const pc_rule *const *p = pc_rules(); *p && len >= 0 && (size_t)len < sizeof list; p++)
        len += snprintf(list + len, sizeof list - (size_t)len, "%s%s", p == pc_rules() ? "" : ", ",
                        pc_rule_name(*p));
    if (!s || pcd_yis_null(n))
        return pcd_yfail(y, n, key, "expected a rule name (%s), got %s", list, pcd_ytype(n));
    return pcd_yfail(y, n, key, "unknown rule '%.64s'; the rules are: %s", s, list);
}

static int read_params(pcd_yctx *y, const yaml_node_t *n, const char *where, pcd_model_def *d)
{
    char key[PCD_YKEY_MAX];
    const yaml_node_pair_t *pairs;
    size_t np;
    if (pcd_yget_map(y, n, pcd_ykey(key, where, "params"), &pairs, &np))
        return -1;
    for (size_t i = 0; i < np; i++) {
        const yaml_node_t *kn = pcd_ynode(y, pairs[i].key);
        const yaml_node_t *vn = pcd_ynode(y, pairs[i].value);
        const char *name = pcd_yscalar(kn, NULL);
        char pwhere[PCD_YKEY_MAX];
        pcd_ykey(pwhere, where, "params");
        pcd_ykey(key, pwhere, name);
        for (size_t j = 0; j < i; j++) {
            const yaml_node_t *prev = pcd_ynode(y, pairs[j].key);
            if (!strcmp(pcd_yscalar(prev, NULL), name))
                return pcd_yfail(y, kn, key, "duplicate key (first given on line %zu)",
                                 prev->start_mark.line + 1);
        }
        const pc_param_spec *spec = NULL;
        for (size_t k = 0; k < pc_rule_param_count(d->cfg.rule) && !spec; k++)
            if (!strcmp(pc_rule_param(d->cfg.rule, k)->name, name))
                spec = pc_rule_param(d->cfg.rule, k);
        if (spec && spec->kind != PC_PARAM_LIST && vn->type == YAML_SEQUENCE_NODE)
            return pcd_yfail(y, vn, key, "%s: parameter '%s' takes one number, not a list",
                             pc_rule_name(d->cfg.rule), name);
        double v[PC_PARAM_LIST_MAX];
        size_t nv = 1;
        if (vn->type == YAML_SEQUENCE_NODE) {
            const yaml_node_item_t *items;
            if (pcd_yget_seq(y, vn, key, PC_PARAM_LIST_MAX, &items, &nv))
                return -1;
            for (size_t k = 0; k < nv; k++)
                if (pcd_yget_real(y, pcd_ynode(y, items[k]), key, -INFINITY, INFINITY, false, &v[k]))
                    return -1;
        } else if (pcd_yget_real(y, vn, key, -INFINITY, INFINITY, false, &v[0])) {
            return -1;
        }
        pc_error e = {{0}};
        pc_status st = pc_params_set(d->cfg.rule, &d->cfg.params, name, v, nv, &e);
        if (st != PC_OK) /* an unknown name is the key's fault, a bad value the value's */
            return pcd_yfail(y, st == PC_ENOTFOUND ? kn : vn, key, "%s", e.msg);
    }
    return 0;
}

static int read_classes(pcd_yctx *y, const yaml_node_t *n, const char *key, pcd_model_def *d)
{
    const yaml_node_item_t *items;
    size_t count;
    if (pcd_yget_seq(y, n, key, PC_CLASSES_MAX, &items, &count))
        return -1;
    if (count && !(d->classes = calloc(count, sizeof *d->classes)))
        return pcd_yfail(y, n, key, "out of memory");
    for (size_t i = 0; i < count; i++) {
        const yaml_node_t *cn = pcd_ynode(y, items[i]);
        char *name;
        if (pcd_yget_string(y, cn, key, PC_CLASS_NAME_MAX, &name))
            return -1;
        for (size_t j = 0; j < d->nclasses; j++)
            if (!strcmp(d->classes[j], name)) {
                free(name);
                return pcd_yfail(y, cn, key, "class '%.64s' is listed twice", d->classes[j]);
            }
        d->classes[d->nclasses++] = name;
    }
    d->cfg.classes = (const char *const *)d->classes;
    d->cfg.nclasses = d->nclasses;
    d->cfg.multiclass = true;
    return 0;
}

/* Builds the model once and frees it: whatever pc_model_new refuses, the config refuses. */
static int check_model(pcd_yctx *y, const yaml_node_t *at, const char *where, const pcd_model_def *d)
{
    pc_model *m = NULL;
    pc_error e = {{0}};
    if (pc_model_new(&d->cfg, &m, &e) != PC_OK)
        return pcd_yfail(y, at, where, "%s", e.msg);
    pc_model_free(m);
    return 0;
}

int pcd_model_parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map, const char *where,
                    pcd_model_def *d)
{
    yaml_node_t *v[K_COUNT], *k[K_COUNT];
    char key[PCD_YKEY_MAX];
#define KEY(i) pcd_ykey(key, where, model_keys[i])
    if (pcd_ybind(y, map, where, model_keys, K_COUNT, v, k))
        return -1;
    if (v[K_RULE] && read_rule(y, v[K_RULE], KEY(K_RULE), d))
        return -1;
    if (v[K_PARAMS] && read_params(y, v[K_PARAMS], where, d))
        return -1;
    if (v[K_DIM] && v[K_HASH_BITS]) {
        int later = k[K_DIM]->start_mark.index > k[K_HASH_BITS]->start_mark.index ? K_DIM : K_HASH_BITS;
        return pcd_yfail(y, k[later], KEY(later), "give either dim or hash_bits, not both");
    }
    uint64_t u;
    if (v[K_DIM]) {
        if (pcd_yget_uint(y, v[K_DIM], KEY(K_DIM), 1, PC_DIM_MAX, &u))
            return -1;
        d->cfg.dim = (uint32_t)u;
        d->hash_bits = 0;
    }
    if (v[K_HASH_BITS]) {
        if (pcd_yget_uint(y, v[K_HASH_BITS], KEY(K_HASH_BITS), 1, 28, &u))
            return -1;
        d->cfg.dim = 1u << u;
        d->hash_bits = (unsigned)u;
    }
    if (v[K_BIAS] && pcd_yget_bool(y, v[K_BIAS], KEY(K_BIAS), &d->cfg.bias))
        return -1;
    if (v[K_BIAS_VALUE]) {
        if (pcd_yget_real(y, v[K_BIAS_VALUE], KEY(K_BIAS_VALUE), -INFINITY, INFINITY, false,
                          &d->cfg.bias_value))
            return -1;
        if (d->cfg.bias_value == 0)
            return pcd_yfail(y, v[K_BIAS_VALUE], KEY(K_BIAS_VALUE), "must be a non-zero number");
    }
    if (v[K_AVERAGED] && pcd_yget_bool(y, v[K_AVERAGED], KEY(K_AVERAGED), &d->cfg.averaged))
        return -1;
    size_t mode;
    if (v[K_MODE]) {
        if (pcd_yget_choice(y, v[K_MODE], KEY(K_MODE), modes, &mode))
            return -1;
        d->cfg.batch = mode == 1;
    }
    if (v[K_CLASSES]) {
        for (size_t i = 0; i < d->nclasses; i++) /* replaces any earlier list */
            free(d->classes[i]);
        free(d->classes);
        d->classes = NULL;
        d->nclasses = 0;
        if (read_classes(y, v[K_CLASSES], KEY(K_CLASSES), d))
            return -1;
    }
    if (v[K_OPEN_CLASSES]) {
        if (pcd_yget_bool(y, v[K_OPEN_CLASSES], KEY(K_OPEN_CLASSES), &d->cfg.open_classes))
            return -1;
        d->cfg.multiclass = d->cfg.multiclass || d->cfg.open_classes;
    }
    if (d->cfg.multiclass && d->nclasses == 0 && !d->cfg.open_classes)
        return pcd_yfail(y, v[K_CLASSES] ? v[K_CLASSES] : at, v[K_CLASSES] ? KEY(K_CLASSES) : where,
                         "a multiclass model needs classes, or open_classes: true to add them "
                         "as labels arrive");
#undef KEY
    return check_model(y, at, where, d);
}

int pcd_models_parse(pcd_yctx *y, const yaml_node_t *map, pcd_config *c)
{
    const yaml_node_pair_t *pairs;
    size_t n;
    if (pcd_yget_map(y, map, "models", &pairs, &n))
        return -1;
    if (n && !(c->models = calloc(n, sizeof *c->models)))
        return pcd_yfail(y, map, "models", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *kn = pcd_ynode(y, pairs[i].key);
        size_t len;
        const char *name = pcd_yscalar(kn, &len);
        char where[PCD_YKEY_MAX];
        pcd_ykey(where, "models", name);
        if (!pcp_model_name_valid(name, len))
            return pcd_yfail(y, kn, where,
                             "invalid model name: use 1 to %d of A-Z a-z 0-9 _ . -, not starting "
                             "with '.' (model names become file names)", PCP_MODEL_NAME_MAX);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->models[j].name, name))
                return pcd_yfail(y, kn, where, "duplicate model name (first defined on line %zu)",
                                 pcd_ynode(y, pairs[j].key)->start_mark.line + 1);
        pcd_model_def *d = &c->models[c->nmodels++];
        pcd_model_def_default(d);
        if (!(d->name = strdup(name)))
            return pcd_yfail(y, kn, where, "out of memory");
        if (pcd_model_parse(y, kn, pcd_ynode(y, pairs[i].value), where, d))
            return -1;
    }
    return 0;
}

/* ---- printing --------------------------------------------------------- */

void pcd_model_dump(const pcd_model_def *d, FILE *out, int ind)
{
    const pc_model_config *c = &d->cfg;
    fprintf(out, "%*srule: %s\n", ind, "", pc_rule_name(c->rule));
    if (d->hash_bits && c->dim == 1u << d->hash_bits)
        fprintf(out, "%*shash_bits: %u\n", ind, "", d->hash_bits);
    else
        fprintf(out, "%*sdim: %u\n", ind, "", c->dim);
    fprintf(out, "%*sbias: %s\n%*sbias_value: ", ind, "", c->bias ? "true" : "false", ind, "");
    pcd_ydump_real(out, c->bias_value);
    fprintf(out, "\n%*saveraged: %s\n", ind, "", c->averaged ? "true" : "false");
    fprintf(out, "%*smode: %s\n", ind, "", c->batch ? "batch" : "online");
    size_t np = pc_rule_param_count(c->rule);
    fprintf(out, "%*sparams:%s\n", ind, "", np ? "" : " {}");
    for (size_t i = 0; i < np; i++) {
        const pc_param_spec *s = pc_rule_param(c->rule, i);
        const pc_param_value *pv = &c->params.val[i];
        if (pv->n == 1 && isnan(pv->v[0])) {
            fprintf(out, "%*s# %s: derived by the rule when not given\n", ind + 2, "", s->name);
            continue;
        }
        fprintf(out, "%*s%s: %s", ind + 2, "", s->name, s->kind == PC_PARAM_LIST ? "[" : "");
        for (size_t k = 0; k < pv->n; k++) {
            if (k)
                fputs(", ", out);
            pcd_ydump_real(out, pv->v[k]);
        }
        fprintf(out, "%s\n", s->kind == PC_PARAM_LIST ? "]" : "");
    }
    if (!c->multiclass)
        return;
    fprintf(out, "%*sclasses: [", ind, "");
    for (size_t i = 0; i < d->nclasses; i++) {
        if (i)
            fputs(", ", out);
        pcd_ydump_str(out, d->classes[i]);
    }
    fprintf(out, "]\n%*sopen_classes: %s\n", ind, "", c->open_classes ? "true" : "false");
}
