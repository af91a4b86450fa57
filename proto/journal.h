/* journal.h - the journal's byte format: segment headers and self-checking
 * records (docs/persistence.md, "The journal").  The one writer and reader
 * of these bytes: the daemon's journal (daemon/journal/journal.c) and
 * `perceptronctl journal` both go through it.  No files here.
 *
 *   segment header   8  magic "PCDJRNL\n"
 *                    4  format version, u32 LE (2; version 1 is still read)
 *                    8  first LSN of the segment, u64 LE
 *   record, repeated 4  payload length n, u32 LE (1 .. PCP_JOURNAL_RECORD_MAX)
 *                    8  LSN, u64 LE (log sequence number, one per record)
 *                    4  header check: XXH3-64 of the 12 bytes above, low
 *                       32 bits (version 2 only).  It tells a damaged
 *                       length from a record cut short by a crash: without
 *                       it a flipped length bit reads as a torn tail
 *                    8  checksum: XXH3-64 of the payload, seeded with the
 *                       LSN and the length, so a record cut short, moved
 *                       or renumbered does not verify
 *                    n  payload: one MessagePack-RPC message as received
 *
 * What a crash can leave at the end of a segment (a "torn" tail), and so
 * what the reader forgives: the last records cut short, and blocks of the
 * file that were never written, which read as zeros (a whole sector, or
 * the rest of the sector where the next record should start: a page synced
 * while the file ended there, whose later version was lost).  Anything else (a
 * header or payload that does not verify with no unwritten block in it, a
 * record out of LSN order) is corruption. */
#ifndef PCP_JOURNAL_H
#define PCP_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/bytes.h"

#define PCP_JOURNAL_MAGIC "PCDJRNL\n"
#define PCP_JOURNAL_VERSION 2u
#define PCP_JOURNAL_HEADER_LEN 20
#define PCP_JOURNAL_RECORD_HEADER_LEN 24 /* version 1: 20, without the header check */
/* Above max_message_bytes' ceiling (256 MiB): a larger length is damage. */
#define PCP_JOURNAL_RECORD_MAX (512u * 1024 * 1024)

/* What pcp_journal_get_record found at the reader's position. */
typedef enum pcp_jrec {
    PCP_JREC_OK,     /* an intact record; the reader moved past it */
    PCP_JREC_END,    /* no bytes left: a clean end */
    PCP_JREC_TORN,   /* what a crash mid-append leaves (see above) */
    PCP_JREC_BAD,    /* corruption: a record that does not verify, or out of order */
} pcp_jrec;

void pcp_journal_put_header(pc_writer *w, uint64_t first_lsn);
void pcp_journal_put_record(pc_writer *w, uint64_t lsn, const uint8_t *msg, uint32_t len);
/* The same record with the payload msg[0..len) followed by more[0..more_len)
 * (len + more_len at most PCP_JOURNAL_RECORD_MAX): a message rewritten at
 * its end is journaled without being copied whole first. */
void pcp_journal_put_record_parts(pc_writer *w, uint64_t lsn, const uint8_t *msg, uint32_t len,
                                  const uint8_t *more, uint32_t more_len);
/* The same record with its checksum left for pcp_journal_seal: the daemon
 * computes checksums in its writer thread, off the event loop. */
void pcp_journal_put_record_unsealed(pc_writer *w, uint64_t lsn, const uint8_t *msg, uint32_t len,
                                     const uint8_t *more, uint32_t more_len);
/* Fills in the checksum of every whole record in p[0..n) (records as put
 * above, back to back).  Sealing twice changes nothing. */
void pcp_journal_seal(uint8_t *p, size_t n);

/* A reader of one whole segment file, p[0..size), in memory. */
typedef struct pcp_journal_reader {
    const uint8_t *p;
    size_t size;
    size_t at;           /* the offset of the next record (of the damage, once found) */
    uint32_t version;    /* 0: the header never reached the disk (torn at 0) */
    uint64_t first_lsn;
    uint64_t next_lsn;   /* the LSN the record at `at` must carry */
} pcp_journal_reader;

/* Checks the segment header and places r before the first record; 0, or
 * -1 with why ("not a perceptrond journal segment (bad magic)", "journal
 * format version 7, this build reads 1 and 2"), or 1 when the header never
 * reached the disk (the file is shorter than the header, or the header is
 * zeros): a crash while the segment was created.  Then r->version and
 * r->first_lsn are 0 and pcp_journal_next answers PCP_JREC_TORN at 0. */
int pcp_journal_reader_init(pcp_journal_reader *r, const uint8_t *p, size_t size, char *why,
                            size_t whylen);
/* The record at r->at.  On PCP_JREC_OK *msg points into the file and r
 * moves past it; otherwise r stays at the record, which is where the clean
 * end, the torn tail or the corruption starts. */
pcp_jrec pcp_journal_next(pcp_journal_reader *r, uint64_t *lsn, const uint8_t **msg, uint32_t *len);

/* The intact records past the damage at r->at (records that verify and
 * carry an LSN at or above r->next_lsn, in file order): what cutting the
 * segment there would drop.  Calls found for each and returns how many. */
typedef void (*pcp_journal_found_fn)(void *ud, size_t offset, uint64_t lsn, const uint8_t *msg,
                                     uint32_t len);
size_t pcp_journal_intact_after(const pcp_journal_reader *r, pcp_journal_found_fn found, void *ud);

#endif
