/* direct_check.c - proto/direct.c against the general path it must agree
 * with (see direct_check.h).  Moved here from test_direct.c so that the unit
 * tests and the request fuzz target check the same property. */
#include "tests/direct_check.h"

/* Both paths read names without feature preparation here. */
static pc_namer dc_namer = {.dim = DC_DIM};

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail_and_abort(const char *msg)
{
    fprintf(stderr, "direct path and general path disagree: %s\n", msg);
    abort();
}

void (*dc_failed)(const char *msg) = fail_and_abort;

static void check_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void check_failed(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dc_failed(msg);
    abort(); /* dc_failed must not return */
}

#define DC_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            check_failed(__VA_ARGS__);                                                             \
    } while (0)

/* What one path made of a message. */
typedef struct decoded {
    bool notification;
    uint32_t msgid;
    pcp_method_id method;
    char model[80];
    uint32_t n;            /* examples: 1, or the batch's */
    pc_svec x[DC_ITEMS];
    msgpack_object label[DC_ITEMS]; /* str pointers point into the message's bytes */
    msgpack_object opts;   /* predict's options map (nil: none); the direct path's */
    msgpack_object_kv opt_kv[PCP_DIRECT_OPTIONS_MAX]; /* entries are copied here */
    msgpack_object id;     /* label_event's ID (its label is label[0]) */
    size_t len;
    uint32_t names;        /* names reported, and a checksum of them */
    uint64_t names_sum;
    uint32_t used;         /* x[0..used) are set up (item()) */
} decoded;

/* The feature vector of item j, set up on first use: most messages hold one
 * example, and setting up and freeing all DC_ITEMS vectors at every call
 * took a tenth of the request fuzz target's time. */
static pc_svec *item(decoded *d, uint32_t j)
{
    while (d->used <= j)
        pc_svec_init(&d->x[d->used++]);
    return &d->x[j];
}

static void on_name(void *ud, uint32_t idx, const char *name, size_t len, double value)
{
    decoded *d = ud;
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    d->names++;
    d->names_sum = d->names_sum * 31 + idx + len + (len ? (uint8_t)name[0] : 0) + bits;
}

static void model_of(decoded *d, const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_STR)
        snprintf(d->model, sizeof d->model, "%.*s", (int)o->via.str.size, o->via.str.ptr);
    else
        snprintf(d->model, sizeof d->model, "(type %d)", (int)o->type);
}

static bool is_batch(pcp_method_id id)
{
    return id == PCP_M_PREDICT_BATCH || id == PCP_M_LABEL_BATCH;
}

static bool has_label(pcp_method_id id)
{
    return id == PCP_M_LABEL || id == PCP_M_LABEL_BATCH;
}

/* The general path; false where it reports an error (or frames nothing).
 * Labels are taken as the scalars they are: judging them is pcp_label's
 * business on both paths, except that a batch's must be scalars. */
static bool general(const uint8_t *buf, size_t n, const pcp_limits *lim, decoded *d,
                    msgpack_zone *z)
{
    pcp_scan_state st = {0};
    pcp_error err = {0};
    size_t len;
    if (pcp_scan(&st, buf, n, lim, &len, &err) != 1)
        return false;
    msgpack_object o;
    pcp_message m;
    if (pcp_unpack(buf, len, z, &o, &err) != PCP_OK || pcp_message_parse(&o, &m, &err) != PCP_OK)
        return false;
    d->notification = m.notification;
    d->msgid = m.msgid;
    d->method = m.method->id;
    d->len = len;
    model_of(d, &m.params[0]);
    if (m.method->id == PCP_M_LABEL_EVENT) { /* no features: the ID and the label */
        d->id = m.params[1];
        d->label[0] = m.params[2];
        return true;
    }
    if (m.method->id == PCP_M_PREDICT || m.method->id == PCP_M_LABEL) {
        d->n = 1;
        pcp_names_at at;
        if (pcp_features(&m.params[1], &dc_namer, lim, item(d, 0), &at, &err) != PCP_OK)
            return false;
        pcp_names_report(&at, DC_DIM, lim, on_name, d);
        if (m.method->id == PCP_M_LABEL)
            d->label[0] = m.params[2];
        if (m.method->id == PCP_M_PREDICT && m.nparams == 3) /* its options, as they are */
            d->opts = m.params[2];
        return true;
    }
    if (!is_batch(m.method->id))
        return false;
    const msgpack_object *items;
    bool labelled = m.method->id == PCP_M_LABEL_BATCH;
    if (pcp_batch(&m.params[1], labelled, lim, &items, &d->n, &err) != PCP_OK)
        return false;
    DC_CHECK(d->n <= DC_ITEMS, "a batch of %u items", d->n);
    for (uint32_t j = 0; j < d->n; j++) {
        const msgpack_object *f = labelled ? &items[j].via.array.ptr[0] : &items[j];
        pcp_names_at at;
        if (pcp_features(f, &dc_namer, lim, item(d, j), &at, &err) != PCP_OK)
            return false;
        pcp_names_report(&at, DC_DIM, lim, on_name, d);
        if (labelled) {
            d->label[j] = items[j].via.array.ptr[1];
            if (d->label[j].type == MSGPACK_OBJECT_ARRAY || d->label[j].type == MSGPACK_OBJECT_MAP ||
                d->label[j].type == MSGPACK_OBJECT_BIN || d->label[j].type == MSGPACK_OBJECT_EXT)
                return false;
        }
    }
    return true;
}

/* The direct path, as the daemon drives it (without pcp_label). */
static bool direct(const uint8_t *buf, size_t n, const pcp_limits *lim, decoded *d)
{
    pcp_direct dm;
    if (!pcp_direct_message(buf, n, lim, &dm))
        return false;
    d->notification = dm.notification;
    d->msgid = dm.msgid;
    d->method = dm.method->id;
    model_of(d, &dm.model);
    if (d->method == PCP_M_LABEL_EVENT) /* as pcd_req_direct reads it */
        return pcp_direct_scalars(&dm, &d->id, &d->label[0], &d->len);
    if (!is_batch(d->method)) {
        d->n = 1;
        pcp_names_at at;
        bool ok = pcp_direct_example(&dm, &dc_namer, lim, item(d, 0), &d->label[0], &at, &d->len);
        d->opts = dm.opts;
        if (dm.opts.type == MSGPACK_OBJECT_MAP) { /* dm's entries go with dm */
            memcpy(d->opt_kv, dm.option_kv, dm.opts.via.map.size * sizeof *d->opt_kv);
            d->opts.via.map.ptr = d->opt_kv;
        }
        DC_CHECK(!ok || (dm.nparams > dm.method->min_params) == (dm.opts.type == MSGPACK_OBJECT_MAP),
                 "options read without being sent, or sent and not read");
        if (!ok)
            DC_CHECK(d->x[0].n == 0 && !at.obj && !at.start, "a decline left features or names");
        else
            pcp_names_report(&at, DC_DIM, lim, on_name, d);
        return ok;
    }
    if (!pcp_direct_batch(&dm, lim, &d->n))
        return false;
    DC_CHECK(d->n <= n, "%u items in %zu bytes", d->n, n); /* at least a byte an item */
    DC_CHECK(d->n <= lim->max_batch, "%u items over max_batch", d->n);
    for (uint32_t j = 0; j < d->n; j++) {
        pcp_names_at at;
        if (!pcp_direct_item(&dm, &dc_namer, lim, item(d, j), &d->label[j], &at)) {
            DC_CHECK(d->x[j].n == 0 && !at.obj && !at.start, "a decline left features or names");
            return false;
        }
        pcp_names_report(&at, DC_DIM, lim, on_name, d);
    }
    d->len = (size_t)(dm.features - dm.start);
    return true;
}

static void assert_same_label(const msgpack_object *p, const msgpack_object *q, const char *what)
{
    DC_CHECK(p->type == q->type, "%s: label types %d and %d", what, p->type, q->type);
    switch (p->type) {
    case MSGPACK_OBJECT_BIN: /* an event ID */
        DC_CHECK(p->via.bin.size == q->via.bin.size &&
                  memcmp(p->via.bin.ptr, q->via.bin.ptr, p->via.bin.size) == 0, "%s: label values differ", what);
        break;
    case MSGPACK_OBJECT_STR:
        DC_CHECK(p->via.str.size == q->via.str.size &&
                  memcmp(p->via.str.ptr, q->via.str.ptr, p->via.str.size) == 0, "%s: label values differ", what);
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        DC_CHECK(p->via.f64 == q->via.f64 || (p->via.f64 != p->via.f64 && q->via.f64 != q->via.f64), "%s: label values differ", what);
        break;
    case MSGPACK_OBJECT_BOOLEAN:
        DC_CHECK(p->via.boolean == q->via.boolean, "%s: label values differ", what);
        break;
    case MSGPACK_OBJECT_NIL:
        break;
    default:
        DC_CHECK(p->via.u64 == q->via.u64, "%s: label values differ", what);
    }
}

static void assert_same(const decoded *a, const decoded *b, const char *what)
{
    DC_CHECK(a->notification == b->notification && a->msgid == b->msgid &&
                      a->method == b->method && strcmp(a->model, b->model) == 0 &&
                      a->len == b->len && a->n == b->n,
                  "%s: envelope differs", what);
    for (uint32_t j = 0; j < a->n; j++) {
        const pc_svec *x = &a->x[j], *y = &b->x[j];
        DC_CHECK(x->n == y->n && x->norm2 == y->norm2, "%s: features of %u differ", what, j);
        for (uint32_t i = 0; i < x->n; i++)
            DC_CHECK(x->idx[i] == y->idx[i] && x->val[i] == y->val[i],
                          "%s: feature %u of %u differs", what, i, j);
        if (has_label(a->method))
            assert_same_label(&a->label[j], &b->label[j], what);
    }
    if (a->method == PCP_M_LABEL_EVENT) {
        assert_same_label(&a->id, &b->id, what);
        assert_same_label(&a->label[0], &b->label[0], what);
    }
    /* the options: the same map, entry by entry (the direct path takes only
     * string keys and scalar values, which assert_same_label compares) */
    DC_CHECK(a->opts.type == b->opts.type, "%s: one path read options, the other not", what);
    if (a->opts.type == MSGPACK_OBJECT_MAP) {
        DC_CHECK(a->opts.via.map.size == b->opts.via.map.size, "%s: options differ", what);
        for (uint32_t i = 0; i < a->opts.via.map.size; i++) {
            assert_same_label(&a->opts.via.map.ptr[i].key, &b->opts.via.map.ptr[i].key, what);
            assert_same_label(&a->opts.via.map.ptr[i].val, &b->opts.via.map.ptr[i].val, what);
        }
    }
    DC_CHECK(a->names == b->names && a->names_sum == b->names_sum, "%s: names differ", what);
}

static void decoded_init(decoded *d)
{
    memset(d, 0, sizeof *d); /* no vector set up yet: item() does it */
}

static void decoded_free(decoded *d)
{
    for (uint32_t j = 0; j < d->used; j++)
        pc_svec_free(&d->x[j]);
}

/* Runs both paths on a private copy of exactly n bytes; returns whether the
 * direct path accepted (asserting agreement when it did). */
bool dc_compare(const uint8_t *msg, size_t n, const pcp_limits *lim, const char *what)
{
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return false; /* out of memory (a fuzz target's limit): nothing compared */
    memcpy(buf, msg, n);
    decoded a, b;
    decoded_init(&a);
    decoded_init(&b);
    msgpack_zone z;
    DC_CHECK(msgpack_zone_init(&z, 1024), "%s: out of memory", what);
    bool took = direct(buf, n, lim, &a);
    if (took) {
        DC_CHECK(general(buf, n, lim, &b, &z), "%s: direct accepted what the general path refuses",
                      what);
        assert_same(&a, &b, what);
    }
    msgpack_zone_destroy(&z);
    decoded_free(&a);
    decoded_free(&b);
    free(buf);
    return took;
}

bool dc_direct_len(const uint8_t *buf, size_t n, const pcp_limits *lim, size_t *len)
{
    decoded d;
    decoded_init(&d);
    bool ok = direct(buf, n, lim, &d);
    *len = d.len;
    decoded_free(&d);
    return ok;
}
