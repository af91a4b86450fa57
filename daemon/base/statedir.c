/* statedir.c - the state directory on disk: made with its parents, each
 * new directory synced into its parent, checked writable; and the directory
 * fsync every writer of the state directory (snapshots, the journal) uses
 * to make a file's creation, rename or removal durable. */
#include "daemon/base/statedir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pcd_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* Some file systems cannot fsync a directory (EINVAL): nothing to do then. */
    int rc = fsync(fd) < 0 && errno != EINVAL ? -1 : 0;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* fsync_dir of path's parent (path: no trailing '/'). */
static int sync_parent(const char *path)
{
    char parent[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        return pcd_fsync_dir(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    memcpy(parent, path, n);
    parent[n] = '\0';
    return pcd_fsync_dir(parent);
}

int pcd_state_dir_prepare(const char *dir, char *err, size_t errlen)
{
    size_t len = dir ? strlen(dir) : 0;
    if (len == 0) {
        snprintf(err, errlen, "state directory: empty path");
        return -1;
    }
    if (len >= PATH_MAX) {
        snprintf(err, errlen, "state directory '%.80s...' is longer than %d bytes", dir, PATH_MAX - 1);
        return -1;
    }
    char p[PATH_MAX];
    memcpy(p, dir, len + 1);
    /* mkdir -p: each prefix ending before a '/', then the whole path. */
    for (size_t i = 1; i <= len; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        if (p[i - 1] == '/')
            continue;           /* "a//b" */
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0750) < 0) {
            if (errno != EEXIST) {
                snprintf(err, errlen, "create state directory %s: %s", p, strerror(errno));
                return -1;
            }
        } else if (sync_parent(p) < 0) {
            /* A directory made and not synced into its parent may vanish in a
             * power cut with everything written in it since (POSIX: only an
             * fsync of the parent makes the new entry durable). */
            snprintf(err, errlen, "fsync the directory holding %s: %s", p, strerror(errno));
            return -1;
        }
        p[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) < 0) {
        snprintf(err, errlen, "state directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "state directory %s exists and is not a directory", dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) < 0) {
        snprintf(err, errlen, "state directory %s is not writable: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}
