/* spec.c - a model spec (the map `create` takes) into a pc_model_config.
 *
 * The keys are a table (name, handler), Redis config.c style, so the unknown-key
 * message lists exactly what is accepted and docs/protocol.md matches it.
 * `rule` is applied before anything else whatever the map's order, because the
 * parameters are validated against the rule's own table (pc_params_set).
 */
#include "proto/proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything collected from the map before c and classes are committed. */
typedef struct spec {
    pc_model_config c;
    char **classes;
    size_t nclasses;
    bool have_dim;
    const msgpack_object *params;
} spec;

typedef pcp_code (*key_fn)(spec *s, const char *key, const msgpack_object *v, pcp_error *err);

static pcp_code bad_type(const char *key, const char *want, const msgpack_object *v,
                         pcp_error *err)
{
    return pcp_error_set(err, PCP_E_SPEC, "spec key '%s' must be %s, not %s", key, want,
                         pcp_type_name(v));
}

/* Copies a short msgpack string into a NUL-terminated buffer, for the lib's
 * by-name lookups; false when it does not fit or holds a NUL. */
static bool cstr(const msgpack_object *v, char *buf, size_t cap)
{
    size_t n = v->via.str.size;
    if (n >= cap || memchr(v->via.str.ptr, 0, n))
        return false;
    memcpy(buf, v->via.str.ptr, n);
    buf[n] = 0;
    return true;
}

static bool number(const msgpack_object *v, double *d)
{
    switch (v->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *d = (double)v->via.u64; return true;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *d = (double)v->via.i64; return true;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *d = v->via.f64; return isfinite(*d);
    default: return false;
    }
}

static pcp_code k_bool(const char *key, const msgpack_object *v, bool *out, pcp_error *err)
{
    if (v->type != MSGPACK_OBJECT_BOOLEAN)
        return bad_type(key, "true or false", v, err);
    *out = v->via.boolean;
    return PCP_OK;
}

static pcp_code k_rule(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    if (v->type != MSGPACK_OBJECT_STR)
        return bad_type(key, "a rule name (a string)", v, err);
    char name[64], q[64];
    const pc_rule *r = cstr(v, name, sizeof name) ? pc_rule_find(name) : NULL;
    if (!r) {
        char list[160] = "";
        size_t len = 0;
        for (const pc_rule *const *p = pc_rules(); *p && len < sizeof list; p++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                    pc_rule_name(*p));
        return pcp_error_set(err, PCP_E_SPEC, "spec key 'rule': unknown rule %s; rules are: %s",
                             pcp_quote(q, sizeof q, v->via.str.ptr, v->via.str.size), list);
    }
    s->c.rule = r;
    pc_params_default(r, &s->c.params);
    return PCP_OK;
}

static pcp_code k_params(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    if (v->type != MSGPACK_OBJECT_MAP)
        return bad_type(key, "a map {name: number or [numbers]}", v, err);
    s->params = v;   /* applied once the rule is known */
    return PCP_OK;
}

static pcp_code apply_params(spec *s, pcp_error *err)
{
    const msgpack_object_map *m = &s->params->via.map;
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
        char name[64], q[64];
        if (k->type != MSGPACK_OBJECT_STR)
            return pcp_error_set(err, PCP_E_SPEC, "spec key 'params': names must be strings, not %s",
                                 pcp_type_name(k));
        if (!cstr(k, name, sizeof name))
            return pcp_error_set(err, PCP_E_SPEC, "spec key 'params': %s has no parameter %s",
                                 pc_rule_name(s->c.rule),
                                 pcp_quote(q, sizeof q, k->via.str.ptr, k->via.str.size));
        double vals[PC_PARAM_LIST_MAX];
        size_t n = 0;
        if (v->type == MSGPACK_OBJECT_ARRAY) {
            if (v->via.array.size > PC_PARAM_LIST_MAX)
                return pcp_error_set(err, PCP_E_SPEC,
                                     "spec key 'params.%s': at most %d values, not %u", name,
                                     PC_PARAM_LIST_MAX, v->via.array.size);
            for (uint32_t j = 0; j < v->via.array.size; j++)
                if (!number(&v->via.array.ptr[j], &vals[n++]))
                    return pcp_error_set(err, PCP_E_SPEC,
                                         "spec key 'params.%s': value %u must be a finite number, "
                                         "not %s", name, j, pcp_type_name(&v->via.array.ptr[j]));
        } else if (!number(v, &vals[n++])) {
            return pcp_error_set(err, PCP_E_SPEC,
                                 "spec key 'params.%s' must be a finite number or a list of them, "
                                 "not %s", name, pcp_type_name(v));
        }
        pc_error pe = {{0}};
        pc_status st = pc_params_set(s->c.rule, &s->c.params, name, vals, n, &pe);
        if (st != PC_OK)
            return pcp_error_set(err, PCP_E_SPEC, "spec key 'params': %s", pe.msg);
    }
    return PCP_OK;
}

static pcp_code k_dim(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    if (s->have_dim)
        return pcp_error_set(err, PCP_E_SPEC, "spec keys 'dim' and 'hash_bits' both set the "
                                              "dimension: give one");
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 < 1 || v->via.u64 > PC_DIM_MAX)
        return pcp_error_set(err, PCP_E_SPEC, "spec key 'dim' must be an integer in [1, %u]",
                             PC_DIM_MAX);
    (void)key;
    s->c.dim = (uint32_t)v->via.u64;
    s->have_dim = true;
    return PCP_OK;
}

static pcp_code k_hash_bits(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    enum { MAX_BITS = 28 };   /* log2(PC_DIM_MAX) */
    _Static_assert(1u << MAX_BITS == PC_DIM_MAX, "hash_bits ceiling follows PC_DIM_MAX");
    if (s->have_dim)
        return pcp_error_set(err, PCP_E_SPEC, "spec keys 'dim' and 'hash_bits' both set the "
                                              "dimension: give one");
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 < 1 || v->via.u64 > MAX_BITS)
        return pcp_error_set(err, PCP_E_SPEC,
                             "spec key 'hash_bits' must be an integer in [1, %d] (dim = 2^bits)",
                             MAX_BITS);
    (void)key;
    s->c.dim = 1u << v->via.u64;
    s->have_dim = true;
    return PCP_OK;
}

static pcp_code k_bias(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    return k_bool(key, v, &s->c.bias, err);
}

static pcp_code k_bias_value(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    if (!number(v, &s->c.bias_value))
        return bad_type(key, "a finite number", v, err);
    return PCP_OK;
}

static pcp_code k_averaged(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    return k_bool(key, v, &s->c.averaged, err);
}

static pcp_code k_mode(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    if (v->type != MSGPACK_OBJECT_STR)
        return bad_type(key, "\"online\" or \"batch\"", v, err);
    const char *p = v->via.str.ptr;
    uint32_t n = v->via.str.size;
    if (n == 6 && memcmp(p, "online", 6) == 0)
        s->c.batch = false;
    else if (n == 5 && memcmp(p, "batch", 5) == 0)
        s->c.batch = true;
    else {
        char q[64];
        return pcp_error_set(err, PCP_E_SPEC, "spec key 'mode' must be \"online\" or \"batch\", not %s",
                             pcp_quote(q, sizeof q, p, n));
    }
    return PCP_OK;
}

static pcp_code k_classes(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    if (v->type != MSGPACK_OBJECT_ARRAY)
        return bad_type(key, "a list of class names", v, err);
    uint32_t n = v->via.array.size;
    if (n > PC_CLASSES_MAX)
        return pcp_error_set(err, PCP_E_SPEC, "spec key 'classes': %u classes exceed the maximum (%d)",
                             n, PC_CLASSES_MAX);
    const msgpack_object *e = v->via.array.ptr;
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].type != MSGPACK_OBJECT_STR)
            return pcp_error_set(err, PCP_E_SPEC, "spec key 'classes': class %u must be a string, "
                                                  "not %s", i, pcp_type_name(&e[i]));
        uint32_t len = e[i].via.str.size;
        if (len == 0 || len > PC_CLASS_NAME_MAX || memchr(e[i].via.str.ptr, 0, len))
            return pcp_error_set(err, PCP_E_SPEC,
                                 "spec key 'classes': class %u must be 1 to %d bytes without NUL",
                                 i, PC_CLASS_NAME_MAX);
        /* Quadratic, but n <= 4096 and a spec arrives once per model. */
        for (uint32_t j = 0; j < i; j++)
            if (e[j].via.str.size == len && memcmp(e[j].via.str.ptr, e[i].via.str.ptr, len) == 0) {
                char q[64];
                return pcp_error_set(err, PCP_E_SPEC, "spec key 'classes': class %s is listed twice",
                                     pcp_quote(q, sizeof q, e[i].via.str.ptr, len));
            }
    }
    char **cl = calloc((size_t)n + 1, sizeof *cl);
    if (!cl)
        return pcp_error_set(err, PCP_E_INTERNAL, "out of memory copying %u class names", n);
    for (uint32_t i = 0; i < n; i++) {
        cl[i] = malloc((size_t)e[i].via.str.size + 1);
        if (!cl[i]) {
            pcp_classes_free(cl);
            return pcp_error_set(err, PCP_E_INTERNAL, "out of memory copying %u class names", n);
        }
        memcpy(cl[i], e[i].via.str.ptr, e[i].via.str.size);
        cl[i][e[i].via.str.size] = 0;
    }
    s->classes = cl;
    s->nclasses = n;
    s->c.multiclass = true;
    return PCP_OK;
}

static pcp_code k_open_classes(spec *s, const char *key, const msgpack_object *v, pcp_error *err)
{
    pcp_code c = k_bool(key, v, &s->c.open_classes, err);
    if (c == PCP_OK && s->c.open_classes)
        s->c.multiclass = true;
    return c;
}

static const struct {
    const char *name;
    key_fn fn;
} keys[] = {
    {"rule", k_rule},         {"params", k_params},     {"dim", k_dim},
    {"hash_bits", k_hash_bits}, {"bias", k_bias},       {"bias_value", k_bias_value},
    {"averaged", k_averaged}, {"mode", k_mode},         {"classes", k_classes},
    {"open_classes", k_open_classes},
};
enum { NKEYS = sizeof keys / sizeof keys[0] };

void pcp_classes_free(char **classes)
{
    if (!classes)
        return;
    for (char **p = classes; *p; p++)
        free(*p);
    free(classes);
}

static int key_find(const msgpack_object *k)
{
    if (k->type != MSGPACK_OBJECT_STR)
        return -1;
    for (int i = 0; i < NKEYS; i++)
        if (strlen(keys[i].name) == k->via.str.size &&
            memcmp(keys[i].name, k->via.str.ptr, k->via.str.size) == 0)
            return i;
    return -1;
}

static pcp_code walk(spec *s, const msgpack_object_map *m, pcp_error *err)
{
    bool seen[NKEYS] = {false};
    int rule_at = -1;   /* map position of the rule */
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key;
        int id = key_find(k);
        if (id < 0) {
            char q[64], list[160] = "";
            size_t len = 0;
            for (int j = 0; j < NKEYS && len < sizeof list; j++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                        keys[j].name);
            if (k->type == MSGPACK_OBJECT_STR)
                pcp_quote(q, sizeof q, k->via.str.ptr, k->via.str.size);
            else
                snprintf(q, sizeof q, "(%s)", pcp_type_name(k));
            return pcp_error_set(err, PCP_E_SPEC, "unknown spec key %s; keys are: %s", q, list);
        }
        if (seen[id])
            return pcp_error_set(err, PCP_E_SPEC, "spec key '%s' is given twice", keys[id].name);
        seen[id] = true;
        if (id == 0)
            rule_at = (int)i;
    }
    /* rule first: params and their defaults depend on it. */
    if (rule_at >= 0) {
        pcp_code c = k_rule(s, "rule", &m->ptr[rule_at].val, err);
        if (c != PCP_OK)
            return c;
    }
    for (uint32_t i = 0; i < m->size; i++) {
        int id = key_find(&m->ptr[i].key);
        if (id == 0)
            continue;
        pcp_code c = keys[id].fn(s, keys[id].name, &m->ptr[i].val, err);
        if (c != PCP_OK)
            return c;
    }
    return s->params ? apply_params(s, err) : PCP_OK;
}

pcp_code pcp_model_spec(const msgpack_object *map, pc_model_config *c, char ***classes,
                        pcp_error *err)
{
    if (map->type != MSGPACK_OBJECT_MAP)
        return pcp_error_set(err, PCP_E_SPEC, "a model spec must be a map {rule: ..., dim: ...}, "
                                              "not %s", pcp_type_name(map));
    spec s = {.classes = NULL};
    pc_model_config_default(&s.c, 1u << 20);
    pcp_code code = walk(&s, &map->via.map, err);
    if (code != PCP_OK) {
        pcp_classes_free(s.classes);
        return code;
    }
    s.c.nclasses = s.nclasses;
    s.c.classes = (const char *const *)s.classes;
    *c = s.c;
    *classes = s.classes;
    return PCP_OK;
}
