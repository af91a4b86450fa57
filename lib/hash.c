/* hash.c - feature hashing of string names into a model's index space.
 *
 * XXH3-64 from libxxhash: fast on short keys, and its output is frozen since
 * xxHash 0.8.0, so indices never change across releases or machines (a
 * snapshot written today is read correctly by every later version).  This is
 * part of the wire contract: clients may compute indices themselves with
 * XXH3_64bits(name, len) % dim. */
#include "lib/perceptron.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

uint32_t pc_hash_feature(const char *name, size_t len, uint32_t dim)
{
    uint64_t h = XXH3_64bits(name, len);
    if ((dim & (dim - 1)) == 0)
        return (uint32_t)(h & (dim - 1));
    return (uint32_t)(h % dim);
}
