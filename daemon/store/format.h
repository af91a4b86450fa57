/* format.h - the bytes of one snapshot file (format.c), whatever holds them:
 * a file of the state directory (snapshot.h), `export`'s answer, `import`'s
 * argument, a snapshot published in Redis.  Layout (docs/persistence.md):
 *
 *   offset  size  field
 *        0     8  magic "PCDSNAP\n"
 *        8     4  format version, u32 little-endian (PCD_SNAP_VERSION)
 *       12     8  payload length, u64 little-endian (= file size - 24)
 *       20     4  CRC-32 (zlib crc32) of the payload, u32 little-endian
 *       24     n  payload: a MessagePack map {"name": str, "generation": uint,
 *                 "written_at": int (unix seconds), "daemon_version": str,
 *                 "journal_lsn": uint (the last journal record included; absent
 *                 in older files: 0), "stream_id": str ("ms-seq", the shared
 *                 log's entry included; absent: "0-0"), "model": bin (the
 *                 model codec's bytes)}, "model" last.
 */
#ifndef PCD_SNAP_FORMAT_H
#define PCD_SNAP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

#define PCD_SNAP_MAGIC "PCDSNAP\n"
#define PCD_SNAP_MAGIC_LEN 8
#define PCD_SNAP_VERSION 1u
#define PCD_SNAP_HEADER_LEN 24
#define PCD_SNAP_NAME_MAX PCP_MODEL_NAME_MAX /* bytes in a model name (proto's rule) */

/* What a snapshot says about itself.  Members are malloc'd and owned by the
 * struct: release with pcd_snap_info_free(). */
typedef struct pcd_snap_info {
    char *name;
    uint64_t generation;
    int64_t written_at;        /* unix seconds, as given to pcd_snapshot_write */
    char *daemon_version;      /* version string of the writer ("" if absent) */
    uint64_t journal_lsn;      /* the journal position it includes (0 if absent) */
    uint64_t stream_ms, stream_seq; /* the shared log's entry ID it includes (0-0 if absent) */
    uint64_t file_bytes;       /* the whole file's size (header included), when read from one */
} pcd_snap_info;

/* Frees the members of info (not info itself) and zeroes it; accepts NULL. */
void pcd_snap_info_free(pcd_snap_info *info);

/* A NUL-terminated name that pcp_model_name_valid accepts. */
bool pcd_snap_name_ok(const char *name);

/* The bytes of a snapshot file of name (generation, written_at; journal
 * position and stream ID 0) holding model[0..len), into a new buffer *out
 * (caller frees): what `export` sends and `import` reads. */
int pcd_snapshot_encode(const char *name, uint64_t generation, int64_t written_at,
                        const uint8_t *model, size_t len, uint8_t **out, size_t *outlen,
                        char *err, size_t errlen);
/* Checks the bytes of a snapshot file in memory as a file is checked (magic,
 * version, length, CRC, payload), any name and generation: *model points
 * into buf at the model bytes (*mlen), info (may be NULL) says what the
 * payload says.  buf is changed (the model bytes move to the payload's
 * start).  0, or -1 with err. */
int pcd_snapshot_parse(uint8_t *buf, size_t len, const uint8_t **model, size_t *mlen,
                       pcd_snap_info *info, char *err, size_t errlen);
/* ---- for snapshot.c, write.c and dir.c ---- */

/* Header plus the msgpack prefix: map(7) + 7 keys (~80) + name str (2 + 64)
 * + integers + version str + stream ID + bin32 header (5), with room to spare. */
#define PCD_SNAP_PREFIX_MAX 512

/* vsnprintf into err when it has room (err may be NULL). */
void pcd_snap_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 0 when name may name a snapshot (pcd_snap_name_ok), else -1 with err. */
int pcd_snap_check_name(const char *name, char *err, size_t errlen);
/* The header and the payload's msgpack prefix of a snapshot into head
 * (PCD_SNAP_PREFIX_MAX bytes): *hlen bytes; the model's len bytes follow
 * them in the file.  No allocation.  0, or -1 with err. */
int pcd_snap_head(uint8_t *head, size_t *hlen, const char *name, uint64_t generation,
                  int64_t written_at, uint64_t journal_lsn, uint64_t stream_ms,
                  uint64_t stream_seq, const uint8_t *model, size_t len, char *err,
                  size_t errlen);
/* Magic, version, and the payload length in header h against the bytes
 * there are (`have`): the length is trusted only once it agrees.  0 with
 * *plen, or -1 with why. */
int pcd_snap_check_header(const uint8_t *h, uint64_t have, uint64_t *plen, char *why,
                          size_t whylen);
/* Whether the payload's CRC is the one header h records. */
bool pcd_snap_crc_ok(const uint8_t *h, const uint8_t *payload, size_t plen);
/* Checks the payload in buf (plen bytes, CRC already verified) against name
 * and gen (name NULL: any); on success moves the model bytes to the front of
 * buf, sets *mlen and fills info (may be NULL).  0, or -1 with why. */
int pcd_snap_payload(uint8_t *buf, size_t plen, const char *name, uint64_t gen, size_t *mlen,
                     pcd_snap_info *info, char *why, size_t whylen);

/* What a payload says of itself (name and gen checked as pcd_snap_payload
 * checks them; the model's length comes out 0) from its first `have` bytes
 * only, which end anywhere inside the model's bytes: a resting model's
 * entry at start without reading its file (persist.c).  The CRC is not
 * checked: nothing past the head was read.  0, or -1 with why (then the
 * whole file is read instead). */
int pcd_snap_peek(const uint8_t *p, size_t have, const char *name, uint64_t gen,
                  pcd_snap_info *info, char *why, size_t whylen);

#endif
