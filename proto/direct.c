/* direct.c - one pass over the bytes of the requests that carry the traffic:
 * predict, label and their batches.
 *
 * The general path walks every message three times: pcp_scan bounds it,
 * msgpack-c builds an object tree in a zone, pcp_features copies the tree into
 * a pc_svec.  That was half of a busy daemon's time.  Here the usual shapes of
 * these four requests are read straight from the bytes into pc_svecs.
 *
 * It reads in two steps: the envelope and the model's name, then, once the
 * caller knows the model's dimension, the examples (features and labels), so
 * each byte is read once.
 *
 * This file never reports an error.  Anything it is not sure of (an incomplete
 * message, another method, an encoding it does not read, a limit, a bad value)
 * makes it decline, and the caller takes the general path, which frames,
 * checks and words errors as before.  So it can only be faster or step aside;
 * tests/test_direct.c checks that what it accepts decodes exactly as the
 * general path decodes it.  Every read is bounds-checked against the bytes
 * received, and nothing is allocated from a count: an element is stored only
 * after its bytes have been read.
 */
#include "proto/proto.h"
#include "proto/wire.h"

#include <math.h>
#include <string.h>

typedef struct reader {
    const uint8_t *p, *end;
} reader;

static inline bool have(const reader *r, size_t k) { return (size_t)(r->end - r->p) >= k; }

/* Reads an array (map) header; false if the next object is not one. */
static bool container(reader *r, bool map, uint32_t *n)
{
    if (!have(r, 1))
        return false;
    uint8_t b = r->p[0], fix = map ? 0x80 : 0x90, w16 = map ? 0xde : 0xdc;
    if ((b & 0xf0) == fix) {
        *n = b & 0x0f;
        r->p += 1;
    } else if (b == w16 && have(r, 3)) {
        *n = (uint32_t)pcp_be(r->p + 1, 2);
        r->p += 3;
    } else if (b == w16 + 1 && have(r, 5)) {
        *n = (uint32_t)pcp_be(r->p + 1, 4);
        r->p += 5;
    } else {
        return false;
    }
    return true;
}

/* Reads a scalar (nil, boolean, integer, float or string) into o exactly as
 * msgpack-c's unpacker would store it: a signed encoding of a non-negative
 * value is a POSITIVE_INTEGER, a float32 is widened to double.  False for
 * containers, bin, ext, the unused byte, or a truncated value. */
static bool scalar(reader *r, msgpack_object *o)
{
    if (!have(r, 1))
        return false;
    const uint8_t *p = r->p;
    uint8_t b = p[0];
    size_t size = 1;
    memset(o, 0, sizeof *o);
    if (b <= 0x7f) {
        o->type = MSGPACK_OBJECT_POSITIVE_INTEGER, o->via.u64 = b;
    } else if (b >= 0xe0) {
        o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER, o->via.i64 = (int8_t)b;
    } else if (b >= 0xa0 && b <= 0xbf) {
        o->type = MSGPACK_OBJECT_STR, o->via.str.size = b & 0x1f;
        size += o->via.str.size;
    } else {
        static const uint8_t width[] = {
            [0xca - 0xc0] = 4, [0xcb - 0xc0] = 8, [0xcc - 0xc0] = 1, [0xcd - 0xc0] = 2,
            [0xce - 0xc0] = 4, [0xcf - 0xc0] = 8, [0xd0 - 0xc0] = 1, [0xd1 - 0xc0] = 2,
            [0xd2 - 0xc0] = 4, [0xd3 - 0xc0] = 8, [0xd9 - 0xc0] = 1, [0xda - 0xc0] = 2,
            [0xdb - 0xc0] = 4,
        };
        if (b == 0xc0 || b == 0xc2 || b == 0xc3) {
            o->type = b == 0xc0 ? MSGPACK_OBJECT_NIL : MSGPACK_OBJECT_BOOLEAN;
            o->via.boolean = b == 0xc3;
        } else {
            unsigned w = b >= 0xc0 && b < 0xdc ? width[b - 0xc0] : 0; /* not 0x80-0x9f */
            if (w == 0 || !have(r, 1 + w))
                return false;
            uint64_t v = pcp_be(p + 1, w);
            size += w;
            if (b == 0xca) {
                uint32_t u = (uint32_t)v;
                float f;
                memcpy(&f, &u, sizeof f);
                o->type = MSGPACK_OBJECT_FLOAT32, o->via.f64 = f;
            } else if (b == 0xcb) {
                o->type = MSGPACK_OBJECT_FLOAT64, memcpy(&o->via.f64, &v, sizeof v);
            } else if (b <= 0xcf) {
                o->type = MSGPACK_OBJECT_POSITIVE_INTEGER, o->via.u64 = v;
            } else if (b <= 0xd3) {
                /* sign-extend the w-byte two's complement value */
                int64_t s = w == 8 ? (int64_t)v : (int64_t)(v ^ (1ull << (8 * w - 1))) -
                                                       (int64_t)(1ull << (8 * w - 1));
                if (s >= 0)
                    o->type = MSGPACK_OBJECT_POSITIVE_INTEGER, o->via.u64 = (uint64_t)s;
                else
                    o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER, o->via.i64 = s;
            } else {
                o->type = MSGPACK_OBJECT_STR, o->via.str.size = (uint32_t)v;
                size += v;
            }
        }
    }
    if (!have(r, size))
        return false;
    if (o->type == MSGPACK_OBJECT_STR)
        o->via.str.ptr = (const char *)p + (size - o->via.str.size);
    r->p += size;
    return true;
}

/* ---- features ---------------------------------------------------------- */

/* The shapes read here, as docs/protocol.md defines them. */
typedef enum shape { MAP, PAIRS, DENSE } shape;

/* Reads the header of a features object nested depth deep (the envelope is
 * depth 1): its shape and element count. */
static bool features_header(reader *r, const pcp_limits *lim, uint32_t depth, shape *s,
                            uint32_t *n)
{
    if (!have(r, 1))
        return false;
    if (container(r, true, n))
        *s = MAP;
    else if (container(r, false, n))
        *s = *n > 0 && have(r, 1) && ((r->p[0] & 0xf0) == 0x90 || r->p[0] == 0xdc ||
                                      r->p[0] == 0xdd) ? PAIRS : DENSE;
    else
        return false;
    /* pcp_scan's rule: the k-th nested container needs max_depth >= k; a
     * pair is one deeper than its features */
    return *n <= lim->max_features && lim->max_depth >= depth + (*s == PAIRS);
}

/* A feature's value, pc_value_ok.  The encodings clients use (float64, small
 * integers) are read inline, the rest through scalar(). */
static inline bool value(reader *r, double *d)
{
    if (have(r, 9) && r->p[0] == 0xcb) {
        uint64_t u = pcp_be(r->p + 1, 8);
        memcpy(d, &u, sizeof u);
        r->p += 9;
        return pc_value_ok(*d);
    }
    if (have(r, 1) && (r->p[0] <= 0x7f || r->p[0] >= 0xe0)) {
        *d = (int8_t)*r->p++;
        return true;
    }
    msgpack_object o;
    return scalar(r, &o) && pcp_number(&o, d) && pc_value_ok(*d);
}

/* A feature's key: an integer or a string.  Unsigned encodings are read
 * inline, the rest through scalar(). */
static inline bool key(reader *r, msgpack_object *k)
{
    if (!have(r, 5))
        return scalar(r, k);
    uint8_t b = r->p[0];
    unsigned w = b <= 0x7f ? 0 : b == 0xcc ? 1 : b == 0xcd ? 2 : b == 0xce ? 4 : 9;
    if (w == 9)
        return scalar(r, k);
    k->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
    k->via.u64 = w ? pcp_be(r->p + 1, w) : b;
    r->p += 1 + w;
    return true;
}

/* Reads element i of a features object: its key and value.  A pair must be a
 * two-element array. */
static inline bool element(reader *r, shape s, uint32_t i, msgpack_object *k, double *v)
{
    if (s == DENSE) {
        k->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        k->via.u64 = i;
        return value(r, v);
    }
    if (s == PAIRS) {
        uint32_t two;
        if (!container(r, false, &two) || two != 2)
            return false;
    }
    return key(r, k) && value(r, v);
}

/* Reads one example's features, nested depth deep, at r into x normalized;
 * r is left after them, *named says whether a key was a name.  False (x
 * cleared) to decline. */
static bool read_example(reader *r, uint32_t depth, pc_namer *nm, const pcp_limits *lim,
                         pc_svec *x, bool *named)
{
    uint32_t dim = nm->dim;
    pc_svec_clear(x);
    pc_namer_start(nm);
    shape s;
    uint32_t n;
    *named = false;
    if (dim == 0 || !features_header(r, lim, depth, &s, &n) || (s == DENSE && n > dim))
        return false;
    for (uint32_t i = 0; i < n; i++) {
        msgpack_object k;
        double val;
        if (!element(r, s, i, &k, &val))
            goto decline;
        if (k.type == MSGPACK_OBJECT_STR) { /* the model's name step */
            if (pc_namer_add(nm, x, k.via.str.ptr, k.via.str.size, val) != PC_OK)
                goto decline;
            *named = true;
        } else if (k.type != MSGPACK_OBJECT_POSITIVE_INTEGER || k.via.u64 >= dim) {
            goto decline;
        } else if ((s != DENSE || val != 0) && pc_svec_push(x, (uint32_t)k.via.u64, val) != PC_OK) {
            goto decline;
        }
    }
    if (pc_namer_end(nm, x) != PC_OK || pc_svec_normalize(x, pc_namer_space(nm), NULL) != PC_OK)
        goto decline;
    return true;
decline:
    pc_svec_clear(x);
    return false;
}

/* Reports the names of the features read from [start, end): a second walk,
 * as in pcp_features, of an example known to be valid. */
static void report_names(const uint8_t *start, const uint8_t *end, uint32_t depth, uint32_t dim,
                         const pcp_limits *lim, pcp_name_cb on_name, void *ud)
{
    reader r = {start, end};
    shape s;
    uint32_t n;
    features_header(&r, lim, depth, &s, &n);
    for (uint32_t i = 0; i < n; i++) {
        msgpack_object k;
        double val;
        element(&r, s, i, &k, &val);
        if (k.type == MSGPACK_OBJECT_STR)
            on_name(ud, pc_hash_feature(k.via.str.ptr, k.via.str.size, dim), k.via.str.ptr,
                    k.via.str.size, val);
    }
}

/* predict's options as the direct path takes them: a map of at most
 * PCP_DIRECT_OPTIONS_MAX string keys with scalar values (what they mean is
 * the handler's to read; a larger map, or a list or map as a value,
 * declines to the general path). */
static bool read_options(reader *r, pcp_direct *d)
{
    uint32_t n;
    if (!container(r, true, &n) || n > PCP_DIRECT_OPTIONS_MAX)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        msgpack_object_kv *kv = &d->option_kv[i];
        if (!scalar(r, &kv->key) || kv->key.type != MSGPACK_OBJECT_STR || !scalar(r, &kv->val))
            return false;
    }
    d->opts.type = MSGPACK_OBJECT_MAP;
    d->opts.via.map.size = n;
    d->opts.via.map.ptr = d->option_kv;
    return true;
}

void pcp_names_report(const pcp_names_at *at, uint32_t dim, const pcp_limits *lim,
                      pcp_name_cb on_name, void *ud)
{
    if (at->obj)
        pcp_feature_names(at->obj, dim, on_name, ud);
    else if (at->start)
        report_names(at->start, at->end, at->depth, dim, lim, on_name, ud);
}

/* One example at r: features depth deep, then a scalar label when label is
 * not NULL (or, with opts, predict's options map into *opts); where its
 * names are set in *names (may be NULL) only when all of it is valid. */
static bool read_labelled(reader *r, uint32_t depth, pc_namer *nm, const pcp_limits *lim,
                          pc_svec *x, msgpack_object *label, pcp_direct *opts,
                          const uint8_t **label_at, pcp_names_at *names)
{
    const uint8_t *start = r->p;
    bool named;
    if (names)
        *names = (pcp_names_at){0};
    if (!read_example(r, depth, nm, lim, x, &named))
        return false;
    const uint8_t *end = r->p;
    if (label_at)
        *label_at = end;
    if ((opts && !read_options(r, opts)) || (label && !scalar(r, label))) {
        pc_svec_clear(x);
        return false;
    }
    if (named && names)
        *names = (pcp_names_at){.start = start, .end = end, .depth = depth};
    return true;
}

bool pcp_direct_example(pcp_direct *d, pc_namer *nm, const pcp_limits *lim, pc_svec *x,
                        msgpack_object *label, pcp_names_at *names, size_t *len)
{
    reader r = {d->features, d->end};
    bool opts = d->nparams > d->method->min_params; /* predict's options */
    d->opts.type = MSGPACK_OBJECT_NIL;
    if (!read_labelled(&r, 3, nm, lim, x, (d->method->flags & PCP_F_LEARNS) ? label : NULL,
                       opts ? d : NULL, &d->options, names))
        return false;
    *len = (size_t)(r.p - d->start);
    return true;
}

bool pcp_direct_options(pcp_direct *d, const pcp_limits *lim)
{
    reader r = {d->features, d->end};
    shape s;
    uint32_t n;
    d->opts.type = MSGPACK_OBJECT_NIL;
    if (d->nparams <= d->method->min_params || (d->method->flags & (PCP_F_LEARNS | PCP_F_BATCH)) ||
        !features_header(&r, lim, 3, &s, &n))
        return false;
    for (uint32_t i = 0; i < n; i++) { /* skipped: read, not hashed */
        msgpack_object k;
        double val;
        if (!element(&r, s, i, &k, &val))
            return false;
    }
    if (read_options(&r, d))
        return true;
    d->opts.type = MSGPACK_OBJECT_NIL;
    return false;
}

bool pcp_direct_scalars(const pcp_direct *d, msgpack_object *id, msgpack_object *label,
                        size_t *len)
{
    reader r = {d->features, d->end};
    if (d->nparams != 3 || (d->method->flags & (PCP_F_BATCH | PCP_F_OPT_WRITES)) ||
        !scalar(&r, id) || !scalar(&r, label))
        return false;
    *len = (size_t)(r.p - d->start);
    return true;
}

bool pcp_direct_batch(pcp_direct *d, const pcp_limits *lim, uint32_t *n)
{
    reader r = {d->features, d->end};
    bool batch = d->method->flags & PCP_F_BATCH;
    /* At least a byte an item: the caller may size its scratch from *n. */
    if (!batch || !container(&r, false, n) || *n > lim->max_batch || !have(&r, *n))
        return false;
    d->features = r.p;
    return true;
}

bool pcp_direct_item(pcp_direct *d, pc_namer *nm, const pcp_limits *lim, pc_svec *x,
                     msgpack_object *label, pcp_names_at *names)
{
    reader r = {d->features, d->end};
    if (names)
        *names = (pcp_names_at){0};
    if (!(d->method->flags & PCP_F_LEARNS)) { /* an item is features, 4 deep */
        if (!read_labelled(&r, 4, nm, lim, x, NULL, NULL, NULL, names))
            return false;
    } else { /* [features, label]: the pair 4 deep, its features 5 */
        uint32_t two;
        if (lim->max_depth < 4 || !container(&r, false, &two) || two != 2 ||
            !read_labelled(&r, 5, nm, lim, x, label, NULL, NULL, names))
            return false;
    }
    d->features = r.p;
    return true;
}

/* ---- the envelope ------------------------------------------------------ */

bool pcp_direct_message(const uint8_t *buf, size_t n, const pcp_limits *lim, pcp_direct *d)
{
    reader r = {buf, buf + (n < lim->max_message ? n : lim->max_message)};
    memset(d, 0, sizeof *d);
    uint32_t size, nparams;
    msgpack_object tag, id, method;
    if (!container(&r, false, &size) || !scalar(&r, &tag) ||
        tag.type != MSGPACK_OBJECT_POSITIVE_INTEGER || (tag.via.u64 != 0 && tag.via.u64 != 2))
        return false;
    d->notification = tag.via.u64 == 2;
    if (size != (d->notification ? 3u : 4u))
        return false;
    if (!d->notification) {
        if (!scalar(&r, &id) || id.type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
            id.via.u64 > UINT32_MAX)
            return false;
        d->msgid = (uint32_t)id.via.u64;
    }
    if (!scalar(&r, &method) || method.type != MSGPACK_OBJECT_STR)
        return false;
    d->method = pcp_method_find(method.via.str.ptr, method.via.str.size);
    if (!d->method || !(d->method->flags & PCP_F_DIRECT))
        return false;
    /* the plain form, and predict's options (read by pcp_direct_example) */
    if (!container(&r, false, &nparams) ||
        (nparams != d->method->min_params &&
         !((d->method->flags & PCP_F_OPT_WRITES) && nparams == d->method->min_params + 1u)))
        return false;
    d->nparams = nparams;
    if (lim->max_depth < 3 || !scalar(&r, &d->model)) /* envelope, params, features or batch */
        return false;
    d->start = buf;
    d->features = r.p;
    d->end = r.end;
    return true;
}
