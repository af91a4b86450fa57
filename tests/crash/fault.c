/* fault.c - LD_PRELOAD shim that makes the daemon's syncs, writes and renames
 * fail as a failing or full disk does (issue 29), for tests/test_e2e_fsync.c
 * and scripts/crash-campaign.
 *
 * PCD_FAULT holds rules separated by ';', each a list of key=value:
 *
 *   op=fdatasync|fsync|sync|write|rename   sync: fsync and fdatasync; write:
 *                                          write, pwrite, writev, pwritev
 *   errno=EIO|ENOSPC|EDQUOT|EROFS|<number> what the call fails with (EIO)
 *   match=TEXT    only calls on a file whose path contains TEXT (rename: the
 *                 old name)
 *   nth=N         the N-th matching call fails (1, the first) ...
 *   count=K       ... and the K-1 after it (1; 0: every call from the N-th)
 *   after_ms=T    calls are counted only from T ms after the process started
 *   lose=1        a failed sync also loses what was written since the file's
 *                 last good sync: those bytes become zeros, as after the
 *                 kernel dropped the dirty pages it could not write (Linux
 *                 marks them clean after a failed writeback: PostgreSQL's
 *                 fsync lesson), so a journal that trusts the failed sync
 *                 loses acknowledged records, visibly
 *
 * e.g. PCD_FAULT="op=fdatasync,match=.pcj,nth=5,count=3,lose=1".  Counters
 * are per process (a snapshot child starts with its parent's).  Each failure
 * is logged on stderr as "pcd-fault: <op> <path> -> <errno> (call N)".
 * The failing call does nothing: a write writes nothing, a rename renames
 * nothing. */
#undef _FILE_OFFSET_BITS /* our open, pwrite, ... must keep their own names */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include "tests/crash/shim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#define MAX_FD 65536
#define MAX_RULES 8

enum { OP_FSYNC = 1, OP_FDATASYNC = 2, OP_WRITE = 4, OP_RENAME = 8 };

typedef struct rule {
    unsigned ops;
    int err;
    uint64_t nth, count;
    double after;
    char match[256];
    bool lose;
    uint64_t seen; /* matching calls so far (atomic) */
} rule;

static rule rules[MAX_RULES];
static int nrules;
static double started;
/* each descriptor's size at its last good sync (or at open): what lose=1 keeps */
static uint64_t synced_size[MAX_FD];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int errno_named(const char *s)
{
    static const struct {
        const char *name;
        int err;
    } names[] = {{"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(s, names[i].name) == 0)
            return names[i].err;
    return atoi(s) > 0 ? atoi(s) : EIO;
}

static void parse_rule(char *text)
{
    rule r = {.err = EIO, .nth = 1, .count = 1};
    for (char *save = NULL, *kv = strtok_r(text, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *v = strchr(kv, '=');
        if (!v)
            continue;
        *v++ = 0;
        if (strcmp(kv, "op") == 0)
            r.ops = strcmp(v, "fsync") == 0       ? OP_FSYNC
                    : strcmp(v, "fdatasync") == 0 ? OP_FDATASYNC
                    : strcmp(v, "sync") == 0      ? OP_FSYNC | OP_FDATASYNC
                    : strcmp(v, "write") == 0     ? OP_WRITE
                    : strcmp(v, "rename") == 0    ? OP_RENAME
                                                  : 0;
        else if (strcmp(kv, "errno") == 0)
            r.err = errno_named(v);
        else if (strcmp(kv, "match") == 0)
            snprintf(r.match, sizeof r.match, "%s", v);
        else if (strcmp(kv, "nth") == 0)
            r.nth = strtoull(v, NULL, 10);
        else if (strcmp(kv, "count") == 0)
            r.count = strtoull(v, NULL, 10);
        else if (strcmp(kv, "after_ms") == 0)
            r.after = atof(v) / 1e3;
        else if (strcmp(kv, "lose") == 0)
            r.lose = atoi(v) != 0;
    }
    if (r.ops && nrules < MAX_RULES)
        rules[nrules++] = r;
}

__attribute__((constructor)) static void fault_init(void)
{
    started = now();
    const char *env = getenv("PCD_FAULT");
    if (!env)
        return;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *save = NULL, *r = strtok_r(buf, ";", &save); r; r = strtok_r(NULL, ";", &save))
        parse_rule(r);
}

static void say(const char *what, const char *path, int err, uint64_t call)
{
    char line[4300];
    int n = snprintf(line, sizeof line, "pcd-fault: %s %s -> %s (call %llu)\n", what, path,
                     strerrorname_np(err) ? strerrorname_np(err) : "?", (unsigned long long)call);
    if (n > 0)
        (void)!syscall(SYS_write, 2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The rule that makes this call fail, or NULL.  path: the file's. */
static rule *failing(unsigned op, const char *path)
{
    for (int i = 0; i < nrules; i++) {
        rule *r = &rules[i];
        if (!(r->ops & op) || (r->match[0] && !strstr(path, r->match)))
            continue;
        if (r->after > 0 && now() - started < r->after)
            continue;
        uint64_t k = __atomic_add_fetch(&r->seen, 1, __ATOMIC_RELAXED);
        if (k >= r->nth && (r->count == 0 || k < r->nth + r->count))
            return r;
    }
    return NULL;
}

static rule *fd_failing(unsigned op, int fd, char *path, size_t cap)
{
    if (nrules == 0 || !shim_fdpath(fd, path, cap))
        return NULL;
    return failing(op, path);
}

/* ---- opens: the size a descriptor starts from ---------------------------- */

typedef int (*openat_fn)(int, const char *, int, ...);

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    SHIM_NEXT(openat_fn, openat);
    int fd = next_openat(dirfd, path, flags, mode);
    struct stat st;
    if (fd >= 0 && fd < MAX_FD)
        synced_size[fd] = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    return fd;
}

/* open, open64, openat and openat64, all through do_openat */
SHIM_OPEN_WRAPPERS

/* ---- syncs ---------------------------------------------------------------- */

/* lose=1: the bytes written since the last good sync become zeros. */
static void lose_unsynced(int fd)
{
    struct stat st;
    if (fd < 0 || fd >= MAX_FD || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    static const char zeros[4096];
    for (uint64_t at = synced_size[fd]; at < (uint64_t)st.st_size;) {
        uint64_t n = (uint64_t)st.st_size - at < sizeof zeros ? (uint64_t)st.st_size - at : sizeof zeros;
        if (syscall(SYS_pwrite64, fd, zeros, (size_t)n, (off_t)at) <= 0)
            break;
        at += n;
    }
}

typedef int (*fd_fn)(int);

static int sync_call(fd_fn call, unsigned op, const char *name, int fd)
{
    char path[4096];
    rule *r = fd_failing(op, fd, path, sizeof path);
    if (r) {
        say(name, path, r->err, r->seen);
        if (r->lose)
            lose_unsynced(fd);
        errno = r->err;
        return -1;
    }
    int rc = call(fd);
    struct stat st;
    if (rc == 0 && fd >= 0 && fd < MAX_FD && fstat(fd, &st) == 0)
        synced_size[fd] = (uint64_t)st.st_size;
    return rc;
}

int fsync(int fd)
{
    SHIM_NEXT(fd_fn, fsync);
    return sync_call(next_fsync, OP_FSYNC, "fsync", fd);
}

int fdatasync(int fd)
{
    SHIM_NEXT(fd_fn, fdatasync);
    return sync_call(next_fdatasync, OP_FDATASYNC, "fdatasync", fd);
}

/* ---- writes --------------------------------------------------------------- */

static bool write_fails(int fd)
{
    char path[4096];
    rule *r = fd_failing(OP_WRITE, fd, path, sizeof path);
    if (!r)
        return false;
    say("write", path, r->err, r->seen);
    errno = r->err;
    return true;
}

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);

ssize_t write(int fd, const void *buf, size_t n)
{
    SHIM_NEXT(write_fn, write);
    return write_fails(fd) ? -1 : next_write(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    SHIM_NEXT(writev_fn, writev);
    return write_fails(fd) ? -1 : next_writev(fd, iov, cnt);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t at)
{
    SHIM_NEXT(pwrite_fn, pwrite);
    return write_fails(fd) ? -1 : next_pwrite(fd, buf, n, at);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t at)
{
    SHIM_NEXT(pwrite_fn, pwrite64);
    return write_fails(fd) ? -1 : next_pwrite64(fd, buf, n, at);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t at)
{
    SHIM_NEXT(pwritev_fn, pwritev);
    return write_fails(fd) ? -1 : next_pwritev(fd, iov, cnt, at);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t at)
{
    SHIM_NEXT(pwritev_fn, pwritev64);
    return write_fails(fd) ? -1 : next_pwritev64(fd, iov, cnt, at);
}

/* ---- renames -------------------------------------------------------------- */

static bool rename_fails(int dirfd, const char *from)
{
    char path[4096];
    rule *r = nrules && shim_abspath(dirfd, from, path, sizeof path) ? failing(OP_RENAME, path) : NULL;
    if (!r)
        return false;
    say("rename", path, r->err, r->seen);
    errno = r->err;
    return true;
}

typedef int (*rename_fn)(const char *, const char *);
typedef int (*renameat_fn)(int, const char *, int, const char *);
typedef int (*renameat2_fn)(int, const char *, int, const char *, unsigned);

int rename(const char *from, const char *to)
{
    SHIM_NEXT(rename_fn, rename);
    return rename_fails(AT_FDCWD, from) ? -1 : next_rename(from, to);
}

int renameat(int fd1, const char *from, int fd2, const char *to)
{
    SHIM_NEXT(renameat_fn, renameat);
    return rename_fails(fd1, from) ? -1 : next_renameat(fd1, from, fd2, to);
}

int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned fl)
{
    SHIM_NEXT(renameat2_fn, renameat2);
    return rename_fails(fd1, from) ? -1 : next_renameat2(fd1, from, fd2, to, fl);
}
