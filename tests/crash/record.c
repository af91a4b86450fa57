/* record.c - LD_PRELOAD shim of the crash-state harness (issue 29): records
 * every file-system operation the daemon makes under $PCD_CRASH_ROOT (opens
 * that create or truncate, writes with their data, truncations, renames,
 * unlinks, mkdirs, fsync/fdatasync/syncfs of files and directories, closes)
 * into $PCD_CRASH_TRACE, in the order they complete (trace.h).
 * tests/crash/fsmodel.py builds the crash states POSIX allows from it.
 *
 * Why a shim and not strace: the data written is needed, the daemon's
 * snapshot children must be followed, and the trace must interleave with the
 * client's acknowledgements (written to the same O_APPEND file).  A sync is
 * recorded twice, before and after the call: only what was written before it
 * began is covered by it (another thread may write while it runs). */
#undef _FILE_OFFSET_BITS /* our open, pwrite, ... must keep their own names */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include "tests/crash/shim.h"
#include "tests/crash/trace.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#define MAX_FD 65536

static int trace_fd = -1;
static char root[4096];
static size_t root_len;
/* what each descriptor of a file under the root is: fork copies it to the
 * snapshot child with the descriptors */
static struct {
    uint64_t ino;
    bool tracked, dir;
} fdtab[MAX_FD];

typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

__attribute__((constructor)) static void record_init(void)
{
    const char *t = getenv("PCD_CRASH_TRACE"), *r = getenv("PCD_CRASH_ROOT");
    if (!t || !r)
        return;
    SHIM_NEXT(open_fn, open);
    trace_fd = next_open(t, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (!shim_abspath(AT_FDCWD, r, root, sizeof root))
        trace_fd = -1;
    root_len = strlen(root);
}

static bool under_root(const char *p)
{
    return trace_fd >= 0 && strncmp(p, root, root_len) == 0 &&
           (p[root_len] == 0 || p[root_len] == '/');
}

static bool tracked(int fd)
{
    return trace_fd >= 0 && fd >= 0 && fd < MAX_FD && fdtab[fd].tracked;
}

/* One record: the header, the paths and the data, in one writev. */
static void emit(uint8_t type, uint8_t flags, int fd, int err, uint64_t ino, uint64_t off,
                 const char *p, const char *p2, const struct iovec *data, int ndata, size_t len)
{
    int saved = errno;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    trace_rec h = {.type = type, .flags = flags, .pid = getpid(), .tid = (int32_t)syscall(SYS_gettid),
                   .fd = fd, .err = err, .ino = ino, .off = off, .len = len,
                   .t = (double)ts.tv_sec + ts.tv_nsec * 1e-9};
    h.plen = p ? (uint16_t)strlen(p) : 0;
    h.p2len = p2 ? (uint16_t)strlen(p2) : 0;
    h.size = (uint32_t)(sizeof h + h.plen + h.p2len + len);
    struct iovec iov[64];
    int n = 0;
    iov[n++] = (struct iovec){&h, sizeof h};
    if (h.plen)
        iov[n++] = (struct iovec){(void *)p, h.plen};
    if (h.p2len)
        iov[n++] = (struct iovec){(void *)p2, h.p2len};
    size_t left = len;
    for (int i = 0; i < ndata && left && n < 64; i++) {
        size_t k = data[i].iov_len < left ? data[i].iov_len : left;
        iov[n++] = (struct iovec){data[i].iov_base, k};
        left -= k;
    }
    /* the system call itself: not through fault.c, which may fail writes */
    if (syscall(SYS_writev, trace_fd, iov, n) != (long)h.size)
        abort(); /* a trace with a hole would judge a run it did not see */
    errno = saved;
}

/* After a successful open of path (absolute) as fd. */
static void opened(int fd, const char *path, int flags, bool existed)
{
    if (fd < 0 || fd >= MAX_FD || !under_root(path))
        return;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return;
    fdtab[fd].ino = st.st_ino;
    fdtab[fd].dir = S_ISDIR(st.st_mode);
    fdtab[fd].tracked = true;
    uint8_t fl = (uint8_t)((fdtab[fd].dir ? TRF_DIR : 0) | (!existed ? TRF_CREATED : 0));
    emit(TR_OPEN, fl, fd, 0, st.st_ino, (uint64_t)flags, path, NULL, NULL, 0, 0);
    if ((flags & O_TRUNC) && existed && !fdtab[fd].dir)
        emit(TR_TRUNC, 0, fd, 0, st.st_ino, 0, NULL, NULL, NULL, 0, 0);
}

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    SHIM_NEXT(openat_fn, openat);
    char abs[4096];
    bool have = trace_fd >= 0 && shim_abspath(dirfd, path, abs, sizeof abs) && under_root(abs);
    struct stat st;
    bool existed = !have || !(flags & O_CREAT) || lstat(abs, &st) == 0;
    int fd = next_openat(dirfd, path, flags, mode);
    if (have && fd >= 0)
        opened(fd, abs, flags, existed);
    else if (fd >= 0 && fd < MAX_FD)
        fdtab[fd].tracked = false;
    return fd;
}

/* open, open64, openat and openat64, all through do_openat */
SHIM_OPEN_WRAPPERS

int creat(const char *path, mode_t mode)
{
    return do_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode)
{
    return do_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

/* ---- data ---------------------------------------------------------------- */

static void wrote(int fd, const struct iovec *iov, int n, ssize_t done, off_t at)
{
    if (done > 0 && tracked(fd) && !fdtab[fd].dir)
        emit(TR_WRITE, 0, fd, 0, fdtab[fd].ino, (uint64_t)at, NULL, NULL, iov, n, (size_t)done);
}

/* The offset a write(2) just wrote at: the position now, less what it wrote. */
static off_t was_at(int fd, ssize_t done)
{
    return done > 0 && tracked(fd) ? lseek(fd, 0, SEEK_CUR) - done : 0;
}

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);

ssize_t write(int fd, const void *buf, size_t n)
{
    SHIM_NEXT(write_fn, write);
    ssize_t r = next_write(fd, buf, n);
    struct iovec v = {(void *)buf, n};
    wrote(fd, &v, 1, r, was_at(fd, r));
    return r;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    SHIM_NEXT(writev_fn, writev);
    ssize_t r = next_writev(fd, iov, cnt);
    wrote(fd, iov, cnt, r, was_at(fd, r));
    return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t at)
{
    SHIM_NEXT(pwrite_fn, pwrite);
    ssize_t r = next_pwrite(fd, buf, n, at);
    struct iovec v = {(void *)buf, n};
    wrote(fd, &v, 1, r, at);
    return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t at)
{
    SHIM_NEXT(pwrite_fn, pwrite64);
    ssize_t r = next_pwrite64(fd, buf, n, at);
    struct iovec v = {(void *)buf, n};
    wrote(fd, &v, 1, r, at);
    return r;
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t at)
{
    SHIM_NEXT(pwritev_fn, pwritev);
    ssize_t r = next_pwritev(fd, iov, cnt, at);
    wrote(fd, iov, cnt, r, at);
    return r;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t at)
{
    SHIM_NEXT(pwritev_fn, pwritev64);
    ssize_t r = next_pwritev64(fd, iov, cnt, at);
    wrote(fd, iov, cnt, r, at);
    return r;
}

typedef int (*ftruncate_fn)(int, off_t);

int ftruncate(int fd, off_t len)
{
    SHIM_NEXT(ftruncate_fn, ftruncate);
    int r = next_ftruncate(fd, len);
    if (r == 0 && tracked(fd))
        emit(TR_TRUNC, 0, fd, 0, fdtab[fd].ino, (uint64_t)len, NULL, NULL, NULL, 0, 0);
    return r;
}

int ftruncate64(int fd, off_t len)
{
    SHIM_NEXT(ftruncate_fn, ftruncate64);
    int r = next_ftruncate64(fd, len);
    if (r == 0 && tracked(fd))
        emit(TR_TRUNC, 0, fd, 0, fdtab[fd].ino, (uint64_t)len, NULL, NULL, NULL, 0, 0);
    return r;
}

/* ---- names --------------------------------------------------------------- */

/* After a successful call on path(s) relative to dirfd(s). */
static void named(uint8_t type, uint8_t flags, int d1, const char *p1, int d2, const char *p2)
{
    char a[4096], b[4096];
    if (trace_fd < 0 || !shim_abspath(d1, p1, a, sizeof a))
        return;
    bool two = p2 && shim_abspath(d2, p2, b, sizeof b);
    if (under_root(a) || (two && under_root(b)))
        emit(type, flags, -1, 0, 0, 0, a, two ? b : NULL, NULL, 0, 0);
}

typedef int (*rename_fn)(const char *, const char *);
typedef int (*renameat_fn)(int, const char *, int, const char *);
typedef int (*renameat2_fn)(int, const char *, int, const char *, unsigned);
typedef int (*unlink_fn)(const char *);
typedef int (*unlinkat_fn)(int, const char *, int);
typedef int (*mkdir_fn)(const char *, mode_t);
typedef int (*mkdirat_fn)(int, const char *, mode_t);

int rename(const char *from, const char *to)
{
    SHIM_NEXT(rename_fn, rename);
    int r = next_rename(from, to);
    if (r == 0)
        named(TR_RENAME, 0, AT_FDCWD, from, AT_FDCWD, to);
    return r;
}

int renameat(int fd1, const char *from, int fd2, const char *to)
{
    SHIM_NEXT(renameat_fn, renameat);
    int r = next_renameat(fd1, from, fd2, to);
    if (r == 0)
        named(TR_RENAME, 0, fd1, from, fd2, to);
    return r;
}

int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned fl)
{
    SHIM_NEXT(renameat2_fn, renameat2);
    int r = next_renameat2(fd1, from, fd2, to, fl);
    if (r == 0)
        named(TR_RENAME, 0, fd1, from, fd2, to);
    return r;
}

int unlink(const char *path)
{
    SHIM_NEXT(unlink_fn, unlink);
    int r = next_unlink(path);
    if (r == 0)
        named(TR_UNLINK, 0, AT_FDCWD, path, AT_FDCWD, NULL);
    return r;
}

int unlinkat(int dirfd, const char *path, int fl)
{
    SHIM_NEXT(unlinkat_fn, unlinkat);
    int r = next_unlinkat(dirfd, path, fl);
    if (r == 0)
        named(TR_UNLINK, (fl & AT_REMOVEDIR) ? TRF_DIR : 0, dirfd, path, AT_FDCWD, NULL);
    return r;
}

int mkdir(const char *path, mode_t mode)
{
    SHIM_NEXT(mkdir_fn, mkdir);
    int r = next_mkdir(path, mode);
    if (r == 0)
        named(TR_MKDIR, TRF_DIR, AT_FDCWD, path, AT_FDCWD, NULL);
    return r;
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
    SHIM_NEXT(mkdirat_fn, mkdirat);
    int r = next_mkdirat(dirfd, path, mode);
    if (r == 0)
        named(TR_MKDIR, TRF_DIR, dirfd, path, AT_FDCWD, NULL);
    return r;
}

/* ---- syncs and close ----------------------------------------------------- */

typedef int (*fd_fn)(int);
typedef void (*void_fn)(void);

static int synced(fd_fn call, int fd, uint8_t flags)
{
    if (!tracked(fd) && !(flags & TRF_ALL))
        return call(fd);
    uint64_t ino = (flags & TRF_ALL) ? 0 : fdtab[fd].ino;
    flags |= (flags & TRF_ALL) ? 0 : (fdtab[fd].dir ? TRF_DIR : 0);
    emit(TR_SYNC_BEGIN, flags, fd, 0, ino, 0, NULL, NULL, NULL, 0, 0);
    int r = call(fd);
    emit(TR_SYNC_END, flags, fd, r == 0 ? 0 : errno, ino, 0, NULL, NULL, NULL, 0, 0);
    return r;
}

int fsync(int fd)
{
    SHIM_NEXT(fd_fn, fsync);
    return synced(next_fsync, fd, 0);
}

int fdatasync(int fd)
{
    SHIM_NEXT(fd_fn, fdatasync);
    return synced(next_fdatasync, fd, TRF_DATASYNC);
}

int syncfs(int fd)
{
    SHIM_NEXT(fd_fn, syncfs);
    return trace_fd >= 0 ? synced(next_syncfs, fd, TRF_ALL) : next_syncfs(fd);
}

void sync(void)
{
    SHIM_NEXT(void_fn, sync);
    if (trace_fd >= 0)
        emit(TR_SYNC_BEGIN, TRF_ALL, -1, 0, 0, 0, NULL, NULL, NULL, 0, 0);
    next_sync();
    if (trace_fd >= 0)
        emit(TR_SYNC_END, TRF_ALL, -1, 0, 0, 0, NULL, NULL, NULL, 0, 0);
}

/* The trace's descriptor survives the daemon's closes: the snapshot child
 * closes every descriptor but stderr (close_range, or close in a loop). */
int close(int fd)
{
    SHIM_NEXT(fd_fn, close);
    if (trace_fd >= 0 && fd == trace_fd)
        return 0;
    if (tracked(fd)) {
        emit(TR_CLOSE, fdtab[fd].dir ? TRF_DIR : 0, fd, 0, fdtab[fd].ino, 0, NULL, NULL, NULL, 0, 0);
        fdtab[fd].tracked = false;
    }
    return next_close(fd);
}

typedef int (*close_range_fn)(unsigned, unsigned, int);

int close_range(unsigned first, unsigned last, int flags)
{
    SHIM_NEXT(close_range_fn, close_range);
    unsigned t = (unsigned)trace_fd;
    for (unsigned fd = first; fd < MAX_FD && fd <= last; fd++)
        if (fd != t && tracked((int)fd))
            fdtab[fd].tracked = false; /* closed unrecorded: nothing of the state depends on it */
    if (trace_fd < 0 || t < first || t > last)
        return next_close_range(first, last, flags);
    int r = 0;
    if (t > first)
        r = next_close_range(first, t - 1, flags);
    if (r == 0 && t < last)
        r = next_close_range(t + 1, last, flags);
    return r;
}
