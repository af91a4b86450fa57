/* options.c - the options maps of predict, predict_batch and label_event
 * (options.h): the keys are rows of one table, read by one function. */
#include "daemon/exec/options.h"

#include "daemon/exec/explain.h"
#include "daemon/journal/journal.h"

#include <stdio.h>
#include <string.h>

typedef int (*opt_reader)(pcd_req *r, const msgpack_object *v, pcd_opts *out);

static int read_event(pcd_req *r, const msgpack_object *v, pcd_opts *out)
{
    (void)r; /* its form is checked where it is used (pcd_event_id_read) */
    out->event = v;
    return PCP_OK;
}

static int read_expire(pcd_req *r, const msgpack_object *v, pcd_opts *out)
{
    if (v->type != MSGPACK_OBJECT_BOOLEAN)
        return pcd_req_fail(r, PCP_E_PARAMS, "option 'expire' must be true or false");
    out->expire = v->via.boolean;
    return PCP_OK;
}

static int read_at(pcd_req *r, const msgpack_object *v, pcd_opts *out)
{
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 > (uint64_t)INT64_MAX / 2)
        return pcd_req_fail(r, PCP_E_PARAMS, "option 'at' must be a unix time in milliseconds");
    out->has_at = true;
    out->at_ms = (int64_t)v->via.u64;
    return PCP_OK;
}

static int read_explain(pcd_req *r, const msgpack_object *v, pcd_opts *out)
{
    if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 < 1 ||
        v->via.u64 > PCD_EXPLAIN_MAX)
        return pcd_req_fail(r, PCP_E_PARAMS, "option 'explain' must be the number of "
                            "contributions to answer, 1 to %d", PCD_EXPLAIN_MAX);
    out->explain = (uint32_t)v->via.u64;
    return PCP_OK;
}

/* A position this daemon's answers gave: with the shared log an entry ID,
 * waited for by the log's gate (redislog/after.c); with the journal an LSN,
 * applied already when it is below the next one (one daemon applies its
 * writes before it answers them), else from the future: refused. */
static int read_after(pcd_req *r, const msgpack_object *v, pcd_opts *out)
{
    const pcd_server *srv = r->srv;
    bool log = srv->rlog != NULL;
    pcp_position p;
    char q[64];
    if (!log && !srv->journal)
        return pcd_req_fail(r, PCP_E_PARAMS, "option 'after': this daemon keeps no log "
                            "(journal.enabled is false, no log.backend), so writes have no "
                            "positions to wait for");
    if (v->type != MSGPACK_OBJECT_STR ||
        !pcp_position_parse(v->via.str.ptr, v->via.str.size, &p) || p.entry != log)
        return pcd_req_fail(r, PCP_E_PARAMS, "option 'after' must be a position as this "
                            "daemon's write answers give it (their \"position\": %s), not %s",
                            log ? "a Redis stream entry ID, \"MS-SEQ\""
                                : "a journal LSN, a string of digits",
                            v->type == MSGPACK_OBJECT_STR
                                ? pcp_quote(q, sizeof q, v->via.str.ptr, v->via.str.size)
                                : pcp_type_name(v));
    if (!log && p.seq >= pcd_journal_next_lsn(srv->journal))
        return pcd_req_fail(r, PCP_E_PARAMS, "option 'after': position %llu is past this "
                            "daemon's journal, whose last LSN is %llu: it is no write this "
                            "daemon answered (another daemon's, or one lost with the journal's "
                            "tail)", (unsigned long long)p.seq,
                            (unsigned long long)pcd_journal_next_lsn(srv->journal) - 1);
    out->has_after = true;
    out->after = p;
    return PCP_OK;
}

static const struct {
    const char *name;
    unsigned bit;
    opt_reader read;
} keys[] = {
    {"event", PCD_OPT_EVENT, read_event},
    {"at", PCD_OPT_AT, read_at},
    {"expire", PCD_OPT_EXPIRE, read_expire},
    {"explain", PCD_OPT_EXPLAIN, read_explain},
    {"after", PCD_OPT_AFTER, read_after},
};
#define NKEYS (sizeof keys / sizeof keys[0])

static int find(const msgpack_object *k)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(keys[i].name) &&
            memcmp(k->via.str.ptr, keys[i].name, k->via.str.size) == 0)
            return (int)i;
    return -1;
}

/* "event, at" : the keys a method takes, for its error message.  "at" and
 * "expire" are the daemon's own (the journal's, expiry's) but a client may
 * send them, so they are listed too. */
static void list_allowed(unsigned allowed, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < NKEYS && n < cap; i++)
        if (allowed & keys[i].bit)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", keys[i].name);
}

int pcd_opts_read(pcd_req *r, const msgpack_object *o, unsigned allowed, pcd_opts *out)
{
    memset(out, 0, sizeof *out);
    if (o->type == MSGPACK_OBJECT_NIL)
        return PCP_OK;
    if (o->type != MSGPACK_OBJECT_MAP)
        return pcd_req_fail(r, PCP_E_PARAMS, "%s: the options must be a map, not %s",
                            r->method->name, pcp_type_name(o));
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key;
        int at = find(k);
        if (at < 0 || !(allowed & keys[at].bit)) {
            char q[64], list[64];
            list_allowed(allowed, list, sizeof list);
            return pcd_req_fail(r, PCP_E_PARAMS, "%s: unknown option %s (options are: %s)",
                                r->method->name,
                                k->type == MSGPACK_OBJECT_STR
                                    ? pcp_quote(q, sizeof q, k->via.str.ptr, k->via.str.size)
                                    : pcp_type_name(k),
                                list);
        }
        int rc = keys[at].read(r, &o->via.map.ptr[i].val, out);
        if (rc)
            return rc;
    }
    return PCP_OK;
}

int pcd_opts_of(pcd_req *r, uint32_t i, unsigned allowed, pcd_opts *out)
{
    static const msgpack_object nil = {.type = MSGPACK_OBJECT_NIL};
    const msgpack_object *o = r->msg && r->nparams > i ? &r->msg->params[i]
                              : !r->msg && r->options ? r->options /* the direct path's */
                                                      : &nil;
    return pcd_opts_read(r, o, allowed, out);
}

/* The entry of options map o (may be NULL, or not a map) whose key is
 * `bit`'s, or NULL; *at its row in keys. */
static const msgpack_object_kv *entry(const msgpack_object *o, unsigned bit, int *at)
{
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return NULL;
    for (uint32_t k = 0; k < o->via.map.size; k++)
        if ((*at = find(&o->via.map.ptr[k].key)) >= 0 && keys[*at].bit == bit)
            return &o->via.map.ptr[k];
    return NULL;
}

bool pcd_opts_has(const msgpack_object *o, unsigned bit)
{
    int at;
    return entry(o, bit, &at) != NULL;
}

int pcd_opts_peek(pcd_req *r, uint32_t i, unsigned bit, pcd_opts *out, bool *has)
{
    memset(out, 0, sizeof *out);
    int at;
    const msgpack_object_kv *kv = entry(r->msg && r->nparams > i ? &r->msg->params[i] : NULL,
                                        bit, &at);
    *has = kv != NULL;
    return kv ? keys[at].read(r, &kv->val, out) : PCP_OK;
}
