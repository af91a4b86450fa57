/* journal.h - the journal's byte format: segment headers and self-checking
 * records (docs/persistence.md, "The journal").  The one writer and reader
 * of these bytes: the daemon's journal (daemon/journal.c) and
 * `perceptronctl journal` both go through it.  No files here.
 *
 *   segment header   8  magic "PCDJRNL\n"
 *                    4  format version, u32 LE (PCP_JOURNAL_VERSION)
 *                    8  first LSN of the segment, u64 LE
 *   record, repeated 4  payload length n, u32 LE (1 .. PCP_JOURNAL_RECORD_MAX)
 *                    8  LSN, u64 LE (log sequence number, one per record)
 *                    8  checksum: XXH3-64 of the payload, seeded with the
 *                       LSN and the length, so a record cut short, moved
 *                       or renumbered does not verify
 *                    n  payload: one MessagePack-RPC message as received
 */
#ifndef PCP_JOURNAL_H
#define PCP_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/bytes.h"

#define PCP_JOURNAL_MAGIC "PCDJRNL\n"
#define PCP_JOURNAL_VERSION 1u
#define PCP_JOURNAL_HEADER_LEN 20
#define PCP_JOURNAL_RECORD_HEADER_LEN 20
/* Above max_message_bytes' ceiling (256 MiB): a larger length is damage. */
#define PCP_JOURNAL_RECORD_MAX (512u * 1024 * 1024)

/* What pcp_journal_get_record found at the reader's position. */
typedef enum pcp_jrec {
    PCP_JREC_OK,     /* an intact record; the reader moved past it */
    PCP_JREC_END,    /* no bytes left: a clean end */
    PCP_JREC_TORN,   /* the record runs past the end, or only zeros remain:
                      * an append cut short by a crash */
    PCP_JREC_BAD,    /* a whole record that does not verify: corruption */
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

/* Checks a segment header; 0 with *first_lsn, or -1 with why ("not a
 * perceptrond journal (bad magic)", "format version 7, this daemon reads 1"). */
int pcp_journal_get_header(const uint8_t *p, size_t n, uint64_t *first_lsn, char *why, size_t whylen);
/* Reads the record at r's position.  On PCP_JREC_OK *msg points into r's
 * bytes; otherwise r is left where the record starts. */
pcp_jrec pcp_journal_get_record(pc_reader *r, uint64_t *lsn, const uint8_t **msg, uint32_t *len);

#endif
