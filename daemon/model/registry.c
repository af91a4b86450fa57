/* registry.c - named models: hash table, listing, snapshot payloads. */
#include "daemon/model/registry.h"
#include "daemon/model/challengers.h"
#include "daemon/model/pending.h"
#include "lib/bytes.h"
#include "lib/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

int pcd_registry_init(pcd_registry *r)
{
    r->nbuckets = 64;
    r->count = 0;
    r->resident = NULL;
    r->nresident = r->resident_cap = 0;
    r->clock = 0;
    r->name_bytes = 0;
    r->resting_disk_bytes = 0;
    r->buckets = calloc(r->nbuckets, sizeof *r->buckets);
    return r->buckets ? 0 : -1;
}

void pcd_model_parts_free(pcd_model *from)
{
    pc_model_free(from->model);
    pcd_pending_free(from->pending);
    pcd_challengers_free(from->challengers);
    pcd_names_free(&from->names);
    from->model = NULL;
    from->pending = NULL;
    from->challengers = NULL;
}

void pcd_model_take_parts(pcd_model *e, pcd_model *from)
{
    pcd_model_parts_free(e);
    e->model = from->model;
    e->names = from->names;
    e->pending = from->pending;
    e->challengers = from->challengers;
    from->model = NULL;
    from->pending = NULL;
    from->challengers = NULL;
    pcd_names_init(&from->names);
}

static void entry_free(pcd_model *e)
{
    pcd_model_parts_free(e);
    free(e->kept_lsn);
    free(e->top.idx);
    free(e->top.w);
    free(e->name);
    free(e);
}

void pcd_registry_free(pcd_registry *r)
{
    for (size_t b = 0; b < r->nbuckets; b++)
        for (pcd_model *e = r->buckets[b], *next; e; e = next) {
            next = e->next;
            entry_free(e);
        }
    free(r->buckets);
    free(r->resident);
    r->buckets = NULL;
    r->resident = NULL;
    r->count = r->nbuckets = r->nresident = r->resident_cap = 0;
}

static int resident_add(pcd_registry *r, pcd_model *e)
{
    if (!PC_GROW(r->resident, r->resident_cap, r->nresident, 64))
        return -1;
    e->slot = r->nresident;
    r->resident[r->nresident++] = e;
    return 0;
}

static bool is_resident(const pcd_registry *r, const pcd_model *e)
{
    return e->slot < r->nresident && r->resident[e->slot] == e;
}

/* O(1): the last entry takes e's slot; e's file counts among the resting. */
static void resident_remove(pcd_registry *r, pcd_model *e)
{
    if (!is_resident(r, e))
        return; /* resting: not there */
    pcd_model *last = r->resident[--r->nresident];
    r->resident[e->slot] = last;
    last->slot = e->slot;
    r->resting_disk_bytes += e->disk_bytes;
}

void pcd_registry_set_disk_bytes(pcd_registry *r, pcd_model *e, uint64_t bytes)
{
    if (!is_resident(r, e))
        r->resting_disk_bytes += bytes - e->disk_bytes; /* modular: a smaller file subtracts */
    e->disk_bytes = bytes;
}

void pcd_registry_rest(pcd_registry *r, pcd_model *e, pcd_model *to)
{
    resident_remove(r, e);
    if (to)
        pcd_model_take_parts(to, e);
    pcd_model_parts_free(e);
    free(e->top.idx);
    free(e->top.w);
    e->top = (struct pcd_top){0};
}

int pcd_registry_wake(pcd_registry *r, pcd_model *e, pcd_model *from)
{
    if (resident_add(r, e) != 0) {
        pcd_model_parts_free(from);
        return -1;
    }
    r->resting_disk_bytes -= e->disk_bytes;
    pcd_model_take_parts(e, from);
    return 0;
}

static size_t bucket(const pcd_registry *r, const char *name, size_t len)
{
    return (size_t)(XXH3_64bits(name, len) & (r->nbuckets - 1));
}

pcd_model *pcd_registry_find(const pcd_registry *r, const char *name, size_t len)
{
    /* name comes from the wire: len bytes that may hold a NUL, so neither
     * strncmp (it stops at one) nor e->name[len] (past a shorter name). */
    for (pcd_model *e = r->buckets[bucket(r, name, len)]; e; e = e->next)
        if (strnlen(e->name, len + 1) == len && memcmp(e->name, name, len) == 0)
            return e;
    return NULL;
}

static void rehash(pcd_registry *r)
{
    size_t nb = r->nbuckets * 2;
    pcd_model **b = calloc(nb, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    pcd_registry bigger = {.buckets = b, .nbuckets = nb};
    for (size_t i = 0; i < r->nbuckets; i++)
        for (pcd_model *e = r->buckets[i], *next; e; e = next) {
            next = e->next;
            size_t k = bucket(&bigger, e->name, strlen(e->name));
            e->next = b[k];
            b[k] = e;
        }
    free(r->buckets);
    r->buckets = b;
    r->nbuckets = nb;
}

/* A new entry under name, resident (in the resident array) or not. */
static pcd_model *insert(pcd_registry *r, const char *name, bool resident)
{
    pcd_model *e = calloc(1, sizeof *e);
    if (!e || !(e->name = strdup(name))) {
        free(e);
        return NULL;
    }
    e->id = ++r->last_id;
    e->used = ++r->clock;
    pcd_names_init(&e->names);
    if (resident && resident_add(r, e) != 0) {
        free(e->name);
        free(e);
        return NULL;
    }
    if (r->count + 1 > r->nbuckets)
        rehash(r);
    size_t k = bucket(r, name, strlen(name));
    e->next = r->buckets[k];
    r->buckets[k] = e;
    r->count++;
    r->name_bytes += strlen(name) + 1;
    return e;
}

pcd_model *pcd_registry_add(pcd_registry *r, const char *name, pc_model *m)
{
    pcd_model *e = insert(r, name, true);
    if (!e)
        pc_model_free(m);
    else
        e->model = m;
    return e;
}

pcd_model *pcd_registry_add_resting(pcd_registry *r, const char *name)
{
    return insert(r, name, false);
}

pcd_model *pcd_registry_add_parts(pcd_registry *r, const char *name, pcd_model *from)
{
    pcd_model *e = pcd_registry_add(r, name, NULL);
    if (!e) {
        pcd_model_parts_free(from);
        return NULL;
    }
    pcd_model_take_parts(e, from);
    return e;
}

void pcd_registry_remove(pcd_registry *r, pcd_model *e)
{
    pcd_model **p = &r->buckets[bucket(r, e->name, strlen(e->name))];
    while (*p && *p != e)
        p = &(*p)->next;
    if (*p) {
        *p = e->next;
        r->count--;
        r->counted_bytes -= e->counted;
        r->name_bytes -= strlen(e->name) + 1;
    }
    resident_remove(r, e);
    r->resting_disk_bytes -= e->disk_bytes; /* resting now, whatever it was */
    entry_free(e);
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(pcd_model *const *)a)->name, (*(pcd_model *const *)b)->name);
}

pcd_model **pcd_registry_list(const pcd_registry *r, size_t *n)
{
    pcd_model **all = malloc((r->count ? r->count : 1) * sizeof *all);
    if (!all) {
        *n = 0;
        return NULL;
    }
    size_t k = 0;
    for (size_t b = 0; b < r->nbuckets; b++)
        for (pcd_model *e = r->buckets[b]; e; e = e->next)
            all[k++] = e;
    qsort(all, k, sizeof *all, by_name);
    *n = k;
    return all;
}

pcd_model *pcd_registry_iter(const pcd_registry *r, const pcd_model *e)
{
    if (e && e->next)
        return e->next;
    for (size_t b = e ? bucket(r, e->name, strlen(e->name)) + 1 : 0; b < r->nbuckets; b++)
        if (r->buckets[b])
            return r->buckets[b];
    return NULL;
}

pcd_model **pcd_registry_resident_list(const pcd_registry *r, size_t *n)
{
    pcd_model **v = malloc((r->nresident ? r->nresident : 1) * sizeof *v);
    *n = v ? r->nresident : 0;
    if (v && r->nresident)
        memcpy(v, r->resident, r->nresident * sizeof *v);
    return v;
}

uint64_t pcd_model_digest(const pcd_model *e)
{
    return pcd_digest(e->model);
}

uint64_t pcd_digest(const pc_model *m)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pc_error perr;
    if (pc_model_encode(m, &buf, &len, &perr) != PC_OK)
        return 0;
    uint64_t h = XXH3_64bits(buf, len);
    free(buf);
    return h;
}

int pcd_model_serialize(const pcd_model *e, uint8_t **buf, size_t *len, char *err, size_t errlen)
{
    uint8_t *m;
    size_t mlen;
    pc_error perr;
    if (pc_model_encode(e->model, &m, &mlen, &perr) != PC_OK) {
        snprintf(err, errlen, "%s", perr.msg);
        return -1;
    }
    size_t cap = mlen + 8 + 4096, n = 0;
    uint8_t *out = malloc(cap);
    if (!out) {
        free(m);
        snprintf(err, errlen, "out of memory serialising model %s", e->name);
        return -1;
    }
    pc_put_u64(out, (uint64_t)mlen);
    memcpy(out + 8, m, mlen);
    n = 8 + mlen;
    free(m);
    /* the events waiting for their outcome, when there are any (label later) */
    if ((e->pending && !pcd_pending_append(e->pending, &out, &n, &cap)) ||
        (e->challengers && !pcd_challengers_append(e->challengers, &out, &n, &cap)) ||
        !pcd_names_append(&e->names, &out, &n, &cap)) {
        free(out);
        snprintf(err, errlen, "out of memory serialising model %s", e->name);
        return -1;
    }
    *buf = out;
    *len = n;
    return 0;
}

int pcd_model_deserialize(pcd_model *e, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    if (len < 8) {
        snprintf(err, errlen, "model payload is truncated");
        return -1;
    }
    uint64_t mlen = pc_get_u64(buf);
    if (mlen > len - 8) {
        snprintf(err, errlen, "model payload length %llu exceeds the %zu bytes present",
                 (unsigned long long)mlen, len - 8);
        return -1;
    }
    pc_error perr = {{0}};
    pc_model *m;
    if (pc_model_decode(buf + 8, (size_t)mlen, &m, &perr) != PC_OK) {
        snprintf(err, errlen, "%s", perr.msg);
        return -1;
    }
    const uint8_t *rest = buf + 8 + mlen;
    size_t left = len - 8 - (size_t)mlen, used = 0;
    pcd_pending *pending = NULL;
    if (pcd_pending_present(rest, left) &&
        !(pending = pcd_pending_parse(rest, left, &used, err, errlen))) {
        pc_model_free(m);
        return -1;
    }
    rest += used;
    left -= used;
    pcd_challengers *challengers = NULL;
    if (pcd_challengers_present(rest, left) &&
        !(challengers = pcd_challengers_parse(rest, left, &used, err, errlen))) {
        pcd_pending_free(pending);
        pc_model_free(m);
        return -1;
    }
    if (challengers) {
        rest += used;
        left -= used;
    }
    pcd_names names;
    pcd_names_init(&names);
    if (!pcd_names_parse(&names, rest, left)) {
        pcd_names_free(&names);
        pcd_pending_free(pending);
        pcd_challengers_free(challengers);
        pc_model_free(m);
        snprintf(err, errlen, "feature-name table is malformed");
        return -1;
    }
    e->model = m;
    e->names = names;
    e->pending = pending;
    e->challengers = challengers;
    return 0;
}

void pcd_model_saved(pcd_model *e, uint64_t lsn, unsigned keep)
{
    if (keep < 1)
        keep = 1;
    if (keep > PCD_KEPT_MAX)
        keep = PCD_KEPT_MAX;
    if (keep > e->kept_cap) {
        uint64_t *k = realloc(e->kept_lsn, keep * sizeof *k);
        if (!k) { /* the oldest stays: the journal keeps more, nothing is lost */
            e->saved_lsn = lsn;
            return;
        }
        e->kept_lsn = k;
        e->kept_cap = keep;
    }
    while (e->nkept >= keep) {
        memmove(e->kept_lsn, e->kept_lsn + 1, (e->nkept - 1) * sizeof *e->kept_lsn);
        e->nkept--;
    }
    e->kept_lsn[e->nkept++] = lsn;
    e->saved_lsn = lsn;
}

uint64_t pcd_model_name_seed(const char *name)
{
    return XXH3_64bits(name, strlen(name));
}
