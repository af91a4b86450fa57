/* journal.c - the journal's byte format (see journal.h). */
#include "proto/journal.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

static uint64_t checksum(uint64_t lsn, const uint8_t *msg, uint32_t len)
{
    /* The seed binds the LSN and the length to the payload. */
    return XXH3_64bits_withSeed(msg, len, lsn * 0x9E3779B97F4A7C15ull ^ len);
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
    pc_put_u64(p + 12, 0);
}

void pcp_journal_seal(uint8_t *p, size_t n)
{
    while (n >= PCP_JOURNAL_RECORD_HEADER_LEN) {
        uint32_t len = pc_get_u32(p);
        if (len > n - PCP_JOURNAL_RECORD_HEADER_LEN)
            return; /* not a record put here: nothing to seal */
        uint8_t *payload = p + PCP_JOURNAL_RECORD_HEADER_LEN;
        pc_put_u64(p + 12, checksum(pc_get_u64(p + 4), payload, len));
        p += PCP_JOURNAL_RECORD_HEADER_LEN + (size_t)len;
        n -= PCP_JOURNAL_RECORD_HEADER_LEN + (size_t)len;
    }
}

int pcp_journal_get_header(const uint8_t *p, size_t n, uint64_t *first_lsn, char *why, size_t whylen)
{
    if (n < PCP_JOURNAL_HEADER_LEN || memcmp(p, PCP_JOURNAL_MAGIC, 8) != 0) {
        snprintf(why, whylen, "not a perceptrond journal segment (%s)",
                 n < PCP_JOURNAL_HEADER_LEN ? "shorter than its header" : "bad magic");
        return -1;
    }
    pc_reader r = {.p = p + 8, .left = n - 8};
    uint32_t version = pc_reader_u32(&r);
    if (version != PCP_JOURNAL_VERSION) {
        snprintf(why, whylen, "journal format version %u, this build reads %u", version,
                 PCP_JOURNAL_VERSION);
        return -1;
    }
    *first_lsn = pc_reader_u64(&r);
    return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

pcp_jrec pcp_journal_get_record(pc_reader *r, uint64_t *lsn, const uint8_t **msg, uint32_t *len)
{
    if (r->left == 0)
        return PCP_JREC_END;
    /* A crash mid-append leaves a short record, or (on file systems that
     * extend the size before the data) zeros up to the end. */
    if (r->left < PCP_JOURNAL_RECORD_HEADER_LEN || all_zero(r->p, r->left))
        return PCP_JREC_TORN;
    pc_reader h = *r;
    uint32_t n = pc_reader_u32(&h);
    uint64_t l = pc_reader_u64(&h);
    uint64_t sum = pc_reader_u64(&h);
    if (n == 0 || n > PCP_JOURNAL_RECORD_MAX)
        return PCP_JREC_BAD;
    if (h.left < n)
        return PCP_JREC_TORN;
    if (checksum(l, h.p, n) != sum)
        /* The last record of the file, cut by a crash, also ends here. */
        return h.left == n ? PCP_JREC_TORN : PCP_JREC_BAD;
    *lsn = l;
    *msg = h.p;
    *len = n;
    r->p = h.p + n;
    r->left = h.left - n;
    return PCP_JREC_OK;
}
