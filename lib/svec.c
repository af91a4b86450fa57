/* svec.c - sparse example vectors: building, normalising. */
#include "lib/perceptron.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pc_svec_init(pc_svec *x)
{
    x->n = x->cap = 0;
    x->idx = NULL;
    x->val = NULL;
    x->norm2 = 0;
}

void pc_svec_clear(pc_svec *x)
{
    x->n = 0;
    x->norm2 = 0;
}

void pc_svec_free(pc_svec *x)
{
    if (!x)
        return;
    free(x->idx);
    free(x->val);
    pc_svec_init(x);
}

pc_status pc_svec_grow(pc_svec *x)
{
    uint32_t cap = x->cap ? x->cap * 2 : 16;
    if (cap < x->cap)
        return PC_ENOMEM;
    uint32_t *idx = realloc(x->idx, (size_t)cap * sizeof *idx);
    if (!idx)
        return PC_ENOMEM;
    x->idx = idx;
    double *val = realloc(x->val, (size_t)cap * sizeof *val);
    if (!val)
        return PC_ENOMEM;
    x->val = val;
    x->cap = cap;
    return PC_OK;
}

/* Sorts the pairs by index: insertion sort for short vectors, a shell sort
 * (Ciura's gaps) for long ones, in place, stable, without allocating. */
static void sort_pairs(uint32_t *idx, double *val, uint32_t n)
{
    static const uint32_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    for (size_t g = n <= 48 ? sizeof gaps / sizeof *gaps - 1 : 0; g < sizeof gaps / sizeof *gaps;
         g++) {
        uint32_t gap = gaps[g];
        if (gap >= n)
            continue;
        for (uint32_t i = gap; i < n; i++) {
            uint32_t ki = idx[i];
            double kv = val[i];
            uint32_t j = i;
            while (j >= gap && idx[j - gap] > ki) {
                idx[j] = idx[j - gap];
                val[j] = val[j - gap];
                j -= gap;
            }
            idx[j] = ki;
            val[j] = kv;
        }
    }
}

/* Sums the values of repeated indices into their first occurrence, in place,
 * keeping the order of first occurrences.  Sorting did this at 11 ns a
 * feature, most of a label's parse; an open-addressing table of positions on
 * the stack does it in 1.5.  Vectors too long for the table are sorted instead. */
#define DEDUPE_MAX 1024u
static void merge_duplicates(pc_svec *x)
{
    /* Local copies: a store through idx could alias x->n for the compiler. */
    uint32_t *idx = x->idx, n = x->n, out = 0;
    double *val = x->val;
    if (n > DEDUPE_MAX) {
        sort_pairs(idx, val, n);
        for (uint32_t k = 0; k < n; k++) {
            if (out > 0 && idx[out - 1] == idx[k]) {
                val[out - 1] += val[k];
            } else {
                idx[out] = idx[k];
                val[out++] = val[k];
            }
        }
        x->n = out;
        return;
    }
    /* A table 8 times the entries: the first probe then almost always finds
     * an empty slot, and the loop's branch is predicted (at twice the
     * entries, a mispredicted probe tripled the cost). */
    unsigned bits = 8;
    while ((1u << bits) < 8 * n)
        bits++;
    uint32_t mask = (1u << bits) - 1;
    uint16_t slot[8 * DEDUPE_MAX]; /* 1 + position in the output, 0 = empty */
    memset(slot, 0, (mask + 1) * sizeof *slot);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = idx[k], h = (i * 0x9E3779B1u) >> (32 - bits);
        while (slot[h] && idx[slot[h] - 1] != i)
            h = (h + 1) & mask;
        if (slot[h]) {
            val[slot[h] - 1] += val[k];
        } else {
            slot[h] = (uint16_t)(out + 1);
            idx[out] = i; /* out <= k: never overwrites what is still to be read */
            val[out++] = val[k];
        }
    }
    x->n = out;
}

pc_status pc_svec_normalize(pc_svec *x, uint32_t dim, pc_error *err)
{
    uint32_t *idx = x->idx, n = x->n;
    double *val = x->val;
    bool increasing = true; /* then there is nothing to merge: the usual dense or CSR row */
    for (uint32_t k = 0; k < n; k++) {
        if (!pc_value_ok(val[k])) {
            if (err)
                snprintf(err->msg, sizeof err->msg,
                         "feature value %g is %s: send finite numbers of magnitude at most 2^64 (1.8e19)",
                         val[k], isfinite(val[k]) ? "too large" : "not finite");
            return PC_EINVAL;
        }
        if (idx[k] >= dim) {
            if (err)
                snprintf(err->msg, sizeof err->msg,
                         "feature index %u is outside the model's dimension %u", idx[k], dim);
            return PC_EINVAL;
        }
        increasing &= k == 0 || idx[k - 1] < idx[k];
    }
    if (!increasing) {
        merge_duplicates(x);
        n = x->n;
    }
    uint32_t out = 0;
    double n2 = 0;
    for (uint32_t k = 0; k < n; k++) {
        double v = val[k];
        if (!pc_value_ok(v)) { /* only a sum of duplicates can be: each value was checked */
            if (err)
                snprintf(err->msg, sizeof err->msg,
                         "feature %u is given more than once and its values sum to %g, beyond "
                         "2^64 (1.8e19): send each feature once, or smaller values",
                         idx[k], v);
            return PC_EINVAL;
        }
        if (v != 0) {
            idx[out] = idx[k];
            val[out++] = v;
            n2 += v * v;
        }
    }
    x->n = out;
    x->norm2 = n2; /* finite: at most 2^32 values of at most 2^64 */
    return PC_OK;
}

bool pc_svec_is_sorted(const pc_svec *x)
{
    for (uint32_t k = 1; k < x->n; k++)
        if (x->idx[k - 1] >= x->idx[k])
            return false;
    return true;
}

void pc_svec_sort(pc_svec *x)
{
    sort_pairs(x->idx, x->val, x->n); /* linear on sorted input: insertion sort's last gap is 1 */
}
