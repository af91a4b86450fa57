/* snapshot.c - model snapshot files in the state directory: atomic write,
 * checksummed read with fallback to older generations, listing, pruning,
 * removal.  The bytes of one file are format.c's.
 *
 * The format and the write sequence are in snapshot.h and docs/persistence.md.
 * Why it is shaped this way:
 * - The writer runs in a child forked from the event loop, so writing the file
 *   allocates nothing: the header and prefix are made on the stack
 *   (format.c) and the model bytes (up to GiBs) are written straight from the
 *   caller's buffer.
 * - A generation is written to a temp file, synced, renamed, and the directory
 *   synced: a reader sees the old file or the whole new one, never a part.
 * - Every file name is built from a validated model name, so no name can reach
 *   outside dir or collide with the temp files (which start with '.').
 */
#define _GNU_SOURCE /* sync_file_range: a batch's writeback started before its fsyncs */
#include "daemon/store/snapshot.h"

#include <dirent.h>
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
#include "lib/bytes.h"
#include "lib/grow.h"
#include "lib/perceptron.h"

/* One write(2) call at most: Linux caps a single write at 0x7ffff000 anyway. */
#define WRITE_CHUNK (1u << 30)

/* ---- writing ------------------------------------------------------------ */

static int write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len > WRITE_CHUNK ? WRITE_CHUNK : len);
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

static int read_one(const char *dir, const char *name, uint64_t gen, uint8_t **model, size_t *mlen,
                    pcd_snap_info *info, char *why, size_t whylen);

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
        if (read_one(dir, name, l.g[i], &m, &mlen, NULL, why, sizeof why) == 0) {
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

/* ---- reading ------------------------------------------------------------ */

static int read_all(int fd, uint8_t *p, size_t len, off_t at)
{
    while (len > 0) {
        ssize_t r = pread(fd, p, len > WRITE_CHUNK ? WRITE_CHUNK : len, at);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0) {
            errno = 0;              /* the file shrank under us */
            return -1;
        }
        p += r;
        len -= (size_t)r;
        at += r;
    }
    return 0;
}

int pcd_snapshot_read_generation(const char *dir, const char *name, uint64_t gen, uint8_t **model,
                                 size_t *len, pcd_snap_info *info, char *err, size_t errlen)
{
    if (pcd_snap_check_name(name, err, errlen) < 0)
        return -1;
    char why[300];
    if (read_one(dir, name, gen, model, len, info, why, sizeof why) < 0) {
        pcd_snap_seterr(err, errlen, "generation %llu of '%s': %s", (unsigned long long)gen, name, why);
        return -1;
    }
    return 0;
}

int pcd_snapshot_generations(const char *dir, const char *name, uint64_t **gens, size_t *n,
                             char *err, size_t errlen)
{
    if (pcd_snap_check_name(name, err, errlen) < 0)
        return -1;
    pcd_snap_gens l = {.name = name};
    if (pcd_snap_list_gens(dir, &l, err, errlen) < 0)
        return -1;
    *gens = l.g;
    *n = l.n;
    return 0;
}

/* Reads and checks one generation.  why receives the reason on failure. */
static int read_one(const char *dir, const char *name, uint64_t gen, uint8_t **model, size_t *mlen,
                    pcd_snap_info *info, char *why, size_t whylen)
{
    char path[PATH_MAX];
    if (pcd_snap_path(path, dir, name, gen, false, why, whylen) < 0)
        return -1;
    /* O_NONBLOCK: a FIFO under a snapshot's name must not hang the start-up;
     * it has no effect on the regular files we go on to read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        pcd_snap_seterr(why, whylen, "open: %s", strerror(errno));
        return -1;
    }
    uint8_t *buf = NULL;
    int rc = -1;
    struct stat st;
    uint8_t h[PCD_SNAP_HEADER_LEN];
    if (fstat(fd, &st) < 0) {
        pcd_snap_seterr(why, whylen, "stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        pcd_snap_seterr(why, whylen, "not a regular file");
        goto out;
    }
    if (st.st_size < PCD_SNAP_HEADER_LEN) {
        pcd_snap_seterr(why, whylen, "truncated (%lld bytes, the header alone is %d) (file corrupt)",
               (long long)st.st_size, PCD_SNAP_HEADER_LEN);
        goto out;
    }
    if (read_all(fd, h, sizeof h, 0) < 0) {
        pcd_snap_seterr(why, whylen, "read: %s", errno ? strerror(errno) : "file shrank while reading");
        goto out;
    }
    uint64_t plen;
    if (pcd_snap_check_header(h, (uint64_t)st.st_size - PCD_SNAP_HEADER_LEN, &plen, why, whylen) < 0)
        goto out;
    if (plen > SIZE_MAX - 1) {
        pcd_snap_seterr(why, whylen, "payload of %llu bytes does not fit in memory", (unsigned long long)plen);
        goto out;
    }
    buf = malloc(plen ? (size_t)plen : 1);
    if (!buf) {
        pcd_snap_seterr(why, whylen, "out of memory for a %llu-byte payload", (unsigned long long)plen);
        goto out;
    }
    if (read_all(fd, buf, (size_t)plen, PCD_SNAP_HEADER_LEN) < 0) {
        pcd_snap_seterr(why, whylen, "read: %s", errno ? strerror(errno) : "file shrank while reading");
        goto out;
    }
    if (!pcd_snap_crc_ok(h, buf, (size_t)plen)) {
        pcd_snap_seterr(why, whylen, "CRC mismatch (file corrupt)");
        goto out;
    }
    size_t n;
    if (pcd_snap_payload(buf, (size_t)plen, name, gen, &n, info, why, whylen) < 0)
        goto out;
    if (info)
        info->file_bytes = (uint64_t)st.st_size;
    uint8_t *shrunk = realloc(buf, n ? n : 1);   /* keep buf if shrinking fails */
    *model = shrunk ? shrunk : buf;
    *mlen = n;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}

int pcd_snapshot_read(const char *dir, const char *name, uint8_t **model, size_t *len, pcd_snap_info *info,
                      void (*warn)(void *ud, const char *msg), void *ud, char *err, size_t errlen)
{
    return pcd_snapshot_read_accepted(dir, name, NULL, NULL, model, len, info, warn, ud, err,
                                      errlen);
}

/* read_one, then accept: a file can be intact and its model still unusable. */
static int read_accepted(const char *dir, const char *name, uint64_t gen, pcd_snap_accept accept,
                         void *accept_ud, uint8_t **model, size_t *mlen, pcd_snap_info *info,
                         char *why, size_t whylen)
{
    uint8_t *m;
    size_t n;
    pcd_snap_info tmp = {0};
    if (read_one(dir, name, gen, &m, &n, info ? &tmp : NULL, why, whylen) < 0)
        return -1;
    char reason[160] = "";
    if (accept && accept(accept_ud, m, n, gen, reason, sizeof reason) != 0) {
        pcd_snap_seterr(why, whylen, "passed its CRC but %s", reason);
        free(m);
        pcd_snap_info_free(&tmp);
        return -1;
    }
    *model = m;
    *mlen = n;
    if (info)
        *info = tmp;
    return 0;
}

int pcd_snapshot_read_gens(const char *dir, const char *name, const uint64_t *gens, size_t n,
                           pcd_snap_accept accept, void *accept_ud, uint8_t **model, size_t *len,
                           pcd_snap_info *info, void (*warn)(void *ud, const char *msg), void *ud,
                           char *err, size_t errlen)
{
    if (pcd_snap_check_name(name, err, errlen) < 0)
        return PCD_SNAP_ERR;
    if (n == 0) {
        pcd_snap_seterr(err, errlen, "no snapshot of '%s' in %s", name, dir);
        return PCD_SNAP_NONE;
    }
    char first[256] = "";
    int rc = PCD_SNAP_ERR;
    for (size_t i = 0; i < n; i++) {
        char why[200];
        if (read_accepted(dir, name, gens[i], accept, accept_ud, model, len, info, why,
                          sizeof why) == 0) {
            rc = 0;
            break;
        }
        char msg[512];
        if (i + 1 < n)
            snprintf(msg, sizeof msg, "%s.%llu.snap: %s, trying generation %llu", name,
                     (unsigned long long)gens[i], why, (unsigned long long)gens[i + 1]);
        else
            snprintf(msg, sizeof msg, "%s.%llu.snap: %s, no older generation left", name,
                     (unsigned long long)gens[i], why);
        if (i == 0)
            snprintf(first, sizeof first, "%s.%llu.snap: %s", name, (unsigned long long)gens[i], why);
        if (warn)
            warn(ud, msg);
    }
    if (rc < 0)
        pcd_snap_seterr(err, errlen, "%zu generation%s of '%s' in %s, all unreadable (newest %s)", n,
               n == 1 ? "" : "s", name, dir, first);
    return rc;
}

int pcd_snapshot_read_accepted(const char *dir, const char *name, pcd_snap_accept accept,
                               void *accept_ud, uint8_t **model, size_t *len, pcd_snap_info *info,
                               void (*warn)(void *ud, const char *msg), void *ud, char *err,
                               size_t errlen)
{
    if (pcd_snap_check_name(name, err, errlen) < 0)
        return PCD_SNAP_ERR;
    pcd_snap_gens l = {.name = name};
    if (pcd_snap_list_gens(dir, &l, err, errlen) < 0)
        return PCD_SNAP_ERR;
    int rc = pcd_snapshot_read_gens(dir, name, l.g, l.n, accept, accept_ud, model, len, info, warn,
                                    ud, err, errlen);
    free(l.g);
    return rc;
}

int pcd_snapshot_peek(const char *dir, const char *name, uint64_t gen, pcd_snap_info *info,
                      char *err, size_t errlen)
{
    char path[PATH_MAX], why[200];
    if (pcd_snap_check_name(name, err, errlen) < 0 ||
        pcd_snap_path(path, dir, name, gen, false, err, errlen) < 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* O_NONBLOCK: as read_one */
    if (fd < 0) {
        pcd_snap_seterr(err, errlen, "open %s: %s", path, strerror(errno));
        return -1;
    }
    uint8_t head[PCD_SNAP_HEADER_LEN + PCD_SNAP_PREFIX_MAX];
    struct stat st;
    uint64_t plen;
    ssize_t got = -1;
    int rc = -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < PCD_SNAP_HEADER_LEN) {
        pcd_snap_seterr(why, sizeof why, "not a regular file of a snapshot's size");
    } else if ((got = pread(fd, head, sizeof head, 0)) < PCD_SNAP_HEADER_LEN) {
        pcd_snap_seterr(why, sizeof why, "read: %s", got < 0 ? strerror(errno) : "short read");
    } else if (pcd_snap_check_header(head, (uint64_t)st.st_size - PCD_SNAP_HEADER_LEN, &plen, why,
                                     sizeof why) == 0 &&
               pcd_snap_peek(head + PCD_SNAP_HEADER_LEN, (size_t)got - PCD_SNAP_HEADER_LEN, name,
                             gen, info, why, sizeof why) == 0) {
        rc = 0;
        if (info)
            info->file_bytes = (uint64_t)st.st_size;
    }
    close(fd);
    if (rc < 0)
        pcd_snap_seterr(err, errlen, "%s: %s", path, why);
    return rc;
}

/* ---- the index, latest, remove, state dir ----------------------------------- */

typedef struct pair_list {
    struct pair {
        char *name;
        uint64_t g;
    } *v;
    size_t n, cap;
    bool oom;
} pair_list;

static int pair_list_cb(void *ud, const char *fname)
{
    pair_list *l = ud;
    char nm[PCD_SNAP_NAME_MAX + 1];
    uint64_t g;
    if (!pcd_snap_parse_final(fname, nm, &g))
        return 0;
    if (!PC_GROW(l->v, l->cap, l->n, 64) || !(l->v[l->n].name = strdup(nm))) {
        l->oom = true;
        return -1;
    }
    l->v[l->n++].g = g;
    return 0;
}

/* By name, then newest generation first. */
static int cmp_pair(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->g < y->g ? 1 : x->g > y->g ? -1 : 0;
}

void pcd_snapshot_index_free(pcd_snap_entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].gens);
    }
    free(v);
}

int pcd_snapshot_index(const char *dir, pcd_snap_entry **out, size_t *nout, char *err,
                       size_t errlen)
{
    pair_list l = {0};
    pcd_snap_entry *v = NULL;
    size_t k = 0;
    int rc = pcd_snap_scan_dir(dir, pair_list_cb, &l, err, errlen);
    if (rc == 0 && l.n > 1)
        qsort(l.v, l.n, sizeof *l.v, cmp_pair);
    if (rc == 0 && l.n && !(v = calloc(l.n, sizeof *v)))
        l.oom = true, rc = -1;
    /* one entry per name, its generations in an array of their own */
    for (size_t i = 0, j; rc == 0 && i < l.n; i = j) {
        for (j = i + 1; j < l.n && strcmp(l.v[j].name, l.v[i].name) == 0; j++)
            ;
        if (!(v[k].gens = malloc((j - i) * sizeof *v[k].gens))) {
            l.oom = true, rc = -1;
            break;
        }
        v[k].name = l.v[i].name;
        l.v[i].name = NULL;
        for (size_t g = i; g < j; g++)
            v[k].gens[v[k].n++] = l.v[g].g;
        k++;
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i].name);
    free(l.v);
    if (rc < 0) {
        if (l.oom)
            pcd_snap_seterr(err, errlen, "listing %s: out of memory", dir);
        pcd_snapshot_index_free(v, k);
        return -1;
    }
    *out = v;
    *nout = k;
    return 0;
}

uint64_t pcd_snapshot_latest_generation(const char *dir, const char *name)
{
    if (!pcd_snap_name_ok(name))
        return 0;
    pcd_snap_gens l = {.name = name};
    if (pcd_snap_list_gens(dir, &l, NULL, 0) < 0)
        return 0;
    uint64_t g = l.n ? l.g[0] : 0;
    free(l.g);
    return g;
}

int pcd_snapshot_remove(const char *dir, const char *name, char *err, size_t errlen)
{
    if (pcd_snap_check_name(name, err, errlen) < 0)
        return -1;
    pcd_snap_gens l = {.name = name, .unlink_tmp_dir = dir};
    if (pcd_snap_list_gens(dir, &l, err, errlen) < 0)
        return -1;
    int removed = 0, rc = 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        char p[PATH_MAX];
        if (pcd_snap_path(p, dir, name, l.g[i], false, err, errlen) < 0) {
            rc = -1;
        } else if (unlink(p) < 0) {
            if (errno != ENOENT) {
                pcd_snap_seterr(err, errlen, "unlink %s: %s", p, strerror(errno));
                rc = -1;
            }
        } else {
            removed++;
        }
    }
    free(l.g);
    if (rc == 0 && l.tmp_errno) {
        pcd_snap_seterr(err, errlen, "unlink %s: %s", l.tmp_failed, strerror(l.tmp_errno));
        rc = -1;
    }
    /* A dropped model must not come back after a crash. */
    if (pcd_fsync_dir(dir) < 0 && rc == 0) {
        pcd_snap_seterr(err, errlen, "fsync directory %s: %s", dir, strerror(errno));
        rc = -1;
    }
    return rc < 0 ? -1 : removed;
}

int pcd_snapshot_remove_generation(const char *dir, const char *name, uint64_t generation,
                                   char *err, size_t errlen)
{
    char p[PATH_MAX];
    if (pcd_snap_check_name(name, err, errlen) < 0 || pcd_snap_path(p, dir, name, generation, false, err, errlen) < 0)
        return -1;
    if (unlink(p) < 0 && errno != ENOENT) {
        pcd_snap_seterr(err, errlen, "unlink %s: %s", p, strerror(errno));
        return -1;
    }
    if (pcd_fsync_dir(dir) < 0) {
        pcd_snap_seterr(err, errlen, "fsync directory %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}
