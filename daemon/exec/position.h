/* position.h - a write's place in its model's log, in its answer
 * (position.c).  The answers of label, label_batch, label_event, predict
 * with an event, create, drop, reset, promote, import, copy and rollback
 * carry an entry "position" (proto.h, "Positions"): the journal's LSN of
 * the write's record, or the Redis stream entry ID that carried it.  A
 * client sends it back as predict's {"after": POSITION} (options.c reads
 * it; with the shared log redislog/after.c waits until it is applied). */
#ifndef PCD_POSITION_H
#define PCD_POSITION_H

#include "daemon/exec/request.h"

/* r's position as a string in buf (PCP_POSITION_MAX bytes), or NULL when
 * the daemon keeps none (no journal, no shared log). */
const char *pcd_req_position(const pcd_req *r, char *buf);
/* Packs the entry "position": that string, or nil. */
void pcd_pack_position(pcd_req *r);

#endif
