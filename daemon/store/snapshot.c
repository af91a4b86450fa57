/* snapshot.c - model snapshot files: atomic write, checksummed read with
 * fallback to older generations, listing, pruning, removal.
 *
 * The format and the write sequence are in snapshot.h and docs/persistence.md.
 * Why it is shaped this way:
 * - The writer runs in a child forked from the event loop, so writing the file
 *   allocates nothing: the small msgpack prefix ({"name", ..., "model": bin
 *   header}) is packed into a stack buffer and the model bytes (up to GiBs) are
 *   written straight from the caller's buffer.  "model" is the last key of the
 *   map precisely so that its bytes can follow the prefix unchanged.
 * - The reader trusts nothing: the payload length in the header must equal the
 *   file size minus the header before a byte is allocated, the CRC covers the
 *   whole payload, and the payload is pre-scanned with hard bounds (object
 *   count, string lengths against the bytes left) before msgpack-c sees it,
 *   because msgpack-c allocates count * 24 bytes from a container header alone.
 * - Every file name is built from a validated model name, so no name can reach
 *   outside dir or collide with the temp files (which start with '.').
 */
#include "daemon/store/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msgpack.h>
#include <zlib.h>

#include "daemon/base/statedir.h"
#include "lib/bytes.h"
#include "lib/perceptron.h"

#ifndef PCD_VERSION_STRING
#define PCD_VERSION_STRING PC_VERSION_STRING
#endif

#define SNAP_SUFFIX ".snap"
#define TMP_SUFFIX ".snap.tmp"
/* Header plus the msgpack prefix: map(1) + 5 keys (~50) + name str (2 + 64)
 * + two 9-byte integers + version str + bin32 header (5), with room to spare. */
#define PREFIX_MAX 512
/* Bounds for the payload pre-scan: the map has 5 entries today; leave room for
 * a few more fields in later versions without letting msgpack-c allocate much. */
#define PAYLOAD_OBJECTS_MAX 256
/* One write(2) call at most: Linux caps a single write at 0x7ffff000 anyway. */
#define WRITE_CHUNK (1u << 30)

/* ---- small helpers ------------------------------------------------------ */

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

bool pcd_snap_name_ok(const char *name)
{
    return name && pcp_model_name_valid(name, strnlen(name, PCD_SNAP_NAME_MAX + 1));
}

static int check_name(const char *name, char *err, size_t errlen)
{
    if (pcd_snap_name_ok(name))
        return 0;
    seterr(err, errlen,
           "invalid model name '%.80s': use 1..%d bytes of [A-Za-z0-9_.-], not starting with '.'",
           name ? name : "(null)", PCD_SNAP_NAME_MAX);
    return -1;
}

/* path = dir/<fmt...>; fails when it does not fit PATH_MAX. */
static int mkpath(char *path, const char *dir, const char *name, uint64_t gen, bool tmp, char *err,
                  size_t errlen)
{
    int n = tmp ? snprintf(path, PATH_MAX, "%s/.%s.%llu" TMP_SUFFIX, dir, name, (unsigned long long)gen)
                : snprintf(path, PATH_MAX, "%s/%s.%llu" SNAP_SUFFIX, dir, name, (unsigned long long)gen);
    if (n < 0 || n >= PATH_MAX) {
        seterr(err, errlen, "snapshot path in '%.200s' is longer than %d bytes", dir, PATH_MAX - 1);
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

/* "<name>.<gen>.snap" */
static bool parse_final(const char *fname, char *name, uint64_t *gen)
{
    size_t len = strlen(fname);
    if (fname[0] == '.' || !has_suffix(fname, len, SNAP_SUFFIX))
        return false;
    return parse_name_gen(fname, len - strlen(SNAP_SUFFIX), name, gen);
}

/* ".<name>.<gen>.snap.tmp" */
static bool parse_temp(const char *fname, char *name, uint64_t *gen)
{
    size_t len = strlen(fname);
    if (fname[0] != '.' || !has_suffix(fname, len, TMP_SUFFIX))
        return false;
    return parse_name_gen(fname + 1, len - 1 - strlen(TMP_SUFFIX), name, gen);
}

/* Calls cb for every entry of dir; stops at the first cb returning -1. */
static int scan_dir(const char *dir, int (*cb)(void *ud, const char *fname), void *ud, char *err,
                    size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        seterr(err, errlen, "open directory %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) {
                seterr(err, errlen, "read directory %s: %s", dir, strerror(errno));
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

typedef struct gen_list {
    const char *name;
    uint64_t *g;
    size_t n, cap;
    bool oom;
    /* optional: temp files of name are unlinked while scanning */
    const char *unlink_tmp_dir;
    int tmp_errno;
    char tmp_failed[PATH_MAX];
} gen_list;

static int gen_list_cb(void *ud, const char *fname)
{
    gen_list *l = ud;
    char nm[PCD_SNAP_NAME_MAX + 1];
    uint64_t g;
    if (l->unlink_tmp_dir && parse_temp(fname, nm, &g) && strcmp(nm, l->name) == 0) {
        char p[PATH_MAX];
        int k = snprintf(p, sizeof p, "%s/%s", l->unlink_tmp_dir, fname);
        if (k > 0 && k < (int)sizeof p && unlink(p) < 0 && errno != ENOENT && !l->tmp_errno) {
            l->tmp_errno = errno;
            memcpy(l->tmp_failed, p, sizeof p);
        }
        return 0;
    }
    if (!parse_final(fname, nm, &g) || strcmp(nm, l->name) != 0)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        uint64_t *ng = realloc(l->g, cap * sizeof *ng);
        if (!ng) {
            l->oom = true;
            return -1;
        }
        l->g = ng;
        l->cap = cap;
    }
    l->g[l->n++] = g;
    return 0;
}

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The generations of name in dir, newest first.  l->g is malloc'd. */
static int list_gens(const char *dir, gen_list *l, char *err, size_t errlen)
{
    if (scan_dir(dir, gen_list_cb, l, err, errlen) < 0) {
        if (l->oom)
            seterr(err, errlen, "listing %s: out of memory", dir);
        free(l->g);
        l->g = NULL;
        l->n = l->cap = 0;
        return -1;
    }
    if (l->n > 1)
        qsort(l->g, l->n, sizeof *l->g, cmp_desc);
    return 0;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct fixed_buf {
    uint8_t *p;
    size_t n, cap;
    bool overflow;
} fixed_buf;

static int fixed_buf_write(void *data, const char *buf, size_t len)
{
    fixed_buf *b = data;
    if (len > b->cap - b->n) {
        b->overflow = true;
        return -1;
    }
    memcpy(b->p + b->n, buf, len);
    b->n += len;
    return 0;
}

static int pack_key(msgpack_packer *pk, const char *k)
{
    return msgpack_pack_str_with_body(pk, k, strlen(k));
}

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
 * snapshot of model <name> fail with ENOSPC, as on a full disk.  A changed
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
    if (strlen(name) != nl || memcmp(name, v, nl) != 0)
        return false;
    if (colon && used >= strtoul(colon + 1, NULL, 10))
        return false;
    used++;
    return true;
}

/* Deletes generations older than the newest `keep` (never `written`) and any
 * temp file of name.  Returns 0, or -1 with err naming the first failure. */
static int prune(const char *dir, const char *name, uint64_t written, unsigned keep, char *err,
                 size_t errlen)
{
    gen_list l = {.name = name, .unlink_tmp_dir = dir};
    if (list_gens(dir, &l, err, errlen) < 0)
        return -1;
    int rc = 0;
    if (l.tmp_errno) {
        seterr(err, errlen, "unlink %s: %s", l.tmp_failed, strerror(l.tmp_errno));
        rc = -1;
    }
    for (size_t i = keep; i < l.n; i++) {
        char p[PATH_MAX];
        if (l.g[i] == written || mkpath(p, dir, name, l.g[i], false, NULL, 0) < 0)
            continue;
        if (unlink(p) < 0 && errno != ENOENT && rc == 0) {
            seterr(err, errlen, "unlink old generation %s: %s", p, strerror(errno));
            rc = -1;
        }
    }
    free(l.g);
    return rc;
}

/* Creates tmp and writes head and model to it durably.  Returns 0, or an
 * errno value with *step naming the step that failed; the caller removes tmp. */
static int write_temp(const char *tmp, const char *name, const uint8_t *head, size_t hlen,
                      const uint8_t *model, size_t len, const char **step)
{
    *step = "open";
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (fd < 0)
        return errno;
    int e = 0;
    *step = "write";
    if (test_enospc(name))
        e = ENOSPC;
    else if (write_all(fd, head, hlen) < 0 || write_all(fd, model, len) < 0)
        e = errno;
    if (!e) {
        *step = "fsync";
        if (fsync(fd) < 0)
            e = errno;
    }
    if (e) {
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
    gen_list l = {.name = name, .unlink_tmp_dir = dir};
    if (list_gens(dir, &l, NULL, 0) < 0)
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
        if (i != keep && mkpath(p, dir, name, l.g[i], false, NULL, 0) == 0 && unlink(p) == 0)
            removed++;
    }
    free(l.g);
    return removed;
}

static int make_head(uint8_t *head, size_t *hlen, const char *name, uint64_t generation,
                     int64_t written_at, uint64_t journal_lsn, uint64_t stream_ms,
                     uint64_t stream_seq, const uint8_t *model, size_t len, char *err,
                     size_t errlen);

int pcd_snapshot_write(const char *dir, const char *name, uint64_t generation, int64_t written_at,
                       uint64_t journal_lsn, uint64_t stream_ms, uint64_t stream_seq,
                       const uint8_t *model, size_t len, unsigned keep, char *err, size_t errlen)
{
    if (check_name(name, err, errlen) < 0)
        return -1;
    if (generation == 0) {
        seterr(err, errlen, "snapshot of '%s': generation must be >= 1", name);
        return -1;
    }
    if (!model && len > 0) {
        seterr(err, errlen, "snapshot of '%s': no model bytes", name);
        return -1;
    }
    char tmp[PATH_MAX], fin[PATH_MAX];
    if (mkpath(tmp, dir, name, generation, true, err, errlen) < 0 ||
        mkpath(fin, dir, name, generation, false, err, errlen) < 0)
        return -1;

    /* Header and msgpack prefix in one stack buffer: no allocation here. */
    uint8_t head[PREFIX_MAX];
    size_t hlen;
    if (make_head(head, &hlen, name, generation, written_at, journal_lsn, stream_ms, stream_seq,
                  model, len, err, errlen) < 0)
        return -1;

    /* A leftover temp of this very generation (a crash mid-write) is replaced;
     * O_EXCL then guarantees we write a fresh regular file, not through a link. */
    if (unlink(tmp) < 0 && errno != ENOENT) {
        seterr(err, errlen, "unlink stale %s: %s", tmp, strerror(errno));
        return -1;
    }
    const char *step;
    int e = write_temp(tmp, name, head, hlen, model, len, &step);
    if (e == ENOSPC || e == EDQUOT) {
        /* Keeping `keep` generations, a save needs room for one more: without
         * this, one failure for lack of space is followed by every later one.
         * Make room from this model's own files and try once more. */
        unlink(tmp);
        if (make_room(dir, name) > 0)
            e = write_temp(tmp, name, head, hlen, model, len, &step);
    }
    if (e) {
        if (unlink(tmp) < 0 && errno != ENOENT)
            seterr(err, errlen, "%s %s: %s (and the temp file could not be removed: %s)", step,
                   tmp, strerror(e), strerror(errno));
        else
            seterr(err, errlen, "%s %s: %s", step, tmp, strerror(e));
        return -1;
    }
    if (rename(tmp, fin) < 0) {
        seterr(err, errlen, "rename %s to %s: %s", tmp, fin, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (pcd_fsync_dir(dir) < 0) {
        seterr(err, errlen, "fsync directory %s (after writing %s): %s", dir, fin, strerror(errno));
        return -1;
    }
    return prune(dir, name, generation, keep ? keep : 1, err, errlen) < 0 ? 1 : 0;
}

/* The header and the payload's msgpack prefix of a snapshot into head
 * (PREFIX_MAX bytes): *hlen bytes, the model's follow.  No allocation. */
static int make_head(uint8_t *head, size_t *hlen, const char *name, uint64_t generation,
                     int64_t written_at, uint64_t journal_lsn, uint64_t stream_ms,
                     uint64_t stream_seq, const uint8_t *model, size_t len, char *err,
                     size_t errlen)
{
    fixed_buf fb = {.p = head + PCD_SNAP_HEADER_LEN, .cap = PREFIX_MAX - PCD_SNAP_HEADER_LEN};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &fb, fixed_buf_write);
    const char *ver = PCD_VERSION_STRING;
    /* One call per statement: the order of operands of | is unspecified. */
    char sid[48];
    snprintf(sid, sizeof sid, "%llu-%llu", (unsigned long long)stream_ms,
             (unsigned long long)stream_seq);
    int bad = msgpack_pack_map(&pk, 7);
    bad |= pack_key(&pk, "name");
    bad |= msgpack_pack_str_with_body(&pk, name, strlen(name));
    bad |= pack_key(&pk, "generation");
    bad |= msgpack_pack_uint64(&pk, generation);
    bad |= pack_key(&pk, "written_at");
    bad |= msgpack_pack_int64(&pk, written_at);
    bad |= pack_key(&pk, "daemon_version");
    bad |= msgpack_pack_str_with_body(&pk, ver, strlen(ver));
    bad |= pack_key(&pk, "journal_lsn");
    bad |= msgpack_pack_uint64(&pk, journal_lsn);
    bad |= pack_key(&pk, "stream_id"); /* the shared log's entry ID (scale-out.md) */
    bad |= msgpack_pack_str_with_body(&pk, sid, strlen(sid));
    bad |= pack_key(&pk, "model");          /* last: the model bytes follow the prefix */
    bad |= msgpack_pack_bin(&pk, len);
    if (bad || fb.overflow || len > UINT32_MAX) {
        /* bin32 is msgpack's largest binary: 4 GiB - 1 per model. */
        seterr(err, errlen, "snapshot of '%s': model of %zu bytes does not fit the format (max %u)",
               name, len, UINT32_MAX);
        return -1;
    }
    uLong crc = crc32_z(0L, Z_NULL, 0);
    crc = crc32_z(crc, fb.p, fb.n);
    if (len > 0)
        crc = crc32_z(crc, model, len);
    memcpy(head, PCD_SNAP_MAGIC, PCD_SNAP_MAGIC_LEN);
    pc_put_u32(head + 8, PCD_SNAP_VERSION);
    pc_put_u64(head + 12, (uint64_t)fb.n + len);
    pc_put_u32(head + 20, (uint32_t)crc);
    *hlen = PCD_SNAP_HEADER_LEN + fb.n;
    return 0;
}

int pcd_snapshot_encode(const char *name, uint64_t generation, int64_t written_at,
                        const uint8_t *model, size_t len, uint8_t **out, size_t *outlen,
                        char *err, size_t errlen)
{
    uint8_t head[PREFIX_MAX];
    size_t hlen;
    if (check_name(name, err, errlen) < 0 ||
        make_head(head, &hlen, name, generation ? generation : 1, written_at, 0, 0, 0, model, len,
                  err, errlen) < 0)
        return -1;
    uint8_t *b = malloc(hlen + len);
    if (!b) {
        seterr(err, errlen, "out of memory for a %zu-byte snapshot", hlen + len);
        return -1;
    }
    memcpy(b, head, hlen);
    if (len)
        memcpy(b + hlen, model, len);
    *out = b;
    *outlen = hlen + len;
    return 0;
}

/* ---- reading ------------------------------------------------------------ */

/* Walks one msgpack object without allocating: every length within the bytes
 * left, at most PAYLOAD_OBJECTS_MAX objects in all.  Returns the bytes it
 * spans, or 0 with why set. */
static size_t prescan(const uint8_t *p, size_t len, const char **why)
{
    size_t off = 0, pending = 1, objects = 0;
    while (pending > 0) {
        if (++objects > PAYLOAD_OBJECTS_MAX) {
            *why = "payload has too many objects";
            return 0;
        }
        pending--;
        if (off >= len) {
            *why = "payload ends inside an object";
            return 0;
        }
        uint8_t t = p[off++];
        uint64_t body = 0, count = 0;     /* bytes to skip; child objects */
        size_t lenbytes = 0;              /* big-endian length field that follows */
        unsigned per = 0;                 /* containers with lenbytes: children per entry */
        bool is_ext = false;
        if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
            /* fixint, nil, bool */
        } else if (t <= 0x8f) {
            count = 2u * (t & 0x0f);
        } else if (t <= 0x9f) {
            count = t & 0x0f;
        } else if (t <= 0xbf) {
            body = t & 0x1f;
        } else {
            switch (t) {
            case 0xc4: case 0xd9: lenbytes = 1; break;          /* bin8, str8 */
            case 0xc5: case 0xda: lenbytes = 2; break;          /* bin16, str16 */
            case 0xc6: case 0xdb: lenbytes = 4; break;          /* bin32, str32 */
            case 0xc7: lenbytes = 1; is_ext = true; break;      /* ext8/16/32 */
            case 0xc8: lenbytes = 2; is_ext = true; break;
            case 0xc9: lenbytes = 4; is_ext = true; break;
            case 0xca: body = 4; break;                         /* float32 */
            case 0xcb: body = 8; break;                         /* float64 */
            case 0xcc: case 0xd0: body = 1; break;              /* (u)int8 */
            case 0xcd: case 0xd1: body = 2; break;
            case 0xce: case 0xd2: body = 4; break;
            case 0xcf: case 0xd3: body = 8; break;
            case 0xd4: body = 2; break;                         /* fixext: type + data */
            case 0xd5: body = 3; break;
            case 0xd6: body = 5; break;
            case 0xd7: body = 9; break;
            case 0xd8: body = 17; break;
            case 0xdc: lenbytes = 2; per = 1; break;            /* array16/32 */
            case 0xdd: lenbytes = 4; per = 1; break;
            case 0xde: lenbytes = 2; per = 2; break;            /* map16/32 */
            case 0xdf: lenbytes = 4; per = 2; break;
            default:
                *why = "payload has an invalid msgpack byte";   /* 0xc1 */
                return 0;
            }
        }
        if (lenbytes) {
            if (len - off < lenbytes) {
                *why = "payload ends inside a length";
                return 0;
            }
            uint64_t n = 0;
            for (size_t i = 0; i < lenbytes; i++)
                n = n << 8 | p[off + i];
            off += lenbytes;
            if (per)
                count = per * n;           /* n children, 2n for a map */
            else
                body = n + (is_ext ? 1 : 0);   /* ext: one type byte, then n */
        }
        if (body > len - off) {
            *why = "payload has a length past its end";
            return 0;
        }
        off += (size_t)body;
        /* Each child needs at least one byte: this bounds what msgpack-c allocates. */
        if (count > len - off || count > PAYLOAD_OBJECTS_MAX) {
            *why = "payload has a container count past its end";
            return 0;
        }
        pending += (size_t)count;
    }
    return off;
}

static bool key_is(const msgpack_object *k, const char *s)
{
    size_t n = strlen(s);
    return k->via.str.size == n && memcmp(k->via.str.ptr, s, n) == 0;
}

static char *dup_str(const msgpack_object *o)
{
    char *s = malloc(o->via.str.size + 1);
    if (s) {
        memcpy(s, o->via.str.ptr, o->via.str.size);
        s[o->via.str.size] = '\0';
    }
    return s;
}

/* Checks the payload in buf (plen bytes, CRC already verified) against name and
 * gen; on success moves the model bytes to the front of buf and fills info. */
static int decode_payload(uint8_t *buf, size_t plen, const char *name, uint64_t gen, size_t *mlen,
                          pcd_snap_info *info, char *why, size_t whylen)
{
    const char *w = NULL;
    size_t span = prescan(buf, plen, &w);
    if (span == 0) {
        seterr(why, whylen, "%s", w);
        return -1;
    }
    if (span != plen) {
        seterr(why, whylen, "%zu bytes after the payload map", plen - span);
        return -1;
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    int rc = -1;
    const msgpack_object *o_name = NULL, *o_gen = NULL, *o_at = NULL, *o_ver = NULL, *o_model = NULL,
                         *o_lsn = NULL, *o_sid = NULL;
    if (msgpack_unpack_next(&up, (const char *)buf, plen, &off) != MSGPACK_UNPACK_SUCCESS) {
        seterr(why, whylen, "payload is not valid MessagePack");
        goto out;
    }
    if (up.data.type != MSGPACK_OBJECT_MAP) {
        seterr(why, whylen, "payload is not a map");
        goto out;
    }
    for (uint32_t i = 0; i < up.data.via.map.size; i++) {
        const msgpack_object *k = &up.data.via.map.ptr[i].key, *v = &up.data.via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR) {
            seterr(why, whylen, "payload has a key that is not a string");
            goto out;
        }
        const msgpack_object **slot = key_is(k, "name") ? &o_name
                                    : key_is(k, "generation") ? &o_gen
                                    : key_is(k, "written_at") ? &o_at
                                    : key_is(k, "daemon_version") ? &o_ver
                                    : key_is(k, "journal_lsn") ? &o_lsn
                                    : key_is(k, "stream_id") ? &o_sid
                                    : key_is(k, "model") ? &o_model : NULL;
        if (!slot)
            continue;   /* unknown keys: fields a later minor revision may add */
        if (*slot) {
            seterr(why, whylen, "payload has key '%.*s' twice", (int)k->via.str.size, k->via.str.ptr);
            goto out;
        }
        *slot = v;
    }
    if (!o_name || o_name->type != MSGPACK_OBJECT_STR) {
        seterr(why, whylen, "payload has no 'name' string");
        goto out;
    }
    if (name && (o_name->via.str.size != strlen(name) ||
                 memcmp(o_name->via.str.ptr, name, strlen(name)) != 0)) {
        seterr(why, whylen, "file holds model '%.*s', not '%s'",
               (int)(o_name->via.str.size > 80 ? 80 : o_name->via.str.size), o_name->via.str.ptr, name);
        goto out;
    }
    if (!o_gen || o_gen->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        seterr(why, whylen, "payload has no 'generation' integer");
        goto out;
    }
    if (gen && o_gen->via.u64 != gen) {
        seterr(why, whylen, "file holds generation %llu, its name says %llu",
               (unsigned long long)o_gen->via.u64, (unsigned long long)gen);
        goto out;
    }
    int64_t at;
    if (o_at && o_at->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o_at->via.u64 <= INT64_MAX)
        at = (int64_t)o_at->via.u64;
    else if (o_at && o_at->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        at = o_at->via.i64;
    else {
        seterr(why, whylen, "payload has no 'written_at' integer");
        goto out;
    }
    if (o_ver && o_ver->type != MSGPACK_OBJECT_STR) {
        seterr(why, whylen, "payload 'daemon_version' is not a string");
        goto out;
    }
    if (o_lsn && o_lsn->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        seterr(why, whylen, "payload 'journal_lsn' is not an unsigned integer");
        goto out;
    }
    unsigned long long sms = 0, sseq = 0;
    if (o_sid) {
        char sid[48];
        int n = -1;
        if (o_sid->type == MSGPACK_OBJECT_STR && o_sid->via.str.size < sizeof sid) {
            memcpy(sid, o_sid->via.str.ptr, o_sid->via.str.size);
            sid[o_sid->via.str.size] = 0;
            if (sscanf(sid, "%llu-%llu%n", &sms, &sseq, &n) != 2)
                n = -1;
        }
        if (n < 0 || (size_t)n != o_sid->via.str.size) {
            seterr(why, whylen, "payload 'stream_id' is not a stream entry ID (ms-seq)");
            goto out;
        }
    }
    if (!o_model || o_model->type != MSGPACK_OBJECT_BIN) {
        seterr(why, whylen, "payload has no 'model' bytes");
        goto out;
    }
    pcd_snap_info tmp = {.generation = o_gen->via.u64, .written_at = at,
                         .journal_lsn = o_lsn ? o_lsn->via.u64 : 0,
                         .stream_ms = sms, .stream_seq = sseq};
    if (info) {
        /* Copied before the model bytes move over the strings they point into. */
        tmp.name = dup_str(o_name);
        tmp.daemon_version = o_ver ? dup_str(o_ver) : strdup("");
        if (!tmp.name || !tmp.daemon_version) {
            pcd_snap_info_free(&tmp);
            seterr(why, whylen, "out of memory");
            goto out;
        }
    }
    /* msgpack-c points bin objects into buf; the model bytes lie inside it. */
    *mlen = o_model->via.bin.size;
    memmove(buf, o_model->via.bin.ptr, *mlen);
    if (info)
        *info = tmp;
    rc = 0;
out:
    msgpack_unpacked_destroy(&up);
    return rc;
}

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

/* Magic, version, and the payload length against the bytes there are
 * (`have`): the length is trusted only once it agrees. */
static int check_header(const uint8_t *h, uint64_t have, uint64_t *plen, char *why, size_t whylen)
{
    if (memcmp(h, PCD_SNAP_MAGIC, PCD_SNAP_MAGIC_LEN) != 0) {
        seterr(why, whylen, "bad magic (not a snapshot file, or corrupt)");
        return -1;
    }
    uint32_t ver = pc_get_u32(h + 8);
    if (ver != PCD_SNAP_VERSION) {
        seterr(why, whylen, "format version %u, this daemon reads version %u%s", ver, PCD_SNAP_VERSION,
               ver > PCD_SNAP_VERSION ? " (written by a newer daemon)" : " (file corrupt)");
        return -1;
    }
    *plen = pc_get_u64(h + 12);
    if (*plen != have) {
        seterr(why, whylen, "%s: header says %llu payload bytes, there are %llu (file corrupt)",
               *plen > have ? "truncated" : "length mismatch", (unsigned long long)*plen,
               (unsigned long long)have);
        return -1;
    }
    return 0;
}

int pcd_snapshot_parse(uint8_t *buf, size_t len, const uint8_t **model, size_t *mlen,
                       pcd_snap_info *info, char *err, size_t errlen)
{
    uint64_t plen;
    if (len < PCD_SNAP_HEADER_LEN) {
        seterr(err, errlen, "truncated (%zu bytes, the header alone is %d)", len,
               PCD_SNAP_HEADER_LEN);
        return -1;
    }
    if (check_header(buf, len - PCD_SNAP_HEADER_LEN, &plen, err, errlen) < 0)
        return -1;
    uint8_t *payload = buf + PCD_SNAP_HEADER_LEN;
    uLong crc = crc32_z(crc32_z(0L, Z_NULL, 0), payload, (size_t)plen);
    if ((uint32_t)crc != pc_get_u32(buf + 20)) {
        seterr(err, errlen, "CRC mismatch (corrupt)");
        return -1;
    }
    if (decode_payload(payload, (size_t)plen, NULL, 0, mlen, info, err, errlen) < 0)
        return -1;
    *model = payload;
    return 0;
}

int pcd_snapshot_read_generation(const char *dir, const char *name, uint64_t gen, uint8_t **model,
                                 size_t *len, pcd_snap_info *info, char *err, size_t errlen)
{
    if (check_name(name, err, errlen) < 0)
        return -1;
    char why[300];
    if (read_one(dir, name, gen, model, len, info, why, sizeof why) < 0) {
        seterr(err, errlen, "generation %llu of '%s': %s", (unsigned long long)gen, name, why);
        return -1;
    }
    return 0;
}

int pcd_snapshot_generations(const char *dir, const char *name, uint64_t **gens, size_t *n,
                             char *err, size_t errlen)
{
    if (check_name(name, err, errlen) < 0)
        return -1;
    gen_list l = {.name = name};
    if (list_gens(dir, &l, err, errlen) < 0)
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
    if (mkpath(path, dir, name, gen, false, why, whylen) < 0)
        return -1;
    /* O_NONBLOCK: a FIFO under a snapshot's name must not hang the start-up;
     * it has no effect on the regular files we go on to read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        seterr(why, whylen, "open: %s", strerror(errno));
        return -1;
    }
    uint8_t *buf = NULL;
    int rc = -1;
    struct stat st;
    uint8_t h[PCD_SNAP_HEADER_LEN];
    if (fstat(fd, &st) < 0) {
        seterr(why, whylen, "stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        seterr(why, whylen, "not a regular file");
        goto out;
    }
    if (st.st_size < PCD_SNAP_HEADER_LEN) {
        seterr(why, whylen, "truncated (%lld bytes, the header alone is %d) (file corrupt)",
               (long long)st.st_size, PCD_SNAP_HEADER_LEN);
        goto out;
    }
    if (read_all(fd, h, sizeof h, 0) < 0) {
        seterr(why, whylen, "read: %s", errno ? strerror(errno) : "file shrank while reading");
        goto out;
    }
    uint64_t plen;
    if (check_header(h, (uint64_t)st.st_size - PCD_SNAP_HEADER_LEN, &plen, why, whylen) < 0)
        goto out;
    if (plen > SIZE_MAX - 1) {
        seterr(why, whylen, "payload of %llu bytes does not fit in memory", (unsigned long long)plen);
        goto out;
    }
    buf = malloc(plen ? (size_t)plen : 1);
    if (!buf) {
        seterr(why, whylen, "out of memory for a %llu-byte payload", (unsigned long long)plen);
        goto out;
    }
    if (read_all(fd, buf, (size_t)plen, PCD_SNAP_HEADER_LEN) < 0) {
        seterr(why, whylen, "read: %s", errno ? strerror(errno) : "file shrank while reading");
        goto out;
    }
    uLong crc = crc32_z(crc32_z(0L, Z_NULL, 0), buf, (size_t)plen);
    if ((uint32_t)crc != pc_get_u32(h + 20)) {
        seterr(why, whylen, "CRC mismatch (file corrupt)");
        goto out;
    }
    size_t n;
    if (decode_payload(buf, (size_t)plen, name, gen, &n, info, why, whylen) < 0)
        goto out;
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
        seterr(why, whylen, "passed its CRC but %s", reason);
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

int pcd_snapshot_read_accepted(const char *dir, const char *name, pcd_snap_accept accept,
                               void *accept_ud, uint8_t **model, size_t *len, pcd_snap_info *info,
                               void (*warn)(void *ud, const char *msg), void *ud, char *err,
                               size_t errlen)
{
    if (check_name(name, err, errlen) < 0)
        return PCD_SNAP_ERR;
    gen_list l = {.name = name};
    if (list_gens(dir, &l, err, errlen) < 0)
        return PCD_SNAP_ERR;
    if (l.n == 0) {
        seterr(err, errlen, "no snapshot of '%s' in %s", name, dir);
        return PCD_SNAP_NONE;
    }
    char first[256] = "";
    int rc = PCD_SNAP_ERR;
    for (size_t i = 0; i < l.n; i++) {
        char why[200];
        if (read_accepted(dir, name, l.g[i], accept, accept_ud, model, len, info, why,
                          sizeof why) == 0) {
            rc = 0;
            break;
        }
        char msg[512];
        if (i + 1 < l.n)
            snprintf(msg, sizeof msg, "%s.%llu.snap: %s, trying generation %llu", name,
                     (unsigned long long)l.g[i], why, (unsigned long long)l.g[i + 1]);
        else
            snprintf(msg, sizeof msg, "%s.%llu.snap: %s, no older generation left", name,
                     (unsigned long long)l.g[i], why);
        if (i == 0)
            snprintf(first, sizeof first, "%s.%llu.snap: %s", name, (unsigned long long)l.g[i], why);
        if (warn)
            warn(ud, msg);
    }
    if (rc < 0)
        seterr(err, errlen, "%zu generation%s of '%s' in %s, all unreadable (newest %s)", l.n,
               l.n == 1 ? "" : "s", name, dir, first);
    free(l.g);
    return rc;
}

void pcd_snap_info_free(pcd_snap_info *info)
{
    if (!info)
        return;
    free(info->name);
    free(info->daemon_version);
    memset(info, 0, sizeof *info);
}

/* ---- names, latest, remove, state dir ----------------------------------- */

typedef struct name_list {
    char **v;
    size_t n, cap;
    bool oom;
} name_list;

static int name_list_cb(void *ud, const char *fname)
{
    name_list *l = ud;
    char nm[PCD_SNAP_NAME_MAX + 1];
    uint64_t g;
    if (!parse_final(fname, nm, &g))
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) {
            l->oom = true;
            return -1;
        }
        l->v = nv;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(nm))) {
        l->oom = true;
        return -1;
    }
    l->n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int pcd_snapshot_names(const char *dir, char ***names, size_t *n, char *err, size_t errlen)
{
    name_list l = {0};
    if (scan_dir(dir, name_list_cb, &l, err, errlen) < 0) {
        if (l.oom)
            seterr(err, errlen, "listing %s: out of memory", dir);
        for (size_t i = 0; i < l.n; i++)
            free(l.v[i]);
        free(l.v);
        return -1;
    }
    if (l.n > 1)
        qsort(l.v, l.n, sizeof *l.v, cmp_str);
    size_t k = 0;   /* one entry per name: drop the other generations' duplicates */
    for (size_t i = 0; i < l.n; i++) {
        if (k > 0 && strcmp(l.v[k - 1], l.v[i]) == 0)
            free(l.v[i]);
        else
            l.v[k++] = l.v[i];
    }
    if (k == 0) {
        free(l.v);
        l.v = NULL;
    }
    *names = l.v;
    *n = k;
    return 0;
}

uint64_t pcd_snapshot_latest_generation(const char *dir, const char *name)
{
    if (!pcd_snap_name_ok(name))
        return 0;
    gen_list l = {.name = name};
    if (list_gens(dir, &l, NULL, 0) < 0)
        return 0;
    uint64_t g = l.n ? l.g[0] : 0;
    free(l.g);
    return g;
}

int pcd_snapshot_remove(const char *dir, const char *name, char *err, size_t errlen)
{
    if (check_name(name, err, errlen) < 0)
        return -1;
    gen_list l = {.name = name, .unlink_tmp_dir = dir};
    if (list_gens(dir, &l, err, errlen) < 0)
        return -1;
    int removed = 0, rc = 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        char p[PATH_MAX];
        if (mkpath(p, dir, name, l.g[i], false, err, errlen) < 0) {
            rc = -1;
        } else if (unlink(p) < 0) {
            if (errno != ENOENT) {
                seterr(err, errlen, "unlink %s: %s", p, strerror(errno));
                rc = -1;
            }
        } else {
            removed++;
        }
    }
    free(l.g);
    if (rc == 0 && l.tmp_errno) {
        seterr(err, errlen, "unlink %s: %s", l.tmp_failed, strerror(l.tmp_errno));
        rc = -1;
    }
    /* A dropped model must not come back after a crash. */
    if (pcd_fsync_dir(dir) < 0 && rc == 0) {
        seterr(err, errlen, "fsync directory %s: %s", dir, strerror(errno));
        rc = -1;
    }
    return rc < 0 ? -1 : removed;
}

int pcd_snapshot_remove_generation(const char *dir, const char *name, uint64_t generation,
                                   char *err, size_t errlen)
{
    char p[PATH_MAX];
    if (check_name(name, err, errlen) < 0 || mkpath(p, dir, name, generation, false, err, errlen) < 0)
        return -1;
    if (unlink(p) < 0 && errno != ENOENT) {
        seterr(err, errlen, "unlink %s: %s", p, strerror(errno));
        return -1;
    }
    if (pcd_fsync_dir(dir) < 0) {
        seterr(err, errlen, "fsync directory %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}
