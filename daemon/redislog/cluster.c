/* cluster.c - slots and the slot map of Redis Cluster
 * (redislog/cluster.h). */
#include "daemon/redislog/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned pcd_crc16(const char *buf, size_t len)
{
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
        crc &= 0xffff;
    }
    return crc;
}

unsigned pcd_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open + 1 - key);
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1) /* "{}" is no tag: the whole key */
            return pcd_crc16(open + 1, (size_t)(close - open - 1)) & (PCD_SLOTS - 1);
    }
    return pcd_crc16(key, len) & (PCD_SLOTS - 1);
}

void pcd_slot_map_free(pcd_slot_map *m)
{
    for (size_t i = 0; i < m->nnodes; i++)
        free(m->address[i]);
    free(m->address);
    m->address = NULL;
    m->nnodes = 0;
}

/* The index of "tcp:host:port" in m, added when new; -1 out of memory. */
static long node_index(pcd_slot_map *m, const char *host, size_t hlen, long long port)
{
    char a[300];
    bool v6 = memchr(host, ':', hlen) != NULL;
    snprintf(a, sizeof a, "tcp:%s%.*s%s:%lld", v6 ? "[" : "", (int)hlen, host, v6 ? "]" : "", port);
    for (size_t i = 0; i < m->nnodes; i++)
        if (!strcmp(m->address[i], a))
            return (long)i;
    char **v = realloc(m->address, (m->nnodes + 1) * sizeof *v);
    if (!v)
        return -1;
    m->address = v;
    if (!(v[m->nnodes] = strdup(a)))
        return -1;
    return (long)m->nnodes++;
}

/* Each element: [first slot, last slot, [host, port, id, ...] of the
 * master, then its replicas]. */
int pcd_slot_map_read(const redisReply *r, const char *asked_host, pcd_slot_map *m, char *err,
                      size_t errlen)
{
    m->nnodes = 0;
    m->address = NULL;
    for (size_t s = 0; s < PCD_SLOTS; s++)
        m->owner[s] = PCD_SLOT_NONE;
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "CLUSTER SLOTS: %s", r && r->type == REDIS_REPLY_ERROR ? r->str
                 : "not an array");
        return -1;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *n;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER ||
            (n = e->element[2])->type != REDIS_REPLY_ARRAY || n->elements < 2 ||
            n->element[0]->type != REDIS_REPLY_STRING || n->element[1]->type != REDIS_REPLY_INTEGER ||
            e->element[0]->integer < 0 || e->element[1]->integer >= PCD_SLOTS ||
            e->element[0]->integer > e->element[1]->integer) {
            snprintf(err, errlen, "CLUSTER SLOTS: element %zu has an unexpected shape", i);
            pcd_slot_map_free(m);
            return -1;
        }
        /* "" (or "?": unknown endpoint) is the node the question went to */
        const redisReply *h = n->element[0];
        bool same = h->len == 0 || (h->len == 1 && h->str[0] == '?');
        const char *host = same ? asked_host : h->str;
        long k = node_index(m, host, same ? strlen(asked_host) : (size_t)h->len, n->element[1]->integer);
        if (k < 0) {
            snprintf(err, errlen, "CLUSTER SLOTS: out of memory");
            pcd_slot_map_free(m);
            return -1;
        }
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            m->owner[s] = (uint16_t)k;
    }
    return 0;
}

bool pcd_cluster_redirected(const char *err)
{
    static const char *const words[] = {"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (err && !strncmp(err, words[i], strlen(words[i])))
            return true;
    return false;
}
