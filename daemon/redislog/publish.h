/* publish.h - a model's snapshot published in Redis, next to its
 * stream, so that a daemon started with an empty state dir bootstraps from
 * it instead of replaying the whole stream (docs/scale-out.md, "Snapshots in
 * Redis").
 *
 * Keys, all with the model's hash tag (one Redis Cluster slot):
 *   <prefix>{<model>}       the stream
 *   <prefix>{<model>}:snap  a hash: the newest snapshot any replica published:
 *                           ms, seq (the entry ID it includes), pos (entries
 *                           of the stream up to it, "" if unknown), data (the
 *                           snapshot's model bytes, binary), by (the replica),
 *                           trimmed (the MINID of the last XTRIM)
 *   <prefix>{<model>}:held  a hash: replica name -> the entry ID of the last
 *                           snapshot it published (what its own snapshot file
 *                           needs the stream to keep after)
 * Publishing is one Lua script, so it is atomic: it records the replica's
 * hold, replaces :snap when the new one is newer, and trims the stream
 * (XTRIM MINID) below the oldest hold, since every replica can resume from
 * its own snapshot and a new one from :snap.
 */
#ifndef PCD_REDISLOG_PUBLISH_H
#define PCD_REDISLOG_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pcd_publication {
    const char *address;       /* log.address: "unix:/path" | "tcp:host:port" */
    const char *prefix, *replica, *model;
    uint64_t ms, seq;          /* the entry ID the snapshot includes */
    bool pos_known;
    uint64_t pos;
    const uint8_t *data;
    size_t len;
    const struct pcd_redis_auth *auth; /* AUTH first when set (redislog/auth.h) */
} pcd_publication;

/* Publishes p over a connection of its own, synchronously (it runs in the
 * snapshot child, or at exit).  0 with *newer (it replaced :snap) and
 * *trimmed (entries XTRIM removed), or -1 with a message in err. */
int pcd_redislog_publish(const pcd_publication *p, bool *newer, long long *trimmed, char *err,
                         size_t errlen);

#endif
