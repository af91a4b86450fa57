/* write.c - model snapshot files written into the state directory: one
 * generation, or a batch of them synced together, atomically, then the
 * generations past snapshot.keep pruned (snapshot.h; reading them is
 * snapshot.c's, the bytes of one file format.c's).
 *
 * Why it is shaped this way:
 * - The writer runs in a child forked from the event loop (or the rest I/O
 *   writer thread), so writing the file allocates nothing: the header and
 *   prefix are made on the stack (format.c) and the model bytes (up to GiBs)
 *   are written straight from the caller's buffer.
 * - A generation is written to a temp file, synced, renamed, and the directory
 *   synced: a reader sees the old file or the whole new one, never a part.
 * - A full disk makes room from the model's own older generations, never the
 *   newest intact one, then tries once more.
 */
#define _GNU_SOURCE /* sync_file_range: a batch's writeback started before its fsyncs */
#include "daemon/store/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/statedir.h"
#include "daemon/store/dir.h"
#include "daemon/store/format.h"

static int write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len > PCD_SNAP_IO_CHUNK ? PCD_SNAP_IO_CHUNK : len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {               /* should not happen for a regular file */
            errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Test hook (docs/persistence.md, "Test hooks"): PCD_TEST_ENOSPC=<name>[:<n>]
 * makes the first n (default: every) attempts of this process to write a
 * snapshot of model <name> (`*`: of any model) fail with ENOSPC, as on a full disk.  A changed
 * value starts a new count.  Unset: no effect. */
static bool test_enospc(const char *name)
{
    static char seen[128];
    static unsigned long used;
    const char *v = getenv("PCD_TEST_ENOSPC");
    if (!v || !*v)
        return false;
    if (strncmp(seen, v, sizeof seen - 1) != 0) {
        strncpy(seen, v, sizeof seen - 1);
        used = 0;
    }
    const char *colon = strchr(v, ':');
    size_t nl = colon ? (size_t)(colon - v) : strlen(v);
    bool every = nl == 1 && v[0] == '*';
    if (!every && (strlen(name) != nl || memcmp(name, v, nl) != 0))
        return false;
    if (colon && used >= strtoul(colon + 1, NULL, 10))
        return false;
    used++;
    return true;
}

/* Deletes generations older than the newest `keep` (never `written`) and any
 * temp file of name, by listing the directory; *oldest (may be NULL) gets
 * the oldest generation left.  Returns 0, or -1 with err naming the first
 * failure. */
static int prune_listed(const char *dir, const char *name, uint64_t written, unsigned keep,
                        uint64_t *oldest, char *err, size_t errlen)
{
    pcd_snap_gens l = {.name = name, .unlink_tmp_dir = dir};
    if (pcd_snap_list_gens(dir, &l, err, errlen) < 0)
        return -1;
    int rc = 0;
    if (l.tmp_errno) {
        pcd_snap_seterr(err, errlen, "unlink %s: %s", l.tmp_failed, strerror(l.tmp_errno));
        rc = -1;
    }
    uint64_t left = written;
    for (size_t i = 0; i < l.n; i++) {
        char p[PATH_MAX];
        if (i < keep || l.g[i] == written) {
            left = l.g[i] < left ? l.g[i] : left;
            continue;
        }
        if (pcd_snap_path(p, dir, name, l.g[i], false, NULL, 0) < 0)
            continue;
        if (unlink(p) < 0 && errno != ENOENT && rc == 0) {
            pcd_snap_seterr(err, errlen, "unlink old generation %s: %s", p, strerror(errno));
            rc = -1;
        }
    }
    free(l.g);
    if (oldest)
        *oldest = rc == 0 ? left : 0;
    return rc;
}

/* Generations a write tries by number, oldest..written, before it lists the
 * directory instead: a few past `keep` (numbers a failed write used). */
#define PRUNE_BY_NUMBER_MAX 64

/* The same without listing the directory, whose size grows with the number
 * of models (0.3 s for 600,000 files on the 2-core VM): the caller knows
 * that no generation of name below *oldest is on disk, so the files that
 * may be there are oldest..written, tried by name.  *oldest gets the oldest
 * generation left, or 0 when a removal failed (the next write lists). */
static int prune(const char *dir, const char *name, uint64_t written, unsigned keep,
                 uint64_t *oldest, char *err, size_t errlen)
{
    if (!oldest || !*oldest || *oldest > written || written - *oldest > PRUNE_BY_NUMBER_MAX)
        return prune_listed(dir, name, written, keep, oldest, err, errlen);
    uint64_t left = written;
    unsigned kept = 1;
    int rc = 0;
    for (uint64_t g = written; g-- > *oldest;) {
        char p[PATH_MAX], t[PATH_MAX];
        if (pcd_snap_path(p, dir, name, g, false, NULL, 0) < 0 ||
            pcd_snap_path(t, dir, name, g, true, NULL, 0) < 0)
            continue;
        if (unlink(t) < 0 && errno != ENOENT && rc == 0) {
            pcd_snap_seterr(err, errlen, "unlink %s: %s", t, strerror(errno));
            rc = -1;
        }
        struct stat st;
        if (lstat(p, &st) < 0)
            continue; /* a number a failed write used */
        if (kept < keep) {
            kept++;
            left = g;
        } else if (unlink(p) < 0 && errno != ENOENT && rc == 0) {
            pcd_snap_seterr(err, errlen, "unlink old generation %s: %s", p, strerror(errno));
            rc = -1;
        }
    }
    *oldest = rc == 0 ? left : 0;
    return rc;
}

/* Creates tmp (reuse: opens tmp, an old generation's file renamed there,
 * and overwrites it) and writes head and model to it, then asks the kernel
 * to start writing it back (sync_file_range: nothing waits), so that the
 * fsyncs of a batch find their data on its way.  Returns 0 with *fd open
 * for sync_temp, or an errno value with *step naming the step that failed
 * (fd closed); the caller removes tmp. */
static int write_temp(const char *tmp, bool reuse, const char *name, const uint8_t *head,
                      size_t hlen, const uint8_t *model, size_t len, int *fd, const char **step)
{
    *step = "open";
    *fd = reuse ? open(tmp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
                : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (*fd < 0)
        return errno;
    int e = 0;
    *step = "write";
    if (test_enospc(name))
        e = ENOSPC;
    else if (write_all(*fd, head, hlen) < 0 || write_all(*fd, model, len) < 0)
        e = errno;
    else if (reuse && ftruncate(*fd, (off_t)(hlen + len)) < 0) /* an older file may be longer */
        e = errno, *step = "truncate";
    if (e) {
        close(*fd);
        *fd = -1;
        return e;
    }
    (void)sync_file_range(*fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint: fsync decides */
    return 0;
}

/* Makes a written temp file durable and closes it.  Returns 0, or an errno
 * value with *step naming the step that failed. */
static int sync_temp(int fd, const char **step)
{
    *step = "fsync";
    if (fsync(fd) < 0) {
        int e = errno;
        close(fd);
        return e;
    }
    *step = "close";                /* NFS may report a deferred write error here */
    return close(fd) < 0 ? errno : 0;
}

/* The disk is full: deletes every generation of name but the newest intact
 * one (the newest file when none is intact: evidence), and its temp files.
 * The newest intact generation stays until a newer one is durable, so a crash
 * at any point still restores the model.  Returns the number of generations
 * deleted (0: nothing to gain from a retry). */
static int make_room(const char *dir, const char *name)
{
    pcd_snap_gens l = {.name = name, .unlink_tmp_dir = dir};
    if (pcd_snap_list_gens(dir, &l, NULL, 0) < 0)
        return 0;
    size_t keep = 0;
    for (size_t i = 0; i < l.n; i++) {
        uint8_t *m;
        size_t mlen;
        char why[200];
        if (pcd_snapshot_read_generation(dir, name, l.g[i], &m, &mlen, NULL, why, sizeof why) == 0) {
            free(m);
            keep = i;
            break;
        }
    }
    int removed = 0;
    for (size_t i = 0; i < l.n; i++) {
        char p[PATH_MAX];
        if (i != keep && pcd_snap_path(p, dir, name, l.g[i], false, NULL, 0) == 0 && unlink(p) == 0)
            removed++;
    }
    free(l.g);
    return removed;
}

/* The generation whose file a write of `written` may reuse: the oldest on
 * disk when at least keep - 1 others are newer, so that pruning would
 * delete it once this write is durable; with keep >= 2, so that the newest
 * intact generation stays meanwhile.  A file reused instead of a new one
 * created and an old one deleted: on ext4 without a journal, allocating an
 * inode was 40 % of the rest thread's time (bench_zipf, perf).  0: none
 * (oldest unknown, or too few generations). */
static uint64_t reusable(const char *dir, const char *name, uint64_t written, unsigned keep,
                         uint64_t oldest)
{
    if (keep < 2 || !oldest || oldest >= written || written - oldest > PRUNE_BY_NUMBER_MAX)
        return 0;
    uint64_t first = 0;
    unsigned newer = 0;
    for (uint64_t g = oldest; g < written; g++) {
        char p[PATH_MAX];
        struct stat st;
        if (pcd_snap_path(p, dir, name, g, false, NULL, 0) < 0 || lstat(p, &st) < 0 ||
            !S_ISREG(st.st_mode))
            continue; /* a number a failed write used */
        if (!first)
            first = g;
        else
            newer++;
    }
    return first && newer >= keep - 1 ? first : 0;
}

/* The first half of a job: its temp file written, left open in j->fd (-1:
 * failed, j->rc -1 and j->err say why, no temp file left). */
static void stage(const char *dir, pcd_snap_job *j, char *tmp)
{
    j->fd = -1;
    j->rc = -1;
    if (pcd_snap_check_name(j->name, j->err, j->errlen) < 0)
        return;
    if (j->generation == 0) {
        pcd_snap_seterr(j->err, j->errlen, "snapshot of '%s': generation must be >= 1", j->name);
        return;
    }
    if (!j->model && j->len > 0) {
        pcd_snap_seterr(j->err, j->errlen, "snapshot of '%s': no model bytes", j->name);
        return;
    }
    if (pcd_snap_path(tmp, dir, j->name, j->generation, true, j->err, j->errlen) < 0)
        return;
    /* Header and msgpack prefix in one stack buffer: no allocation here. */
    uint8_t head[PCD_SNAP_PREFIX_MAX];
    size_t hlen;
    if (pcd_snap_head(head, &hlen, j->name, j->generation, j->written_at, j->journal_lsn,
                      j->stream_ms, j->stream_seq, j->model, j->len, j->err, j->errlen) < 0)
        return;
    /* The oldest generation's file, due for pruning, renamed to the temp
     * name replaces any leftover temp (a crash mid-write); else a leftover
     * is removed and O_EXCL guarantees a fresh regular file, not a link. */
    char old[PATH_MAX];
    uint64_t g = j->reuse && j->disk
                     ? reusable(dir, j->name, j->generation, j->keep, j->disk->oldest)
                     : 0;
    bool reuse = g && pcd_snap_path(old, dir, j->name, g, false, NULL, 0) == 0 &&
                 rename(old, tmp) == 0;
    if (!reuse && unlink(tmp) < 0 && errno != ENOENT) {
        pcd_snap_seterr(j->err, j->errlen, "unlink stale %s: %s", tmp, strerror(errno));
        return;
    }
    const char *step;
    int e = write_temp(tmp, reuse, j->name, head, hlen, j->model, j->len, &j->fd, &step);
    if (e == ENOSPC || e == EDQUOT) {
        /* Keeping `keep` generations, a save needs room for one more: without
         * this, one failure for lack of space is followed by every later one.
         * Make room from this model's own files and try once more. */
        unlink(tmp);
        if (make_room(dir, j->name) > 0)
            e = write_temp(tmp, false, j->name, head, hlen, j->model, j->len, &j->fd, &step);
    }
    if (e) {
        if (unlink(tmp) < 0 && errno != ENOENT)
            pcd_snap_seterr(j->err, j->errlen, "%s %s: %s (and the temp file could not be removed: %s)",
                            step, tmp, strerror(e), strerror(errno));
        else
            pcd_snap_seterr(j->err, j->errlen, "%s %s: %s", step, tmp, strerror(e));
        return;
    }
    if (j->disk)
        j->disk->bytes = hlen + j->len;
    j->rc = 0;
}

/* The second half: the temp file durable and renamed into place (j->rc -1
 * and no temp file left on failure). */
static void publish(const char *dir, pcd_snap_job *j, const char *tmp)
{
    char fin[PATH_MAX];
    const char *step;
    int e = sync_temp(j->fd, &step);
    j->fd = -1;
    if (e) {
        pcd_snap_seterr(j->err, j->errlen, "%s %s: %s", step, tmp, strerror(e));
    } else if (pcd_snap_path(fin, dir, j->name, j->generation, false, j->err, j->errlen) < 0) {
        e = EINVAL;
    } else if (rename(tmp, fin) < 0) {
        e = errno;
        pcd_snap_seterr(j->err, j->errlen, "rename %s to %s: %s", tmp, fin, strerror(e));
    }
    if (e) {
        unlink(tmp);
        j->rc = -1;
    }
}

void pcd_snapshot_write_batch(const char *dir, pcd_snap_job *jobs, size_t n)
{
    char tmp[PCD_SNAP_BATCH_MAX][PATH_MAX];
    if (n > PCD_SNAP_BATCH_MAX) { /* the caller's mistake: every job refused, nothing written */
        for (size_t i = 0; i < n; i++) {
            jobs[i].rc = -1;
            pcd_snap_seterr(jobs[i].err, jobs[i].errlen, "a batch of %zu snapshots: at most %d",
                            n, PCD_SNAP_BATCH_MAX);
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        stage(dir, &jobs[i], tmp[i]);
    bool renamed = false;
    for (size_t i = 0; i < n; i++)
        if (jobs[i].rc == 0) {
            publish(dir, &jobs[i], tmp[i]);
            renamed |= jobs[i].rc == 0;
        }
    /* One directory sync makes every rename of the batch durable; only then
     * may older generations go, so that a crash always leaves one intact. */
    if (renamed && pcd_fsync_dir(dir) < 0) {
        int e = errno;
        for (size_t i = 0; i < n; i++)
            if (jobs[i].rc == 0) {
                jobs[i].rc = -1;
                pcd_snap_seterr(jobs[i].err, jobs[i].errlen,
                                "fsync directory %s (after writing generation %llu of %s): %s", dir,
                                (unsigned long long)jobs[i].generation, jobs[i].name, strerror(e));
            }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        pcd_snap_job *j = &jobs[i];
        if (j->rc == 0 && prune(dir, j->name, j->generation, j->keep ? j->keep : 1,
                                j->disk ? &j->disk->oldest : NULL, j->err, j->errlen) < 0)
            j->rc = 1;
    }
}

int pcd_snapshot_write(const char *dir, const char *name, uint64_t generation, int64_t written_at,
                       uint64_t journal_lsn, uint64_t stream_ms, uint64_t stream_seq,
                       const uint8_t *model, size_t len, unsigned keep, pcd_snap_disk *disk,
                       char *err, size_t errlen)
{
    pcd_snap_job j = {name, generation, written_at, journal_lsn, stream_ms, stream_seq,
                      model, len, keep, disk, err, errlen, false, 0, -1};
    pcd_snapshot_write_batch(dir, &j, 1);
    return j.rc;
}

