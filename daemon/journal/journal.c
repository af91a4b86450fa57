/* journal.c - the journal's appends, group commit, segments and recovery
 * (journal.h says what it is for; journal/scan.c checks and replays the
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
 * A large tail is handed to the writer thread, which writes it while the
 * loop goes on (the answers wait for it; with `always`, then for the sync);
 * flush says when.  With `always` the thread writes a copy: the tail keeps
 * the records until a sync covers them.
 *
 * The sync thread (threads.c, with the writer) does only fdatasync/fsync/
 * close on descriptors the loop hands it, and reports the LSN it made
 * durable through a pipe.  Segments the loop retires (rotation, recovery)
 * are synced and closed by the thread, so the loop never waits for a disk.
 * Once pages are on disk the thread drops them from the page cache, and with
 * everysec and no it is asked every WRITEBACK_BYTES, not only once a second.
 */
#include "daemon/journal/journal.h"


#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/base/statedir.h"
#include "daemon/journal/internal.h"
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

/* ---- the loop's side of the threads ------------------------------------ */

/* A tail of BATCH_BYTES goes to the writer thread at once; with
 * pcd_journal_flush_some a smaller one waits for an idle loop, or
 * FLUSH_WAIT_US at most, and is then handed over from HAND_OVER_BYTES on,
 * written by the loop below that (flush says why). */
#define BATCH_BYTES (256u << 10)
#define FLUSH_WAIT_US 1000
#define HAND_OVER_BYTES (4u << 10)

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

static void after_write(pcd_journal *j);
static bool push_mark(pcd_journal *j, uint64_t lsn, size_t end);
static int flush(pcd_journal *j, bool more_coming);
static void on_flush(evutil_socket_t fd, short what, void *arg);

/* Tells the answers waiting (o->durable) when what may be acknowledged,
 * or the journal's health, changed since (acked, failed). */
static void tell(pcd_journal *j, uint64_t acked, bool failed)
{
    if (pcd_journal_ack_lsn(j) != acked || j->failed != failed)
        j->durable(j->ud, pcd_journal_ack_lsn(j), j->failed);
}

/* A sync's result, on the loop (on_wake tells the answers). */
static void sync_finished(pcd_journal *j, uint64_t done, int err, double ms)
{
    if (j->mode == PCD_FSYNC_NO) { /* a write-back: nothing became durable */
        if (err) {
            fail(j, "write-back", j->segs[j->nsegs - 1].first_lsn, err);
            pcd_error("journal: records acknowledged since the last write-back may be lost (fsync no)");
        }
        return;
    }
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
        return;
    }
    j->st.last_fsync_at = pcd_now();
    if (done > j->durable_lsn) {
        j->durable_lsn = done;
        if (j->mode == PCD_FSYNC_ALWAYS)
            drop_synced(j, done);
    }
}

/* A batch's result (the thread is done with it).  Written: its records
 * count as written.  Failed: the file was cut back where the batch began
 * and the records go back in front of the tail, for pcd_journal_retry to
 * write into a fresh segment.  False when it failed. */
static bool batch_finished(pcd_journal *j, int err)
{
    j->writing = false;
    segment *s = &j->segs[j->nsegs - 1];
    if (j->mode == PCD_FSYNC_ALWAYS) { /* the batch was a copy: the tail keeps them */
        if (!err) {
            j->tail_written += j->batch.len;
            j->written_lsn = j->batch_last;
            if (!push_mark(j, j->written_lsn, j->tail_written))
                err = ENOMEM; /* not acknowledged; retry writes the tail again */
            else
                pcd_journal_request_sync(j, false);
        }
        j->batch.len = 0;
        if (!err)
            return true;
        if (err != ENOMEM)
            s->bytes = j->batch_at;
        j->st.write_failures++;
        fail(j, err == ENOMEM ? "out of memory" : "write", s->first_lsn, err);
        return false;
    }
    if (!err) {
        j->written_lsn = j->batch_last;
        j->unrequested_bytes += j->batch.len;
        j->batch.len = 0;
        return true;
    }
    s->bytes = j->batch_at;
    pc_writer_bytes(&j->batch, j->tail.buf, j->tail.len);
    if (j->batch.failed) { /* out of memory: the records are not kept, nor acknowledged */
        pcd_error("journal: out of memory keeping records %llu to %llu after a failed write: "
                  "they are applied but not journaled",
                  (unsigned long long)j->batch_first, (unsigned long long)j->next_lsn - 1);
        j->batch.failed = false;
        j->batch.len = 0;
    } else {
        pc_writer t = j->tail;
        j->tail = j->batch;
        j->batch = t;
        j->tail_first_lsn = j->batch_first;
    }
    j->batch.len = 0;
    j->tail_written = 0;
    j->st.write_failures++;
    fail(j, "write", s->first_lsn, err);
    return false;
}

static void on_wake(void *arg)
{
    pcd_journal *j = arg;
    pthread_mutex_lock(&j->mu);
    bool batch = j->writing && j->batch_done, synced = j->sync_done;
    int batch_err = j->batch_errno;
    uint64_t done = j->done_lsn;
    int err = j->done_errno;
    double ms = j->done_ms;
    j->done_errno = 0;
    j->sync_done = false;
    pthread_mutex_unlock(&j->mu);
    uint64_t acked = pcd_journal_ack_lsn(j);
    bool failed = j->failed;
    if (synced)
        sync_finished(j, done, err, ms);
    if (batch && batch_finished(j, batch_err)) {
        after_write(j);
        /* What arrived meanwhile: a flush that found the thread busy is
         * owed now; otherwise the writers of the tail come back (flush_some). */
        flush(j, !j->flush_owed);
    }
    tell(j, acked, failed);
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
    j->fd = j->dirfd = -1;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    pthread_cond_init(&j->writer_cv, NULL);
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
     * (none, full, in an older format, or the snapshots are ahead of it)
     * start a new one. */
    segment *last = j->nsegs ? &j->segs[j->nsegs - 1] : NULL;
    if (last && expect == j->next_lsn && last->bytes < j->segment_bytes &&
        j->last_version == PCP_JOURNAL_VERSION) {
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
    if (pcd_wake_open(&j->wake, base, on_wake, j) != 0) {
        snprintf(err, errlen, "journal: cannot set up the sync thread's pipe: %s", strerror(errno));
        goto fail;
    }
    /* on_flush: the lowest priority (flush says why), and a timer at the
     * usual priority, for a loop kept busy by requests that journal nothing */
    if (!(j->flush_ev = event_new(base, -1, 0, on_flush, j)) ||
        event_priority_set(j->flush_ev, event_base_get_npriorities(base) - 1) != 0 ||
        !(j->flush_timer = evtimer_new(base, on_flush, j))) {
        snprintf(err, errlen, "journal: out of memory");
        goto fail;
    }
    if (pcd_journal_threads_start(j, err, errlen) != 0)
        goto fail;
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
    pcp_journal_put_record_unsealed(&j->tail, j->next_lsn, msg, (uint32_t)len, more,
                                    (uint32_t)more_len); /* sealed where it is written */
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
    if (!PC_GROW(j->marks, j->markcap, j->nmarks, 16))
        return false;
    j->marks[j->nmarks++] = (mark){lsn, end};
    return true;
}

/* Writes tail[tail_written..) at the end of the segment (write_at). */
static int write_tail(pcd_journal *j)
{
    segment *s = &j->segs[j->nsegs - 1];
    size_t n = j->tail.len - j->tail_written;
    int e = pcd_journal_write_at(j->fd, j->tail.buf + j->tail_written, n, s->bytes);
    if (e) {
        j->st.write_failures++;
        fail(j, "write", s->first_lsn, e);
        return -1;
    }
    s->bytes += n;
    j->unrequested_bytes += n;
    j->tail_written = j->tail.len;
    j->written_lsn = j->next_lsn - 1;
    return 0;
}

static void rotate(pcd_journal *j)
{
    int old = j->fd;
    /* its first record is the first not yet written: records appended
     * while the thread wrote a batch are still in the tail */
    int e = new_segment(j, j->written_lsn + 1);
    if (e) { /* keep appending to the old segment; the next flush tries again */
        pcd_warn("journal %s: cannot start a new segment (%s); still appending to the current one",
                 j->dir, strerror(e));
        return;
    }
    int e2 = pcd_journal_retire(j, old, true);
    if (e2)
        fail(j, "fdatasync", j->segs[j->nsegs - 1].first_lsn, e2);
    pcd_journal_request_sync(j, true); /* the new file's directory entry */
}

/* After records were written (here or by the thread): everysec's and no's
 * write-back every WRITEBACK_BYTES, and a full segment is followed by a new
 * one. */
static void after_write(pcd_journal *j)
{
    if (j->mode != PCD_FSYNC_ALWAYS && j->unrequested_bytes >= WRITEBACK_BYTES)
        pcd_journal_request_sync(j, false);
    if (j->segs[j->nsegs - 1].bytes >= j->segment_bytes)
        rotate(j);
}

/* Gives the tail's unwritten records to the writer thread: the loop goes
 * on serving while the kernel copies them into the page cache.  Their size
 * is counted at once, so that the next batch follows them.  False when out
 * of memory (always: the copy), and nothing was handed over. */
static bool hand_over(pcd_journal *j)
{
    if (j->mode == PCD_FSYNC_ALWAYS) {
        /* a copy: the tail keeps its records until a sync covers them */
        j->batch.len = 0;
        pc_writer_bytes(&j->batch, j->tail.buf + j->tail_written, j->tail.len - j->tail_written);
        if (j->batch.failed) {
            j->batch.failed = false;
            j->batch.len = 0;
            return false; /* out of memory: the loop writes it */
        }
        j->batch_first = j->written_lsn + 1;
    } else {
        pc_writer t = j->batch;
        j->batch = j->tail;
        j->tail = t;
        j->tail.len = 0;
        j->batch_first = j->tail_first_lsn;
        j->tail_first_lsn = j->next_lsn;
    }
    j->batch_last = j->next_lsn - 1;
    segment *s = &j->segs[j->nsegs - 1];
    j->batch_at = s->bytes;
    j->batch_fd = j->fd;
    s->bytes += j->batch.len;
    pcd_journal_hand_batch(j);
    return true;
}

/* pcd_journal_flush (more_coming false) and pcd_journal_flush_some. */
static int flush(pcd_journal *j, bool more_coming)
{
    if (j->failed)
        return -1;
    if (j->tail_written == j->tail.len)
        return 0;
    /* While a batch is being written the tail waits for it (on_wake
     * flushes it).  A tail of a batch's size goes to the writer thread.
     * flush_some leaves a smaller one to on_flush, which runs once the loop
     * has nothing more urgent (the lowest priority; FLUSH_WAIT_US at most
     * when requests that journal nothing keep it busy): a busy loop gathers
     * larger batches (each hand-over wakes the thread, which on this VM
     * costs as much as writing tens of KB), an idle one writes at once.
     * A tail too small to be worth a hand-over (a client waiting for one
     * answer) is written here, without the hand-off in its way. */
    if (j->writer_started) {
        if (j->writing) {
            j->flush_owed |= !more_coming;
            return 0;
        }
        size_t n = j->tail.len - j->tail_written;
        if ((n >= BATCH_BYTES || (n >= HAND_OVER_BYTES && !more_coming)) && hand_over(j)) {
            j->flush_owed = false;
            return 0;
        }
        if (more_coming) {
            if (!event_pending(j->flush_ev, EV_TIMEOUT, NULL))
                event_active(j->flush_ev, EV_TIMEOUT, 0);
            if (!evtimer_pending(j->flush_timer, NULL)) {
                static const struct timeval wait = {0, FLUSH_WAIT_US};
                evtimer_add(j->flush_timer, &wait);
            }
            return 0;
        }
    }
    j->flush_owed = false;
    if (write_tail(j) != 0)
        return -1;
    if (j->mode == PCD_FSYNC_ALWAYS) {
        if (!push_mark(j, j->written_lsn, j->tail_written)) {
            fail(j, "out of memory", j->segs[j->nsegs - 1].first_lsn, ENOMEM);
            return -1;
        }
        pcd_journal_request_sync(j, false);
    } else {
        j->tail.len = j->tail_written = 0;
        j->tail_first_lsn = j->next_lsn;
    }
    after_write(j);
    return 0;
}

int pcd_journal_flush(pcd_journal *j)
{
    return flush(j, false);
}

/* Writes the tail and tells the answers waiting for it (or, when that
 * failed, tells them so). */
static void flush_and_tell(pcd_journal *j)
{
    uint64_t acked = pcd_journal_ack_lsn(j);
    bool failed = j->failed;
    flush(j, false);
    tell(j, acked, failed);
}

/* The tail flush_some left (either event), written now. */
static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    pcd_journal *j = arg;
    (void)fd;
    (void)what;
    event_del(j->flush_ev);
    evtimer_del(j->flush_timer);
    flush_and_tell(j);
}

int pcd_journal_flush_some(pcd_journal *j)
{
    return flush(j, true);
}

uint64_t pcd_journal_ack_lsn(const pcd_journal *j)
{
    return j->mode == PCD_FSYNC_ALWAYS ? j->durable_lsn : j->written_lsn;
}

void pcd_journal_tick(pcd_journal *j)
{
    flush_and_tell(j); /* a tail nothing else wrote */
    if (j->mode == PCD_FSYNC_EVERYSEC && !j->failed && j->written_lsn > j->requested_lsn)
        pcd_journal_request_sync(j, false);
}

int pcd_journal_retry(pcd_journal *j)
{
    if (!j->failed)
        return 0;
    if (j->writing) /* the next tick: the batch's records may have to come along */
        return -1;
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
    (void)pcd_journal_retire(j, old, false); /* not synced: its tail is what failed */
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
        /* Each deletion durable before the next: without it a power cut may
         * keep an older segment and not a newer one, and the start then
         * refuses the gap between them (found by tests/crash). */
        if (fsync(j->dirfd) != 0) {
            pcd_warn("journal: cannot sync %s after deleting %s: %s", j->dir, path,
                     strerror(errno));
            k++;
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
    st->unsynced_bytes = j->tail.len + (j->writing ? j->batch.len : 0);
    st->healthy = !j->failed;
}

int pcd_journal_close(pcd_journal *j)
{
    if (!j)
        return 0;
    int rc = 0;
    /* from here on the loop writes and syncs itself */
    pcd_journal_threads_stop(j);
    if (j->writing)
        batch_finished(j, j->batch_errno);
    if (j->fd >= 0 && j->nsegs) {
        if (pcd_journal_flush(j) != 0 || fdatasync(j->fd) != 0 || j->failed)
            rc = -1; /* failed: also a segment the flush filled and retired */
    }
    if (rc != 0)
        pcd_error("journal: the last records could not be made durable: %s",
                  j->failed ? j->why : strerror(errno));
    pcd_wake_close(&j->wake);
    if (j->flush_ev)
        event_free(j->flush_ev);
    if (j->flush_timer)
        event_free(j->flush_timer);
    if (j->fd >= 0)
        close(j->fd);
    if (j->dirfd >= 0)
        close(j->dirfd);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    pthread_cond_destroy(&j->writer_cv);
    free(j->retired);
    free(j->segs);
    free(j->marks);
    free(j->tail.buf);
    free(j->batch.buf);
    free(j->dir);
    free(j);
    return rc;
}
