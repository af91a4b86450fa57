/* shim.h - what the two LD_PRELOAD shims of tests/crash share: the next
 * definition of an interposed libc function, and a descriptor's or a path's
 * absolute name.  Header-only (static functions): each shim is one .so. */
#ifndef PCD_CRASH_SHIM_H
#define PCD_CRASH_SHIM_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The definition after ours (libc's, or the other shim's): dlsym once.
 * Aborts when there is none, which only a broken libc would do. */
#define SHIM_NEXT(type, name)                                                                      \
    static type next_##name;                                                                       \
    if (!next_##name && !(next_##name = (type)dlsym(RTLD_NEXT, #name)))                            \
        abort();

/* Defines open, open64, openat and openat64 in a shim that has
 * static int do_openat(int dirfd, const char *path, int flags, mode_t mode):
 * the mode argument is there only with O_CREAT or O_TMPFILE. */
#define SHIM_OPEN_ONE(name, dirfd_param, dirfd_arg)                                                \
    int name(dirfd_param const char *path, int flags, ...)                                         \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode_t m = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;                  \
        va_end(ap);                                                                                \
        return do_openat(dirfd_arg, path, flags, m);                                               \
    }
#define SHIM_OPEN_WRAPPERS                                                                         \
    SHIM_OPEN_ONE(open, , AT_FDCWD)                                                                \
    SHIM_OPEN_ONE(open64, , AT_FDCWD)                                                              \
    SHIM_OPEN_ONE(openat, int dirfd SHIM_COMMA, dirfd)                                             \
    SHIM_OPEN_ONE(openat64, int dirfd SHIM_COMMA, dirfd)
#define SHIM_COMMA ,

/* The absolute, slash-normalised path of `path` relative to dirfd (AT_FDCWD
 * or a directory descriptor) into out; false if it cannot be told.  No
 * symlinks or ".." are resolved: the daemon's paths have none. */
static inline bool shim_abspath(int dirfd, const char *path, char *out, size_t cap)
{
    char tmp[8200];
    if (!path)
        return false;
    if (path[0] == '/') {
        snprintf(tmp, sizeof tmp, "%s", path);
    } else {
        char base[4096];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof base))
                return false;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = readlink(link, base, sizeof base - 1);
            if (n <= 0)
                return false;
            base[n] = 0;
        }
        snprintf(tmp, sizeof tmp, "%s/%s", base, path);
    }
    /* collapse "//" and "/./", drop a trailing "/" */
    size_t o = 0;
    for (size_t i = 0; tmp[i] && o + 1 < cap; i++) {
        if (tmp[i] == '/' && o > 0 && out[o - 1] == '/')
            continue;
        if (tmp[i] == '.' && o > 0 && out[o - 1] == '/' && (tmp[i + 1] == '/' || !tmp[i + 1]))
            continue;
        out[o++] = tmp[i];
    }
    while (o > 1 && out[o - 1] == '/')
        o--;
    out[o] = 0;
    return true;
}

/* The path a descriptor was opened under (as /proc tells it). */
static inline bool shim_fdpath(int fd, char *out, size_t cap)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, cap - 1);
    if (n <= 0)
        return false;
    out[n] = 0;
    return true;
}

#endif
