/* pending.c - the store of events waiting for their outcome (see pending.h).
 *
 * One allocation per event: the header, the ID, then the example's values
 * and indices, exactly as the model saw them (pc_svec after normalisation),
 * so that learning from it later is bit for bit learning from `label`.  At 32
 * features that is 448 bytes, the 384 of the example itself and 64 of header
 * and ID; the table adds a slot (a pointer and 32 bits of hash, 12 bytes).
 * A tombstone is a fresh small allocation of the header and the ID.
 */
#include "daemon/model/pending.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "lib/bytes.h"

static size_t vals_at(size_t idlen)
{
    size_t off = offsetof(pcd_event, id) + idlen;
    return (off + 7) & ~(size_t)7;
}

static size_t event_size(size_t idlen, uint32_t nnz)
{
    return vals_at(idlen) + (size_t)nnz * (sizeof(double) + sizeof(uint32_t));
}

static double *ev_vals(const pcd_event *ev)
{
    return (double *)((uint8_t *)ev + vals_at(ev->idlen));
}

static uint32_t *ev_idx(const pcd_event *ev)
{
    return (uint32_t *)(ev_vals(ev) + ev->nnz);
}

bool pcd_event_id_read(const msgpack_object *o, pcd_event_id *id, uint8_t buf[8])
{
    if (o->type == MSGPACK_OBJECT_STR) {
        if (o->via.str.size == 0 || o->via.str.size > PCD_EVENT_ID_MAX)
            return false;
        *id = (pcd_event_id){0, (uint8_t)o->via.str.size, (const uint8_t *)o->via.str.ptr};
        return true;
    }
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER && o->type != MSGPACK_OBJECT_NEGATIVE_INTEGER)
        return false;
    pc_put_u64(buf, o->via.u64); /* i64 and u64 share the bytes: 1 and 1 are one ID */
    *id = (pcd_event_id){1, 8, buf};
    return true;
}

void pcd_event_id_pack(msgpack_packer *pk, const pcd_event *ev)
{
    if (ev->idtype == 1) {
        uint64_t u = pc_get_u64(ev->id);
        if (u >> 63)
            msgpack_pack_int64(pk, (int64_t)u);
        else
            msgpack_pack_uint64(pk, u);
    } else {
        msgpack_pack_str_with_body(pk, ev->id, ev->idlen);
    }
}

/* ---- the table -----------------------------------------------------------
 * Open addressing, linear probing, in two arrays: hashes[i] (32 bits of the
 * ID's hash, never 0; 0 marks a free slot) and slots[i] (the event).  A
 * lookup and an insertion read the hashes, 16 to a cache line, and open a
 * slot and its event only when the hash is the one sought: a new ID (every
 * predict) costs the line of its hash and, stored into, the line of its slot
 * (pcd_pending_prefetch starts both early), where a chained table cost the
 * bucket and each event chained to it, one after the other.  Growing reads
 * no event.  An entry's home is hash & mask (the table has at most 2^32
 * slots); removal shifts the entries after it back (no markers left
 * behind), so lookups never slow down with churn.  At most 3/4 full: 12
 * bytes a slot, 16 to 32 an entry. */

#define MIN_SLOTS 64

static uint32_t hash_id(uint8_t type, const uint8_t *b, size_t len)
{
    uint32_t h = (uint32_t)(XXH3_64bits(b, len) ^ type);
    return h ? h : 1; /* 0 is a free slot */
}

static uint32_t hash_of(const pcd_event *e)
{
    return hash_id(e->idtype, e->id, e->idlen);
}

/* Empty arrays of n slots (a power of two) into p; false when out of memory. */
static bool table_alloc(pcd_pending *p, size_t n)
{
    uint32_t *h = calloc(n, sizeof *h);
    pcd_event **s = calloc(n, sizeof *s);
    if (!h || !s) {
        free(h);
        free(s);
        return false;
    }
    p->hashes = h;
    p->slots = s;
    p->nslots = n;
    return true;
}

/* The first free slot from h's home on: the table always has one. */
static size_t free_slot(const pcd_pending *p, uint32_t h)
{
    size_t mask = p->nslots - 1, i = h & mask;
    while (p->hashes[i])
        i = (i + 1) & mask;
    return i;
}

/* Twice the slots, every entry placed again by its stored hash. */
static bool grow(pcd_pending *p)
{
    uint32_t *oh = p->hashes;
    pcd_event **os = p->slots;
    size_t on = p->nslots;
    if (on > (size_t)UINT32_MAX || !table_alloc(p, on * 2))
        return false;
    for (size_t i = 0; i < on; i++)
        if (oh[i]) {
            size_t j = free_slot(p, oh[i]);
            p->hashes[j] = oh[i];
            p->slots[j] = os[i];
        }
    free(oh);
    free(os);
    return true;
}

/* Adds e (whose ID is not in the table); false when the table is full and
 * cannot grow. */
static bool table_add(pcd_pending *p, pcd_event *e)
{
    if ((p->count + 1) * 4 > p->nslots * 3 && !grow(p) && p->count + 1 >= p->nslots)
        return false; /* fuller than 3/4 is slower, still correct; full is not */
    uint32_t h = hash_of(e);
    size_t i = free_slot(p, h);
    p->hashes[i] = h;
    p->slots[i] = e;
    p->count++;
    return true;
}

/* The slot that holds e. */
static size_t slot_of(const pcd_pending *p, const pcd_event *e)
{
    uint32_t h = hash_of(e);
    size_t mask = p->nslots - 1, i = h & mask;
    while (p->hashes[i] != h || p->slots[i] != e)
        i = (i + 1) & mask;
    return i;
}

static void table_remove(pcd_pending *p, pcd_event *e)
{
    size_t mask = p->nslots - 1, i = slot_of(p, e), j = i;
    /* Backward shift: an entry after the hole moves into it unless its home
     * lies cyclically in (i, j], where it can still be found. */
    for (;;) {
        j = (j + 1) & mask;
        if (!p->hashes[j])
            break;
        size_t home = p->hashes[j] & mask;
        if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
            p->hashes[i] = p->hashes[j];
            p->slots[i] = p->slots[j];
            i = j;
        }
    }
    p->hashes[i] = 0;
    p->slots[i] = NULL;
    p->count--;
}

/* Puts t in e's place in the table (the same ID). */
static void table_replace(pcd_pending *p, pcd_event *e, pcd_event *t)
{
    p->slots[slot_of(p, e)] = t;
}

pcd_pending *pcd_pending_new(const pcp_join_config *cfg)
{
    pcd_pending *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->cfg = *cfg;
    if (!table_alloc(p, MIN_SLOTS)) {
        free(p);
        return NULL;
    }
    return p;
}

static void free_list(pcd_event *e)
{
    while (e) {
        pcd_event *n = e->next;
        free(e);
        e = n;
    }
}

void pcd_pending_clear(pcd_pending *p)
{
    free_list(p->head);
    free_list(p->dead_head);
    memset(p->hashes, 0, p->nslots * sizeof *p->hashes);
    memset(p->slots, 0, p->nslots * sizeof *p->slots);
    p->head = p->tail = p->dead_head = p->dead_tail = NULL;
    p->count = p->npending = p->ndead = 0;
    p->bytes = p->dead_bytes = 0;
}

void pcd_pending_free(pcd_pending *p)
{
    if (!p)
        return;
    pcd_pending_clear(p);
    free(p->hashes);
    free(p->slots);
    free(p);
}

static bool same(const pcd_event *e, uint8_t type, const uint8_t *b, size_t len)
{
    return e->idtype == type && e->idlen == len && memcmp(e->id, b, len) == 0;
}

pcd_event *pcd_pending_find(const pcd_pending *p, const pcd_event_id *id)
{
    uint32_t h = hash_id(id->type, id->bytes, id->len);
    size_t mask = p->nslots - 1;
    for (size_t i = h & mask; p->hashes[i]; i = (i + 1) & mask)
        if (p->hashes[i] == h && same(p->slots[i], id->type, id->bytes, id->len))
            return p->slots[i];
    return NULL;
}

void pcd_pending_prefetch(const pcd_pending *p, const pcd_event_id *id)
{
    size_t i = hash_id(id->type, id->bytes, id->len) & (p->nslots - 1);
    __builtin_prefetch(&p->hashes[i]);
    __builtin_prefetch(&p->slots[i], 1);
}

/* ---- the two lists ------------------------------------------------------ */

static void list_append(pcd_event **head, pcd_event **tail, pcd_event *e)
{
    e->next = NULL;
    e->prev = *tail;
    if (*tail)
        (*tail)->next = e;
    else
        *head = e;
    *tail = e;
}

static void list_remove(pcd_event **head, pcd_event **tail, pcd_event *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        *head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        *tail = e->prev;
}

static size_t cost(const pcd_event *e)
{
    return event_size(e->idlen, e->nnz) + sizeof(pcd_event *) + sizeof(uint32_t); /* its slot */
}

/* Takes a tombstone out of the table and its list, and frees it. */
static void bury(pcd_pending *p, pcd_event *e)
{
    table_remove(p, e);
    list_remove(&p->dead_head, &p->dead_tail, e);
    p->ndead--;
    p->dead_bytes -= cost(e);
    free(e);
}

size_t pcd_pending_held_bytes(const pcd_pending *p)
{
    return sizeof *p + p->bytes + p->dead_bytes;
}

pcd_event *pcd_pending_add(pcd_pending *p, const pcd_event_id *id, int64_t at_ms, const pc_svec *x,
                           const pc_prediction *served, bool multiclass)
{
    pcd_event *old = pcd_pending_find(p, id);
    if (old)
        bury(p, old); /* the caller refused a pending one: this is a tombstone */
    pcd_event *e = malloc(event_size(id->len, x->n));
    if (!e)
        return NULL;
    e->at_ms = at_ms;
    e->norm2 = x->norm2;
    e->score = served->score;
    e->nnz = x->n;
    e->served = multiclass ? served->cls : served->y;
    e->state = PCD_EV_PENDING;
    e->hint = PCD_HINT_NONE;
    e->idtype = id->type;
    e->idlen = id->len;
    memcpy(e->id, id->bytes, id->len);
    if (x->n) { /* an empty example may have no buffers at all */
        memcpy(ev_vals(e), x->val, x->n * sizeof(double));
        memcpy(ev_idx(e), x->idx, x->n * sizeof(uint32_t));
    }
    if (!table_add(p, e)) {
        free(e);
        return NULL;
    }
    list_append(&p->head, &p->tail, e);
    p->npending++;
    p->bytes += cost(e);
    p->st.events++;
    return e;
}

void pcd_event_example(const pcd_event *ev, pc_svec *x)
{
    x->n = x->cap = ev->nnz;
    x->idx = ev_idx(ev);
    x->val = ev_vals(ev);
    x->norm2 = ev->norm2;
}

void pcd_pending_end(pcd_pending *p, pcd_event *ev, uint8_t how, int64_t now_ms)
{
    list_remove(&p->head, &p->tail, ev);
    p->npending--;
    p->bytes -= cost(ev);
    /* The tombstone is a fresh small block (header and ID) and the event's
     * block is freed, so that the next event reuses it, warm.  Shrinking the
     * event in place instead (realloc) left a hole too small for any event
     * in front of every tombstone: each predict took fresh heap pages, and
     * the page faults cost more than this copy (docs/label-later.md).  Out
     * of memory, the whole event stays as its tombstone: never lost. */
    size_t size = event_size(ev->idlen, 0);
    pcd_event *t = malloc(size);
    if (t) {
        memcpy(t, ev, size);
        table_replace(p, ev, t);
        free(ev);
    } else {
        t = ev;
    }
    t->nnz = 0;
    t->state = how;
    t->at_ms = now_ms;
    list_append(&p->dead_head, &p->dead_tail, t);
    p->ndead++;
    p->dead_bytes += cost(t);
    /* The count bound here, with the stream, not in the sweep: with the
     * shared Redis log nothing sweeps, and every replica ends the same
     * events at the same entry, so they forget the same tombstones. */
    while (p->ndead > p->cfg.max_pending)
        bury(p, p->dead_head);
}

pcd_event *pcd_pending_over(const pcd_pending *p)
{
    return p->npending > p->cfg.max_pending || p->bytes > p->cfg.max_bytes ? p->head : NULL;
}

void pcd_pending_prune(pcd_pending *p, int64_t now_ms)
{
    int64_t ttl_ms = (int64_t)p->cfg.ttl * 1000;
    /* the count too: a lowered join.max_pending, or tombstones restored */
    while (p->dead_head && (p->ndead > p->cfg.max_pending || now_ms - p->dead_head->at_ms >= ttl_ms))
        bury(p, p->dead_head);
}

void pcd_pending_delay(pcd_pending *p, int64_t delay_ms)
{
    uint64_t d = delay_ms > 0 ? (uint64_t)delay_ms : 0;
    unsigned k = 0;
    while (k + 1 < PCD_DELAY_BUCKETS && d >= (uint64_t)2 << k)
        k++;
    p->st.delay[k]++;
    p->st.delay_sum_ms += d;
    if (d > p->st.delay_max_ms)
        p->st.delay_max_ms = d;
}

double pcd_pending_delay_quantile(const pcd_pending *p, double q)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < PCD_DELAY_BUCKETS; k++)
        n += p->st.delay[k];
    if (!n)
        return 0;
    uint64_t want = (uint64_t)(q * (double)n), seen = 0;
    if (want < 1)
        want = 1;
    for (unsigned k = 0; k < PCD_DELAY_BUCKETS; k++) {
        seen += p->st.delay[k];
        if (seen >= want) {
            double hi = (double)((uint64_t)2 << k);
            return hi < (double)p->st.delay_max_ms ? hi : (double)p->st.delay_max_ms;
        }
    }
    return (double)p->st.delay_max_ms;
}

/* ---- snapshot bytes ------------------------------------------------------
 * "PCJ2", u64 the length of what follows, then little-endian: u64 ttl, max_pending, max_bytes; u8 has_default,
 * u8 length and the default label; f64 hints_b, u64 hints_seed; u32 count of
 * u64 figures and the figures (pcd_join_stats in order: later versions may
 * add some); u64 pending events, each i64 at_ms, f64 norm2, f64 score, u32
 * nnz, i32 served, u8 hint, u8 idtype, u8 idlen, the ID, nnz f64 values and
 * nnz u32 indices; u64 tombstones, each i64 at_ms, u8 state, u8 idtype, u8
 * idlen, the ID.  "PCJ1" (read only) is the same without the hints' two
 * settings and the events' hint. */

#define NSTATS (sizeof(pcd_join_stats) / sizeof(uint64_t))

static void write_id(pc_writer *w, const pcd_event *e)
{
    pc_writer_u8(w, e->idtype);
    pc_writer_u8(w, e->idlen);
    pc_writer_bytes(w, e->id, e->idlen);
}

bool pcd_pending_append(const pcd_pending *p, uint8_t **buf, size_t *len, size_t *cap)
{
    /* the caller's buffer, grown or not, goes back to the caller either way */
    pc_writer w = {*buf, *len, *cap, false};
    const pcp_join_config *c = &p->cfg;
    uint8_t dl = (uint8_t)strlen(c->default_label);
    size_t start = w.len;
    pc_writer_bytes(&w, "PCJ2", 4);
    pc_writer_u64(&w, 0); /* the length, below */
    pc_writer_u64(&w, c->ttl);
    pc_writer_u64(&w, c->max_pending);
    pc_writer_u64(&w, c->max_bytes);
    pc_writer_u8(&w, c->has_default);
    pc_writer_u8(&w, dl);
    pc_writer_bytes(&w, c->default_label, dl);
    pc_writer_f64(&w, c->hints_b);
    pc_writer_u64(&w, c->hints_seed);
    pc_writer_u32(&w, (uint32_t)NSTATS);
    const uint64_t *st = (const uint64_t *)&p->st;
    for (size_t i = 0; i < NSTATS; i++)
        pc_writer_u64(&w, st[i]);
    pc_writer_u64(&w, p->npending);
    for (const pcd_event *e = p->head; e && !w.failed; e = e->next) {
        pc_writer_u64(&w, (uint64_t)e->at_ms);
        pc_writer_f64(&w, e->norm2);
        pc_writer_f64(&w, e->score);
        pc_writer_u32(&w, e->nnz);
        pc_writer_u32(&w, (uint32_t)e->served);
        pc_writer_u8(&w, e->hint);
        write_id(&w, e);
        const double *v = ev_vals(e);
        const uint32_t *ix = ev_idx(e);
        for (uint32_t k = 0; k < e->nnz; k++)
            pc_writer_f64(&w, v[k]);
        for (uint32_t k = 0; k < e->nnz; k++)
            pc_writer_u32(&w, ix[k]);
    }
    pc_writer_u64(&w, p->ndead);
    for (const pcd_event *e = p->dead_head; e && !w.failed; e = e->next) {
        pc_writer_u64(&w, (uint64_t)e->at_ms);
        pc_writer_u8(&w, e->state);
        write_id(&w, e);
    }
    if (!w.failed)
        pc_put_u64(w.buf + start + 4, (uint64_t)(w.len - start - 12));
    *buf = w.buf;
    *len = w.len;
    *cap = w.cap;
    return !w.failed;
}

static pcd_pending *parse_fail(pcd_pending *p, char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "pending events: %s", what);
    pcd_pending_free(p);
    return NULL;
}

bool pcd_pending_present(const uint8_t *b, size_t len)
{
    return len >= 12 && (memcmp(b, "PCJ1", 4) == 0 || memcmp(b, "PCJ2", 4) == 0);
}

pcd_pending *pcd_pending_parse(const uint8_t *b, size_t len, size_t *used, char *why,
                               size_t whylen)
{
    if (!pcd_pending_present(b, len) || pc_get_u64(b + 4) > len - 12)
        return parse_fail(NULL, why, whylen, "truncated section");
    pc_reader r = {.p = b + 12, .left = (size_t)pc_get_u64(b + 4)};
    *used = 12 + r.left;
    bool v2 = b[3] == '2'; /* with the hints */
    pcp_join_config c;
    memset(&c, 0, sizeof c);
    c.ttl = pc_reader_u64(&r);
    c.max_pending = pc_reader_u64(&r);
    c.max_bytes = pc_reader_u64(&r);
    c.has_default = pc_reader_u8(&r) != 0;
    uint8_t dl = pc_reader_u8(&r);
    pc_reader_bytes(&r, c.default_label, dl); /* at most 255 of its 256: NUL-terminated */
    if (v2) {
        c.hints_b = pc_reader_f64(&r);
        c.hints_seed = pc_reader_u64(&r);
    }
    if (r.failed || !c.ttl || !c.max_pending || !(c.hints_b >= 0 && c.hints_b <= 1e300))
        return parse_fail(NULL, why, whylen, "truncated or invalid settings");
    pcd_pending *p = pcd_pending_new(&c);
    if (!p)
        return parse_fail(NULL, why, whylen, "out of memory");
    uint32_t n = pc_reader_u32(&r);
    uint64_t *st = (uint64_t *)&p->st;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        uint64_t v = pc_reader_u64(&r);
        if (i < NSTATS)
            st[i] = v;
    }
    uint64_t events = p->st.events; /* pcd_pending_add counts again */
    uint64_t np = pc_reader_u64(&r);
    for (uint64_t i = 0; i < np && !r.failed; i++) {
        int64_t at = (int64_t)pc_reader_u64(&r);
        double norm2 = pc_reader_f64(&r), score = pc_reader_f64(&r);
        uint32_t nnz = pc_reader_u32(&r);
        int32_t served = (int32_t)pc_reader_u32(&r);
        uint8_t hint = v2 ? pc_reader_u8(&r) : PCD_HINT_NONE;
        uint8_t idtype = pc_reader_u8(&r), idlen = pc_reader_u8(&r);
        const uint8_t *id = pc_reader_take(&r, idlen);
        if (r.failed || hint > PCD_HINT_UNASKED || idtype > 1 || idlen == 0 ||
            (idtype == 1 && idlen != 8) ||
            !pc_reader_need(&r, nnz, 12))
            return parse_fail(p, why, whylen, "a truncated or invalid event");
        pc_svec x = {.n = nnz, .cap = nnz, .norm2 = norm2};
        x.val = malloc((nnz ? nnz : 1) * sizeof *x.val);
        x.idx = malloc((nnz ? nnz : 1) * sizeof *x.idx);
        if (!x.val || !x.idx) {
            free(x.val);
            free(x.idx);
            return parse_fail(p, why, whylen, "out of memory");
        }
        for (uint32_t k = 0; k < nnz; k++)
            x.val[k] = pc_reader_f64(&r);
        for (uint32_t k = 0; k < nnz; k++)
            x.idx[k] = pc_reader_u32(&r);
        pcd_event_id eid = {idtype, idlen, id};
        pc_prediction pr = {.y = served, .cls = served, .score = score};
        bool dup = pcd_pending_find(p, &eid) != NULL;
        pcd_event *e = dup ? NULL : pcd_pending_add(p, &eid, at, &x, &pr, true);
        free(x.val);
        free(x.idx);
        if (!e)
            return parse_fail(p, why, whylen, dup ? "an event ID twice" : "out of memory");
        e->hint = hint;
    }
    p->st.events = events;
    uint64_t nd = pc_reader_u64(&r);
    for (uint64_t i = 0; i < nd && !r.failed; i++) {
        int64_t at = (int64_t)pc_reader_u64(&r);
        uint8_t state = pc_reader_u8(&r), idtype = pc_reader_u8(&r), idlen = pc_reader_u8(&r);
        const uint8_t *id = pc_reader_take(&r, idlen);
        if (r.failed || idtype > 1 || idlen == 0 || (idtype == 1 && idlen != 8) ||
            (state != PCD_EV_LABELLED && state != PCD_EV_EXPIRED))
            return parse_fail(p, why, whylen, "a truncated or invalid tombstone");
        pcd_event_id eid = {idtype, idlen, id};
        if (pcd_pending_find(p, &eid))
            return parse_fail(p, why, whylen, "an event ID twice");
        pcd_event *t = malloc(event_size(idlen, 0));
        if (!t)
            return parse_fail(p, why, whylen, "out of memory");
        memset(t, 0, sizeof *t);
        t->at_ms = at;
        t->state = state;
        t->idtype = idtype;
        t->idlen = idlen;
        memcpy(t->id, id, idlen);
        if (!table_add(p, t)) {
            free(t);
            return parse_fail(p, why, whylen, "out of memory");
        }
        list_append(&p->dead_head, &p->dead_tail, t);
        p->ndead++;
        p->dead_bytes += cost(t);
    }
    if (r.failed || r.left)
        return parse_fail(p, why, whylen, r.failed ? "truncated" : "bytes after the end");
    return p;
}
