/* idxset.c - a set of indices in an open-addressing table (see idxset.h). */
#include "lib/rules/idxset.h"

#include <stdlib.h>
#include <string.h>

#define MIN_BITS 4

static uint32_t home(uint32_t i, uint32_t bits)
{
    return (uint32_t)(i * 2654435769u) >> (32 - bits); /* Knuth's multiplicative hash */
}

/* The slot of i, or the empty slot where it would go. */
static uint32_t probe(const pc_idxset *s, uint32_t i)
{
    uint32_t m = s->cap - 1, h = home(i, s->bits);
    while (s->slot[h] != PC_IDXSET_EMPTY && s->slot[h] != i)
        h = (h + 1) & m;
    return h;
}

void pc_idxset_free(pc_idxset *s)
{
    free(s->slot);
    memset(s, 0, sizeof *s);
}

/* A table of 2^bits empty slots with s's entries, in s's slot order. */
static bool rebuild(pc_idxset *s, uint32_t bits)
{
    uint32_t cap = 1u << bits, *slot = malloc((size_t)cap * sizeof *slot);
    if (!slot)
        return false;
    memset(slot, 0xff, (size_t)cap * sizeof *slot);
    pc_idxset t = {slot, cap, 0, bits};
    for (uint32_t k = 0; k < s->cap; k++)
        if (s->slot[k] != PC_IDXSET_EMPTY)
            t.slot[probe(&t, s->slot[k])] = s->slot[k], t.count++;
    free(s->slot);
    *s = t;
    return true;
}

void pc_idxset_clear(pc_idxset *s)
{
    if (s->cap > 1024 && s->count < s->cap / 16) { /* it held far fewer: start small */
        pc_idxset_free(s);
        return;
    }
    if (s->slot)
        memset(s->slot, 0xff, (size_t)s->cap * sizeof *s->slot);
    s->count = 0;
}

bool pc_idxset_add(pc_idxset *s, uint32_t i)
{
    if (2 * ((uint64_t)s->count + 1) > s->cap &&
        (s->bits >= 31 || !rebuild(s, s->bits ? s->bits + 1 : MIN_BITS)))
        return false;
    uint32_t h = probe(s, i);
    if (s->slot[h] == PC_IDXSET_EMPTY)
        s->slot[h] = i, s->count++;
    return true;
}

void pc_idxset_encode(const pc_idxset *s, pc_writer *w)
{
    pc_writer_u32(w, s->cap);
    for (uint32_t k = 0; k < s->cap; k++)
        pc_writer_u32(w, s->slot[k]);
}

bool pc_idxset_decode(pc_idxset *s, pc_reader *r, uint32_t dim)
{
    pc_idxset_free(s);
    uint32_t cap = pc_reader_u32(r);
    if (r->failed || (cap && (cap < (1u << MIN_BITS) || (cap & (cap - 1)))) ||
        !pc_reader_need(r, cap, 4))
        return false;
    if (!cap)
        return true;
    if (!(s->slot = malloc((size_t)cap * sizeof *s->slot))) {
        r->nomem = true;
        return false;
    }
    s->cap = cap;
    while ((1u << s->bits) < cap)
        s->bits++;
    for (uint32_t k = 0; k < cap; k++) {
        uint32_t i = s->slot[k] = pc_reader_u32(r);
        if (i != PC_IDXSET_EMPTY && i >= dim)
            return false;
        s->count += i != PC_IDXSET_EMPTY;
    }
    /* at most half full, and every entry where a probe finds it (no repeats) */
    if (2 * (uint64_t)s->count > cap)
        return false;
    for (uint32_t k = 0; k < cap; k++)
        if (s->slot[k] != PC_IDXSET_EMPTY && probe(s, s->slot[k]) != k)
            return false;
    return true;
}
