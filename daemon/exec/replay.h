/* replay.h - running a message that a log kept (a journal record, a Redis
 * stream entry) through the same dispatch as a live request. */
#ifndef PCD_REPLAY_H
#define PCD_REPLAY_H

#include "daemon/core/server.h"

/* Decides, from the decoded message, whether to leave it out (true). */
typedef bool (*pcd_replay_skip_fn)(pcd_server *srv, const msgpack_object *msg, void *ud);

/* msg[0..len): run by pcd_dispatch_direct when it takes it whole (no skip),
 * else framed and bounded by proto's scanner (under the limits it was
 * accepted with, its own length), decoded into srv's zone, then run by
 * pcd_dispatch; with no client, its answer into pk (NULL: discarded).  skip
 * (may be NULL) sees the decoded message first.  Returns 1 when it ran and
 * succeeded, 0 when skipped, -1 when the bytes are not one message or the
 * request failed (it fails the same way wherever it is replayed). */
int pcd_replay(pcd_server *srv, const uint8_t *msg, size_t len, msgpack_packer *pk,
               pcd_replay_skip_fn skip, void *ud);

#endif
