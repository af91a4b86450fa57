/* journal.h - the journal: every acknowledged state change, in order, on disk.
 *
 * Redis's AOF and PostgreSQL's WAL for perceptrond.  Each request that
 * changes a model (label, label_batch, create, drop, reset, notifications
 * that learn) is appended as one record, its MessagePack bytes as received,
 * after the daemon applied it and before its answer leaves.  At start the
 * snapshots are loaded and the journal is replayed through the same dispatch
 * as live requests, from each model's snapshot position (its LSN).
 *
 * Files: <dir>/<first LSN, 20 digits>.pcj, in the format of proto/journal.h.
 *
 * Durability (`fsync`): `no` writes before answering and leaves syncing to
 * the kernel; `everysec` also fdatasyncs once a second; `always` answers a
 * journaled request only once an fdatasync covers it.  The syncs run in one
 * thread of their own, so the event loop keeps reading and answering while a
 * disk flushes: everything written while one fdatasync runs is covered by
 * the next (group commit).  The same thread writes `no`'s pages back, and
 * drops the journal's pages from the page cache once they are on disk.
 *
 * Failures: a write or fdatasync that fails puts the journal in a failed
 * state: pcd_journal_writable() says no (the daemon refuses writes with code
 * 11 and keeps serving reads), what was not yet known durable stays in
 * memory, and pcd_journal_retry() (a 1 s timer) rewrites it into a fresh
 * segment; once that is synced the journal is healthy again.  A record the
 * kernel may have lost after a failed fdatasync is written again with the
 * same LSN, and replay skips LSNs it has seen.
 *
 * Threads: the event loop owns everything here except the requests and
 * results of the sync thread and of the writer thread (it writes the
 * large batches), which are guarded by one mutex; the threads
 * wake the loop through a pipe.  Nothing here knows about connections or
 * models.
 */
#ifndef PCD_JOURNAL_H
#define PCD_JOURNAL_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pcd_fsync_mode { PCD_FSYNC_NO, PCD_FSYNC_EVERYSEC, PCD_FSYNC_ALWAYS } pcd_fsync_mode;

typedef struct pcd_journal pcd_journal;

/* Applies one replayed record (the daemon's dispatch); the return value is
 * only counted (a record that fails to apply failed identically live). */
typedef int (*pcd_journal_apply_fn)(void *ud, uint64_t lsn, const uint8_t *msg, size_t len);
/* Called on the loop when the durable LSN advanced, or (failed true) when a
 * sync failed: records above durable_lsn must not be acknowledged. */
typedef void (*pcd_journal_durable_fn)(void *ud, uint64_t durable_lsn, bool failed);

typedef struct pcd_journal_options {
    const char *dir;
    pcd_fsync_mode fsync;
    uint64_t segment_bytes;      /* start a new segment past this size */
    bool truncate_corrupt;       /* on_corrupt: truncate (else refuse to start) */
    uint64_t min_next_lsn;       /* appends continue above this (the snapshots' LSNs) */
    pcd_journal_apply_fn apply;
    pcd_journal_durable_fn durable;
    void *ud;
} pcd_journal_options;

typedef struct pcd_journal_stats {
    uint64_t bytes, segments;          /* on disk now */
    uint64_t appended, replayed, replay_failed;
    uint64_t next_lsn, written_lsn, durable_lsn;
    uint64_t fsyncs, fsync_failures, write_failures;
    int64_t last_fsync_at;             /* unix seconds, 0 = never */
    double fsync_last_ms, fsync_max_ms, fsync_total_ms;
    uint64_t unsynced_bytes;           /* appended but not yet known durable */
    bool healthy;
} pcd_journal_stats;

/* Opens (creating) the journal in o->dir: checks every segment, truncates a
 * torn tail (logged with its offset and the bytes dropped), replays every
 * record through o->apply, starts the sync thread and
 * watches its pipe on base.  Corruption before the tail makes it fail with
 * err naming the file and offset, unless o->truncate_corrupt.  Returns 0 and
 * *out, or -1 with err. */
int pcd_journal_open(const pcd_journal_options *o, struct event_base *base, pcd_journal **out,
                     char *err, size_t errlen);
/* Flushes, syncs (in every mode), stops the thread and frees.  NULL ok.
 * Returns 0, or -1 when the last records could not be made durable. */
int pcd_journal_close(pcd_journal *j);

/* False while the journal is failed; msg (may be NULL) then says why, e.g.
 * "journal /var/lib/x/journal/00..01.pcj: write: No space left on device". */
bool pcd_journal_writable(const pcd_journal *j, char *msg, size_t msglen);
/* Appends a record to the in-memory tail; returns its LSN (0 when out of
 * memory: nothing appended).  Not on disk until pcd_journal_flush. */
uint64_t pcd_journal_append(pcd_journal *j, const uint8_t *msg, size_t len);
/* The same for the record msg[0..len) followed by more[0..more_len). */
uint64_t pcd_journal_append_parts(pcd_journal *j, const uint8_t *msg, size_t len,
                                  const uint8_t *more, size_t more_len);
/* Writes what was appended, or hands it to the writer thread to
 * write when it is large; o->durable reports it written (or failed) then.
 * In `always` mode it also asks the sync thread for an fdatasync;
 * o->durable reports it.  Returns 0, or -1 when the write failed (the
 * journal is then failed and keeps the records). */
int pcd_journal_flush(pcd_journal *j);
/* The same, except that a tail smaller than a batch
 * is written once the loop has nothing more urgent to do (a lowest-priority
 * event; o->durable then reports it), so that a busy loop hands the thread
 * larger batches. */
int pcd_journal_flush_some(pcd_journal *j);
/* The LSN up to which answers may go out: written (no, everysec) or synced
 * (always). */
uint64_t pcd_journal_ack_lsn(const pcd_journal *j);
/* The everysec tick: asks the thread to sync what was written. */
void pcd_journal_tick(pcd_journal *j);
/* From a timer while failed: rewrites what is not known durable into a new
 * segment and syncs it.  Returns 0 when healthy again. */
int pcd_journal_retry(pcd_journal *j);
/* Deletes the segments whose records are all below lsn (every model's
 * snapshot has passed them).  The segment being written is never deleted. */
void pcd_journal_prune(pcd_journal *j, uint64_t lsn);
uint64_t pcd_journal_next_lsn(const pcd_journal *j);
void pcd_journal_stats_get(const pcd_journal *j, pcd_journal_stats *st);

#endif
