/* reply.c - reading Redis replies of the shared log
 * (redislog/reply.h). */
#include "daemon/redislog/reply.h"

#include <string.h>

/* Decimal digits at s[*i..len) into *v (at least one, no overflow). */
static bool digits(const char *s, size_t len, size_t *i, unsigned long long *v)
{
    size_t from = *i;
    *v = 0;
    for (; *i < len && s[*i] >= '0' && s[*i] <= '9'; (*i)++) {
        unsigned d = (unsigned)(s[*i] - '0');
        if (*v > (~0ULL - d) / 10)
            return false;
        *v = *v * 10 + d;
    }
    return *i > from;
}

bool pcd_sid_parse(const redisReply *r, pcd_sid *id)
{
    size_t i = 0, len = (size_t)r->len;
    pcd_sid v;
    if (r->type != REDIS_REPLY_STRING || !digits(r->str, len, &i, &v.ms) || i >= len ||
        r->str[i++] != '-' || !digits(r->str, len, &i, &v.seq) || i != len)
        return false;
    *id = v;
    return true;
}

bool pcd_reply_u64(const redisReply *r, uint64_t *v)
{
    size_t i = 0;
    unsigned long long u;
    if (r->type != REDIS_REPLY_STRING || !digits(r->str, (size_t)r->len, &i, &u) ||
        i != (size_t)r->len)
        return false;
    *v = u;
    return true;
}

int pcd_sid_cmp(pcd_sid a, pcd_sid b)
{
    return a.ms != b.ms ? (a.ms < b.ms ? -1 : 1) : a.seq != b.seq ? (a.seq < b.seq ? -1 : 1) : 0;
}

bool pcd_reply_stream(const redisReply *s, const redisReply **key, const redisReply **entries)
{
    if (s->type != REDIS_REPLY_ARRAY || s->elements != 2 ||
        s->element[0]->type != REDIS_REPLY_STRING || s->element[1]->type != REDIS_REPLY_ARRAY)
        return false;
    *key = s->element[0];
    *entries = s->element[1];
    return true;
}

bool pcd_reply_entry(const redisReply *e, pcd_sid *id, const redisReply **fields)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !pcd_sid_parse(e->element[0], id) ||
        e->element[1]->type != REDIS_REPLY_ARRAY)
        return false;
    *fields = e->element[1];
    return true;
}

const redisReply *pcd_reply_field(const redisReply *fields, const char *name)
{
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i];
        if (k->type == REDIS_REPLY_STRING && (size_t)k->len == strlen(name) &&
            !memcmp(k->str, name, (size_t)k->len) && fields->element[i + 1]->type == REDIS_REPLY_STRING)
            return fields->element[i + 1];
    }
    return NULL;
}

void pcd_reply_stream_info(const redisReply *r, pcd_sid *last, bool *known, uint64_t *added)
{
    *last = (pcd_sid){0, 0};
    *known = r->type != REDIS_REPLY_ARRAY;
    *added = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        if (!strcmp(k->str, "last-generated-id"))
            pcd_sid_parse(v, last);
        else if (!strcmp(k->str, "entries-added") && v->type == REDIS_REPLY_INTEGER)
            *known = true, *added = (uint64_t)v->integer;
    }
}
