/* features.c - an example's features, in any of the three wire encodings, into
 * a normalized pc_svec; and the shape of batch params.
 *
 * Encodings (docs/protocol.md): a map {name: value}, a list of [name, value]
 * pairs, or a dense array of numbers.  Names are strings (hashed into the
 * model's space with pc_hash_feature, the same function clients may use) or
 * non-negative integers (indices).  Every error names the feature.
 */
#include "proto/proto.h"
#include "proto/wire.h"

#include <math.h>
#include <stdio.h>

/* Describes a key for messages: 'name' or index 12. */
static const char *key_desc(char *buf, size_t cap, const msgpack_object *k)
{
    if (k->type == MSGPACK_OBJECT_STR)
        return pcp_quote(buf, cap, k->via.str.ptr, k->via.str.size);
    if (k->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        snprintf(buf, cap, "%llu", (unsigned long long)k->via.u64);
    else if (k->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        snprintf(buf, cap, "%lld", (long long)k->via.i64);
    else
        snprintf(buf, cap, "(%s)", pcp_type_name(k));
    return buf;
}

static pcp_code key_index(const msgpack_object *k, uint32_t dim, uint32_t *idx, pcp_error *err)
{
    char q[64];
    switch (k->type) {
    case MSGPACK_OBJECT_STR:
        *idx = pc_hash_feature(k->via.str.ptr, k->via.str.size, dim);
        return PCP_OK;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (k->via.u64 >= dim)
            return pcp_error_set(err, PCP_E_FEATURES,
                                 "feature index %llu is outside the model's dimension %u "
                                 "(indices are 0 to %u)",
                                 (unsigned long long)k->via.u64, dim, dim - 1);
        *idx = (uint32_t)k->via.u64;
        return PCP_OK;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return pcp_error_set(err, PCP_E_FEATURES,
                             "feature index %s is negative: indices are 0 to %u",
                             key_desc(q, sizeof q, k), dim - 1);
    default:
        return pcp_error_set(err, PCP_E_FEATURES,
                             "a feature name must be a string or a non-negative integer, not %s",
                             pcp_type_name(k));
    }
}

static pcp_code value_of(const msgpack_object *k, const msgpack_object *v, double *out,
                         pcp_error *err)
{
    char q[64];
    double d;
    if (!pcp_number(v, &d))
        return pcp_error_set(err, PCP_E_FEATURES, "feature %s: the value must be a number, not %s",
                             key_desc(q, sizeof q, k), pcp_type_name(v));
    if (!pc_value_ok(d))
        return pcp_error_set(err, PCP_E_FEATURES,
                             "feature %s: the value %g is %s: send finite numbers of magnitude at "
                             "most 2^64 (1.8e19)",
                             key_desc(q, sizeof q, k), d, isfinite(d) ? "too large" : "not finite");
    *out = d;
    return PCP_OK;
}

static pcp_code push(pc_svec *x, uint32_t idx, double v, pcp_error *err)
{
    if (pc_svec_push(x, idx, v) != PC_OK)
        return pcp_error_set(err, PCP_E_INTERNAL, "out of memory storing %u features", x->n);
    return PCP_OK;
}

/* The key/value of entry i of a map or a pairs list; pairs are checked. */
static pcp_code entry(const msgpack_object *o, bool is_map, uint32_t i,
                      const msgpack_object **k, const msgpack_object **v, pcp_error *err)
{
    if (is_map) {
        *k = &o->via.map.ptr[i].key;
        *v = &o->via.map.ptr[i].val;
        return PCP_OK;
    }
    const msgpack_object *p = &o->via.array.ptr[i];
    if (p->type != MSGPACK_OBJECT_ARRAY || p->via.array.size != 2)
        return pcp_error_set(err, PCP_E_FEATURES,
                             "features: item %u must be a [name, value] pair like the first, not "
                             "%s%s", i, pcp_type_name(p),
                             p->type == MSGPACK_OBJECT_ARRAY ? " of another length" : "");
    *k = &p->via.array.ptr[0];
    *v = &p->via.array.ptr[1];
    return PCP_OK;
}

static pcp_code parse(const msgpack_object *o, pc_namer *nm, const pcp_limits *lim, pc_svec *x,
                      bool *named, pcp_error *err)
{
    uint32_t dim = nm->dim;
    uint32_t n;
    bool is_map = o->type == MSGPACK_OBJECT_MAP;
    if (is_map)
        n = o->via.map.size;
    else if (o->type == MSGPACK_OBJECT_ARRAY)
        n = o->via.array.size;
    else
        return pcp_error_set(err, PCP_E_FEATURES,
                             "features must be a map {name: value}, a list of [name, value] pairs "
                             "or an array of numbers, not %s", pcp_type_name(o));
    if (n > lim->max_features)
        return pcp_error_set(err, PCP_E_LIMIT, "%u features exceed max_features (%u)", n,
                             lim->max_features);
    bool dense = !is_map && n > 0 && o->via.array.ptr[0].type != MSGPACK_OBJECT_ARRAY;
    if (dense) {
        if (n > dim)
            return pcp_error_set(err, PCP_E_FEATURES,
                                 "dense features: %u values but the model's dimension is %u", n,
                                 dim);
        for (uint32_t i = 0; i < n; i++) {
            const msgpack_object *v = &o->via.array.ptr[i];
            msgpack_object k = {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = i};
            double d;
            pcp_code c = value_of(&k, v, &d, err);
            if (c == PCP_E_FEATURES && v->type == MSGPACK_OBJECT_ARRAY)
                return pcp_error_set(err, PCP_E_FEATURES,
                                     "features: item %u is an array but item 0 is a number: use "
                                     "[name, value] pairs or numbers throughout", i);
            if (c == PCP_OK && d != 0)   /* zeros cost nothing: keep dense rows sparse */
                c = push(x, i, d, err);
            if (c != PCP_OK)
                return c;
        }
        return PCP_OK;
    }
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *k = NULL, *v = NULL;
        uint32_t idx = 0;
        double d = 0;
        pcp_code c = entry(o, is_map, i, &k, &v, err);
        if (c == PCP_OK && k->type != MSGPACK_OBJECT_STR)
            c = key_index(k, dim, &idx, err);
        if (c == PCP_OK)
            c = value_of(k, v, &d, err);
        if (c == PCP_OK && k->type == MSGPACK_OBJECT_STR) {
            /* the model's name step: the name hashed, or transformed */
            if (pc_namer_add(nm, x, k->via.str.ptr, k->via.str.size, d) != PC_OK)
                c = pcp_error_set(err, PCP_E_INTERNAL, "out of memory storing %u features", x->n);
            *named = true;
        } else if (c == PCP_OK) {
            c = push(x, idx, d, err);
        }
        if (c != PCP_OK)
            return c;
    }
    if (pc_namer_end(nm, x) != PC_OK)
        return pcp_error_set(err, PCP_E_INTERNAL, "out of memory crossing %u features", x->n);
    return PCP_OK;
}

pcp_code pcp_features(const msgpack_object *o, pc_namer *nm, const pcp_limits *lim, pc_svec *x,
                      pcp_names_at *names, pcp_error *err)
{
    uint32_t dim = nm->dim;
    if (names)
        *names = (pcp_names_at){0};
    pcp_limits def;
    if (!lim) {
        pcp_limits_default(&def);
        lim = &def;
    }
    pc_svec_clear(x);
    if (dim == 0)
        return pcp_error_set(err, PCP_E_INTERNAL, "features: the model's dimension is 0");
    bool named = false;
    pc_namer_start(nm);
    pcp_code c = parse(o, nm, lim, x, &named, err);
    if (c == PCP_OK) {
        pc_error pe = {{0}};
        if (pc_svec_normalize(x, pc_namer_space(nm), &pe) != PC_OK)
            c = pcp_error_set(err, PCP_E_FEATURES, "%s", pe.msg);
    }
    if (c != PCP_OK) {
        pc_svec_clear(x);
        return c;
    }
    /* Only a valid example's names can be reported, so a rejected request
     * leaves no trace in the daemon's name table. */
    if (names && named)
        names->obj = o;
    return PCP_OK;
}

/* A second walk: pcp_features checked every shape. */
void pcp_feature_names(const msgpack_object *o, uint32_t dim, pcp_name_cb on_name, void *ud)
{
    bool is_map = o->type == MSGPACK_OBJECT_MAP;
    uint32_t n = is_map ? o->via.map.size : o->via.array.size;
    for (uint32_t i = 0; i < n; i++) {
        if (!is_map && o->via.array.ptr[i].type != MSGPACK_OBJECT_ARRAY)
            return; /* dense: positions, no names */
        const msgpack_object *k = is_map ? &o->via.map.ptr[i].key
                                         : &o->via.array.ptr[i].via.array.ptr[0];
        const msgpack_object *v = is_map ? &o->via.map.ptr[i].val
                                         : &o->via.array.ptr[i].via.array.ptr[1];
        double d = 0;
        if (k->type == MSGPACK_OBJECT_STR && pcp_number(v, &d))
            on_name(ud, pc_hash_feature(k->via.str.ptr, k->via.str.size, dim), k->via.str.ptr,
                    k->via.str.size, d);
    }
}

pcp_code pcp_batch(const msgpack_object *o, bool labelled, const pcp_limits *lim,
                   const msgpack_object **items, uint32_t *n, pcp_error *err)
{
    pcp_limits def;
    if (!lim) {
        pcp_limits_default(&def);
        lim = &def;
    }
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return pcp_error_set(err, PCP_E_PARAMS, "the batch must be an array of %s, not %s",
                             labelled ? "[features, label] pairs" : "features", pcp_type_name(o));
    uint32_t size = o->via.array.size;
    if (size > lim->max_batch)
        return pcp_error_set(err, PCP_E_LIMIT, "a batch of %u examples exceeds max_batch (%u)",
                             size, lim->max_batch);
    if (labelled)
        for (uint32_t i = 0; i < size; i++) {
            const msgpack_object *p = &o->via.array.ptr[i];
            if (p->type != MSGPACK_OBJECT_ARRAY || p->via.array.size != 2)
                return pcp_error_set(err, PCP_E_PARAMS,
                                     "batch item %u must be a [features, label] pair, not %s%s", i,
                                     pcp_type_name(p),
                                     p->type == MSGPACK_OBJECT_ARRAY ? " of another length" : "");
        }
    *items = o->via.array.ptr;
    *n = size;
    return PCP_OK;
}
