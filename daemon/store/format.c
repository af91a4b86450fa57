/* format.c - the bytes of one snapshot file: the header, the payload's
 * msgpack prefix and its checks (snapshot.h has the layout).  No file system
 * here: snapshot.c writes and reads the files, their generations and the
 * directory.
 *
 * Why it is shaped this way:
 * - The writer runs in a child forked from the event loop, so making a file
 *   allocates nothing: the small msgpack prefix ({"name", ..., "model": bin
 *   header}) is packed into a stack buffer and the model bytes (up to GiBs)
 *   follow straight from the caller's buffer.  "model" is the last key of the
 *   map precisely so that its bytes can follow the prefix unchanged.
 * - The reader trusts nothing: the payload length in the header must equal
 *   the bytes there are before a byte is allocated, the CRC covers the whole
 *   payload, and the payload is pre-scanned with hard bounds (object count,
 *   string lengths against the bytes left) before msgpack-c sees it, because
 *   msgpack-c allocates count * 24 bytes from a container header alone.
 */
#include "daemon/store/format.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>
#include <zlib.h>

#include "lib/bytes.h"
#include "lib/perceptron.h"

#ifndef PCD_VERSION_STRING
#define PCD_VERSION_STRING PC_VERSION_STRING
#endif

/* Bounds for the payload pre-scan: the map has 7 entries today; leave room for
 * a few more fields in later versions without letting msgpack-c allocate much. */
#define PAYLOAD_OBJECTS_MAX 256

void pcd_snap_seterr(char *err, size_t errlen, const char *fmt, ...)
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

int pcd_snap_check_name(const char *name, char *err, size_t errlen)
{
    if (pcd_snap_name_ok(name))
        return 0;
    pcd_snap_seterr(err, errlen,
           "invalid model name '%.80s': use 1..%d bytes of [A-Za-z0-9_.-], not starting with '.'",
           name ? name : "(null)", PCD_SNAP_NAME_MAX);
    return -1;
}

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

/* The header and the payload's msgpack prefix of a snapshot into head
 * (PCD_SNAP_PREFIX_MAX bytes): *hlen bytes, the model's follow.  No allocation. */
int pcd_snap_head(uint8_t *head, size_t *hlen, const char *name, uint64_t generation,
                     int64_t written_at, uint64_t journal_lsn, uint64_t stream_ms,
                     uint64_t stream_seq, const uint8_t *model, size_t len, char *err,
                     size_t errlen)
{
    fixed_buf fb = {.p = head + PCD_SNAP_HEADER_LEN, .cap = PCD_SNAP_PREFIX_MAX - PCD_SNAP_HEADER_LEN};
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
        pcd_snap_seterr(err, errlen, "snapshot of '%s': model of %zu bytes does not fit the format (max %u)",
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
    uint8_t head[PCD_SNAP_PREFIX_MAX];
    size_t hlen;
    if (pcd_snap_check_name(name, err, errlen) < 0 ||
        pcd_snap_head(head, &hlen, name, generation ? generation : 1, written_at, 0, 0, 0, model, len,
                  err, errlen) < 0)
        return -1;
    uint8_t *b = malloc(hlen + len);
    if (!b) {
        pcd_snap_seterr(err, errlen, "out of memory for a %zu-byte snapshot", hlen + len);
        return -1;
    }
    memcpy(b, head, hlen);
    if (len)
        memcpy(b + hlen, model, len);
    *out = b;
    *outlen = hlen + len;
    return 0;
}

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
int pcd_snap_payload(uint8_t *buf, size_t plen, const char *name, uint64_t gen, size_t *mlen,
                          pcd_snap_info *info, char *why, size_t whylen)
{
    const char *w = NULL;
    size_t span = prescan(buf, plen, &w);
    if (span == 0) {
        pcd_snap_seterr(why, whylen, "%s", w);
        return -1;
    }
    if (span != plen) {
        pcd_snap_seterr(why, whylen, "%zu bytes after the payload map", plen - span);
        return -1;
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    int rc = -1;
    const msgpack_object *o_name = NULL, *o_gen = NULL, *o_at = NULL, *o_ver = NULL, *o_model = NULL,
                         *o_lsn = NULL, *o_sid = NULL;
    if (msgpack_unpack_next(&up, (const char *)buf, plen, &off) != MSGPACK_UNPACK_SUCCESS) {
        pcd_snap_seterr(why, whylen, "payload is not valid MessagePack");
        goto out;
    }
    if (up.data.type != MSGPACK_OBJECT_MAP) {
        pcd_snap_seterr(why, whylen, "payload is not a map");
        goto out;
    }
    for (uint32_t i = 0; i < up.data.via.map.size; i++) {
        const msgpack_object *k = &up.data.via.map.ptr[i].key, *v = &up.data.via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR) {
            pcd_snap_seterr(why, whylen, "payload has a key that is not a string");
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
            pcd_snap_seterr(why, whylen, "payload has key '%.*s' twice", (int)k->via.str.size, k->via.str.ptr);
            goto out;
        }
        *slot = v;
    }
    if (!o_name || o_name->type != MSGPACK_OBJECT_STR) {
        pcd_snap_seterr(why, whylen, "payload has no 'name' string");
        goto out;
    }
    if (name && (o_name->via.str.size != strlen(name) ||
                 memcmp(o_name->via.str.ptr, name, strlen(name)) != 0)) {
        pcd_snap_seterr(why, whylen, "file holds model '%.*s', not '%s'",
               (int)(o_name->via.str.size > 80 ? 80 : o_name->via.str.size), o_name->via.str.ptr, name);
        goto out;
    }
    if (!o_gen || o_gen->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        pcd_snap_seterr(why, whylen, "payload has no 'generation' integer");
        goto out;
    }
    if (gen && o_gen->via.u64 != gen) {
        pcd_snap_seterr(why, whylen, "file holds generation %llu, its name says %llu",
               (unsigned long long)o_gen->via.u64, (unsigned long long)gen);
        goto out;
    }
    int64_t at;
    if (o_at && o_at->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o_at->via.u64 <= INT64_MAX)
        at = (int64_t)o_at->via.u64;
    else if (o_at && o_at->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        at = o_at->via.i64;
    else {
        pcd_snap_seterr(why, whylen, "payload has no 'written_at' integer");
        goto out;
    }
    if (o_ver && o_ver->type != MSGPACK_OBJECT_STR) {
        pcd_snap_seterr(why, whylen, "payload 'daemon_version' is not a string");
        goto out;
    }
    if (o_lsn && o_lsn->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        pcd_snap_seterr(why, whylen, "payload 'journal_lsn' is not an unsigned integer");
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
            pcd_snap_seterr(why, whylen, "payload 'stream_id' is not a stream entry ID (ms-seq)");
            goto out;
        }
    }
    if (!o_model || o_model->type != MSGPACK_OBJECT_BIN) {
        pcd_snap_seterr(why, whylen, "payload has no 'model' bytes");
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
            pcd_snap_seterr(why, whylen, "out of memory");
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

/* The width of the msgpack map header at p (fixmap, map16, map32) and its
 * count; 0 when p holds no map header. */
static size_t map_header(const uint8_t *p, size_t have, uint32_t *count)
{
    if (have >= 1 && p[0] >= 0x80 && p[0] <= 0x8f) {
        *count = p[0] & 0x0f;
        return 1;
    }
    if (have >= 3 && p[0] == 0xde) {
        *count = (uint32_t)p[1] << 8 | p[2];
        return 3;
    }
    if (have >= 5 && p[0] == 0xdf) {
        *count = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        return 5;
    }
    return 0;
}

/* Writes count back into the map header of width w at p. */
static void map_header_set(uint8_t *p, size_t w, uint32_t count)
{
    if (w == 1)
        p[0] = (uint8_t)(0x80 | count);
    for (size_t i = 1; i < w; i++)
        p[i] = (uint8_t)(count >> (8 * (w - 1 - i)));
}

int pcd_snap_peek(const uint8_t *p, size_t have, const char *name, uint64_t gen,
                  pcd_snap_info *info, char *why, size_t whylen)
{
    uint8_t copy[PCD_SNAP_PREFIX_MAX];
    if (have > sizeof copy)
        have = sizeof copy;
    uint32_t count;
    size_t off = map_header(p, have, &count);
    if (!off) {
        pcd_snap_seterr(why, whylen, "payload is not a map");
        return -1;
    }
    const char *w = NULL;
    for (uint32_t i = 0; i < count; i++) {
        size_t k = prescan(p + off, have - off, &w);
        if (!k || !((p[off] >= 0xa0 && p[off] <= 0xbf) || p[off] == 0xd9)) {
            pcd_snap_seterr(why, whylen, "payload's key %u is not a short string%s%s", i,
                            w ? ": " : "", w ? w : "");
            return -1;
        }
        bool model = k == 6 && memcmp(p + off, "\xa5model", 6) == 0;
        off += k;
        if (!model) { /* a value before the model's bytes: whole in the head */
            size_t v = prescan(p + off, have - off, &w);
            if (!v) {
                pcd_snap_seterr(why, whylen, "payload's head: %s", w);
                return -1;
            }
            off += v;
            continue;
        }
        size_t lenbytes = off < have ? (p[off] == 0xc4 ? 1 : p[off] == 0xc5 ? 2 : p[off] == 0xc6 ? 4 : 0) : 0;
        if (!lenbytes || have - off < 1 + lenbytes) {
            pcd_snap_seterr(why, whylen, "payload has no 'model' bytes");
            return -1;
        }
        /* The map up to the model key, the model's bytes left out: a payload
         * of its own, checked as a whole one is (pcd_snap_payload). */
        memcpy(copy, p, off + 1 + lenbytes);
        map_header_set(copy, map_header(p, have, &count), i + 1);
        memset(copy + off + 1, 0, lenbytes);
        size_t mlen;
        return pcd_snap_payload(copy, off + 1 + lenbytes, name, gen, &mlen, info, why, whylen);
    }
    pcd_snap_seterr(why, whylen, "payload has no 'model' bytes");
    return -1;
}

/* Magic, version, and the payload length against the bytes there are
 * (`have`): the length is trusted only once it agrees. */
int pcd_snap_check_header(const uint8_t *h, uint64_t have, uint64_t *plen, char *why, size_t whylen)
{
    if (memcmp(h, PCD_SNAP_MAGIC, PCD_SNAP_MAGIC_LEN) != 0) {
        pcd_snap_seterr(why, whylen, "bad magic (not a snapshot file, or corrupt)");
        return -1;
    }
    uint32_t ver = pc_get_u32(h + 8);
    if (ver != PCD_SNAP_VERSION) {
        pcd_snap_seterr(why, whylen, "format version %u, this daemon reads version %u%s", ver, PCD_SNAP_VERSION,
               ver > PCD_SNAP_VERSION ? " (written by a newer daemon)" : " (file corrupt)");
        return -1;
    }
    *plen = pc_get_u64(h + 12);
    if (*plen != have) {
        pcd_snap_seterr(why, whylen, "%s: header says %llu payload bytes, there are %llu (file corrupt)",
               *plen > have ? "truncated" : "length mismatch", (unsigned long long)*plen,
               (unsigned long long)have);
        return -1;
    }
    return 0;
}

bool pcd_snap_crc_ok(const uint8_t *h, const uint8_t *payload, size_t plen)
{
    uLong crc = crc32_z(crc32_z(0L, Z_NULL, 0), payload, plen);
    return (uint32_t)crc == pc_get_u32(h + 20);
}

int pcd_snapshot_parse(uint8_t *buf, size_t len, const uint8_t **model, size_t *mlen,
                       pcd_snap_info *info, char *err, size_t errlen)
{
    uint64_t plen;
    if (len < PCD_SNAP_HEADER_LEN) {
        pcd_snap_seterr(err, errlen, "truncated (%zu bytes, the header alone is %d)", len,
               PCD_SNAP_HEADER_LEN);
        return -1;
    }
    if (pcd_snap_check_header(buf, len - PCD_SNAP_HEADER_LEN, &plen, err, errlen) < 0)
        return -1;
    uint8_t *payload = buf + PCD_SNAP_HEADER_LEN;
    if (!pcd_snap_crc_ok(buf, payload, (size_t)plen)) {
        pcd_snap_seterr(err, errlen, "CRC mismatch (corrupt)");
        return -1;
    }
    if (pcd_snap_payload(payload, (size_t)plen, NULL, 0, mlen, info, err, errlen) < 0)
        return -1;
    *model = payload;
    return 0;
}

void pcd_snap_info_free(pcd_snap_info *info)
{
    if (!info)
        return;
    free(info->name);
    free(info->daemon_version);
    memset(info, 0, sizeof *info);
}
