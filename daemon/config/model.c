/* model.c - model definitions in the config: the `template:` and each entry of `models:`.
 *
 * The YAML front end of proto/spec_keys.c, which `create` shares: the keys, their kinds and
 * ranges come from pcp_spec_keys, and pcp_spec_set and its siblings fill and check the
 * definition.  This file only reads each node as the kind the table gives, with the config's
 * typed readers (their wording, the same for every key of the file), and puts file:line:col and
 * the key on what the shared checks report.  The rule is read first whatever its place in the
 * file, since it decides which parameters exist; the other keys in file order, so that a clash
 * (dim with hash_bits) is reported at the later key.  Then the whole definition is built once
 * with pc_model_new, which checks what only the rule knows (averaging, batch mode,
 * cross-parameter constraints).
 */
#include "daemon/config/internal.h"
#include "proto/proto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* d from a spec's defaults (s, just initialised). */
static void def_from(pcd_model_def *d, const pcp_spec *s)
{
    memset(d, 0, sizeof *d);
    d->cfg = s->c;
    d->hash_bits = s->hash_bits;
    d->join = s->join;
    d->experts = s->experts;
}

void pcd_template_def_default(pcd_model_def *d)
{
    pcp_spec s;
    pcp_spec_init_template(&s); /* allocates nothing */
    def_from(d, &s);
}

void pcd_model_def_default(pcd_model_def *d)
{
    pcp_spec s;
    pcp_spec_init(&s);   /* allocates nothing */
    def_from(d, &s);
}

void pcd_model_def_free(pcd_model_def *d)
{
    if (!d)
        return;
    pcd_free_strings(d->classes, d->nclasses);
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

#define KEY(k) (pcp_spec_keys[k].name)

static int read_rule(pcd_yctx *y, const yaml_node_t *n, const char *key, const pc_rule **out)
{
    const char *s = pcd_yscalar(n, NULL);
    if ((*out = s && !pcd_yis_null(n) ? pc_rule_find(s) : NULL))
        return 0;
    char list[512];
    pcp_rule_names(list, sizeof list);
    if (!s || pcd_yis_null(n))
        return pcd_yfail(y, n, key, "expected a rule name (%s), got %s", list, pcd_ytype(n));
    return pcd_yfail(y, n, key, "unknown rule '%.64s'; the rules are: %s", s, list);
}

static int read_params(pcd_yctx *y, const yaml_node_t *n, const char *where, pcp_spec *s)
{
    char key[PCD_YKEY_MAX], pwhere[PCD_YKEY_MAX];
    const yaml_node_pair_t *pairs;
    size_t np;
    if (pcd_yget_map(y, n, pcd_ykey(pwhere, where, KEY(PCP_SPEC_PARAMS)), &pairs, &np))
        return -1;
    for (size_t i = 0; i < np; i++) {
        const yaml_node_t *kn = pcd_ynode(y, pairs[i].key);
        const yaml_node_t *vn = pcd_ynode(y, pairs[i].value);
        const char *name = pcd_yscalar(kn, NULL);
        pcd_ykey(key, pwhere, name);
        for (size_t j = 0; j < i; j++) {
            const yaml_node_t *prev = pcd_ynode(y, pairs[j].key);
            if (!strcmp(pcd_yscalar(prev, NULL), name))
                return pcd_yfail(y, kn, key, "duplicate key (first given on line %zu)",
                                 prev->start_mark.line + 1);
        }
        /* The config writes a scalar parameter as a number; `create` also takes a list of one. */
        const pc_param_spec *spec = NULL;
        for (size_t k = 0; k < pc_rule_param_count(s->c.rule) && !spec; k++)
            if (!strcmp(pc_rule_param(s->c.rule, k)->name, name))
                spec = pc_rule_param(s->c.rule, k);
        if (spec && spec->kind != PC_PARAM_LIST && vn->type == YAML_SEQUENCE_NODE)
            return pcd_yfail(y, vn, key, "%s: parameter '%s' takes one number, not a list",
                             pc_rule_name(s->c.rule), name);
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
        pcp_error e;
        pc_status st;
        if (pcp_spec_param(s, name, v, nv, &st, &e) != PCP_OK)
            /* an unknown name is the key's fault, a bad value the value's */
            return pcd_yfail(y, st == PC_ENOTFOUND ? kn : vn, key, "%s", e.msg);
    }
    return 0;
}

/* classes, transforms and crosses: a list of strings, each handed to the
 * spec, which checks it (a class name) or has the library parse it. */
static int read_strings(pcd_yctx *y, const yaml_node_t *n, const char *key, pcp_spec_key k,
                        pcp_spec *s)
{
    bool classes = k == PCP_SPEC_CLASSES;
    size_t max = classes ? PC_CLASSES_MAX
                 : k == PCP_SPEC_TRANSFORMS ? PC_TRANSFORMS_MAX : PC_CROSSES_MAX;
    const yaml_node_item_t *items;
    size_t count;
    pcp_error e;
    if (pcd_yget_seq(y, n, key, max, &items, &count))
        return -1;
    if ((classes ? pcp_spec_classes(s, count, &e) : pcp_spec_texts(s, k, count, &e)) != PCP_OK)
        return pcd_yfail(y, n, key, "%s", e.msg);
    for (size_t i = 0; i < count; i++) {
        const yaml_node_t *sn = pcd_ynode(y, items[i]);
        char *str;
        if (pcd_yget_string(y, sn, key, classes ? PC_CLASS_NAME_MAX : PC_PREP_TEXT_MAX, &str))
            return -1;
        pcp_code c = classes ? pcp_spec_class(s, i, str, strlen(str), &e)
                             : pcp_spec_text(s, k, i, str, strlen(str), &e);
        free(str);
        if (c != PCP_OK)
            return pcd_yfail(y, sn, key, "%s", e.msg);
    }
    return 0;
}

static int parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map, const char *where,
                 pcp_spec *s);

/* Each challenger is a spec of its own (parse), kept by pcp_spec_challenger. */
static int read_challengers(pcd_yctx *y, const yaml_node_t *n, const char *key, pcp_spec *s)
{
    const yaml_node_item_t *items;
    size_t count;
    if (pcd_yget_seq(y, n, key, PCP_CHALLENGERS_MAX, &items, &count))
        return -1;
    for (size_t i = 0; i < count; i++) {
        const yaml_node_t *cn = pcd_ynode(y, items[i]);
        char where[PCD_YKEY_MAX];
        snprintf(where, sizeof where, "%s[%zu]", key, i);
        pcp_spec sub;
        pcp_spec_init(&sub);
        pcp_error e;
        int rc = parse(y, cn, cn, where, &sub);
        if (!rc && pcp_spec_challenger(s, &sub, &e) != PCP_OK)
            rc = pcd_yfail(y, cn, where, "%s", e.msg);
        pcp_spec_free(&sub);
        if (rc)
            return -1;
    }
    return 0;
}

/* One key's value node v (key node k) as the kind the table gives, into s. */
static int read_key(pcd_yctx *y, pcp_spec *s, pcp_spec_key id, const yaml_node_t *v,
                    const yaml_node_t *k, const char *where)
{
    const pcp_spec_keyinfo *ki = &pcp_spec_keys[id];
    char key[PCD_YKEY_MAX];
    pcd_ykey(key, where, ki->name);
    pcp_spec_value val;
    size_t choice;
    int rc = 0;
    switch (ki->kind) {
    case PCP_KIND_PARAMS: return read_params(y, v, where, s);
    case PCP_KIND_CLASSES:
    case PCP_KIND_TEXTS: return read_strings(y, v, key, id, s);
    case PCP_KIND_CHALLENGERS: return read_challengers(y, v, key, s);
    case PCP_KIND_RULE: rc = read_rule(y, v, key, &val.rule); break;
    case PCP_KIND_UINT: rc = pcd_yget_uint(y, v, key, ki->min, ki->max, &val.u); break;
    case PCP_KIND_BOOL: rc = pcd_yget_bool(y, v, key, &val.b); break;
    case PCP_KIND_REAL:
        rc = pcd_yget_real(y, v, key, -INFINITY, INFINITY, false, &val.d);
        /* Refused here, at the value, though `create` leaves it to pc_model_new (whose
         * message cannot name a line): the config never held a bias of 0, nor
         * one past a feature value's bound. */
        if (!rc && id == PCP_SPEC_BIAS_VALUE && (val.d == 0 || !pc_value_ok(val.d)))
            return pcd_yfail(y, v, key, "must be a non-zero number of magnitude at most 2^64 (1.8e19)");
        break;
    case PCP_KIND_CHOICE:
        rc = pcd_yget_choice(y, v, key, ki->choices, &choice);
        val.u = choice;
        break;
    case PCP_KIND_LABEL: {
        char *text;
        if (pcd_yget_string(y, v, key, PC_CLASS_NAME_MAX, &text))
            return -1;
        val.str.s = text;
        val.str.len = strlen(text);
        pcp_error e;
        pcp_code c = pcp_spec_set(s, id, val, &e);
        free(text);
        return c == PCP_OK ? 0 : pcd_yfail(y, v, key, "%s", e.msg);
    }
    }
    if (rc)
        return -1;
    pcp_error e;
    if (pcp_spec_set(s, id, val, &e) != PCP_OK)   /* a clash with an earlier key */
        return pcd_yfail(y, k, key, "%s", e.msg);
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
    for (size_t i = 0; i < d->nchallengers; i++) {
        pc_model_config c;
        pcp_challenger_config(&d->cfg, &d->challengers[i], &c);
        if (pc_model_new(&c, &m, &e) != PC_OK)
            return pcd_yfail(y, at, where, "challenger %zu (%s): %s", i, pc_rule_name(c.rule),
                             e.msg);
        pc_model_free(m);
    }
    return 0;
}

static int parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map, const char *where,
                 pcp_spec *s)
{
    const char *names[PCP_SPEC_NKEYS];
    yaml_node_t *v[PCP_SPEC_NKEYS], *k[PCP_SPEC_NKEYS];
    for (size_t i = 0; i < PCP_SPEC_NKEYS; i++)
        names[i] = pcp_spec_keys[i].name;
    if (pcd_ybind(y, map, where, names, PCP_SPEC_NKEYS, v, k))
        return -1;
    /* The rule, then the keys given in file order (insertion sort of at most ten). */
    pcp_spec_key order[PCP_SPEC_NKEYS];
    size_t n = 0;
    for (size_t i = 0; i < PCP_SPEC_NKEYS; i++) {
        if (!v[i])
            continue;
        size_t j = n++;
        for (; j > 0 && i != PCP_SPEC_RULE && order[j - 1] != PCP_SPEC_RULE &&
               k[order[j - 1]]->start_mark.index > k[i]->start_mark.index; j--)
            order[j] = order[j - 1];
        order[j] = (pcp_spec_key)i;
    }
    for (size_t i = 0; i < n; i++)
        if (read_key(y, s, order[i], v[order[i]], k[order[i]], where))
            return -1;
    pcp_error e;
    pcp_spec_key blame;
    if (pcp_spec_finish(s, &blame, &e) != PCP_OK) {
        const yaml_node_t *cl = v[blame];
        char key[PCD_YKEY_MAX];
        return pcd_yfail(y, cl ? cl : at, cl ? pcd_ykey(key, where, KEY(blame)) : where, "%s",
                         e.msg);
    }
    return 0;
}

/* A model's definition into d: the keys map leaves out take s's (s just
 * initialised: the built-in defaults, or the default template's). */
static int parse_def(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map, const char *where,
                     pcp_spec s, pcd_model_def *d)
{
    if (parse(y, at, map, where, &s)) {
        pcp_spec_free(&s);
        return -1;
    }
    char *name = d->name;   /* the definition replaces d, whose name stays */
    d->name = NULL;
    pcd_model_def_free(d);
    d->name = name;
    d->cfg = s.c;
    d->classes = s.classes;   /* NULL-terminated as well, which pcd_model_def does not need */
    d->nclasses = s.nclasses;
    d->hash_bits = s.hash_bits;
    d->join = s.join;
    memcpy(d->challengers, s.challengers, sizeof d->challengers);
    d->nchallengers = s.nchallengers;
    d->experts = s.experts;
    return check_model(y, at, where, d);
}

int pcd_model_parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map, const char *where,
                    pcd_model_def *d)
{
    pcp_spec s;
    pcp_spec_init(&s);
    return parse_def(y, at, map, where, s, d);
}

int pcd_template_parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map,
                       pcd_model_def *d)
{
    pcp_spec s;
    pcp_spec_init_template(&s);
    return parse_def(y, at, map, "template", s, d);
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

/* Prints the keys under the names the parser reads (pcp_spec_keys), so a dump loads back. */
static void dump_params(const pc_model_config *c, FILE *out, int ind)
{
    size_t np = pc_rule_param_count(c->rule);
    fprintf(out, "%*s%s:%s\n", ind, "", KEY(PCP_SPEC_PARAMS), np ? "" : " {}");
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
}

static void dump_prep(const pc_prep *p, FILE *out, int ind)
{
    char text[PC_PREP_TEXT_MAX];
    fprintf(out, "%*s%s: %s\n", ind, "", KEY(PCP_SPEC_SCALE), pc_scale_names[p->scale]);
    fprintf(out, "%*s%s: [", ind, "", KEY(PCP_SPEC_TRANSFORMS));
    for (uint32_t i = 0; i < p->ntransforms; i++) {
        pc_transform_format(&p->transforms[i], text, sizeof text);
        fputs(i ? ", " : "", out);
        pcd_ydump_str(out, text);
    }
    fprintf(out, "]\n%*s%s: [", ind, "", KEY(PCP_SPEC_CROSSES));
    for (uint32_t i = 0; i < p->ncrosses; i++) {
        pc_cross_format(&p->crosses[i], text, sizeof text);
        fputs(i ? ", " : "", out);
        pcd_ydump_str(out, text);
    }
    fputs("]\n", out);
    if (p->ncrosses)
        fprintf(out, "%*s%s: %u\n", ind, "", KEY(PCP_SPEC_MAX_CROSSED), p->max_crossed);
}

void pcd_model_dump(const pcd_model_def *d, FILE *out, int ind)
{
    const pc_model_config *c = &d->cfg;
    fprintf(out, "%*s%s: %s\n", ind, "", KEY(PCP_SPEC_RULE), pc_rule_name(c->rule));
    if (d->hash_bits && c->dim == 1u << d->hash_bits)
        fprintf(out, "%*s%s: %u\n", ind, "", KEY(PCP_SPEC_HASH_BITS), d->hash_bits);
    else
        fprintf(out, "%*s%s: %u\n", ind, "", KEY(PCP_SPEC_DIM), c->dim);
    fprintf(out, "%*s%s: %s\n%*s%s: ", ind, "", KEY(PCP_SPEC_BIAS), c->bias ? "true" : "false",
            ind, "", KEY(PCP_SPEC_BIAS_VALUE));
    pcd_ydump_real(out, c->bias_value);
    fprintf(out, "\n%*s%s: %s\n", ind, "", KEY(PCP_SPEC_AVERAGED), c->averaged ? "true" : "false");
    fprintf(out, "%*s%s: %s\n", ind, "", KEY(PCP_SPEC_MODE),
            pcp_spec_keys[PCP_SPEC_MODE].choices[c->batch ? 1 : 0]);
    fprintf(out, "%*s%s: %s\n", ind, "", KEY(PCP_SPEC_STORAGE),
            pcp_spec_keys[PCP_SPEC_STORAGE].choices[c->storage]);
    fprintf(out, "%*s%s: %s\n", ind, "", KEY(PCP_SPEC_WEIGHTS),
            pcp_spec_keys[PCP_SPEC_WEIGHTS].choices[c->weights]);
    fprintf(out, "%*s%s: %s\n", ind, "", KEY(PCP_SPEC_CALIBRATE), c->calibrate ? "true" : "false");
    dump_prep(&c->prep, out, ind);
    dump_params(c, out, ind);
    if (d->nchallengers)
        fprintf(out, "%*s%s:\n", ind, "", KEY(PCP_SPEC_CHALLENGERS));
    for (size_t i = 0; i < d->nchallengers; i++) {
        const pcp_challenger *ch = &d->challengers[i];
        fprintf(out, "%*s- %s: %s\n", ind + 2, "", KEY(PCP_SPEC_RULE), pc_rule_name(ch->c.rule));
        if (ch->given[PCP_SPEC_AVERAGED])
            fprintf(out, "%*s%s: %s\n", ind + 4, "", KEY(PCP_SPEC_AVERAGED),
                    ch->c.averaged ? "true" : "false");
        if (ch->given[PCP_SPEC_BIAS])
            fprintf(out, "%*s%s: %s\n", ind + 4, "", KEY(PCP_SPEC_BIAS), ch->c.bias ? "true" : "false");
        if (ch->given[PCP_SPEC_BIAS_VALUE]) {
            fprintf(out, "%*s%s: ", ind + 4, "", KEY(PCP_SPEC_BIAS_VALUE));
            pcd_ydump_real(out, ch->c.bias_value);
            fputc('\n', out);
        }
        dump_params(&ch->c, out, ind + 4);
    }
    if (d->experts.mode != PCP_EXPERTS_NONE) {
        fprintf(out, "%*s%s: %s\n%*s%s: ", ind, "", KEY(PCP_SPEC_EXPERTS),
                pcp_experts_names[d->experts.mode], ind, "", KEY(PCP_SPEC_EXPERTS_ETA));
        pcd_ydump_real(out, d->experts.eta);
        fputc('\n', out);
        if (d->experts.seed_given) /* else the model's name sets it */
            fprintf(out, "%*s%s: %llu\n", ind, "", KEY(PCP_SPEC_EXPERTS_SEED),
                    (unsigned long long)d->experts.seed);
    }
    if (d->experts.auto_promote) {
        fprintf(out, "%*s%s: true\n%*s%s: ", ind, "", KEY(PCP_SPEC_PROMOTE_AUTO), ind, "",
                KEY(PCP_SPEC_PROMOTE_CONFIDENCE));
        pcd_ydump_real(out, d->experts.confidence);
        fprintf(out, "\n%*s%s: %llu\n", ind, "", KEY(PCP_SPEC_PROMOTE_MIN_EXAMPLES),
                (unsigned long long)d->experts.min_examples);
    }
    const pcp_join_config *j = &d->join;
    fprintf(out, "%*s%s: %llu\n", ind, "", KEY(PCP_SPEC_JOIN_TTL), (unsigned long long)j->ttl);
    if (j->has_default) {
        fprintf(out, "%*s%s: ", ind, "", KEY(PCP_SPEC_JOIN_DEFAULT_LABEL));
        if (c->multiclass)
            pcd_ydump_str(out, j->default_label);
        else
            fputs(j->default_label, out);
        fputc('\n', out);
    }
    fprintf(out, "%*s%s: %llu\n%*s%s: %llu\n", ind, "", KEY(PCP_SPEC_JOIN_MAX_PENDING),
            (unsigned long long)j->max_pending, ind, "", KEY(PCP_SPEC_JOIN_MAX_BYTES),
            (unsigned long long)j->max_bytes);
    if (j->hints_b > 0) {
        fprintf(out, "%*s%s: ", ind, "", KEY(PCP_SPEC_HINTS_B));
        pcd_ydump_real(out, j->hints_b);
        fprintf(out, "\n%*s%s: %llu\n", ind, "", KEY(PCP_SPEC_HINTS_SEED),
                (unsigned long long)j->hints_seed);
    }
    if (!c->multiclass)
        return;
    fprintf(out, "%*s%s: [", ind, "", KEY(PCP_SPEC_CLASSES));
    for (size_t i = 0; i < d->nclasses; i++) {
        if (i)
            fputs(", ", out);
        pcd_ydump_str(out, d->classes[i]);
    }
    fprintf(out, "]\n%*s%s: %s\n", ind, "", KEY(PCP_SPEC_OPEN_CLASSES),
            c->open_classes ? "true" : "false");
}
