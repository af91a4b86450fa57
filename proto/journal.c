/* journal.c - the journal's byte format (see journal.h). */
#include "proto/journal.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#define V1_RECORD_HEADER_LEN 20
/* The smallest block a file system leaves unwritten after a crash. */
#define SECTOR 512

static uint64_t checksum(uint64_t lsn, const uint8_t *msg, uint32_t len)
{
    /* The seed binds the LSN and the length to the payload. */
    return XXH3_64bits_withSeed(msg, len, lsn * 0x9E3779B97F4A7C15ull ^ len);
}

/* The header check of a version 2 record: its length and LSN, h[0..12). */
static uint32_t header_check(const uint8_t *h)
{
    return (uint32_t)XXH3_64bits(h, 12);
}

static size_t record_header_len(uint32_t version)
{
    return version == 1 ? V1_RECORD_HEADER_LEN : PCP_JOURNAL_RECORD_HEADER_LEN;
}

void pcp_journal_put_header(pc_writer *w, uint64_t first_lsn)
{
    pc_writer_bytes(w, PCP_JOURNAL_MAGIC, 8);
    pc_writer_u32(w, PCP_JOURNAL_VERSION);
    pc_writer_u64(w, first_lsn);
}

void pcp_journal_put_record(pc_writer *w, uint64_t lsn, const uint8_t *msg, uint32_t len)
{
    pcp_journal_put_record_parts(w, lsn, msg, len, NULL, 0);
}

void pcp_journal_put_record_parts(pc_writer *w, uint64_t lsn, const uint8_t *msg, uint32_t len,
                                  const uint8_t *more, uint32_t more_len)
{
    size_t at = w->len;
    pcp_journal_put_record_unsealed(w, lsn, msg, len, more, more_len);
    if (!w->failed)
        pcp_journal_seal(w->buf + at, w->len - at);
}

void pcp_journal_put_record_unsealed(pc_writer *w, uint64_t lsn, const uint8_t *msg, uint32_t len,
                                     const uint8_t *more, uint32_t more_len)
{
    /* One reservation for header and payload: this runs once per label. */
    uint32_t n = len + more_len;
    uint8_t *p = pc_writer_extend(w, PCP_JOURNAL_RECORD_HEADER_LEN + (size_t)n);
    if (!p)
        return;
    uint8_t *payload = p + PCP_JOURNAL_RECORD_HEADER_LEN;
    memcpy(payload, msg, len);
    if (more_len)
        memcpy(payload + len, more, more_len);
    pc_put_u32(p, n);
    pc_put_u64(p + 4, lsn);
    pc_put_u32(p + 12, 0);
    pc_put_u64(p + 16, 0);
}

void pcp_journal_seal(uint8_t *p, size_t n)
{
    while (n >= PCP_JOURNAL_RECORD_HEADER_LEN) {
        uint32_t len = pc_get_u32(p);
        if (len > n - PCP_JOURNAL_RECORD_HEADER_LEN)
            return; /* not a record put here: nothing to seal */
        uint8_t *payload = p + PCP_JOURNAL_RECORD_HEADER_LEN;
        pc_put_u32(p + 12, header_check(p));
        pc_put_u64(p + 16, checksum(pc_get_u64(p + 4), payload, len));
        p += PCP_JOURNAL_RECORD_HEADER_LEN + (size_t)len;
        n -= PCP_JOURNAL_RECORD_HEADER_LEN + (size_t)len;
    }
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

int pcp_journal_reader_init(pcp_journal_reader *r, const uint8_t *p, size_t size, char *why,
                            size_t whylen)
{
    if (size < PCP_JOURNAL_HEADER_LEN || all_zero(p, PCP_JOURNAL_HEADER_LEN)) {
        /* A crash while the segment was created, or before its header
         * reached the disk (the size extended, the page never written):
         * torn at offset 0, whatever follows.  version 0 says so to next. */
        *r = (pcp_journal_reader){.p = p, .size = size};
        return 1;
    }
    if (memcmp(p, PCP_JOURNAL_MAGIC, 8) != 0) {
        snprintf(why, whylen, "not a perceptrond journal segment (bad magic)");
        return -1;
    }
    uint32_t version = pc_get_u32(p + 8);
    if (version != 1 && version != PCP_JOURNAL_VERSION) {
        snprintf(why, whylen, "journal format version %u, this build reads 1 and %u", version,
                 PCP_JOURNAL_VERSION);
        return -1;
    }
    uint64_t first = pc_get_u64(p + 12);
    *r = (pcp_journal_reader){.p = p, .size = size, .at = PCP_JOURNAL_HEADER_LEN,
                              .version = version, .first_lsn = first, .next_lsn = first};
    return 0;
}

/* Whether [a, b) of the file meets a block that a crash left unwritten:
 * an aligned sector (clipped to the end of the file) of zeros.  A flipped
 * or overwritten byte cannot make one; a lost write does. */
static bool unwritten_in(const pcp_journal_reader *r, size_t a, size_t b)
{
    if (b > r->size)
        b = r->size;
    for (size_t s = a / SECTOR * SECTOR; s < b; s += SECTOR) {
        size_t e = s + SECTOR < r->size ? s + SECTOR : r->size;
        if (all_zero(r->p + s, e - s))
            return true;
    }
    return false;
}

/* Whether the bytes from q to the end of q's sector (or of the file) are all
 * zeros: a page synced while the file ended at q, whose later version (the
 * next records) never reached the disk while a later page did. */
static bool zeros_to_sector_end(const pcp_journal_reader *r, size_t q)
{
    size_t e = (q / SECTOR + 1) * SECTOR;
    if (e > r->size)
        e = r->size;
    return q < e && all_zero(r->p + q, e - q);
}

/* Whether the record at q is whole and verifies; its length in *n. */
static bool intact_at(const pcp_journal_reader *r, size_t q, uint32_t *n)
{
    size_t hl = record_header_len(r->version);
    const uint8_t *h = r->p + q;
    *n = pc_get_u32(h);
    if (*n == 0 || *n > PCP_JOURNAL_RECORD_MAX || r->size - q - hl < *n)
        return false;
    if (r->version >= 2 && pc_get_u32(h + 12) != header_check(h))
        return false;
    return checksum(pc_get_u64(h + 4), h + hl, *n) == pc_get_u64(h + hl - 8);
}

size_t pcp_journal_intact_after(const pcp_journal_reader *r, pcp_journal_found_fn found, void *ud)
{
    size_t hl = record_header_len(r->version), count = 0;
    for (size_t q = r->at + 1; q + hl <= r->size; q++) {
        /* The LSN first: a cheap test that random bytes almost never pass. */
        uint64_t lsn = pc_get_u64(r->p + q + 4);
        uint32_t n;
        if (lsn < r->next_lsn || lsn - r->next_lsn > UINT32_MAX || !intact_at(r, q, &n))
            continue;
        if (found)
            found(ud, q, lsn, r->p + q + hl, n);
        count++;
        q += hl + n - 1;
    }
    return count;
}

/* Version 1 records have no header check: a length that runs past the end
 * is taken for a torn append only when no intact record follows. */
static pcp_jrec classify_v1(const pcp_journal_reader *r, uint32_t n, uint64_t lsn)
{
    size_t left = r->size - r->at - V1_RECORD_HEADER_LEN;
    pcp_jrec k;
    if (n == 0 || n > PCP_JOURNAL_RECORD_MAX)
        k = PCP_JREC_BAD;
    else if (left < n)
        k = PCP_JREC_TORN;
    else if (checksum(lsn, r->p + r->at + V1_RECORD_HEADER_LEN, n) !=
             pc_get_u64(r->p + r->at + 12))
        /* The last record of the file, cut by a crash, also ends here. */
        k = left == n ? PCP_JREC_TORN : PCP_JREC_BAD;
    else
        k = lsn == r->next_lsn ? PCP_JREC_OK : PCP_JREC_BAD;
    if (k == PCP_JREC_TORN && pcp_journal_intact_after(r, NULL, NULL) > 0)
        k = PCP_JREC_BAD;
    return k;
}

static pcp_jrec classify_v2(const pcp_journal_reader *r, uint32_t n, uint64_t lsn)
{
    const uint8_t *h = r->p + r->at;
    size_t hl = PCP_JOURNAL_RECORD_HEADER_LEN, left = r->size - r->at - hl;
    if (pc_get_u32(h + 12) != header_check(h))
        return unwritten_in(r, r->at, r->at + hl) || zeros_to_sector_end(r, r->at) ? PCP_JREC_TORN
                                                                                 : PCP_JREC_BAD;
    /* The header is the writer's: its length and LSN can be trusted. */
    if (n == 0 || n > PCP_JOURNAL_RECORD_MAX || lsn != r->next_lsn)
        return PCP_JREC_BAD;
    if (left < n)
        return PCP_JREC_TORN; /* cut short */
    if (checksum(lsn, h + hl, n) != pc_get_u64(h + 16))
        return unwritten_in(r, r->at + hl, r->at + hl + n) ? PCP_JREC_TORN : PCP_JREC_BAD;
    return PCP_JREC_OK;
}

pcp_jrec pcp_journal_next(pcp_journal_reader *r, uint64_t *lsn, const uint8_t **msg, uint32_t *len)
{
    if (r->version == 0)
        return PCP_JREC_TORN; /* the header never reached the disk */
    size_t left = r->size - r->at, hl = record_header_len(r->version);
    if (left == 0)
        return PCP_JREC_END;
    /* A crash mid-append leaves a short record, or (on file systems that
     * extend the size before the data) zeros up to the end. */
    if (left < hl || all_zero(r->p + r->at, left))
        return PCP_JREC_TORN;
    const uint8_t *h = r->p + r->at;
    uint32_t n = pc_get_u32(h);
    uint64_t l = pc_get_u64(h + 4);
    pcp_jrec k = r->version == 1 ? classify_v1(r, n, l) : classify_v2(r, n, l);
    if (k != PCP_JREC_OK)
        return k;
    *lsn = l;
    *msg = h + hl;
    *len = n;
    r->at += hl + n;
    r->next_lsn++;
    return PCP_JREC_OK;
}
