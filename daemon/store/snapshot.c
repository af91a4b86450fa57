/* snapshot.c - model snapshot files in the state directory, read: a
 * generation checksummed, with fallback to older generations, the index of
 * every model's files, the latest generation, removal.  Writing them is
 * write.c's; the bytes of one file are format.c's.
 *
 * The format is in snapshot.h and docs/persistence.md.  Every file name is
 * built from a validated model name, so no name can reach outside dir or
 * collide with the temp files (which start with '.').
 */
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
#include "lib/grow.h"

/* ---- reading ------------------------------------------------------------ */

static int read_all(int fd, uint8_t *p, size_t len, off_t at)
{
    while (len > 0) {
        ssize_t r = pread(fd, p, len > PCD_SNAP_IO_CHUNK ? PCD_SNAP_IO_CHUNK : len, at);
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

static int read_one(const char *dir, const char *name, uint64_t gen, uint8_t **model, size_t *mlen,
                    pcd_snap_info *info, char *why, size_t whylen);

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
