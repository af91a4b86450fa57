/* threads.c - the journal's two threads, as Redis's bio.c: the writer
 * (writes a large batch of records handed over by the loop, so that the loop
 * never waits on a big write) and the sync thread (fdatasync, or write-back
 * with `no`, of what the loop asks, and closing the segments the loop
 * retired).  They share with the loop only what internal.h marks "under mu",
 * and report through the wake pipe, which journal.c's on_wake reads.
 * A thread of its own for each, so that a batch never waits behind an
 * fdatasync (milliseconds, during which a pipelining client's answers would
 * wait). */
#define _GNU_SOURCE /* sync_file_range */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/journal/internal.h"
#include "proto/journal.h"

#define JOURNAL_PAGE 4096         /* the page cache's unit (a larger page only drops less) */
#define WHOLE_FILE UINT64_MAX     /* sync_to's end for a retired segment */

/* Drops the pages of fd's file below end from the page cache once they are
 * on disk: the journal is read only at start, and on this VM a page cache
 * that keeps growing costs several times the copy itself (pages never
 * touched before are slow to get; recycled ones are not).  Whole pages
 * only: the last, partial page is still being appended to, and dropping it
 * would make the next write read it back from the disk.  PostgreSQL drops
 * its WAL the same way. */
static void drop_cached(int fd, uint64_t *dropped, uint64_t end)
{
    if (end == WHOLE_FILE) { /* a finished segment: nothing more comes */
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        return;
    }
    /* By WRITEBACK_BYTES at least: the call drains every CPU's page lists
     * (lru_add_drain_all, work queued on each core, the loop's too), which
     * after each of `always`'s syncs cost a seventh of its label rate. */
    uint64_t upto = end & ~(uint64_t)(JOURNAL_PAGE - 1);
    if (upto >= *dropped + WRITEBACK_BYTES) {
        posix_fadvise(fd, (off_t)*dropped, (off_t)(upto - *dropped), POSIX_FADV_DONTNEED);
        *dropped = upto;
    }
}

/* What the thread does for a request on fd up to byte end: fdatasync
 * (everysec, always), or only write the pages back (`no`, which promises
 * nothing more: the file's size is not synced).  Then the pages go. */
static int sync_to(pcd_journal *j, int fd, uint64_t *dropped, uint64_t end)
{
    if (j->mode == PCD_FSYNC_NO) {
        /* nbytes 0: to the end of the file */
        off_t from = (off_t)*dropped, n = end == WHOLE_FILE ? 0 : (off_t)(end - *dropped);
        if ((end == WHOLE_FILE || end > *dropped) &&
            sync_file_range(fd, from, n,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                SYNC_FILE_RANGE_WAIT_AFTER) != 0)
            return errno;
    } else if (fdatasync(fd) != 0) {
        return errno;
    }
    drop_cached(fd, dropped, end);
    return 0;
}

/* Under mu: a batch handed over and not yet written. */
static bool batch_waiting(const pcd_journal *j)
{
    return j->writing && !j->batch_done;
}

/* Seals the records p[0..n) and writes them at offset `at` of fd; on
 * failure cuts the file back to `at`, so that no half record stays in front
 * of later ones.  0 or an errno value.  The loop's writes and the thread's
 * (a batch: the loop does not touch it or its segment's end meanwhile). */
int pcd_journal_write_at(int fd, uint8_t *p, size_t n, uint64_t at)
{
    pcp_journal_seal(p, n);
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(fd, p + done, n - done, (off_t)(at + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            if (ftruncate(fd, (off_t)at) != 0)
                pcd_warn("journal: cannot cut back a failed write: %s", strerror(errno));
            return e;
        }
        done += (size_t)w;
    }
    return 0;
}

/* The writer thread: writes each batch the loop hands over.
 * A thread of its own, so that a batch never waits behind an fdatasync
 * (milliseconds, during which a pipelining client's answers would wait). */
static void *writer_main(void *arg)
{
    pcd_journal *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->stop && !batch_waiting(j))
            pthread_cond_wait(&j->writer_cv, &j->mu);
        if (!batch_waiting(j))
            break; /* stopping, and nothing handed over */
        pthread_mutex_unlock(&j->mu);
        int e = pcd_journal_write_at(j->batch_fd, j->batch.buf, j->batch.len, j->batch_at);
        pthread_mutex_lock(&j->mu);
        j->batch_errno = e;
        j->batch_done = true;
        pcd_wake_up(&j->wake);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static void *sync_main(void *arg)
{
    pcd_journal *j = arg;
    uint64_t taken = 0;
    int last_fd = -1;      /* the segment whose pages below `dropped` are gone */
    uint64_t dropped = 0;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->stop && j->req_lsn == taken && j->nretired == 0 && !j->req_dirsync)
            pthread_cond_wait(&j->cv, &j->mu);
        if (j->stop && j->req_lsn == taken && j->nretired == 0 && !j->req_dirsync)
            break;
        uint64_t lsn = j->req_lsn, end = j->req_end;
        int fd = j->req_fd, dirfd = j->req_dirsync ? j->dirfd : -1;
        struct retired *retired = j->retired;
        size_t nretired = j->nretired;
        j->retired = NULL;
        j->nretired = j->retcap = 0;
        j->req_dirsync = false;
        pthread_mutex_unlock(&j->mu);

        double t0 = pcd_monotonic();
        int err = 0, e;
        for (size_t i = 0; i < nretired; i++) {
            uint64_t none = 0;
            if (retired[i].sync && (e = sync_to(j, retired[i].fd, &none, WHOLE_FILE)) && !err)
                err = e;
            if (retired[i].fd == last_fd)
                last_fd = -1; /* its number may come back for another file */
            close(retired[i].fd);
        }
        free(retired);
        if (fd >= 0) {
            if (fd != last_fd) {
                last_fd = fd;
                dropped = 0;
            }
            if ((e = sync_to(j, fd, &dropped, end)) && !err)
                err = e;
        }
        if (dirfd >= 0 && fsync(dirfd) != 0 && !err)
            err = errno;
        double ms = (pcd_monotonic() - t0) * 1e3;

        pthread_mutex_lock(&j->mu);
        taken = lsn;
        if (err)
            j->done_errno = err;
        else if (lsn > j->done_lsn)
            j->done_lsn = lsn;
        j->done_ms = ms;
        j->sync_done = true;
        pthread_mutex_unlock(&j->mu);
        pcd_wake_up(&j->wake);
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

void pcd_journal_request_sync(pcd_journal *j, bool dirsync)
{
    if (!j->threaded)
        return;
    pthread_mutex_lock(&j->mu);
    j->req_lsn = j->written_lsn;
    j->req_fd = j->fd;
    /* what is written: a batch in flight is counted in the size already */
    j->req_end = j->writing ? j->batch_at : j->segs[j->nsegs - 1].bytes;
    j->req_dirsync |= dirsync;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    j->requested_lsn = j->written_lsn;
    j->unrequested_bytes = 0;
}

/* Hands the previous segment's fd to the thread to sync (unless its tail
 * failed) and close, after j->fd was replaced; without a thread, closes it.
 * Only the thread closes a descriptor it may be syncing. */
int pcd_journal_retire(pcd_journal *j, int fd, bool sync)
{
    if (!j->threaded) { /* at close: the loop syncs it itself */
        int e = sync && fdatasync(fd) != 0 ? errno : 0;
        close(fd);
        return e;
    }
    pthread_mutex_lock(&j->mu);
    if (j->req_fd == fd) {
        j->req_fd = j->fd;
        j->req_end = 0;
    }
    bool queued = PC_GROW(j->retired, j->retcap, j->nretired, 16);
    if (queued) {
        j->retired[j->nretired++] = (struct retired){fd, sync};
        pthread_cond_signal(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
    if (!queued) { /* out of memory: sync here; the thread is not syncing it (req_fd moved) */
        if (sync)
            fdatasync(fd);
        close(fd);
    }
    return 0;
}

int pcd_journal_threads_start(pcd_journal *j, char *err, size_t errlen)
{
    j->req_fd = -1;
    if (pthread_create(&j->thread, NULL, sync_main, j) != 0) {
        snprintf(err, errlen, "journal: cannot start the sync thread");
        return -1;
    }
    j->threaded = true;
    if (pthread_create(&j->writer, NULL, writer_main, j) != 0) {
        snprintf(err, errlen, "journal: cannot start the writer thread");
        return -1;
    }
    j->writer_started = true;
    return 0;
}

void pcd_journal_threads_stop(pcd_journal *j)
{
    /* The writer writes a batch it was given before it stops. */
    pthread_mutex_lock(&j->mu);
    j->stop = true;
    pthread_cond_signal(&j->cv);
    pthread_cond_signal(&j->writer_cv);
    pthread_mutex_unlock(&j->mu);
    if (j->writer_started)
        pthread_join(j->writer, NULL);
    if (j->threaded)
        pthread_join(j->thread, NULL);
    j->threaded = j->writer_started = false;
}

void pcd_journal_hand_batch(pcd_journal *j)
{
    pthread_mutex_lock(&j->mu);
    j->writing = true;
    j->batch_done = false;
    pthread_cond_signal(&j->writer_cv);
    pthread_mutex_unlock(&j->mu);
}
