/* names.c - feature index -> name map (open addressing, linear probing). */
#include "daemon/names.h"

#include "lib/bytes.h"

#include <stdlib.h>
#include <string.h>

void pcd_names_init(pcd_names *n)
{
    memset(n, 0, sizeof *n);
}

void pcd_names_free(pcd_names *n)
{
    for (size_t i = 0; i < n->cap; i++)
        free(n->vals[i]);
    free(n->keys);
    free(n->vals);
    pcd_names_init(n);
}

static size_t slot_of(const pcd_names *n, uint32_t idx)
{
    /* Fibonacci hashing spreads consecutive indices over the table. */
    size_t h = (size_t)((idx * 2654435769u) & (uint32_t)(n->cap - 1));
    while (n->keys[h] && n->keys[h] != idx + 1)
        h = (h + 1) & (n->cap - 1);
    return h;
}

static bool grow(pcd_names *n)
{
    size_t cap = n->cap ? n->cap * 2 : 1024;
    pcd_names bigger = {.cap = cap};
    bigger.keys = calloc(cap, sizeof *bigger.keys);
    bigger.vals = calloc(cap, sizeof *bigger.vals);
    if (!bigger.keys || !bigger.vals) {
        free(bigger.keys);
        free(bigger.vals);
        return false;
    }
    for (size_t i = 0; i < n->cap; i++)
        if (n->keys[i]) {
            size_t s = slot_of(&bigger, n->keys[i] - 1);
            bigger.keys[s] = n->keys[i];
            bigger.vals[s] = n->vals[i];
        }
    bigger.count = n->count;
    bigger.name_bytes = n->name_bytes;
    free(n->keys);
    free(n->vals);
    *n = bigger;
    return true;
}

void pcd_names_note(pcd_names *n, uint32_t idx, const char *name, size_t len)
{
    if (idx == UINT32_MAX || len > PCD_NAME_LEN_MAX)
        return;
    if (n->cap && n->keys[slot_of(n, idx)])
        return; /* the hot path: already known */
    if (n->count >= PCD_NAMES_MAX)
        return;
    if ((n->count + 1) * 2 > n->cap && !grow(n))
        return; /* out of memory: names are a convenience, learning goes on */
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, name, len);
    copy[len] = 0;
    size_t s = slot_of(n, idx);
    n->keys[s] = idx + 1;
    n->vals[s] = copy;
    n->count++;
    n->name_bytes += len + 1;
}

size_t pcd_names_bytes(const pcd_names *n)
{
    /* a malloc'd copy costs its bytes and about 16 of the allocator's */
    return n->cap * (sizeof *n->keys + sizeof *n->vals) + n->name_bytes + n->count * 16;
}

const char *pcd_names_get(const pcd_names *n, uint32_t idx)
{
    if (!n->cap || idx == UINT32_MAX)
        return NULL;
    size_t s = slot_of(n, idx);
    return n->keys[s] ? n->vals[s] : NULL;
}

static bool put(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t k)
{
    if (*cap - *len < k) {
        size_t c = *cap ? *cap : 4096;
        while (c - *len < k)
            c *= 2;
        uint8_t *b = realloc(*buf, c);
        if (!b)
            return false;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, p, k);
    *len += k;
    return true;
}

bool pcd_names_append(const pcd_names *n, uint8_t **buf, size_t *len, size_t *cap)
{
    uint8_t b[5];
    pc_put_u32(b, (uint32_t)n->count);
    if (!put(buf, len, cap, b, 4))
        return false;
    for (size_t i = 0; i < n->cap; i++) {
        if (!n->keys[i])
            continue;
        size_t l = strlen(n->vals[i]);
        pc_put_u32(b, n->keys[i] - 1);
        b[4] = (uint8_t)l;
        if (!put(buf, len, cap, b, 5) || !put(buf, len, cap, n->vals[i], l))
            return false;
    }
    return true;
}

bool pcd_names_parse(pcd_names *n, const uint8_t *p, size_t len)
{
    if (len < 4)
        return false;
    uint32_t count = pc_get_u32(p);
    p += 4;
    len -= 4;
    if (count > PCD_NAMES_MAX || count > len / 5)
        return false;
    for (uint32_t k = 0; k < count; k++) {
        if (len < 5)
            return false;
        uint32_t idx = pc_get_u32(p);
        size_t l = p[4];
        p += 5;
        len -= 5;
        if (len < l || memchr(p, 0, l))
            return false;
        pcd_names_note(n, idx, (const char *)p, l);
        p += l;
        len -= l;
    }
    return len == 0;
}
