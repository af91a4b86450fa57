/* cluster.h - Redis Cluster's slots for the shared log (redislog.h):
 * the slot of a key and the map from slots to master nodes.
 *
 * Debian's hiredis (0.14) has no cluster client, so the log routes by hand:
 * a key's slot is CRC16 (XMODEM) of its hash tag (the text between the first
 * '{' and the next '}', when not empty; else the whole key) mod 16384, as
 * Redis's src/cluster.c keyHashSlot computes it, and CLUSTER SLOTS says which
 * master serves each slot.  Pure functions of bytes and of a hiredis reply:
 * no connection here. */
#ifndef PCD_REDISLOG_CLUSTER_H
#define PCD_REDISLOG_CLUSTER_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCD_SLOTS 16384
#define PCD_SLOT_NONE 0xffff /* a slot no master serves (the cluster is down there) */

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), Redis's crc16.c. */
unsigned pcd_crc16(const char *buf, size_t len);
/* The slot of a key, as CLUSTER KEYSLOT says. */
unsigned pcd_key_slot(const char *key, size_t len);

typedef struct pcd_slot_map {
    size_t nnodes;
    char **address;               /* "tcp:host:port" of each master, owned */
    uint16_t owner[PCD_SLOTS];    /* an index into address, or PCD_SLOT_NONE */
} pcd_slot_map;

/* CLUSTER SLOTS's reply into *m (masters only: reads and writes go to the
 * masters).  An empty host in the reply means the host the question went
 * to, `asked_host`.  0, or -1 with err saying what was wrong (*m then holds
 * nothing to free). */
int pcd_slot_map_read(const redisReply *r, const char *asked_host, pcd_slot_map *m, char *err,
                      size_t errlen);
void pcd_slot_map_free(pcd_slot_map *m);
/* An error reply saying the map is stale or the cluster is not serving
 * (MOVED, ASK, TRYAGAIN, CLUSTERDOWN): the map must be read again. */
bool pcd_cluster_redirected(const char *err);

#endif
