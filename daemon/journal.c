/* journal.c - the journal's appends, group commit, segments and recovery
 * (journal.h says what it is for; journal_scan.c checks and replays the
 * segments at open; proto/journal.c owns the byte format).
 *
 * Shape of the write path, as in Redis's AOF: a request appends its record
 * to an in-memory tail (j->tail); the connection that appended calls
 * pcd_journal_flush before its answers leave, which writes the tail with one
 * pwrite.  With fsync `always` the tail keeps the records until an fdatasync
 * covers them (so a failed fdatasync can write them again, PostgreSQL's
 * lesson: after such a failure the kernel may have dropped the pages); with
 * `everysec` and `no` a record is forgotten once written.
 *
 * The sync thread does only fdatasync/fsync/close on descriptors the loop
 * hands it, and reports the LSN it made durable through a pipe.  Segments
 * the loop retires (rotation, recovery) are synced and closed by the thread,
 * so the loop never waits for a disk.
 */
#include "daemon/journal.h"
#include "daemon/journal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "daemon/clock.h"
#include "daemon/log.h"
#include "daemon/snapshot.h"
#include "proto/journal.h"

static void fail(pcd_journal *j, const char *step, uint64_t first, int errnum)
{
    char path[4200];
    pcd_journal_path(j, first, path, sizeof path);
    snprintf(j->why, sizeof j->why, "journal %s: %s: %s", path, step, strerror(errnum));
    if (!j->failed)
        pcd_error("%s; writes are refused until the journal can be written again (reads are served)",
                  j->why);
    j->failed = true;
}

/* ---- the sync thread ---------------------------------------------------- */

static void *sync_main(void *arg)
{
    pcd_journal *j = arg;
    uint64_t taken = 0;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->stop && j->req_lsn == taken && j->nretired == 0 && !j->req_dirsync)
            pthread_cond_wait(&j->cv, &j->mu);
        if (j->stop && j->req_lsn == taken && j->nretired == 0 && !j->req_dirsync)
            break;
        uint64_t lsn = j->req_lsn;
        int fd = j->req_fd, dirfd = j->req_dirsync ? j->dirfd : -1;
        struct retired *retired = j->retired;
        size_t nretired = j->nretired;
        j->retired = NULL;
        j->nretired = j->retcap = 0;
        j->req_dirsync = false;
        pthread_mutex_unlock(&j->mu);

        double t0 = pcd_monotonic();
        int err = 0;
        for (size_t i = 0; i < nretired; i++) {
            if (retired[i].sync && fdatasync(retired[i].fd) != 0 && !err)
                err = errno;
            close(retired[i].fd);
        }
        free(retired);
        if (fd >= 0 && fdatasync(fd) != 0 && !err)
            err = errno;
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
        pthread_mutex_unlock(&j->mu);
        char one = 1;
        ssize_t w = write(j->wake[1], &one, 1); /* full pipe: a wake-up is pending anyway */
        (void)w;
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static void request_sync(pcd_journal *j, bool dirsync)
{
    if (!j->threaded)
        return;
    pthread_mutex_lock(&j->mu);
    j->req_lsn = j->written_lsn;
    j->req_fd = j->fd;
    j->req_dirsync |= dirsync;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    j->requested_lsn = j->written_lsn;
}

/* Hands the previous segment's fd to the thread to sync (unless its tail
 * failed) and close, after j->fd was replaced; without a thread, closes it.
 * Only the thread closes a descriptor it may be syncing. */
static void retire(pcd_journal *j, int fd, bool sync)
{
    if (!j->threaded) {
        close(fd);
        return;
    }
    pthread_mutex_lock(&j->mu);
    if (j->req_fd == fd)
        j->req_fd = j->fd;
    struct retired *r = pcd_grow(j->retired, &j->retcap, j->nretired, sizeof *r);
    bool queued = r != NULL;
    if (queued) {
        j->retired = r;
        j->retired[j->nretired++] = (struct retired){fd, sync};
        pthread_cond_signal(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
    if (!queued) { /* out of memory: sync here; the thread is not syncing it (req_fd moved) */
        if (sync)
            fdatasync(fd);
        close(fd);
    }
}

/* Drops the tail's records up to lsn (synced), keeping what follows. */
static void drop_synced(pcd_journal *j, uint64_t lsn)
{
    size_t k = 0;
    while (k < j->nmarks && j->marks[k].lsn <= lsn)
        k++;
    if (k == 0)
        return;
    size_t cut = j->marks[k - 1].end;
    memmove(j->tail.buf, j->tail.buf + cut, j->tail.len - cut);
    j->tail.len -= cut;
    j->tail_written -= cut;
    j->tail_first_lsn = j->marks[k - 1].lsn + 1;
    for (size_t i = k; i < j->nmarks; i++) {
        j->marks[i - k] = j->marks[i];
        j->marks[i - k].end -= cut;
    }
    j->nmarks -= k;
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    pcd_journal *j = arg;
    (void)what;
    char drain[64];
    while (read(fd, drain, sizeof drain) > 0)
        ;
    pthread_mutex_lock(&j->mu);
    uint64_t done = j->done_lsn;
    int err = j->done_errno;
    double ms = j->done_ms;
    j->done_errno = 0;
    pthread_mutex_unlock(&j->mu);
    j->st.fsyncs++;
    j->st.fsync_last_ms = ms;
    j->st.fsync_total_ms += ms;
    if (ms > j->st.fsync_max_ms)
        j->st.fsync_max_ms = ms;
    if (err) {
        j->st.fsync_failures++;
        fail(j, "fdatasync", j->segs[j->nsegs - 1].first_lsn, err);
        if (j->mode != PCD_FSYNC_ALWAYS)
            pcd_error("journal: records acknowledged in the last second may be lost "
                      "(fsync everysec)");
        j->durable(j->ud, j->durable_lsn, true);
        return;
    }
    j->st.last_fsync_at = pcd_now();
    if (done > j->durable_lsn) {
        j->durable_lsn = done;
        if (j->mode == PCD_FSYNC_ALWAYS) {
            drop_synced(j, done);
            j->durable(j->ud, done, false);
        }
    }
}

/* ---- segments ----------------------------------------------------------- */

/* Creates the segment whose first record will be first, with its header
 * written; it becomes the one appended to (the caller retires the old fd).
 * Returns 0, or an errno value with nothing left behind. */
static int new_segment(pcd_journal *j, uint64_t first)
{
    char path[4200];
    pcd_journal_path(j, first, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return errno;
    pc_writer h = {0};
    pcp_journal_put_header(&h, first);
    ssize_t n = h.failed ? -1 : pwrite(fd, h.buf, h.len, 0);
    int e = n < 0 ? errno : ENOSPC;
    free(h.buf);
    if (n != PCP_JOURNAL_HEADER_LEN || !pcd_journal_add_segment(j, first, PCP_JOURNAL_HEADER_LEN)) {
        close(fd);
        unlink(path);
        return n == PCP_JOURNAL_HEADER_LEN ? ENOMEM : e;
    }
    j->fd = fd;
    return 0;
}

int pcd_journal_open(const pcd_journal_options *o, struct event_base *base, pcd_journal **out,
                     char *err, size_t errlen)
{
    if (pcd_state_dir_prepare(o->dir, err, errlen) != 0)
        return -1;
    pcd_journal *j = calloc(1, sizeof *j);
    if (!j || !(j->dir = strdup(o->dir))) {
        free(j);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    j->fd = j->dirfd = j->wake[0] = j->wake[1] = -1;
    j->mode = o->fsync;
    j->segment_bytes = o->segment_bytes;
    j->durable = o->durable;
    j->ud = o->ud;
    uint64_t expect;
    double t0 = pcd_monotonic();
    if ((j->dirfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "journal directory %s: %s", o->dir, strerror(errno));
        goto fail;
    }
    if (pcd_journal_scan(j, o, &expect, err, errlen) != 0)
        goto fail;
    j->next_lsn = expect > o->min_next_lsn ? expect : o->min_next_lsn;
    j->written_lsn = j->durable_lsn = j->requested_lsn = j->next_lsn - 1;
    j->tail_first_lsn = j->next_lsn;
    /* Append to the last segment when it continues at next_lsn; otherwise
     * (none, full, or the snapshots are ahead of it) start a new one. */
    segment *last = j->nsegs ? &j->segs[j->nsegs - 1] : NULL;
    if (last && expect == j->next_lsn && last->bytes < j->segment_bytes) {
        char path[4200];
        pcd_journal_path(j, last->first_lsn, path, sizeof path);
        if ((j->fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
            snprintf(err, errlen, "journal %s: %s", path, strerror(errno));
            goto fail;
        }
    } else {
        int e = new_segment(j, j->next_lsn);
        if (e || fsync(j->dirfd) != 0) {
            snprintf(err, errlen, "journal %s: cannot start a segment: %s", o->dir,
                     strerror(e ? e : errno));
            goto fail;
        }
    }
    if (j->mode != PCD_FSYNC_NO) {
        if (pipe2(j->wake, O_NONBLOCK | O_CLOEXEC) != 0 ||
            !(j->wake_ev = event_new(base, j->wake[0], EV_READ | EV_PERSIST, on_wake, j)) ||
            event_add(j->wake_ev, NULL) != 0) {
            snprintf(err, errlen, "journal: cannot set up the sync thread's pipe: %s", strerror(errno));
            goto fail;
        }
        pthread_mutex_init(&j->mu, NULL);
        pthread_cond_init(&j->cv, NULL);
        j->req_fd = -1;
        if (pthread_create(&j->thread, NULL, sync_main, j) != 0) {
            pthread_mutex_destroy(&j->mu);
            pthread_cond_destroy(&j->cv);
            snprintf(err, errlen, "journal: cannot start the sync thread");
            goto fail;
        }
        j->threaded = true;
    }
    if (j->st.replayed)
        pcd_info("journal %s: %llu records replayed in %.3f s (%llu failed to apply), next LSN %llu",
                 o->dir, (unsigned long long)j->st.replayed, pcd_monotonic() - t0,
                 (unsigned long long)j->st.replay_failed, (unsigned long long)j->next_lsn);
    *out = j;
    return 0;
fail:
    pcd_journal_close(j);
    return -1;
}

/* ---- appending ---------------------------------------------------------- */

bool pcd_journal_writable(const pcd_journal *j, char *msg, size_t msglen)
{
    if (j->failed && msg)
        snprintf(msg, msglen, "%s", j->why);
    return !j->failed;
}

uint64_t pcd_journal_append(pcd_journal *j, const uint8_t *msg, size_t len)
{
    return pcd_journal_append_parts(j, msg, len, NULL, 0);
}

uint64_t pcd_journal_append_parts(pcd_journal *j, const uint8_t *msg, size_t len,
                                  const uint8_t *more, size_t more_len)
{
    if (len + more_len == 0 || len > PCP_JOURNAL_RECORD_MAX ||
        more_len > PCP_JOURNAL_RECORD_MAX - len)
        return 0;
    size_t before = j->tail.len;
    pcp_journal_put_record_parts(&j->tail, j->next_lsn, msg, (uint32_t)len, more,
                                 (uint32_t)more_len);
    if (j->tail.failed) { /* out of memory: take nothing back half-written */
        j->tail.failed = false;
        j->tail.len = before;
        return 0;
    }
    j->st.appended++;
    return j->next_lsn++;
}

static bool push_mark(pcd_journal *j, uint64_t lsn, size_t end)
{
    mark *marks = pcd_grow(j->marks, &j->markcap, j->nmarks, sizeof *marks);
    if (!marks)
        return false;
    j->marks = marks;
    j->marks[j->nmarks++] = (mark){lsn, end};
    return true;
}

/* Writes tail[tail_written..) at the end of the segment; on failure cuts the
 * file back so that no half record stays in front of later ones. */
static int write_tail(pcd_journal *j)
{
    segment *s = &j->segs[j->nsegs - 1];
    size_t n = j->tail.len - j->tail_written;
    const uint8_t *p = j->tail.buf + j->tail_written;
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(j->fd, p + done, n - done, (off_t)(s->bytes + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            if (ftruncate(j->fd, (off_t)s->bytes) != 0)
                pcd_warn("journal: cannot cut back a failed write: %s", strerror(errno));
            j->st.write_failures++;
            fail(j, "write", s->first_lsn, e);
            return -1;
        }
        done += (size_t)w;
    }
    s->bytes += n;
    j->tail_written = j->tail.len;
    j->written_lsn = j->next_lsn - 1;
    return 0;
}

static void rotate(pcd_journal *j)
{
    int old = j->fd;
    int e = new_segment(j, j->next_lsn);
    if (e) { /* keep appending to the old segment; the next flush tries again */
        pcd_warn("journal %s: cannot start a new segment (%s); still appending to the current one",
                 j->dir, strerror(e));
        return;
    }
    retire(j, old, true);
    request_sync(j, true); /* the new file's directory entry */
}

int pcd_journal_flush(pcd_journal *j)
{
    if (j->failed)
        return -1;
    if (j->tail_written == j->tail.len)
        return 0;
    if (write_tail(j) != 0)
        return -1;
    if (j->mode == PCD_FSYNC_ALWAYS) {
        if (!push_mark(j, j->written_lsn, j->tail_written)) {
            fail(j, "out of memory", j->segs[j->nsegs - 1].first_lsn, ENOMEM);
            return -1;
        }
        request_sync(j, false);
    } else {
        j->tail.len = j->tail_written = 0;
        j->tail_first_lsn = j->next_lsn;
    }
    if (j->segs[j->nsegs - 1].bytes >= j->segment_bytes)
        rotate(j);
    return 0;
}

uint64_t pcd_journal_ack_lsn(const pcd_journal *j)
{
    return j->mode == PCD_FSYNC_ALWAYS ? j->durable_lsn : j->written_lsn;
}

void pcd_journal_tick(pcd_journal *j)
{
    if (j->mode == PCD_FSYNC_EVERYSEC && !j->failed && j->written_lsn > j->requested_lsn)
        request_sync(j, false);
}

int pcd_journal_retry(pcd_journal *j)
{
    if (!j->failed)
        return 0;
    /* Everything not known durable goes into a fresh segment, synced here:
     * the old file's tail cannot be trusted after a failed write or sync. */
    uint64_t first = j->tail_first_lsn;
    int old = j->fd;
    segment cur = j->segs[j->nsegs - 1];
    char path[4200];
    pcd_journal_path(j, first, path, sizeof path);
    if (cur.first_lsn == first) {
        /* All of that segment's records are in the tail: replace the file. */
        unlink(path);
        j->nsegs--;
    }
    int e = new_segment(j, first);
    if (e) {
        if (cur.first_lsn == first)
            j->segs[j->nsegs++] = (segment){first, PCP_JOURNAL_HEADER_LEN};
        snprintf(j->why, sizeof j->why, "journal %s: create: %s", path, strerror(e));
        return -1;
    }
    retire(j, old, false); /* not synced: its tail is what failed */
    j->tail_written = 0;
    j->nmarks = 0;
    j->failed = false;
    if (j->tail.len && write_tail(j) != 0)
        return -1;
    if (fdatasync(j->fd) != 0 || fsync(j->dirfd) != 0) {
        fail(j, "fdatasync", first, errno);
        j->st.fsync_failures++;
        return -1;
    }
    j->tail.len = j->tail_written = 0;
    j->tail_first_lsn = j->next_lsn;
    j->durable_lsn = j->written_lsn = j->next_lsn - 1;
    pcd_info("journal: writable again (new segment from LSN %llu)", (unsigned long long)first);
    j->durable(j->ud, j->durable_lsn, false);
    return 0;
}

void pcd_journal_prune(pcd_journal *j, uint64_t lsn)
{
    size_t k = 0;
    while (k + 1 < j->nsegs && j->segs[k + 1].first_lsn <= lsn) {
        char path[4200];
        pcd_journal_path(j, j->segs[k].first_lsn, path, sizeof path);
        if (unlink(path) != 0 && errno != ENOENT) {
            pcd_warn("journal: cannot delete %s: %s", path, strerror(errno));
            break;
        }
        pcd_debug("journal: deleted %s (every snapshot has passed it)", path);
        k++;
    }
    if (k) {
        memmove(j->segs, j->segs + k, (j->nsegs - k) * sizeof *j->segs);
        j->nsegs -= k;
    }
}

uint64_t pcd_journal_next_lsn(const pcd_journal *j)
{
    return j->next_lsn;
}

void pcd_journal_stats_get(const pcd_journal *j, pcd_journal_stats *st)
{
    *st = j->st;
    st->segments = j->nsegs;
    st->bytes = 0;
    for (size_t i = 0; i < j->nsegs; i++)
        st->bytes += j->segs[i].bytes;
    st->next_lsn = j->next_lsn;
    st->written_lsn = j->written_lsn;
    st->durable_lsn = j->durable_lsn;
    st->unsynced_bytes = j->tail.len;
    st->healthy = !j->failed;
}

int pcd_journal_close(pcd_journal *j)
{
    if (!j)
        return 0;
    int rc = 0;
    if (j->fd >= 0 && j->nsegs) {
        if (pcd_journal_flush(j) != 0 || fdatasync(j->fd) != 0)
            rc = -1;
    }
    if (j->threaded) {
        pthread_mutex_lock(&j->mu);
        j->stop = true;
        pthread_cond_signal(&j->cv);
        pthread_mutex_unlock(&j->mu);
        pthread_join(j->thread, NULL);
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
    }
    if (rc != 0)
        pcd_error("journal: the last records could not be made durable: %s",
                  j->failed ? j->why : strerror(errno));
    if (j->wake_ev)
        event_free(j->wake_ev);
    for (int i = 0; i < 2; i++)
        if (j->wake[i] >= 0)
            close(j->wake[i]);
    if (j->fd >= 0)
        close(j->fd);
    if (j->dirfd >= 0)
        close(j->dirfd);
    free(j->retired);
    free(j->segs);
    free(j->marks);
    free(j->tail.buf);
    free(j->dir);
    free(j);
    return rc;
}
