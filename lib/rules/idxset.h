/* idxset.h - a set of indices < dim: an open-addressing table (linear
 * probing, Fibonacci hashing, at most half full), for a rule that must visit
 * every entry its vectors hold without O(dim) (omm.c's recounts).
 *
 * Entries are never removed (an index that was touched once is likely to be
 * again); pc_idxset_clear empties the set.  The visiting order is the
 * table's, which the same insertions always reproduce, and the encoding is
 * the table itself, so a restored set is visited in the same order: sums
 * over it come out bit for bit the same.
 */
#ifndef PC_IDXSET_H
#define PC_IDXSET_H

#include "lib/bytes.h"
#include "lib/perceptron.h"

#define PC_IDXSET_EMPTY UINT32_MAX

typedef struct pc_idxset {
    uint32_t *slot; /* cap entries, PC_IDXSET_EMPTY or an index */
    uint32_t cap, count, bits;
} pc_idxset;

void pc_idxset_free(pc_idxset *s);
/* Empties the set in O(cap), shrinking a table much larger than needed. */
void pc_idxset_clear(pc_idxset *s);
/* Adds i; false when the table could not grow (the set unchanged). */
bool pc_idxset_add(pc_idxset *s, uint32_t i);
/* u32 cap, then the cap slots. */
void pc_idxset_encode(const pc_idxset *s, pc_writer *w);
/* False (r->nomem set when out of memory) unless the bytes are a table
 * pc_idxset_add could have built of indices < dim. */
bool pc_idxset_decode(pc_idxset *s, pc_reader *r, uint32_t dim);
#endif
