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

/* Merges x and a (both increasing) from positions *pi, *pj into x - a, exact
 * zeros dropped, until cap entries are out or both are done; returns the
 * count.  While both lists last, the step picks by masks rather than branches:
 * on random indices a branch would be mispredicted every other entry. */
static uint32_t merge(const pc_anchor *an, const pc_svec *x, uint32_t *pi, uint32_t *pj,
                      uint32_t *idx, double *val, uint32_t cap)
{
    const uint32_t *xi = x->idx, *ai = an->a.idx;
    const double *xv = x->val, *av = an->a.val;
    uint32_t nx = x->n, na = an->a.n, i = *pi, j = *pj, n = 0;
    while (i < nx && j < na && n < cap) {
        uint32_t xk = xi[i], ak = ai[j], tx = xk <= ak, ta = ak <= xk;
        /* x_k - a_k, x_k or -a_k: a product by 0 or 1 is exact, and a +-0
         * term changes no non-zero value (a has no zero entry) */
        double v = xv[i] * tx - av[j] * ta;
        idx[n] = tx ? xk : ak;
        val[n] = v;
        n += v != 0;
        i += tx, j += ta;
    }
    for (; i < nx && n < cap; i++)
        idx[n] = xi[i], val[n] = xv[i], n += xv[i] != 0;
    for (; j < na && n < cap; j++)
        idx[n] = ai[j], val[n] = -av[j], n += av[j] != 0;
    *pi = i, *pj = j;
    return n;
}

/* Four partial sums taken in turn by the entries' positions in x - a, then
 * added in a fixed order: the sums depend on the entries alone, and their
 * four chains run side by side. */
typedef struct lanes {
    double s[4][3]; /* w0.d, w1.d, ||d||^2 */
    uint32_t n;     /* entries so far */
} lanes;

static void lanes_add(lanes *l, const uint32_t *idx, const double *val, uint32_t n,
                      const pc_wvec *w0, const pc_wvec *w1)
{
    for (uint32_t k = 0; k < n; k++) {
        double *s = l->s[l->n++ & 3], v = val[k];
        if (w0)
            s[0] += pc_wvec_get(w0, idx[k]) * v;
        if (w1)
            s[1] += pc_wvec_get(w1, idx[k]) * v;
        s[2] += v * v;
    }
}

static void lanes_sum(const lanes *l, double out[3])
{
    for (int c = 0; c < 3; c++)
        out[c] = (l->s[0][c] + l->s[1][c]) + (l->s[2][c] + l->s[3][c]);
}

#define CHUNK 256 /* entries of x - a formed at a time on the stack */

/* out = x - y (room reserved), with ||out||^2 and, for a w0 or w1 not NULL,
 * w0.out and w1.out in the same pass over out: the sums pc_anchor_dots_d
 * would take over it, bit for bit (lanes_add's third sum does not read w0,
 * w1).  pc_anchor_diff and pc_anchor_sub are this with y the anchor or not. */
static void sub_dots(const pc_svec *x, const pc_svec *y, pc_svec *out, const pc_wvec *w0,
                     const pc_wvec *w1, double sums[3])
{
    pc_anchor as_anchor = {.a = *y}; /* borrowed, read only */
    uint32_t i = 0, j = 0;
    lanes l = {{{0}}, 0};
    out->n = merge(&as_anchor, x, &i, &j, out->idx, out->val, UINT32_MAX);
    lanes_add(&l, out->idx, out->val, out->n, w0, w1);
    lanes_sum(&l, sums);
    out->norm2 = sums[2];
}

const pc_svec *pc_anchor_diff(pc_anchor *an, const pc_svec *x)
{
    double sums[3];
    sub_dots(x, &an->a, &an->d, NULL, NULL, sums); /* reserved */
    return &an->d;
}

const pc_svec *pc_anchor_diff_dots(pc_anchor *an, const pc_svec *x, const pc_wvec *w0,
                                   const pc_wvec *w1, double *d0, double *d1)
{
    double sums[3];
    sub_dots(x, &an->a, &an->d, w0, w1, sums); /* reserved */
    *d0 = sums[0];
    if (w1)
        *d1 = sums[1];
    return &an->d;
}

void pc_anchor_dots(const pc_anchor *an, const pc_wvec *w0, const pc_wvec *w1, const pc_svec *x,
                    double *d0, double *d1, double *norm2)
{
    uint32_t i = 0, j = 0, idx[CHUNK], n;
    double val[CHUNK], out[3];
    lanes l = {{{0}}, 0};
    while ((n = merge(an, x, &i, &j, idx, val, CHUNK)) > 0)
        lanes_add(&l, idx, val, n, w0, w1);
    lanes_sum(&l, out);
    *d0 = out[0], *norm2 = out[2];
    if (w1)
        *d1 = out[1];
}

bool pc_anchor_sub(const pc_svec *x, const pc_svec *y, pc_svec *out)
{
    while ((uint64_t)out->cap < (uint64_t)x->n + y->n)
        if (pc_svec_grow(out) != PC_OK)
            return false;
    double sums[3];
    sub_dots(x, y, out, NULL, NULL, sums);
    return true;
}

void pc_anchor_dots_d(const pc_svec *d, const pc_wvec *w0, const pc_wvec *w1, double *d0,
                      double *d1)
{
    lanes l = {{{0}}, 0};
    double out[3];
    lanes_add(&l, d->idx, d->val, d->n, w0, w1);
    lanes_sum(&l, out);
    *d0 = out[0];
    if (w1)
        *d1 = out[1];
}

double pc_anchor_dot_fn(const pc_anchor *an, const pc_svec *x,
                        double (*get)(const void *arg, uint32_t i), const void *arg)
{
    const uint32_t *xi = x->idx, *ai = an->a.idx;
    const double *xv = x->val, *av = an->a.val;
    uint32_t nx = x->n, na = an->a.n, i = 0, j = 0;
    double s = 0;
    while (i < nx || j < na) {
        if (j >= na || (i < nx && xi[i] < ai[j]))
            s += get(arg, xi[i]) * xv[i], i++;
        else if (i >= nx || ai[j] < xi[i])
            s -= get(arg, ai[j]) * av[j], j++;
        else
            s += get(arg, xi[i]) * (xv[i] - av[j]), i++, j++;
    }
    return s;
}


size_t pc_anchor_bytes(const pc_anchor *an)
{
    return ((size_t)an->a.cap + an->d.cap) * (sizeof *an->a.idx + sizeof *an->a.val);
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
        if (!pc_value_ok(v)) { /* the anchor is an example: its values are bounded as theirs */
            r->why = "an anchor value past 2^64, the bound of an example's values";
            return r->failed = true, false;
        }
        an->a.idx[k] = i;
        an->a.val[k] = v;
        an->a.n = k + 1;
        n2 += v * v;
    }
    an->a.norm2 = n2;
    return true;
}
