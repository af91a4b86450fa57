/* bytes.c - bounded little-endian byte writer and reader (see bytes.h). */
#include "lib/bytes.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

static bool writer_reserve(pc_writer *w, size_t n)
{
    if (w->failed)
        return false;
    if (w->cap - w->len >= n)
        return true;
    size_t cap = w->cap ? w->cap : 256;
    while (cap - w->len < n) {
        if (cap > SIZE_MAX / 2) {
            w->failed = true;
            return false;
        }
        cap *= 2;
    }
    uint8_t *b = realloc(w->buf, cap);
    if (!b) {
        w->failed = true;
        return false;
    }
    w->buf = b;
    w->cap = cap;
    return true;
}

void pc_writer_bytes(pc_writer *w, const void *p, size_t n)
{
    if (n == 0 || !writer_reserve(w, n))
        return;
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

void pc_writer_u8(pc_writer *w, uint8_t v)
{
    pc_writer_bytes(w, &v, 1);
}

uint8_t *pc_writer_extend(pc_writer *w, size_t n)
{
    if (!writer_reserve(w, n))
        return NULL;
    w->len += n;
    return w->buf + w->len - n;
}

void pc_writer_u32(pc_writer *w, uint32_t v)
{
    uint8_t b[4];
    pc_put_u32(b, v);
    pc_writer_bytes(w, b, 4);
}

void pc_writer_u64(pc_writer *w, uint64_t v)
{
    uint8_t b[8];
    pc_put_u64(b, v);
    pc_writer_bytes(w, b, 8);
}

void pc_writer_f64(pc_writer *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    pc_writer_u64(w, u);
}

void pc_writer_str(pc_writer *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    pc_writer_u32(w, (uint32_t)n);
    pc_writer_bytes(w, s, n);
}

/* Format byte: 0 = dense (n doubles), 1 = sparse (count, then u32 index +
 * f64 value pairs).  Hashed models are mostly zeros, so sparse usually wins. */
static bool f64_sparse_form(uint32_t nnz, uint32_t n)
{
    return (uint64_t)nnz * 12 < (uint64_t)n * 8;
}

void pc_writer_f64_array(pc_writer *w, const double *a, uint32_t n)
{
    uint32_t nnz = 0;
    for (uint32_t i = 0; i < n; i++)
        nnz += a[i] != 0 || signbit(a[i]);
    if (f64_sparse_form(nnz, n)) {
        pc_writer_u8(w, 1);
        pc_writer_u32(w, nnz);
        for (uint32_t i = 0; i < n; i++)
            if (a[i] != 0 || signbit(a[i])) {
                pc_writer_u32(w, i);
                pc_writer_f64(w, a[i]);
            }
    } else {
        pc_writer_u8(w, 0);
        for (uint32_t i = 0; i < n; i++)
            pc_writer_f64(w, a[i]);
    }
}

void pc_writer_f64_sparse(pc_writer *w, uint32_t n, const uint32_t *nz, uint32_t nnz,
                          double (*at)(const void *arg, uint32_t i), const void *arg)
{
    if (f64_sparse_form(nnz, n)) {
        pc_writer_u8(w, 1);
        pc_writer_u32(w, nnz);
        for (uint32_t k = 0; k < nnz; k++) {
            pc_writer_u32(w, nz[k]);
            pc_writer_f64(w, at(arg, nz[k]));
        }
    } else {
        pc_writer_u8(w, 0);
        for (uint32_t i = 0; i < n; i++)
            pc_writer_f64(w, at(arg, i));
    }
}

bool pc_reader_need(pc_reader *r, uint64_t count, size_t size)
{
    if (r->failed)
        return false;
    if (size && count > r->left / size) {
        r->failed = true;
        return false;
    }
    return true;
}

bool pc_reader_bytes(pc_reader *r, void *p, size_t n)
{
    if (!pc_reader_need(r, n, 1)) {
        if (n)
            memset(p, 0, n);
        return false;
    }
    if (n)
        memcpy(p, r->p, n);
    r->p += n;
    r->left -= n;
    return true;
}

const uint8_t *pc_reader_take(pc_reader *r, size_t n)
{
    if (!pc_reader_need(r, n, 1))
        return NULL;
    const uint8_t *p = r->p;
    if (n) { /* r->p may be NULL for an empty input */
        r->p += n;
        r->left -= n;
    }
    return p;
}

uint8_t pc_reader_u8(pc_reader *r)
{
    uint8_t v = 0;
    pc_reader_bytes(r, &v, 1);
    return v;
}

uint32_t pc_reader_u32(pc_reader *r)
{
    uint8_t b[4];
    if (!pc_reader_bytes(r, b, 4))
        return 0;
    return pc_get_u32(b);
}

uint64_t pc_reader_u64(pc_reader *r)
{
    uint8_t b[8];
    if (!pc_reader_bytes(r, b, 8))
        return 0;
    return pc_get_u64(b);
}

double pc_reader_f64(pc_reader *r)
{
    uint64_t u = pc_reader_u64(r);
    double v;
    memcpy(&v, &u, 8);
    r->nonfinite |= !isfinite(v);
    return v;
}

char *pc_reader_str(pc_reader *r, size_t max)
{
    uint32_t n = pc_reader_u32(r);
    if (r->failed || n > max || !pc_reader_need(r, n, 1)) {
        r->failed = true;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        r->failed = r->nomem = true;
        return NULL;
    }
    pc_reader_bytes(r, s, n);
    s[n] = 0;
    if (memchr(s, 0, n)) { /* names are C strings: no embedded NUL */
        free(s);
        r->failed = true;
        return NULL;
    }
    return s;
}

bool pc_reader_f64_entries(pc_reader *r, uint32_t n, bool (*put)(void *arg, uint32_t i, double v),
                           void *arg)
{
    uint8_t form = pc_reader_u8(r);
    if (r->failed)
        return false;
    if (form == 0) {
        if (!pc_reader_need(r, n, 8))
            return false;
        uint32_t nnz = 0;
        for (uint32_t i = 0; i < n; i++) {
            double v = pc_reader_f64(r);
            if (v != 0 || signbit(v)) {
                nnz++;
                if (!put(arg, i, v))
                    return r->failed = r->nomem = true, false;
            }
        }
        /* Only the form the writer chooses: one array, one encoding, so a
         * decoded model re-encodes to the bytes it came from. */
        if (f64_sparse_form(nnz, n))
            r->failed = true;
        return !r->failed;
    }
    if (form != 1) {
        r->failed = true;
        return false;
    }
    uint32_t nnz = pc_reader_u32(r);
    if (nnz > n || !f64_sparse_form(nnz, n) || !pc_reader_need(r, nnz, 12))
        return r->failed = true, false;
    int64_t last = -1;
    for (uint32_t k = 0; k < nnz; k++) {
        uint32_t i = pc_reader_u32(r);
        double v = pc_reader_f64(r);
        /* strictly increasing, in range, and no +0 (the writer leaves those out) */
        if (i >= n || (int64_t)i <= last || (v == 0 && !signbit(v)))
            return r->failed = true, false;
        if (!put(arg, i, v))
            return r->failed = r->nomem = true, false;
        last = i;
    }
    return !r->failed;
}

static bool put_array(void *arg, uint32_t i, double v)
{
    ((double *)arg)[i] = v;
    return true;
}

bool pc_reader_f64_array(pc_reader *r, double *a, uint32_t n)
{
    memset(a, 0, (size_t)n * sizeof *a);
    return pc_reader_f64_entries(r, n, put_array, a);
}
