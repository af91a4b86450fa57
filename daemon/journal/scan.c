/* scan.c - opening the journal: every segment checked in order,
 * a torn tail cut, corruption refused (or cut, with on_corrupt: truncate),
 * and every record replayed through the caller's apply function.  The byte
 * format is proto/journal.c's; journal.c appends after what this found. */
#include "daemon/journal/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/log.h"
#include "proto/journal.h"
#include "proto/proto.h"

bool pcd_journal_add_segment(pcd_journal *j, uint64_t first, uint64_t bytes)
{
    if (!PC_GROW(j->segs, j->segcap, j->nsegs, 16))
        return false;
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
        if (!PC_GROW(v, cap, k, 16)) {
            free(v);
            closedir(d);
            snprintf(err, errlen, "out of memory listing %s", j->dir);
            return -1;
        }
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

/* Moves segments [from, n) aside as <name>.<suffix>, kept, never read
 * again: the journal ends before them (why says how). */
static void set_aside(pcd_journal *j, const uint64_t *firsts, size_t from, size_t n,
                      const char *suffix, const char *why)
{
    for (size_t i = from; i < n; i++) {
        char path[4200], aside[4300];
        pcd_journal_path(j, firsts[i], path, sizeof path);
        snprintf(aside, sizeof aside, "%s.%s", path, suffix);
        if (rename(path, aside) == 0)
            pcd_error("journal: %s set aside as %s (%s)", path, aside, why);
    }
}

/* One segment file, mapped, and where reading it stopped. */
typedef struct segview {
    pcp_journal_reader r;  /* r.at: the clean end or where the damage starts */
    pcp_jrec damage;       /* PCP_JREC_END when clean */
    uint8_t *map;
    size_t size;
} segview;

/* Reads segment path: replays its records through rp.  0 with *v mapped
 * (the caller calls unmap_segment), or -1 with err. */
static int read_segment(pcd_journal *j, replay *rp, const char *path, uint64_t name_lsn,
                        segview *v, char *err, size_t errlen)
{
    *v = (segview){.damage = PCP_JREC_END};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        snprintf(err, errlen, "journal %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    v->size = (size_t)sb.st_size;
    if (v->size > 0) {
        void *m = mmap(NULL, v->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            snprintf(err, errlen, "journal %s: mmap: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        v->map = m;
    }
    close(fd);
    char why[200];
    int head = pcp_journal_reader_init(&v->r, v->map, v->size, why, sizeof why);
    if (head < 0) {
        snprintf(err, errlen, "journal %s: offset 0: %s", path, why);
        return -1;
    }
    if (head > 0) { /* the header never reached the disk: torn at 0 */
        v->damage = PCP_JREC_TORN;
        v->r.next_lsn = name_lsn;
        return 0;
    }
    if (v->r.first_lsn != name_lsn) {
        snprintf(err, errlen, "journal %s: offset 0: the header's first LSN (%" PRIu64 ") does "
                 "not match the file name", path, v->r.first_lsn);
        return -1;
    }
    if (rp->any && name_lsn > rp->expect) {
        snprintf(err, errlen,
                 "journal %s: records %" PRIu64 " to %" PRIu64 " are missing (a segment was "
                 "deleted?)", path, rp->expect, name_lsn - 1);
        return -1;
    }
    if (!rp->any)
        rp->expect = name_lsn;
    rp->any = true;
    j->last_version = v->r.version;
    for (;;) {
        uint64_t lsn;
        const uint8_t *msg;
        uint32_t len;
        pcp_jrec k = pcp_journal_next(&v->r, &lsn, &msg, &len);
        if (k != PCP_JREC_OK) {
            v->damage = k;
            break;
        }
        if (lsn < rp->expect)
            continue; /* written again after a failed fdatasync: seen */
        rp->expect = lsn + 1;
        j->st.replayed++;
        if (rp->o->apply(rp->o->ud, lsn, msg, len) != 0)
            j->st.replay_failed++;
    }
    return 0;
}

static void unmap_segment(segview *v)
{
    if (v->map)
        munmap(v->map, v->size);
    v->map = NULL;
}

/* What cutting a segment drops: its intact records past the damage. */
typedef struct dropped {
    size_t records;
    uint64_t first_lsn, last_lsn;
    char models[5][PCP_MODEL_NAME_MAX + 1]; /* the first few models they change */
    size_t nmodels;
    bool more_models;
} dropped;

static void on_dropped(void *ud, size_t offset, uint64_t lsn, const uint8_t *msg, uint32_t len)
{
    (void)offset;
    dropped *d = ud;
    if (!d->records++)
        d->first_lsn = lsn;
    d->last_lsn = lsn;
    /* The model is the first parameter of every journaled request. */
    msgpack_zone zone;
    msgpack_zone_init(&zone, 1024);
    pcp_scan_state st = {0};
    pcp_limits lim = {.max_message = len, .max_features = UINT32_MAX, .max_depth = 32,
                      .max_batch = UINT32_MAX};
    pcp_error err;
    size_t framed;
    msgpack_object o;
    pcp_message m;
    const char *name;
    size_t nlen;
    if (pcp_scan(&st, msg, len, &lim, &framed, &err) == 1 && framed == len &&
        pcp_unpack(msg, len, &zone, &o, &err) == PCP_OK &&
        pcp_message_parse(&o, &m, &err) == PCP_OK && m.nparams > 0 &&
        pcp_model_name(&m.params[0], &name, &nlen, &err) == PCP_OK) {
        char one[PCP_MODEL_NAME_MAX + 1];
        snprintf(one, sizeof one, "%.*s", (int)nlen, name);
        size_t k = 0;
        while (k < d->nmodels && strcmp(d->models[k], one))
            k++;
        if (k == d->nmodels && k < sizeof d->models / sizeof d->models[0])
            memcpy(d->models[d->nmodels++], one, sizeof one);
        else if (k == d->nmodels)
            d->more_models = true;
    }
    msgpack_zone_destroy(&zone);
}

/* Keeps bytes [at, size) of segment v in <path>.cut-<at>, synced, before
 * the segment is cut there: a cut never destroys evidence.  Says in why
 * what they hold. */
static int keep_cut(pcd_journal *j, const char *path, const segview *v, char *why, size_t whylen,
                    char *err, size_t errlen)
{
    size_t at = v->r.at;
    dropped d = {0};
    if (at >= PCP_JOURNAL_HEADER_LEN)
        pcp_journal_intact_after(&v->r, on_dropped, &d);
    if (d.records) {
        char models[400] = "";
        for (size_t k = 0; k < d.nmodels; k++)
            snprintf(models + strlen(models), sizeof models - strlen(models), "%s%s",
                     k ? ", " : "", d.models[k]);
        snprintf(why, whylen,
                 "the damaged record (LSN %" PRIu64 ") and %zu intact records after it (LSN %" PRIu64
                 " to %" PRIu64 "; models %s%s)", v->r.next_lsn, d.records, d.first_lsn,
                 d.last_lsn, d.nmodels ? models : "unknown", d.more_models ? ", ..." : "");
    } else
        snprintf(why, whylen, "no intact record (the next LSN would be %" PRIu64 ")",
                 v->r.next_lsn);
    char cut[4300];
    snprintf(cut, sizeof cut, "%s.cut-%zu", path, at);
    int fd = open(cut, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    size_t done = 0;
    while (fd >= 0 && done < v->size - at) {
        ssize_t w = write(fd, v->map + at + done, v->size - at - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    if (fd < 0 || done < v->size - at || fsync(fd) != 0 || fsync(j->dirfd) != 0) {
        snprintf(err, errlen, "journal %s: cannot keep the %zu bytes cut at offset %zu in %s: %s",
                 path, v->size - at, at, cut, strerror(errno ? errno : EIO));
        if (fd >= 0) {
            close(fd);
            unlink(cut);
        }
        return -1;
    }
    close(fd);
    pcd_warn("journal %s: the %zu bytes from offset %zu are kept in %s", path, v->size - at, at, cut);
    return 0;
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
        char path[4200], what[600];
        pcd_journal_path(j, firsts[i], path, sizeof path);
        segview v;
        if (read_segment(j, &rp, path, firsts[i], &v, err, errlen) != 0) {
            unmap_segment(&v);
            rc = -1;
            break;
        }
        uint64_t end = v.r.at, size = v.size;
        bool last = i + 1 == n;
        /* A damaged end is harmless when it is the end of the journal (a torn
         * append), or when the next segment starts at or before the first
         * record lost (recovery wrote them again there). */
        bool covered = !last && firsts[i + 1] <= rp.expect;
        /* A torn tail before the last segment: the writes a crash lost
         * spanned a new segment, whose pages reached the disk while some of
         * this one's did not (the page cache writes files back in any
         * order).  The journal ends at the tear; the later segments hold
         * only records after the lost ones, never synced (with `always`
         * none was acknowledged): set aside, kept, never replayed. */
        bool tear = v.damage == PCP_JREC_TORN && !covered;
        if (v.damage == PCP_JREC_END) {
            /* Clean, but short of the next segment's first record, and never
             * filled (a segment is followed by another once it holds
             * segment_bytes): the writes a crash lost spanned a rotation and
             * ended at a record boundary here, the new segment's header on
             * the disk, this one's last pages not.  A tear as above.  A full
             * segment followed by a gap had its successor deleted: refused
             * by read_segment. */
            if (!last && firsts[i + 1] > rp.expect && size < j->segment_bytes) {
                pcd_warn("journal %s: ends at LSN %" PRIu64 ", short of the next segment's "
                         "first (%" PRIu64 "), before it was full: its last writes were lost "
                         "in a crash", path, rp.expect - 1, firsts[i + 1]);
                set_aside(j, firsts, i + 1, n, "after-tear",
                          "after a segment whose last writes were lost: records never synced");
                n = i + 1;
            }
        } else if (tear || covered) {
            if (end < PCP_JOURNAL_HEADER_LEN) {
                char aside[4300];
                snprintf(aside, sizeof aside, "%s.torn", path);
                pcd_warn("journal %s: a segment whose header never reached the disk (%" PRIu64
                         " bytes), set aside as %s", path, size, aside);
                rename(path, aside);
                unmap_segment(&v);
                if (covered)
                    continue; /* the next segment holds its records again */
                set_aside(j, firsts, i + 1, n, "after-tear",
                          "after a torn segment: records never synced");
                break;
            }
            if (keep_cut(j, path, &v, what, sizeof what, err, errlen) != 0 ||
                cut_file(path, end, err, errlen) != 0) {
                rc = -1;
            } else {
                pcd_warn("journal %s: %s tail at offset %" PRIu64 ", %" PRIu64 " bytes dropped: %s",
                         path, v.damage == PCP_JREC_TORN ? "torn" : "damaged", end, size - end,
                         what);
                size = end;
                if (tear && !last) {
                    set_aside(j, firsts, i + 1, n, "after-tear",
                              "after a torn tail: records never synced");
                    n = i + 1;
                }
            }
        } else if (o->truncate_corrupt) {
            if (keep_cut(j, path, &v, what, sizeof what, err, errlen) != 0 ||
                cut_file(path, end, err, errlen) != 0) {
                rc = -1;
            } else {
                pcd_error("journal %s: corrupt record at offset %" PRIu64 " (LSN %" PRIu64 "); "
                          "on_corrupt: truncate cuts the journal there (%" PRIu64 " bytes of this "
                          "file dropped: %s)", path, end, v.r.next_lsn, size - end, what);
                size = end;
                set_aside(j, firsts, i + 1, n, "corrupt", "after the cut, on_corrupt: truncate");
                n = i + 1;
            }
        } else {
            snprintf(err, errlen,
                     "journal %s: corrupt record at offset %" PRIu64 " (LSN %" PRIu64 ", %" PRIu64
                     " bytes before the end); refusing to start: check it with `perceptronctl "
                     "journal %s`, then move the file aside, or set journal.on_corrupt: truncate "
                     "to drop everything from that record on (the bytes cut are kept beside it)",
                     path, end, v.r.next_lsn, size - end, path);
            rc = -1;
        }
        unmap_segment(&v);
        if (rc == 0 && !pcd_journal_add_segment(j, firsts[i], size)) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    free(firsts);
    *expect = rp.any ? rp.expect : 1;
    return rc;
}
