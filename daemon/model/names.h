/* names.h - which feature name a hashed index came from, per model.
 *
 * Hashing forgets names; `weights` and `perceptronctl top` want them back.
 * The map remembers the first name noted for each index (collisions keep the
 * first; request.c notes the names of examples that changed the model), up
 * to a cap so a stream of unique names cannot grow it without
 * bound.  It is saved in the model's snapshot beside the weights. */
#ifndef PCD_NAMES_H
#define PCD_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCD_NAMES_MAX (1u << 20)   /* names remembered per model */
#define PCD_NAME_LEN_MAX 255

/* Compact, as a daemon may hold thousands of models of thousands of names:
 * an open-addressing table (at most 3/4 full) of 8 bytes a slot, the index
 * and where its name starts in one arena of NUL-terminated names (no malloc
 * per name: ~20 bytes a name of 10 characters, not ~50). */
typedef struct pcd_names {
    uint32_t *keys;     /* index + 1 (0 = empty slot) */
    uint32_t *offs;     /* the name of keys[s] starts at arena + offs[s] */
    char *arena;        /* owned; names back to back, each NUL-terminated */
    size_t arena_len, arena_cap;
    size_t cap, count;  /* cap is a power of two */
} pcd_names;

void pcd_names_init(pcd_names *n);
void pcd_names_free(pcd_names *n);
/* Remembers name for idx unless idx has one or the cap is reached. */
void pcd_names_note(pcd_names *n, uint32_t idx, const char *name, size_t len);
/* A name to note: idx, and len bytes at name (not owned). */
typedef struct pcd_name_ref {
    uint32_t idx, len;
    const char *name;
} pcd_name_ref;
/* pcd_names_note for each of refs[0..k) in order, their slots asked for
 * first: with many models, a model's map is seldom still in the cache, and
 * the misses of an example's names then overlap instead of queueing. */
void pcd_names_note_all(pcd_names *n, const pcd_name_ref *refs, size_t k);
/* The name of idx, or NULL; valid until the next pcd_names_note. */
const char *pcd_names_get(const pcd_names *n, uint32_t idx);
/* Heap bytes held. */
size_t pcd_names_bytes(const pcd_names *n);
/* Serialised form: u32 count, then (u32 idx, u8 len, bytes) each.  append
 * returns false on allocation failure; parse checks every length. */
bool pcd_names_append(const pcd_names *n, uint8_t **buf, size_t *len, size_t *cap);
bool pcd_names_parse(pcd_names *n, const uint8_t *p, size_t len);

#endif
