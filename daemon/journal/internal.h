/* internal.h - the journal's state, shared by its three files: journal.c
 * (appends, group commit, segments), threads.c (the writer and sync
 * threads) and scan.c (the check, repair and replay of the segments at
 * open).  Not an API. */
#ifndef PCD_JOURNAL_INTERNAL_H
#define PCD_JOURNAL_INTERNAL_H

#include <event2/event.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/base/wake.h"
#include "daemon/journal/journal.h"
#include "lib/bytes.h"
#include "lib/grow.h"

#define SEG_SUFFIX ".pcj"
#define SEG_NAME_LEN 20 /* digits of the first LSN */

typedef struct segment {
    uint64_t first_lsn;
    uint64_t bytes;
} segment;

/* A flush in `always` mode: the tail up to end holds records up to lsn. */
typedef struct mark {
    uint64_t lsn;
    size_t end;
} mark;

struct pcd_journal {
    char *dir;
    int dirfd;
    pcd_fsync_mode mode;
    uint64_t segment_bytes;
    pcd_journal_durable_fn durable;
    void *ud;

    segment *segs;            /* on disk, by first LSN; the last is being written */
    size_t nsegs, segcap;
    int fd;                   /* the last segment */
    uint32_t last_version;    /* the format of the last segment found at open */

    pc_writer tail;           /* records not yet written (or, always: not yet synced) */
    /* A large write goes to the writer thread (the loop goes on serving;
     * with always, `batch` is a copy of the tail's unwritten records).
     * While `writing`, the thread owns `batch`: records batch_first to
     * batch_last, to be written at batch_at of the last segment (whose
     * size already counts them; no rotation meanwhile); later records wait
     * in tail.  The result: batch_errno (0: written). */
    pc_writer batch;
    bool writing;
    uint64_t batch_first, batch_last, batch_at;
    int batch_fd;
    int batch_errno;          /* under mu, with batch_done */
    bool batch_done;
    bool flush_owed;          /* a flush found the thread busy: on_wake does it */
    struct event *flush_ev;   /* on_flush: what flush_some left */
    struct event *flush_timer; /* on_flush too, FLUSH_WAIT_US at most after */
    size_t tail_written;      /* bytes of tail already written */
    uint64_t tail_first_lsn;  /* LSN of the first record in tail */
    mark *marks;
    size_t nmarks, markcap;

    uint64_t next_lsn, written_lsn, durable_lsn, requested_lsn;
    uint64_t unrequested_bytes; /* written since the thread was last asked to sync */
    bool failed;
    char why[4400];
    pcd_journal_stats st;

    /* The sync thread.  Under mu: the request (req_*), descriptors to sync
     * and close (retired), and the result (done_*). */
    bool threaded, writer_started;
    pthread_t thread, writer;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* the sync thread waits on it */
    pthread_cond_t writer_cv; /* the writer thread waits on it */
    bool stop;
    uint64_t req_lsn;
    int req_fd;
    uint64_t req_end;         /* req_fd's bytes when asked: the pages below may go */
    bool req_dirsync;
    struct retired { int fd; bool sync; } *retired;
    size_t nretired, retcap;
    uint64_t done_lsn;
    bool sync_done;           /* a sync's result (done_*) waits for the loop */
    int done_errno;
    double done_ms;
    pcd_wake wake;
};

/* The file of the segment whose first LSN is first. */
static inline void pcd_journal_path(const pcd_journal *j, uint64_t first, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%020" PRIu64 SEG_SUFFIX, j->dir, first);
}

/* ---- threads.c ---- */

/* With everysec and no, the loop asks the thread to write back (and drop)
 * this much at a time rather than once a second: at hundreds of MB/s the
 * page cache would otherwise grow by as much every second. */
#define WRITEBACK_BYTES (8u << 20)

/* Starts the sync and writer threads (j->mu, cv, writer_cv and wake set up);
 * 0, or -1 with err (pcd_journal_threads_stop undoes what started). */
int pcd_journal_threads_start(pcd_journal *j, char *err, size_t errlen);
/* Stops them once the writer has written what it was handed; afterwards the
 * loop writes and syncs itself (j->threaded false). */
void pcd_journal_threads_stop(pcd_journal *j);
/* Asks the sync thread to sync the last segment up to what is written
 * (and the directory too with dirsync); no-op without the thread. */
void pcd_journal_request_sync(pcd_journal *j, bool dirsync);
/* Hands the previous segment's fd to the thread to sync (unless sync is
 * false: its tail failed) and close, after j->fd was replaced.  Without the
 * thread (at close) syncs and closes it here: the fdatasync's errno, or 0. */
int pcd_journal_retire(pcd_journal *j, int fd, bool sync);
/* The writer thread now owns j->batch (hand_over in journal.c filled it). */
void pcd_journal_hand_batch(pcd_journal *j);
/* Seals the records p[0..n) and writes them at offset `at` of fd; on
 * failure cuts the file back to `at`, so that no half record stays in front
 * of later ones.  0 or an errno value. */
int pcd_journal_write_at(int fd, uint8_t *p, size_t n, uint64_t at);

/* ---- scan.c ---- */

/* Appends a segment to j->segs (false when out of memory). */
bool pcd_journal_add_segment(pcd_journal *j, uint64_t first, uint64_t bytes);
/* Checks every segment in j->dir, repairs a torn tail, replays each record
 * through o->apply and fills j->segs; *expect is the LSN the next record
 * takes.  0, or -1 with err naming the file and offset (journal/scan.c). */
int pcd_journal_scan(pcd_journal *j, const pcd_journal_options *o, uint64_t *expect, char *err,
                     size_t errlen);

#endif
