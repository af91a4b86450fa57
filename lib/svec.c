/* svec.c - sparse example vectors: building, normalising. */
#include "lib/perceptron.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

pc_status pc_svec_push(pc_svec *x, uint32_t index, double value)
{
    if (x->n == x->cap) {
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
    }
    x->idx[x->n] = index;
    x->val[x->n] = value;
    x->n++;
    return PC_OK;
}

/* Sorts the pairs by index.  Examples are short (tens of features) and
 * often arrive sorted (dense arrays, integer keys in order), so: a linear
 * check first, insertion sort for short vectors, and a shell sort (Ciura's
 * gaps) for long ones, all in place without allocating. */
static void sort_pairs(uint32_t *idx, double *val, uint32_t n)
{
    uint32_t k = 1;
    while (k < n && idx[k - 1] < idx[k])
        k++;
    if (k >= n)
        return;
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

pc_status pc_svec_normalize(pc_svec *x, uint32_t dim, pc_error *err)
{
    for (uint32_t k = 0; k < x->n; k++) {
        if (!isfinite(x->val[k])) {
            if (err)
                snprintf(err->msg, sizeof err->msg,
                         "feature value %g is not finite: send finite numbers only", x->val[k]);
            return PC_EINVAL;
        }
        if (x->idx[k] >= dim) {
            if (err)
                snprintf(err->msg, sizeof err->msg,
                         "feature index %u is outside the model's dimension %u", x->idx[k], dim);
            return PC_EINVAL;
        }
    }
    sort_pairs(x->idx, x->val, x->n);
    uint32_t out = 0;
    double n2 = 0;
    for (uint32_t k = 0; k < x->n;) {
        uint32_t i = x->idx[k];
        double v = 0;
        for (; k < x->n && x->idx[k] == i; k++)
            v += x->val[k];
        if (v != 0) {
            x->idx[out] = i;
            x->val[out] = v;
            n2 += v * v;
            out++;
        }
    }
    x->n = out;
    x->norm2 = n2;
    if (!isfinite(n2)) {
        if (err)
            snprintf(err->msg, sizeof err->msg,
                     "feature values are too large: their squared norm overflows");
        return PC_EINVAL;
    }
    return PC_OK;
}
