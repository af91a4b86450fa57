/* spec.c - a model spec (the map `create` takes) into a pc_model_config.
 *
 * The msgpack front end of spec_keys.c: it reads each value of the map as the kind the key table
 * gives (wording type errors "spec key 'k' must be ..."), and leaves filling and checking the
 * spec to pcp_spec_set and its siblings, naming the key in what they report.
 * `rule` is applied before anything else whatever the map's order, because the
 * parameters are validated against the rule's own table (pc_params_set).
 */
#include "proto/proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pcp_code bad_type(const char *key, const char *want, const msgpack_object *v,
                         pcp_error *err)
{
    return pcp_error_set(err, PCP_E_SPEC, "spec key '%s' must be %s, not %s", key, want,
                         pcp_type_name(v));
}

/* A message from spec_keys.c, which leaves the key out, with the key put in. */
static pcp_code keyed(const char *key, const pcp_error *e, pcp_error *err)
{
    return pcp_error_set(err, e->code, "spec key '%s': %s", key, e->msg);
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

static pcp_code read_rule(const msgpack_object *v, const pc_rule **out, pcp_error *err)
{
    const pcp_spec_keyinfo *ki = &pcp_spec_keys[PCP_SPEC_RULE];
    if (v->type != MSGPACK_OBJECT_STR)
        return bad_type(ki->name, ki->want, v, err);
    char name[64], q[64], list[160];
    if (!cstr(v, name, sizeof name) || !(*out = pc_rule_find(name)))
        return pcp_error_set(err, PCP_E_SPEC, "spec key 'rule': unknown rule %s; rules are: %s",
                             pcp_quote(q, sizeof q, v->via.str.ptr, v->via.str.size),
                             pcp_rule_names(list, sizeof list));
    return PCP_OK;
}

/* One value of a scalar kind, as the table says, into *out. */
static pcp_code read_value(pcp_spec_key k, const msgpack_object *v, pcp_spec_value *out,
                           pcp_error *err)
{
    const pcp_spec_keyinfo *ki = &pcp_spec_keys[k];
    switch (ki->kind) {
    case PCP_KIND_RULE: return read_rule(v, &out->rule, err);
    case PCP_KIND_UINT: {
        char want[64];
        snprintf(want, sizeof want, "an integer in [%llu, %llu]", (unsigned long long)ki->min,
                 (unsigned long long)ki->max);
        if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
            return bad_type(ki->name, want, v, err);
        if (v->via.u64 < ki->min || v->via.u64 > ki->max)
            return pcp_error_set(err, PCP_E_SPEC, "spec key '%s' must be %s, not %llu", ki->name,
                                 want, (unsigned long long)v->via.u64);
        out->u = v->via.u64;
        return PCP_OK;
    }
    case PCP_KIND_BOOL:
        if (v->type != MSGPACK_OBJECT_BOOLEAN)
            return bad_type(ki->name, ki->want, v, err);
        out->b = v->via.boolean;
        return PCP_OK;
    case PCP_KIND_REAL:
        return number(v, &out->d) ? PCP_OK : bad_type(ki->name, ki->want, v, err);
    case PCP_KIND_CHOICE:
        if (v->type != MSGPACK_OBJECT_STR)
            return bad_type(ki->name, ki->want, v, err);
        for (out->u = 0; ki->choices[out->u]; out->u++)
            if (strlen(ki->choices[out->u]) == v->via.str.size &&
                memcmp(ki->choices[out->u], v->via.str.ptr, v->via.str.size) == 0)
                return PCP_OK;
        char q[64];
        return pcp_error_set(err, PCP_E_SPEC, "spec key '%s' must be %s, not %s", ki->name,
                             ki->want, pcp_quote(q, sizeof q, v->via.str.ptr, v->via.str.size));
    case PCP_KIND_LABEL:
        /* as a label is sent: 1/-1, true/false or a class name; kept as text */
        if (v->type == MSGPACK_OBJECT_STR) {
            out->str.s = v->via.str.ptr;
            out->str.len = v->via.str.size;
        } else if (v->type == MSGPACK_OBJECT_BOOLEAN ||
                   (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 == 1) ||
                   (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && v->via.i64 == -1)) {
            bool pos = v->type == MSGPACK_OBJECT_BOOLEAN ? v->via.boolean
                                                         : v->type == MSGPACK_OBJECT_POSITIVE_INTEGER;
            out->str.s = pos ? "1" : "-1";
            out->str.len = pos ? 1 : 2;
        } else {
            return bad_type(ki->name, ki->want, v, err);
        }
        return PCP_OK;
    default: return pcp_error_set(err, PCP_E_INTERNAL, "spec key '%s' is no scalar", ki->name);
    }
}

static pcp_code read_params(pcp_spec *s, const msgpack_object *params, pcp_error *err)
{
    const msgpack_object_map *m = &params->via.map;
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
        pcp_error e;
        if (pcp_spec_param(s, name, vals, n, NULL, &e) != PCP_OK)
            return keyed("params", &e, err);
    }
    return PCP_OK;
}

static pcp_code read_classes(pcp_spec *s, const msgpack_object *v, pcp_error *err)
{
    pcp_error e;
    if (pcp_spec_classes(s, v->via.array.size, &e) != PCP_OK)
        return keyed("classes", &e, err);
    for (uint32_t i = 0; i < v->via.array.size; i++) {
        const msgpack_object *c = &v->via.array.ptr[i];
        if (c->type != MSGPACK_OBJECT_STR)
            return pcp_error_set(err, PCP_E_SPEC, "spec key 'classes': class %u must be a string, "
                                                  "not %s", i, pcp_type_name(c));
        if (pcp_spec_class(s, i, c->via.str.ptr, c->via.str.size, &e) != PCP_OK)
            return keyed("classes", &e, err);
    }
    return PCP_OK;
}

static pcp_code read_texts(pcp_spec *s, pcp_spec_key k, const msgpack_object *v, pcp_error *err)
{
    const char *key = pcp_spec_keys[k].name;
    pcp_error e;
    if (pcp_spec_texts(s, k, v->via.array.size, &e) != PCP_OK)
        return keyed(key, &e, err);
    for (uint32_t i = 0; i < v->via.array.size; i++) {
        const msgpack_object *t = &v->via.array.ptr[i];
        if (t->type != MSGPACK_OBJECT_STR)
            return pcp_error_set(err, PCP_E_SPEC, "spec key '%s': item %u must be a string, not %s",
                                 key, i, pcp_type_name(t));
        if (pcp_spec_text(s, k, i, t->via.str.ptr, t->via.str.size, &e) != PCP_OK)
            return keyed(key, &e, err);
    }
    return PCP_OK;
}

static pcp_code walk(pcp_spec *s, const msgpack_object_map *m, pcp_error *err);

/* Each challenger's map is a spec of its own (walk), kept by pcp_spec_challenger. */
static pcp_code read_challengers(pcp_spec *s, const msgpack_object *v, pcp_error *err)
{
    if (v->via.array.size > PCP_CHALLENGERS_MAX)
        return pcp_error_set(err, PCP_E_SPEC, "spec key 'challengers': at most %d, not %u",
                             PCP_CHALLENGERS_MAX, v->via.array.size);
    for (uint32_t i = 0; i < v->via.array.size; i++) {
        const msgpack_object *c = &v->via.array.ptr[i];
        if (c->type != MSGPACK_OBJECT_MAP)
            return pcp_error_set(err, PCP_E_SPEC, "spec key 'challengers': challenger %u must be "
                                 "a map {rule, params?, ...}, not %s", i, pcp_type_name(c));
        pcp_spec sub;
        pcp_spec_init(&sub);
        pcp_error e;
        pcp_code code = walk(&sub, &c->via.map, &e);
        if (code == PCP_OK)
            code = pcp_spec_challenger(s, &sub, &e);
        pcp_spec_free(&sub);
        if (code != PCP_OK)
            return pcp_error_set(err, code, "spec key 'challengers': challenger %u: %s", i, e.msg);
    }
    return PCP_OK;
}

static pcp_code apply(pcp_spec *s, pcp_spec_key k, const msgpack_object *v, pcp_error *err)
{
    const pcp_spec_keyinfo *ki = &pcp_spec_keys[k];
    if (ki->kind == PCP_KIND_CHALLENGERS)
        return v->type == MSGPACK_OBJECT_ARRAY ? read_challengers(s, v, err)
                                               : bad_type(ki->name, ki->want, v, err);
    if (ki->kind == PCP_KIND_PARAMS)
        return v->type == MSGPACK_OBJECT_MAP ? read_params(s, v, err)
                                             : bad_type(ki->name, ki->want, v, err);
    if (ki->kind == PCP_KIND_CLASSES)
        return v->type == MSGPACK_OBJECT_ARRAY ? read_classes(s, v, err)
                                               : bad_type(ki->name, ki->want, v, err);
    if (ki->kind == PCP_KIND_TEXTS)
        return v->type == MSGPACK_OBJECT_ARRAY ? read_texts(s, k, v, err)
                                               : bad_type(ki->name, ki->want, v, err);
    pcp_spec_value val;
    pcp_error e;
    pcp_code c = read_value(k, v, &val, err);
    if (c == PCP_OK && (c = pcp_spec_set(s, k, val, &e)) != PCP_OK)
        return keyed(ki->name, &e, err);
    return c;
}

static int key_find(const msgpack_object *k)
{
    if (k->type != MSGPACK_OBJECT_STR)
        return -1;
    for (int i = 0; i < PCP_SPEC_NKEYS; i++)
        if (strlen(pcp_spec_keys[i].name) == k->via.str.size &&
            memcmp(pcp_spec_keys[i].name, k->via.str.ptr, k->via.str.size) == 0)
            return i;
    return -1;
}

static pcp_code walk(pcp_spec *s, const msgpack_object_map *m, pcp_error *err)
{
    bool seen[PCP_SPEC_NKEYS] = {false};
    int rule_at = -1;   /* map position of the rule */
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object *k = &m->ptr[i].key;
        int id = key_find(k);
        if (id < 0) {
            char q[64], list[400] = "";
            size_t len = 0;
            for (int j = 0; j < PCP_SPEC_NKEYS && len < sizeof list; j++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                        pcp_spec_keys[j].name);
            if (k->type == MSGPACK_OBJECT_STR)
                pcp_quote(q, sizeof q, k->via.str.ptr, k->via.str.size);
            else
                snprintf(q, sizeof q, "(%s)", pcp_type_name(k));
            return pcp_error_set(err, PCP_E_SPEC, "unknown spec key %s; keys are: %s", q, list);
        }
        if (seen[id])
            return pcp_error_set(err, PCP_E_SPEC, "spec key '%s' is given twice",
                                 pcp_spec_keys[id].name);
        seen[id] = true;
        if (id == PCP_SPEC_RULE)
            rule_at = (int)i;
    }
    /* rule first: params and their defaults depend on it. */
    if (rule_at >= 0) {
        pcp_code c = apply(s, PCP_SPEC_RULE, &m->ptr[rule_at].val, err);
        if (c != PCP_OK)
            return c;
    }
    for (uint32_t i = 0; i < m->size; i++) {
        int id = key_find(&m->ptr[i].key);
        if (id == PCP_SPEC_RULE)
            continue;
        pcp_code c = apply(s, (pcp_spec_key)id, &m->ptr[i].val, err);
        if (c != PCP_OK)
            return c;
    }
    pcp_error e;
    pcp_spec_key blame;
    if (pcp_spec_finish(s, &blame, &e) == PCP_OK)
        return PCP_OK;
    return keyed(pcp_spec_keys[blame].name, &e, err);
}

/* s (just initialised) takes base's values for the keys the map leaves out,
 * its classes too unless the map gives classes. */
static pcp_code start_from(pcp_spec *s, const pc_model_config *base, const msgpack_object *map,
                           pcp_error *err)
{
    if (!base)
        return PCP_OK;
    s->c = *base;
    s->c.classes = NULL;
    s->c.nclasses = 0;
    s->hash_bits = 0;
    bool own_classes = false;
    for (uint32_t i = 0; i < map->via.map.size; i++)
        own_classes |= key_find(&map->via.map.ptr[i].key) == PCP_SPEC_CLASSES;
    pcp_code code = PCP_OK;
    if (!own_classes && base->nclasses) {
        code = pcp_spec_classes(s, base->nclasses, err);
        for (size_t i = 0; code == PCP_OK && i < base->nclasses; i++)
            code = pcp_spec_class(s, i, base->classes[i], strlen(base->classes[i]), err);
        s->given[PCP_SPEC_CLASSES] = false;
    }
    return code;
}

pcp_code pcp_model_spec_full(const msgpack_object *map, const pc_model_config *base,
                             pcp_spec *out, pcp_error *err)
{
    if (map->type != MSGPACK_OBJECT_MAP)
        return pcp_error_set(err, PCP_E_SPEC, "a model spec must be a map {rule: ..., dim: ...}, "
                                              "not %s", pcp_type_name(map));
    /* with a base, the join settings, challengers and experts the caller put
     * in out are the base's too */
    pcp_spec pre = *out;
    pcp_spec_init(out);
    if (base) {
        out->join = pre.join;
        memcpy(out->challengers, pre.challengers, sizeof out->challengers);
        out->nchallengers = pre.nchallengers;
        out->experts = pre.experts;
    }
    pcp_code code = start_from(out, base, map, err);
    if (code == PCP_OK)
        code = walk(out, &map->via.map, err);
    if (code != PCP_OK)
        pcp_spec_free(out);
    return code;
}

pcp_code pcp_model_spec(const msgpack_object *map, const pc_model_config *base,
                        pc_model_config *c, char ***classes, pcp_error *err)
{
    if (map->type != MSGPACK_OBJECT_MAP)
        return pcp_error_set(err, PCP_E_SPEC, "a model spec must be a map {rule: ..., dim: ...}, "
                                              "not %s", pcp_type_name(map));
    pcp_spec s;
    pcp_spec_init(&s);
    pcp_code code = start_from(&s, base, map, err);
    if (code == PCP_OK)
        code = walk(&s, &map->via.map, err);
    if (code != PCP_OK) {
        pcp_spec_free(&s);
        return code;
    }
    *c = s.c;
    *classes = s.classes;
    return PCP_OK;
}
