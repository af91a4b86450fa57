/* spec_keys.c - the keys of a model spec and the one code that fills and checks a spec.
 *
 * A spec arrives as a `create` map (proto/spec.c) or as a config entry (daemon/config/model.c).
 * Both read their own nodes into values of the kinds this table gives and call pcp_spec_set,
 * pcp_spec_param and pcp_spec_class, then pcp_spec_finish: so a key, its range, where it lands
 * in the pc_model_config and the checks across keys are written once.  Messages leave the key
 * out because each front end names it in its own format (a file position, a `create` error).
 */
#include "proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_HASH_BITS = 28 };   /* log2(PC_DIM_MAX) */
_Static_assert(1u << MAX_HASH_BITS == PC_DIM_MAX, "hash_bits ceiling follows PC_DIM_MAX");

static const char *const modes[] = {"online", "batch", NULL};
const char *const pcp_experts_names[] = {"none", "weighted-majority", "randomized", NULL};

/* The order is the order of the unknown-key message, docs/protocol.md and docs/config.md. */
const pcp_spec_keyinfo pcp_spec_keys[PCP_SPEC_NKEYS] = {
    [PCP_SPEC_RULE] = {"rule", PCP_KIND_RULE, .want = "a rule name (a string)"},
    [PCP_SPEC_PARAMS] = {"params", PCP_KIND_PARAMS, .want = "a map {name: number or [numbers]}"},
    [PCP_SPEC_DIM] = {"dim", PCP_KIND_UINT, .min = 1, .max = PC_DIM_MAX}, /* dim = 2^hash_bits */
    [PCP_SPEC_HASH_BITS] = {"hash_bits", PCP_KIND_UINT, .min = 1, .max = MAX_HASH_BITS},
    [PCP_SPEC_BIAS] = {"bias", PCP_KIND_BOOL, .want = "true or false"},
    [PCP_SPEC_BIAS_VALUE] = {"bias_value", PCP_KIND_REAL, .want = "a finite number"},
    [PCP_SPEC_AVERAGED] = {"averaged", PCP_KIND_BOOL, .want = "true or false"},
    [PCP_SPEC_MODE] = {"mode", PCP_KIND_CHOICE, .choices = modes,
                       .want = "\"online\" or \"batch\""},
    [PCP_SPEC_CLASSES] = {"classes", PCP_KIND_CLASSES, .want = "a list of class names"},
    [PCP_SPEC_OPEN_CLASSES] = {"open_classes", PCP_KIND_BOOL, .want = "true or false"},
    [PCP_SPEC_STORAGE] = {"storage", PCP_KIND_CHOICE, .choices = pc_storage_names,
                          .want = "\"dense\", \"sparse\" or \"auto\""},
    /* float32: dense arrays of floats, half the memory, not exact (docs/operations.md) */
    [PCP_SPEC_WEIGHTS] = {"weights", PCP_KIND_CHOICE, .choices = pc_weights_names,
                          .want = "\"float64\" or \"float32\""},
    /* false: no probabilities, for up to 1.5x the library's label rate (docs/operations.md) */
    [PCP_SPEC_CALIBRATE] = {"calibrate", PCP_KIND_BOOL, .want = "true or false"},
    /* feature preparation (docs/config.md): online scaling, transforms by name, crosses */
    [PCP_SPEC_SCALE] = {"scale", PCP_KIND_CHOICE, .choices = pc_scale_names,
                        .want = "\"none\", \"max\", \"std\" or \"rms\""},
    [PCP_SPEC_TRANSFORMS] = {"transforms", PCP_KIND_TEXTS,
                             .want = "a list of \"PATTERN:log\", \"PATTERN:logbins\", "
                                     "\"PATTERN:bins=E1,E2,...\" or \"PATTERN:rangebins=N\""},
    [PCP_SPEC_CROSSES] = {"crosses", PCP_KIND_TEXTS,
                          .want = "a list of \"PREFIX_A,PREFIX_B\""},
    [PCP_SPEC_MAX_CROSSED] = {"max_crossed", PCP_KIND_UINT, .min = 1, .max = PC_CROSSED_MAX},
    /* label later (docs/label-later.md): how long events wait, what they learn if nothing comes */
    [PCP_SPEC_JOIN_TTL] = {"join.ttl", PCP_KIND_UINT, .min = 1, .max = 100000000},
    [PCP_SPEC_JOIN_DEFAULT_LABEL] = {"join.default_label", PCP_KIND_LABEL,
                                     .want = "a label: 1, -1 or a class name"},
    [PCP_SPEC_JOIN_MAX_PENDING] = {"join.max_pending", PCP_KIND_UINT, .min = 1, .max = 100000000},
    [PCP_SPEC_JOIN_MAX_BYTES] = {"join.max_bytes", PCP_KIND_UINT, .min = 4096,
                                 .max = (uint64_t)1 << 40},
    /* label hints: predict says whether a label is worth asking for (selective sampling) */
    [PCP_SPEC_HINTS_B] = {"hints.b", PCP_KIND_REAL,
                          .want = "a number >= 0 (0: no hints), e.g. 0.5"},
    [PCP_SPEC_HINTS_SEED] = {"hints.seed", PCP_KIND_UINT, .min = 0, .max = UINT64_MAX},
    /* rules learning beside the model from the same labels (compare, promote) */
    [PCP_SPEC_CHALLENGERS] = {"challengers", PCP_KIND_CHALLENGERS,
                              .want = "a list of specs {rule, params?, averaged?, bias?, "
                                      "bias_value?}"},
    /* predict from the champion and challengers combined (seed 001) */
    [PCP_SPEC_EXPERTS] = {"experts", PCP_KIND_CHOICE, .choices = pcp_experts_names,
                          .want = "\"none\", \"weighted-majority\" or \"randomized\""},
    [PCP_SPEC_EXPERTS_ETA] = {"experts.eta", PCP_KIND_REAL,
                              .want = "a number in (0, 0.5], or 0 for the schedule"},
    [PCP_SPEC_EXPERTS_SEED] = {"experts.seed", PCP_KIND_UINT, .min = 0, .max = UINT64_MAX},
    /* a challenger the always-valid test of compare finds better serves, unasked */
    [PCP_SPEC_PROMOTE_AUTO] = {"promote.auto", PCP_KIND_BOOL, .want = "true or false"},
    [PCP_SPEC_PROMOTE_CONFIDENCE] = {"promote.confidence", PCP_KIND_REAL,
                                     .want = "a number in (0, 1)"},
    [PCP_SPEC_PROMOTE_MIN_EXAMPLES] = {"promote.min_examples", PCP_KIND_UINT, .min = 1,
                                       .max = 1000000000000ull},
};

/* The keys a challenger may give: the rest it shares with its champion. */
static bool challenger_key(pcp_spec_key k)
{
    return k == PCP_SPEC_RULE || k == PCP_SPEC_PARAMS || k == PCP_SPEC_AVERAGED ||
           k == PCP_SPEC_BIAS || k == PCP_SPEC_BIAS_VALUE;
}

pcp_code pcp_spec_challenger(pcp_spec *s, const pcp_spec *sub, pcp_error *err)
{
    if (s->nchallengers >= PCP_CHALLENGERS_MAX)
        return pcp_error_set(err, PCP_E_SPEC, "at most %d challengers", PCP_CHALLENGERS_MAX);
    if (!sub->given[PCP_SPEC_RULE])
        return pcp_error_set(err, PCP_E_SPEC, "give the challenger's rule");
    for (int k = 0; k < PCP_SPEC_NKEYS; k++)
        if (sub->given[k] && !challenger_key((pcp_spec_key)k))
            return pcp_error_set(err, PCP_E_SPEC, "'%s' is the champion's (a challenger gives "
                                 "rule, params, averaged, bias, bias_value)",
                                 pcp_spec_keys[k].name);
    pcp_challenger *ch = &s->challengers[s->nchallengers++];
    ch->c = sub->c;
    ch->c.classes = NULL;
    ch->c.nclasses = 0;
    memcpy(ch->given, sub->given, sizeof ch->given);
    s->given[PCP_SPEC_CHALLENGERS] = true;
    return PCP_OK;
}

void pcp_challenger_config(const pc_model_config *champion, const pcp_challenger *ch,
                           pc_model_config *out)
{
    *out = *champion;
    out->rule = ch->c.rule;
    out->params = ch->c.params; /* the rule's defaults, or what the challenger gave */
    if (ch->given[PCP_SPEC_AVERAGED])
        out->averaged = ch->c.averaged;
    else   /* the champion's averaging, where the challenger's rule can average */
        out->averaged = champion->averaged && pc_rule_can_average(ch->c.rule);
    if (ch->given[PCP_SPEC_BIAS])
        out->bias = ch->c.bias;
    if (ch->given[PCP_SPEC_BIAS_VALUE])
        out->bias_value = ch->c.bias_value;
}

void pcp_join_config_default(pcp_join_config *j)
{
    memset(j, 0, sizeof *j);
    j->ttl = PCP_JOIN_DEFAULT_TTL;
    j->max_pending = PCP_JOIN_DEFAULT_MAX_PENDING;
    j->max_bytes = PCP_JOIN_DEFAULT_MAX_BYTES;
}

void pcp_spec_init_template(pcp_spec *s)
{
    pcp_spec_init(s);
    pc_model_config *c = &s->c;
    c->rule = pc_rule_find(PCP_TEMPLATE_RULE);
    pc_params_default(c->rule, &c->params);
    c->averaged = true;
    c->dim = 1u << PCP_TEMPLATE_HASH_BITS;
    s->hash_bits = PCP_TEMPLATE_HASH_BITS;
    c->prep.scale = PCP_TEMPLATE_SCALE;
    pc_error ignored;
    if (pc_transform_parse(PCP_TEMPLATE_TRANSFORM, strlen(PCP_TEMPLATE_TRANSFORM),
                           &c->prep.transforms[0], &ignored) == PC_OK)
        c->prep.ntransforms = 1;
}

void pcp_spec_init(pcp_spec *s)
{
    memset(s, 0, sizeof *s);
    pc_model_config_default(&s->c, 1u << PCP_SPEC_DEFAULT_HASH_BITS);
    s->hash_bits = PCP_SPEC_DEFAULT_HASH_BITS;
    pcp_join_config_default(&s->join);
    s->experts.eta = PCP_EXPERTS_DEFAULT_ETA;
    s->experts.confidence = PCP_PROMOTE_DEFAULT_CONFIDENCE;
    s->experts.min_examples = PCP_PROMOTE_DEFAULT_MIN_EXAMPLES;
}

void pcp_classes_free(char **classes)
{
    if (!classes)
        return;
    for (char **p = classes; *p; p++)
        free(*p);
    free(classes);
}

void pcp_spec_free(pcp_spec *s)
{
    pcp_classes_free(s->classes);
    s->classes = NULL;
    s->nclasses = s->room = 0;
}

const char *pcp_rule_names(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (const pc_rule *const *p = pc_rules(); *p && len < cap; p++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", pc_rule_name(*p));
    return buf;
}

pcp_code pcp_spec_set(pcp_spec *s, pcp_spec_key k, pcp_spec_value v, pcp_error *err)
{
    const pcp_spec_keyinfo *ki = &pcp_spec_keys[k];
    /* The readers check the range already; this guards the shift below. */
    if (ki->kind == PCP_KIND_UINT && (v.u < ki->min || v.u > ki->max))
        return pcp_error_set(err, PCP_E_SPEC, "must be an integer in [%llu, %llu]",
                             (unsigned long long)ki->min, (unsigned long long)ki->max);
    if ((k == PCP_SPEC_DIM && s->given[PCP_SPEC_HASH_BITS]) ||
        (k == PCP_SPEC_HASH_BITS && s->given[PCP_SPEC_DIM]))
        return pcp_error_set(err, PCP_E_SPEC, "give either dim or hash_bits, not both (they set "
                                              "the same dimension: give one)");
    switch (k) {
    case PCP_SPEC_RULE:
        s->c.rule = v.rule;
        pc_params_default(v.rule, &s->c.params);
        break;
    case PCP_SPEC_DIM:
        s->c.dim = (uint32_t)v.u;
        s->hash_bits = 0;
        break;
    case PCP_SPEC_HASH_BITS:
        s->c.dim = 1u << v.u;
        s->hash_bits = (unsigned)v.u;
        break;
    case PCP_SPEC_BIAS: s->c.bias = v.b; break;
    case PCP_SPEC_BIAS_VALUE: s->c.bias_value = v.d; break;
    case PCP_SPEC_AVERAGED: s->c.averaged = v.b; break;
    case PCP_SPEC_MODE: s->c.batch = v.u == 1; break;
    case PCP_SPEC_STORAGE: s->c.storage = (pc_storage)v.u; break;
    case PCP_SPEC_WEIGHTS: s->c.weights = (pc_weights)v.u; break;
    case PCP_SPEC_CALIBRATE: s->c.calibrate = v.b; break;
    case PCP_SPEC_SCALE: s->c.prep.scale = (pc_scale)v.u; break;
    case PCP_SPEC_MAX_CROSSED: s->c.prep.max_crossed = (uint32_t)v.u; break;
    case PCP_SPEC_OPEN_CLASSES:
        s->c.open_classes = v.b;
        s->c.multiclass = s->c.multiclass || v.b;   /* false alone leaves a binary model */
        break;
    case PCP_SPEC_EXPERTS:
        s->experts.mode = (pcp_experts_mode)v.u;
        if (!s->given[PCP_SPEC_EXPERTS_ETA]) /* the mode's default, unless eta was given */
            s->experts.eta = v.u == PCP_EXPERTS_RWMA ? 0 : PCP_EXPERTS_DEFAULT_ETA;
        break;
    case PCP_SPEC_EXPERTS_ETA:
        /* the bounds of seed 001 need eta <= 1/2 */
        if (!(v.d >= 0 && v.d <= 0.5))
            return pcp_error_set(err, PCP_E_SPEC, "must be in (0, 0.5], or 0 for the schedule "
                                 "min(1/2, sqrt(ln N / t)), not %g", v.d);
        s->experts.eta = v.d;
        break;
    case PCP_SPEC_EXPERTS_SEED:
        s->experts.seed = v.u;
        s->experts.seed_given = true;
        break;
    case PCP_SPEC_PROMOTE_AUTO: s->experts.auto_promote = v.b; break;
    case PCP_SPEC_PROMOTE_CONFIDENCE:
        if (!(v.d > 0 && v.d < 1))
            return pcp_error_set(err, PCP_E_SPEC, "must be in (0, 1), e.g. 0.99, not %g", v.d);
        s->experts.confidence = v.d;
        break;
    case PCP_SPEC_PROMOTE_MIN_EXAMPLES: s->experts.min_examples = v.u; break;
    case PCP_SPEC_HINTS_B:
        if (!(v.d >= 0 && v.d <= 1e300))
            return pcp_error_set(err, PCP_E_SPEC, "must be a number >= 0 (0: no hints), not %g",
                                 v.d);
        s->join.hints_b = v.d;
        break;
    case PCP_SPEC_HINTS_SEED: s->join.hints_seed = v.u; break;
    case PCP_SPEC_JOIN_TTL: s->join.ttl = v.u; break;
    case PCP_SPEC_JOIN_MAX_PENDING: s->join.max_pending = v.u; break;
    case PCP_SPEC_JOIN_MAX_BYTES: s->join.max_bytes = v.u; break;
    case PCP_SPEC_JOIN_DEFAULT_LABEL:
        /* checked against the model's kind in pcp_spec_finish, once it is known */
        if (v.str.len == 0 || v.str.len > PC_CLASS_NAME_MAX || memchr(v.str.s, 0, v.str.len))
            return pcp_error_set(err, PCP_E_SPEC, "must be 1 to %d bytes without NUL",
                                 PC_CLASS_NAME_MAX);
        memcpy(s->join.default_label, v.str.s, v.str.len);
        s->join.default_label[v.str.len] = 0;
        s->join.has_default = true;
        break;
    default:   /* params and classes come an entry at a time */
        return pcp_error_set(err, PCP_E_INTERNAL, "'%s' is not a single value", ki->name);
    }
    s->given[k] = true;
    return PCP_OK;
}

pcp_code pcp_spec_param(pcp_spec *s, const char *name, const double *v, size_t n, pc_status *st,
                        pcp_error *err)
{
    pc_error pe = {{0}};
    pc_status status = pc_params_set(s->c.rule, &s->c.params, name, v, n, &pe);
    if (st)
        *st = status;
    s->given[PCP_SPEC_PARAMS] = true;
    return status == PC_OK ? PCP_OK : pcp_error_set(err, PCP_E_SPEC, "%s", pe.msg);
}

pcp_code pcp_spec_texts(pcp_spec *s, pcp_spec_key k, size_t n, pcp_error *err)
{
    size_t max = k == PCP_SPEC_TRANSFORMS ? PC_TRANSFORMS_MAX : PC_CROSSES_MAX;
    if (n > max)
        return pcp_error_set(err, PCP_E_SPEC, "at most %zu %s, not %zu", max,
                             pcp_spec_keys[k].name, n);
    if (k == PCP_SPEC_TRANSFORMS)
        s->c.prep.ntransforms = 0;
    else
        s->c.prep.ncrosses = 0;
    s->given[k] = true;
    return PCP_OK;
}

pcp_code pcp_spec_text(pcp_spec *s, pcp_spec_key k, size_t i, const char *text, size_t len,
                       pcp_error *err)
{
    pc_prep *p = &s->c.prep;
    pc_error pe = {{0}};
    pc_status st;
    if (k == PCP_SPEC_TRANSFORMS) {
        if (p->ntransforms >= PC_TRANSFORMS_MAX) /* more than pcp_spec_texts was told */
            return pcp_error_set(err, PCP_E_INTERNAL, "transform %zu was not announced", i);
        if ((st = pc_transform_parse(text, len, &p->transforms[p->ntransforms], &pe)) == PC_OK)
            p->ntransforms++;
    } else {
        if (p->ncrosses >= PC_CROSSES_MAX)
            return pcp_error_set(err, PCP_E_INTERNAL, "cross %zu was not announced", i);
        if ((st = pc_cross_parse(text, len, &p->crosses[p->ncrosses], &pe)) == PC_OK)
            p->ncrosses++;
    }
    return st == PC_OK ? PCP_OK : pcp_error_set(err, PCP_E_SPEC, "item %zu: %s", i, pe.msg);
}

pcp_code pcp_spec_classes(pcp_spec *s, size_t n, pcp_error *err)
{
    if (n > PC_CLASSES_MAX)
        return pcp_error_set(err, PCP_E_SPEC, "%zu classes exceed the maximum (%d)", n,
                             PC_CLASSES_MAX);
    pcp_spec_free(s);   /* a later list replaces an earlier one */
    if (!(s->classes = calloc(n + 1, sizeof *s->classes)))
        return pcp_error_set(err, PCP_E_INTERNAL, "out of memory for %zu class names", n);
    s->room = n;
    s->c.multiclass = true;
    s->given[PCP_SPEC_CLASSES] = true;
    return PCP_OK;
}

pcp_code pcp_spec_class(pcp_spec *s, size_t i, const char *name, size_t len, pcp_error *err)
{
    if (s->nclasses >= s->room)   /* more than pcp_spec_classes was told: a front end's bug */
        return pcp_error_set(err, PCP_E_INTERNAL, "class %zu was not announced", i);
    if (len == 0 || len > PC_CLASS_NAME_MAX || memchr(name, 0, len))
        return pcp_error_set(err, PCP_E_SPEC, "class %zu must be 1 to %d bytes without NUL", i,
                             PC_CLASS_NAME_MAX);
    /* Quadratic, but n <= 4096 and a spec arrives once per model. */
    for (size_t j = 0; j < s->nclasses; j++)
        if (strlen(s->classes[j]) == len && memcmp(s->classes[j], name, len) == 0) {
            char q[64];
            return pcp_error_set(err, PCP_E_SPEC, "class %s is listed twice",
                                 pcp_quote(q, sizeof q, name, len));
        }
    char *copy = malloc(len + 1);
    if (!copy)
        return pcp_error_set(err, PCP_E_INTERNAL, "out of memory copying class %zu", i);
    memcpy(copy, name, len);
    copy[len] = 0;
    s->classes[s->nclasses++] = copy;
    return PCP_OK;
}

pcp_code pcp_spec_finish(pcp_spec *s, pcp_spec_key *blame, pcp_error *err)
{
    /* averaged: true, the default's or a template's, applies to the rules
     * that can average; given for a rule that cannot, it is refused */
    if (!s->given[PCP_SPEC_AVERAGED] && s->c.averaged && !pc_rule_can_average(s->c.rule))
        s->c.averaged = false;
    *blame = PCP_SPEC_CLASSES;
    if (s->c.multiclass && s->nclasses == 0 && !s->c.open_classes)
        return pcp_error_set(err, PCP_E_SPEC, "a multiclass model needs classes, or open_classes: "
                                              "true to add them as labels arrive");
    if (s->join.has_default && !s->c.multiclass) {
        /* a binary model's default label is 1 or -1, however it was written */
        const char *d = s->join.default_label;
        if (!strcmp(d, "1") || !strcmp(d, "+1") || !strcmp(d, "true"))
            strcpy(s->join.default_label, "1");
        else if (!strcmp(d, "-1") || !strcmp(d, "false"))
            strcpy(s->join.default_label, "-1");
        else {
            *blame = PCP_SPEC_JOIN_DEFAULT_LABEL;
            return pcp_error_set(err, PCP_E_SPEC, "the default label of a binary model must be 1 or "
                                                  "-1, not \"%.40s\"", d);
        }
    }
    if (s->experts.auto_promote && s->nchallengers == 0) {
        *blame = PCP_SPEC_PROMOTE_AUTO;
        return pcp_error_set(err, PCP_E_SPEC, "promote.auto promotes a challenger: give "
                             "challengers too (e.g. [{rule: mcp}])");
    }
    if (s->experts.mode != PCP_EXPERTS_NONE && s->nchallengers == 0) {
        *blame = PCP_SPEC_EXPERTS;
        return pcp_error_set(err, PCP_E_SPEC, "experts combine the model with its challengers: "
                             "give challengers too (e.g. [{rule: mcp}, {rule: alma}])");
    }
    s->c.classes = (const char *const *)s->classes;
    s->c.nclasses = s->nclasses;
    return PCP_OK;
}
