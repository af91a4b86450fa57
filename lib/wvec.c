/* wvec.c - dense weight vector with a lazy scale and a running squared norm.
 * See wvec.h for the invariants; every entry point here is O(nnz(x)) except
 * init, zero and the rare renormalisation. */
#include "lib/wvec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fold the scale into v when it leaves [2^-300, 2^300]... conservatively
 * earlier, so products with v stay far from the double range's ends. */
#define SCALE_LOW 1e-120
#define SCALE_HIGH 1e120

pc_status pc_wvec_init(pc_wvec *w, uint32_t dim, bool averaged)
{
    memset(w, 0, sizeof *w);
    w->dim = dim;
    w->scale = 1;
    /* calloc of a large block maps zero pages lazily: a 2^28 model that sees
     * few features only pays for the pages it touches. */
    w->v = calloc(dim ? dim : 1, sizeof *w->v);
    if (!w->v)
        return PC_ENOMEM;
    if (averaged) {
        w->avg = calloc(dim ? dim : 1, sizeof *w->avg);
        if (!w->avg) {
            free(w->v);
            w->v = NULL;
            return PC_ENOMEM;
        }
    }
    return PC_OK;
}

size_t pc_wvec_bytes(const pc_wvec *w)
{
    size_t n = w->v ? (size_t)w->dim * sizeof *w->v : 0;
    if (w->avg)
        n += (size_t)w->dim * sizeof *w->avg;
    return n + (size_t)w->support_cap * sizeof *w->support;
}

void pc_wvec_free(pc_wvec *w)
{
    if (!w)
        return;
    free(w->v);
    free(w->avg);
    free(w->support);
    w->v = w->avg = NULL;
    w->support = NULL;
}

void pc_wvec_track_support(pc_wvec *w)
{
    w->tracked = true;
}

void pc_wvec_zero(pc_wvec *w)
{
    if (w->tracked && !w->support_lost) {
        for (uint32_t k = 0; k < w->nsupport; k++) {
            w->v[w->support[k]] = 0;
            if (w->avg)
                w->avg[w->support[k]] = 0;
        }
    } else {
        memset(w->v, 0, (size_t)w->dim * sizeof *w->v);
        if (w->avg)
            memset(w->avg, 0, (size_t)w->dim * sizeof *w->avg);
    }
    w->nsupport = 0;
    w->support_lost = false;
    w->scale = 1;
    w->norm2 = 0;
}

/* Lists the entries of x's indices that are still 0 in v, before an add. */
static void note_support(pc_wvec *w, const pc_svec *x)
{
    if ((uint64_t)w->nsupport + x->n > w->dim) {
        w->support_lost = true; /* more entries than v has: a full clear is cheaper */
        return;
    }
    if (w->nsupport + x->n > w->support_cap) {
        uint64_t cap = w->support_cap ? 2 * (uint64_t)w->support_cap : 64;
        while (cap < (uint64_t)w->nsupport + x->n)
            cap *= 2;
        if (cap > w->dim)
            cap = w->dim;
        uint32_t *s = realloc(w->support, cap * sizeof *s);
        if (!s) {
            w->support_lost = true;
            return;
        }
        w->support = s;
        w->support_cap = (uint32_t)cap;
    }
    for (uint32_t k = 0; k < x->n; k++)
        if (w->v[x->idx[k]] == 0)
            w->support[w->nsupport++] = x->idx[k];
}

static void renormalise(pc_wvec *w)
{
    for (uint32_t i = 0; i < w->dim; i++)
        w->v[i] *= w->scale;
    w->scale = 1;
}

double pc_wvec_add(pc_wvec *w, double alpha, const pc_svec *x)
{
    double dot = pc_wvec_dot(w, x);
    if (w->tracked && !w->support_lost)
        note_support(w, x);
    double a = alpha / w->scale;
    for (uint32_t k = 0; k < x->n; k++)
        w->v[x->idx[k]] += a * x->val[k];
    if (w->avg) {
        double t = w->tick * alpha;
        for (uint32_t k = 0; k < x->n; k++)
            w->avg[x->idx[k]] += t * x->val[k];
    }
    /* ||w + alpha x||^2 = ||w||^2 + 2 alpha w.x + alpha^2 ||x||^2; clamp the
     * rounding that could make it slightly negative. */
    w->norm2 += 2 * alpha * dot + alpha * alpha * x->norm2;
    if (w->norm2 < 0)
        w->norm2 = 0;
    return dot;
}

void pc_wvec_scale(pc_wvec *w, double c)
{
    if (c == 0) {
        pc_wvec_zero(w);
        return;
    }
    w->scale *= c;
    w->norm2 *= c * c;
    double a = fabs(w->scale);
    if (a < SCALE_LOW || a > SCALE_HIGH)
        renormalise(w);
}

void pc_wvec_scale_add(pc_wvec *w, double c, double d, const pc_svec *x)
{
    pc_wvec_scale(w, c);
    pc_wvec_add(w, d, x);
}

double pc_wvec_dot_avg(const pc_wvec *w, const pc_svec *x)
{
    if (!w->avg || w->tick <= 0)
        return pc_wvec_dot(w, x);
    double s = 0, u = 0;
    for (uint32_t k = 0; k < x->n; k++) {
        s += w->v[x->idx[k]] * x->val[k];
        u += w->avg[x->idx[k]] * x->val[k];
    }
    return w->scale * s - u / w->tick;
}

double pc_wvec_get_avg(const pc_wvec *w, uint32_t i)
{
    if (!w->avg || w->tick <= 0)
        return pc_wvec_get(w, i);
    return w->scale * w->v[i] - w->avg[i] / w->tick;
}

void pc_wvec_encode(const pc_wvec *w, pc_writer *wr)
{
    pc_writer_f64(wr, w->scale);
    pc_writer_f64(wr, w->norm2);
    pc_writer_f64(wr, w->tick);
    pc_writer_f64_array(wr, w->v, w->dim);
    pc_writer_u8(wr, w->avg != NULL);
    if (w->avg)
        pc_writer_f64_array(wr, w->avg, w->dim);
}

bool pc_wvec_decode(pc_wvec *w, pc_reader *r)
{
    w->scale = pc_reader_f64(r);
    w->norm2 = pc_reader_f64(r);
    w->tick = pc_reader_f64(r);
    if (!pc_reader_f64_array(r, w->v, w->dim))
        return false;
    uint8_t has_avg = pc_reader_u8(r); /* 0 or 1, as written */
    if (r->failed || has_avg != (w->avg != NULL) || !isfinite(w->scale) || w->scale == 0)
        return r->failed = true, false;
    if (w->avg && !pc_reader_f64_array(r, w->avg, w->dim))
        return false;
    w->nsupport = 0;
    w->support_lost = true; /* where v is non-zero is not known: the next reset clears it all */
    return !r->failed;
}
