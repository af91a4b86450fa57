/* names.c - feature index -> name map (open addressing, linear probing). */
#include "daemon/model/names.h"

#include "lib/bytes.h"
#include "lib/grow.h"

#include <stdlib.h>
#include <string.h>

void pcd_names_init(pcd_names *n)
{
    memset(n, 0, sizeof *n);
}

void pcd_names_free(pcd_names *n)
{
    free(n->keys);
    free(n->offs);
    free(n->arena);
    pcd_names_init(n);
}

size_t pcd_names_bytes(const pcd_names *n)
{
    return n->cap * (sizeof *n->keys + sizeof *n->offs) + n->arena_cap;
}

static size_t home_of(const pcd_names *n, uint32_t idx)
{
    /* Fibonacci hashing spreads consecutive indices over the table. */
    return (size_t)((idx * 2654435769u) & (uint32_t)(n->cap - 1));
}

static size_t slot_of(const pcd_names *n, uint32_t idx)
{
    size_t h = home_of(n, idx);
    while (n->keys[h] && n->keys[h] != idx + 1)
        h = (h + 1) & (n->cap - 1);
    return h;
}

static bool grow(pcd_names *n)
{
    size_t cap = n->cap ? n->cap * 2 : 256;
    pcd_names bigger = *n;
    bigger.cap = cap;
    bigger.keys = calloc(cap, sizeof *bigger.keys);
    bigger.offs = malloc(cap * sizeof *bigger.offs);
    if (!bigger.keys || !bigger.offs) {
        free(bigger.keys);
        free(bigger.offs);
        return false;
    }
    for (size_t i = 0; i < n->cap; i++)
        if (n->keys[i]) {
            size_t s = slot_of(&bigger, n->keys[i] - 1);
            bigger.keys[s] = n->keys[i];
            bigger.offs[s] = n->offs[i];
        }
    free(n->keys);
    free(n->offs);
    *n = bigger;
    return true;
}

/* Room for k more arena bytes. */
static bool arena_room(pcd_names *n, size_t k)
{
    if (n->arena_cap - n->arena_len >= k)
        return true;
    size_t c = n->arena_cap ? n->arena_cap : 1024;
    while (c - n->arena_len < k)
        c *= 2;
    if (c > UINT32_MAX) /* offsets are u32: 2^20 names of 255 bytes fit */
        return false;
    return PC_RESERVE(n->arena, n->arena_cap, c);
}

void pcd_names_note(pcd_names *n, uint32_t idx, const char *name, size_t len)
{
    if (idx == UINT32_MAX || len > PCD_NAME_LEN_MAX)
        return;
    if (n->cap && n->keys[slot_of(n, idx)])
        return; /* the hot path: already known */
    if (n->count >= PCD_NAMES_MAX)
        return;
    if ((n->count + 1) * 4 > n->cap * 3 && !grow(n))
        return; /* out of memory: names are a convenience, learning goes on */
    if (!arena_room(n, len + 1))
        return;
    memcpy(n->arena + n->arena_len, name, len);
    n->arena[n->arena_len + len] = 0;
    size_t s = slot_of(n, idx);
    n->keys[s] = idx + 1;
    n->offs[s] = (uint32_t)n->arena_len;
    n->arena_len += len + 1;
    n->count++;
}

void pcd_names_note_all(pcd_names *n, const pcd_name_ref *refs, size_t k)
{
    if (n->cap)
        for (size_t j = 0; j < k; j++)
            __builtin_prefetch(&n->keys[home_of(n, refs[j].idx)]);
    for (size_t j = 0; j < k; j++)
        pcd_names_note(n, refs[j].idx, refs[j].name, refs[j].len);
}

const char *pcd_names_get(const pcd_names *n, uint32_t idx)
{
    if (!n->cap || idx == UINT32_MAX)
        return NULL;
    size_t s = slot_of(n, idx);
    return n->keys[s] ? n->arena + n->offs[s] : NULL;
}

static bool put(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t k)
{
    if (*cap - *len < k) {
        size_t c = *cap ? *cap : 4096;
        while (c - *len < k)
            c *= 2;
        if (!PC_RESERVE(*buf, *cap, c))
            return false;
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
        const char *name = n->arena + n->offs[i];
        size_t l = strlen(name);
        pc_put_u32(b, n->keys[i] - 1);
        b[4] = (uint8_t)l;
        if (!put(buf, len, cap, b, 5) || !put(buf, len, cap, name, l))
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
