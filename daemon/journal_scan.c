/* journal_scan.c - opening the journal: every segment checked in order,
 * a torn tail cut, corruption refused (or cut, with on_corrupt: truncate),
 * and every record replayed through the caller's apply function.  The byte
 * format is proto/journal.c's; journal.c appends after what this found. */
#include "daemon/journal_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/log.h"
#include "proto/journal.h"

bool pcd_journal_add_segment(pcd_journal *j, uint64_t first, uint64_t bytes)
{
    segment *segs = pcd_grow(j->segs, &j->segcap, j->nsegs, sizeof *segs);
    if (!segs)
        return false;
    j->segs = segs;
    j->segs[j->nsegs++] = (segment){first, bytes};
    return true;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The first LSNs of the segment files in dir, sorted. */
static int list_segments(pcd_journal *j, uint64_t **out, size_t *n, char *err, size_t errlen)
{
    DIR *d = opendir(j->dir);
    if (!d) {
        snprintf(err, errlen, "journal directory %s: %s", j->dir, strerror(errno));
        return -1;
    }
    uint64_t *v = NULL;
    size_t k = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *s = de->d_name;
        if (strlen(s) != SEG_NAME_LEN + strlen(SEG_SUFFIX) || strcmp(s + SEG_NAME_LEN, SEG_SUFFIX))
            continue;
        uint64_t first = 0;
        bool digits = true;
        for (int i = 0; i < SEG_NAME_LEN && digits; i++) {
            digits = s[i] >= '0' && s[i] <= '9';
            first = first * 10 + (uint64_t)(s[i] - '0');
        }
        if (!digits)
            continue;
        uint64_t *nv = pcd_grow(v, &cap, k, sizeof *v);
        if (!nv) {
            free(v);
            closedir(d);
            snprintf(err, errlen, "out of memory listing %s", j->dir);
            return -1;
        }
        v = nv;
        v[k++] = first;
    }
    closedir(d);
    if (k) /* qsort(NULL, 0) is undefined */
        qsort(v, k, sizeof *v, cmp_u64);
    *out = v;
    *n = k;
    return 0;
}

/* ---- opening: check, repair, replay ------------------------------------ */

typedef struct replay {
    const pcd_journal_options *o;
    uint64_t expect;      /* LSN the next new record must have */
    bool any;             /* a record or segment seen */
} replay;

static int cut_file(const char *path, uint64_t off, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)off) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "journal %s: cannot truncate at offset %" PRIu64 ": %s", path, off,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* Moves segments [from, n) aside as <name>.corrupt: on_corrupt: truncate. */
static void set_aside(pcd_journal *j, const uint64_t *firsts, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++) {
        char path[4200], aside[4300];
        pcd_journal_path(j, firsts[i], path, sizeof path);
        snprintf(aside, sizeof aside, "%s.corrupt", path);
        if (rename(path, aside) == 0)
            pcd_error("journal: %s set aside as %s (after the cut, on_corrupt: truncate)", path, aside);
    }
}

/* Reads segment i: replays its records, and returns the offset where it
 * ends, or where damage starts (*damage then says which kind). */
static int read_segment(pcd_journal *j, replay *rp, const char *path, uint64_t name_lsn,
                        uint64_t *end, pcp_jrec *damage, char *err, size_t errlen)
{
    *damage = PCP_JREC_END;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        snprintf(err, errlen, "journal %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t size = (size_t)sb.st_size;
    const uint8_t *p = NULL;
    if (size > 0) {
        void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            snprintf(err, errlen, "journal %s: mmap: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        p = m;
    }
    close(fd);
    int rc = 0;
    uint64_t first;
    char why[200];
    if (size < PCP_JOURNAL_HEADER_LEN) {
        *end = 0; /* a crash while the segment was being created */
        *damage = PCP_JREC_TORN;
        goto out;
    }
    if (pcp_journal_get_header(p, size, &first, why, sizeof why) != 0 || first != name_lsn) {
        snprintf(err, errlen, "journal %s: offset 0: %s", path,
                 first != name_lsn ? "the header's first LSN does not match the file name" : why);
        rc = -1;
        goto out;
    }
    if (rp->any && first > rp->expect) {
        snprintf(err, errlen,
                 "journal %s: records %" PRIu64 " to %" PRIu64 " are missing (a segment was "
                 "deleted?)", path, rp->expect, first - 1);
        rc = -1;
        goto out;
    }
    if (!rp->any)
        rp->expect = first;
    rp->any = true;
    pc_reader r = {.p = p + PCP_JOURNAL_HEADER_LEN, .left = size - PCP_JOURNAL_HEADER_LEN};
    uint64_t lsn_in_segment = first;
    for (;;) {
        uint64_t lsn;
        const uint8_t *msg;
        uint32_t len;
        size_t at = size - r.left; /* where this record starts */
        pcp_jrec k = pcp_journal_get_record(&r, &lsn, &msg, &len);
        if (k == PCP_JREC_OK && lsn != lsn_in_segment)
            k = PCP_JREC_BAD; /* in order or not at all (the reader moved past it) */
        if (k != PCP_JREC_OK) {
            *damage = k;
            *end = at; /* the damage starts with the record, not after it */
            break;
        }
        lsn_in_segment++;
        if (lsn < rp->expect)
            continue; /* written again after a failed fdatasync: seen */
        rp->expect = lsn + 1;
        j->st.replayed++;
        if (rp->o->apply(rp->o->ud, lsn, msg, len) != 0)
            j->st.replay_failed++;
    }
out:
    if (p)
        munmap((void *)p, size);
    return rc;
}

int pcd_journal_scan(pcd_journal *j, const pcd_journal_options *o, uint64_t *expect, char *err,
                     size_t errlen)
{
    uint64_t *firsts;
    size_t n;
    if (list_segments(j, &firsts, &n, err, errlen) != 0)
        return -1;
    replay rp = {o, 0, false};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char path[4200];
        pcd_journal_path(j, firsts[i], path, sizeof path);
        uint64_t end = 0;
        pcp_jrec damage;
        if (read_segment(j, &rp, path, firsts[i], &end, &damage, err, errlen) != 0) {
            rc = -1;
            break;
        }
        struct stat sb;
        uint64_t size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : end;
        bool last = i + 1 == n;
        /* A damaged end is harmless when it is the end of the journal (a torn
         * append), or when the next segment starts at or before the first
         * record lost (recovery wrote them again there). */
        bool covered = !last && firsts[i + 1] <= rp.expect;
        if (damage == PCP_JREC_END) {
            /* clean */
        } else if ((damage == PCP_JREC_TORN && last) || covered) {
            pcd_warn("journal %s: %s tail at offset %" PRIu64 ", %" PRIu64 " bytes dropped", path,
                     damage == PCP_JREC_TORN ? "torn" : "damaged", end, size - end);
            if (end < PCP_JOURNAL_HEADER_LEN) {
                unlink(path);
                continue;
            }
            if (cut_file(path, end, err, errlen) != 0)
                rc = -1;
            size = end;
        } else if (o->truncate_corrupt) {
            pcd_error("journal %s: corrupt record at offset %" PRIu64 "; on_corrupt: truncate cuts "
                      "the journal there (%" PRIu64 " bytes of this file dropped)", path, end,
                      size - end);
            if (cut_file(path, end, err, errlen) != 0)
                rc = -1;
            size = end;
            set_aside(j, firsts, i + 1, n);
            n = i + 1;
        } else {
            snprintf(err, errlen,
                     "journal %s: corrupt record at offset %" PRIu64 " (%" PRIu64 " bytes before "
                     "the end); refusing to start: move the file aside, or set journal.on_corrupt: "
                     "truncate to drop everything from that record on", path, end, size - end);
            rc = -1;
        }
        if (rc == 0 && !pcd_journal_add_segment(j, firsts[i], size)) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    free(firsts);
    *expect = rp.any ? rp.expect : 1;
    return rc;
}
