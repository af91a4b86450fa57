/* anchor.c - examples measured from a reference point (see anchor.h). */
#include "lib/rules/anchor.h"

#include <math.h>
#include <string.h>

void pc_anchor_free(pc_anchor *an)
{
    pc_svec_free(&an->a);
    pc_svec_free(&an->d);
}

bool pc_anchor_reserve(pc_anchor *an, const pc_svec *x)
{
    uint64_t need = (uint64_t)x->n + an->a.n;
    while (an->a.cap < x->n)
        if (pc_svec_grow(&an->a) != PC_OK)
            return false;
    while (an->d.cap < need)
        if (pc_svec_grow(&an->d) != PC_OK)
            return false;
    return true;
}

void pc_anchor_set(pc_anchor *an, const pc_svec *x)
{
    if (x->n) { /* an empty x may have no arrays */
        memcpy(an->a.idx, x->idx, x->n * sizeof *x->idx);
        memcpy(an->a.val, x->val, x->n * sizeof *x->val);
    }
    an->a.n = x->n;
    an->a.norm2 = x->norm2;
}

const pc_svec *pc_anchor_diff(pc_anchor *an, const pc_svec *x)
{
    pc_anchor_walk m = pc_anchor_walk_of(an, x);
    pc_svec *d = &an->d;
    uint32_t i;
    double v, n2 = 0;
    d->n = 0;
    while (pc_anchor_next(&m, &i, &v)) { /* fits: reserved nnz(x) + nnz(a) */
        d->idx[d->n] = i;
        d->val[d->n++] = v;
        n2 += v * v;
    }
    d->norm2 = n2;
    return d;
}

void pc_anchor_dots(const pc_anchor *an, const pc_wvec *const *w, int n, const pc_svec *x,
                    double *dots, double *norm2)
{
    pc_anchor_walk m = pc_anchor_walk_of(an, x);
    uint32_t i;
    double v, n2 = 0;
    for (int k = 0; k < n; k++)
        dots[k] = 0;
    while (pc_anchor_next(&m, &i, &v)) {
        for (int k = 0; k < n; k++)
            dots[k] += pc_wvec_get(w[k], i) * v;
        n2 += v * v;
    }
    if (norm2)
        *norm2 = n2;
}

double pc_anchor_dot_a(const pc_anchor *an, const pc_wvec *w)
{
    double s = 0;
    for (uint32_t k = 0; k < an->a.n; k++)
        s += pc_wvec_get(w, an->a.idx[k]) * an->a.val[k];
    return s;
}

void pc_anchor_encode(const pc_anchor *an, pc_writer *w)
{
    pc_writer_u32(w, an->a.n);
    for (uint32_t k = 0; k < an->a.n; k++) {
        pc_writer_u32(w, an->a.idx[k]);
        pc_writer_f64(w, an->a.val[k]);
    }
}

bool pc_anchor_decode(pc_anchor *an, pc_reader *r, uint32_t dim)
{
    uint32_t n = pc_reader_u32(r);
    if (r->failed || n > dim || !pc_reader_need(r, n, 12))
        return false;
    an->a.n = 0;
    while (an->a.cap < n)
        if (pc_svec_grow(&an->a) != PC_OK) {
            r->nomem = true;
            return false;
        }
    double n2 = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = pc_reader_u32(r);
        double v = pc_reader_f64(r);
        if (r->failed || i >= dim || (k && i <= an->a.idx[k - 1]) || !isfinite(v))
            return false;
        an->a.idx[k] = i;
        an->a.val[k] = v;
        an->a.n = k + 1;
        n2 += v * v;
    }
    an->a.norm2 = n2;
    return true;
}
