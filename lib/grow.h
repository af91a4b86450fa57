/* grow.h - a heap array made larger: the reallocation that the growing
 * lists and buffers of the daemon and the client share, so that "realloc,
 * then take the new pointer and capacity only if it worked" is written once.
 *
 * An array is a pointer v and its capacity cap (in elements).  PC_RESERVE
 * makes room for a given number of elements; PC_GROW makes room for one more
 * by doubling, which keeps appends amortised O(1).  Either leaves the array
 * and cap untouched when out of memory, so the caller still owns what it had.
 * The macros evaluate their arguments more than once: plain lvalues only.
 */
#ifndef PC_GROW_H
#define PC_GROW_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The array whose pointer is at *vp (a T ** passed as void *), of *cap
 * elements of size bytes, with room for need: as it is, or reallocated to
 * exactly need elements.  The pointer is read and written through memcpy,
 * so one function serves arrays of every type. */
static inline bool pc_reserve(void *vp, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    void *v;
    memcpy(&v, vp, sizeof v);
    v = realloc(v, need * size);
    if (!v)
        return false;
    memcpy(vp, &v, sizeof v);
    *cap = need;
    return true;
}

/* v: an array of cap elements; true when it has room for need (v and cap
 * updated).  sizeof *(v) makes v a pointer to the elements it holds. */
#define PC_RESERVE(v, cap, need) pc_reserve(&(v), &(cap), (need), sizeof *(v))

/* v: an array of cap elements, n in use; true when it has room for one
 * more, doubled when full (to first when empty). */
#define PC_GROW(v, cap, n, first) \
    ((n) < (cap) || PC_RESERVE(v, cap, (cap) ? 2 * (cap) : (first)))

#endif
