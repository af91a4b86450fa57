/* dir.c - the names of snapshot files in the state directory: a model's
 * generation is "<name>.<gen>.snap", written first as the hidden temp
 * ".<name>.<gen>.snap.tmp"; parsing them back, and listing a model's
 * generations.  Names are validated before they get here (format.c), so no
 * path can reach outside the directory or collide with a temp file. */
#include "daemon/store/dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/store/format.h"
#include "lib/grow.h"

#define SNAP_SUFFIX ".snap"
#define TMP_SUFFIX ".snap.tmp"

int pcd_snap_path(char *path, const char *dir, const char *name, uint64_t gen, bool tmp,
                  char *err, size_t errlen)
{
    int n = tmp ? snprintf(path, PATH_MAX, "%s/.%s.%llu" TMP_SUFFIX, dir, name, (unsigned long long)gen)
                : snprintf(path, PATH_MAX, "%s/%s.%llu" SNAP_SUFFIX, dir, name, (unsigned long long)gen);
    if (n < 0 || n >= PATH_MAX) {
        pcd_snap_seterr(err, errlen, "snapshot path in '%.200s' is longer than %d bytes", dir, PATH_MAX - 1);
        return -1;
    }
    return 0;
}

/* Parses "<name>.<gen>" (s of slen bytes, not NUL-terminated there) with a
 * valid name and a canonical decimal generation >= 1.  name holds
 * PCD_SNAP_NAME_MAX + 1 bytes. */
static bool parse_name_gen(const char *s, size_t slen, char *name, uint64_t *gen)
{
    size_t dot = slen;
    while (dot > 0 && s[dot - 1] != '.')
        dot--;
    if (dot < 2 || dot - 1 > PCD_SNAP_NAME_MAX)
        return false;                          /* no dot, or empty / too long name */
    size_t nd = slen - dot;
    if (nd == 0 || nd > 20 || s[dot] == '0')
        return false;                          /* empty, too long or leading zero */
    uint64_t g = 0;
    for (size_t i = dot; i < slen; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (g > (UINT64_MAX - d) / 10)
            return false;
        g = g * 10 + d;
    }
    memcpy(name, s, dot - 1);
    name[dot - 1] = '\0';
    if (!pcd_snap_name_ok(name))
        return false;
    *gen = g;
    return true;
}

static bool has_suffix(const char *s, size_t len, const char *suf)
{
    size_t sl = strlen(suf);
    return len > sl && memcmp(s + len - sl, suf, sl) == 0;
}

bool pcd_snap_parse_final(const char *fname, char *name, uint64_t *gen)
{
    size_t len = strlen(fname);
    if (fname[0] == '.' || !has_suffix(fname, len, SNAP_SUFFIX))
        return false;
    return parse_name_gen(fname, len - strlen(SNAP_SUFFIX), name, gen);
}

bool pcd_snap_parse_temp(const char *fname, char *name, uint64_t *gen)
{
    size_t len = strlen(fname);
    if (fname[0] != '.' || !has_suffix(fname, len, TMP_SUFFIX))
        return false;
    return parse_name_gen(fname + 1, len - 1 - strlen(TMP_SUFFIX), name, gen);
}

int pcd_snap_scan_dir(const char *dir, int (*cb)(void *ud, const char *fname), void *ud,
                      char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        pcd_snap_seterr(err, errlen, "open directory %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) {
                pcd_snap_seterr(err, errlen, "read directory %s: %s", dir, strerror(errno));
                rc = -1;
            }
            break;
        }
        if (cb(ud, e->d_name) < 0) {
            rc = -1;
            break;
        }
    }
    closedir(d);
    return rc;
}

/* ---- listing the generations of one name -------------------------------- */

static int gen_list_cb(void *ud, const char *fname)
{
    pcd_snap_gens *l = ud;
    char nm[PCD_SNAP_NAME_MAX + 1];
    uint64_t g;
    if (l->unlink_tmp_dir && pcd_snap_parse_temp(fname, nm, &g) && strcmp(nm, l->name) == 0) {
        char p[PATH_MAX];
        int k = snprintf(p, sizeof p, "%s/%s", l->unlink_tmp_dir, fname);
        if (k > 0 && k < (int)sizeof p && unlink(p) < 0 && errno != ENOENT && !l->tmp_errno) {
            l->tmp_errno = errno;
            memcpy(l->tmp_failed, p, sizeof p);
        }
        return 0;
    }
    if (!pcd_snap_parse_final(fname, nm, &g) || strcmp(nm, l->name) != 0)
        return 0;
    if (!PC_GROW(l->g, l->cap, l->n, 16)) {
        l->oom = true;
        return -1;
    }
    l->g[l->n++] = g;
    return 0;
}

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

int pcd_snap_list_gens(const char *dir, pcd_snap_gens *l, char *err, size_t errlen)
{
    if (pcd_snap_scan_dir(dir, gen_list_cb, l, err, errlen) < 0) {
        if (l->oom)
            pcd_snap_seterr(err, errlen, "listing %s: out of memory", dir);
        free(l->g);
        l->g = NULL;
        l->n = l->cap = 0;
        return -1;
    }
    if (l->n > 1)
        qsort(l->g, l->n, sizeof *l->g, cmp_desc);
    return 0;
}

