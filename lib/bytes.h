/* bytes.h - bounded little-endian byte writer and reader for model state.
 *
 * The writer grows a heap buffer; the reader never reads past its end and
 * never lets a caller allocate from a length it has not checked against the
 * bytes that remain (pc_reader_need).  Once a read fails the reader stays
 * failed, so a decoder may read a whole record and check once.
 */
#ifndef PC_BYTES_H
#define PC_BYTES_H

#include "lib/perceptron.h"

typedef struct pc_writer {
    uint8_t *buf;   /* owned; handed to the caller by pc_model_encode */
    size_t len, cap;
    bool failed;    /* an allocation failed */
} pc_writer;

/* Little-endian stores and loads at p: the one byte-order helper of the tree
 * (model state, snapshot headers, feature names, journal records). */
static inline void pc_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void pc_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t pc_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t pc_get_u64(const uint8_t *p)
{
    return (uint64_t)pc_get_u32(p) | (uint64_t)pc_get_u32(p + 4) << 32;
}

/* Appends n bytes for the caller to fill; NULL (and w->failed) when out of
 * memory. */
uint8_t *pc_writer_extend(pc_writer *w, size_t n);
void pc_writer_u8(pc_writer *w, uint8_t v);
void pc_writer_u32(pc_writer *w, uint32_t v);
void pc_writer_u64(pc_writer *w, uint64_t v);
void pc_writer_f64(pc_writer *w, double v);   /* bit-exact (IEEE-754 bits) */
void pc_writer_bytes(pc_writer *w, const void *p, size_t n);
void pc_writer_str(pc_writer *w, const char *s); /* u32 length + bytes */
/* A dense double array of n entries, stored sparsely (count + index/value
 * pairs) when that is smaller. */
void pc_writer_f64_array(pc_writer *w, const double *a, uint32_t n);
/* The same bytes from a store that is not an array (wstore.c): nz lists the
 * nnz indices to store (entries != +0), increasing; at(arg, i) is entry i. */
void pc_writer_f64_sparse(pc_writer *w, uint32_t n, const uint32_t *nz, uint32_t nnz,
                          double (*at)(const void *arg, uint32_t i), const void *arg);

typedef struct pc_reader {
    const uint8_t *p;
    size_t left;
    bool failed;
    bool nonfinite; /* a pc_reader_f64 read NaN or an infinity (the caller decides) */
    bool nomem;     /* an allocation failed: out of memory, not malformed bytes */
    const char *why; /* static text naming the value a decoder's check refused (NULL: it
                        did not say), for the message the codec returns */
} pc_reader;

uint8_t pc_reader_u8(pc_reader *r);
uint32_t pc_reader_u32(pc_reader *r);
uint64_t pc_reader_u64(pc_reader *r);
double pc_reader_f64(pc_reader *r);
bool pc_reader_bytes(pc_reader *r, void *p, size_t n);
/* The next n bytes where they are, without a copy (for an ID, or a nested
 * record another decoder reads); NULL and failed when fewer remain. */
const uint8_t *pc_reader_take(pc_reader *r, size_t n);
/* True when at least count items of size bytes each remain; marks the reader
 * failed otherwise.  Call before allocating from a length read from input. */
bool pc_reader_need(pc_reader *r, uint64_t count, size_t size);
/* Reads a pc_writer_str into a new NUL-terminated string (caller frees);
 * NULL on failure or when longer than max (r->nomem set when malloc failed). */
char *pc_reader_str(pc_reader *r, size_t max);
/* Reads a pc_writer_f64_array of exactly n entries into a (zero-filled first). */
bool pc_reader_f64_array(pc_reader *r, double *a, uint32_t n);
/* The same, entry by entry: put(arg, i, v) for every entry that is not +0,
 * in increasing i; put returns false when out of memory (r->nomem set). */
bool pc_reader_f64_entries(pc_reader *r, uint32_t n, bool (*put)(void *arg, uint32_t i, double v),
                           void *arg);

#endif
