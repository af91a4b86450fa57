/* redislog.h - the shared log: every write of a model goes through a Redis
 * stream, and every daemon serving the model applies the stream in order.
 *
 * With `log: {backend: redis}` a write (a PCP_F_WRITES method) is not applied
 * where it arrives: its MessagePack bytes are XADDed to the model's stream
 * <prefix>{<model>}; every daemon serving the model follows its stream
 * (XREAD BLOCK) and applies each entry through pcd_dispatch, the same path
 * as a live request, so replicas that applied the same entries hold the same
 * bytes (the rules are deterministic).  The daemon that took the write
 * answers it when it applies the entry: the answer reflects the log's order.
 * A catalogue stream, <prefix>models, names every model stream, so daemons
 * learn of models created elsewhere.  docs/scale-out.md has the guarantees.
 *
 * Failures: while Redis is unreachable, writes are refused (code 11, the
 * message names Redis and the error) and reads go on; the daemon reconnects
 * with back-off and reads on after the last entry it applied per stream.  A
 * write whose XADD Redis did not confirm is never acknowledged.
 *
 * With log.cluster the log routes each stream to the master of a Redis
 * Cluster that serves its slot (redislog/cluster.h); a master lost refuses
 * the writes of its streams only.
 *
 * Everything runs on the daemon's event loop (hiredis's libevent adapter).
 */
#ifndef PCD_REDISLOG_H
#define PCD_REDISLOG_H

#include "daemon/core/server.h"

typedef struct pcd_redislog pcd_redislog;

/* Opens the log when the config asks for it (else does nothing and returns
 * 0): unloads restored models this daemon does not serve, follows the
 * stream of every model it has (after the entry its snapshot includes) and
 * the catalogue, and connects.  Redis being down is not an error here: the
 * daemon starts, refuses writes and keeps trying.  -1 with err otherwise. */
int pcd_redislog_open(pcd_server *srv, char *err, size_t errlen);
/* Disconnects and frees (the connections must be closed first). */
void pcd_redislog_close(pcd_server *srv);
/* A client that goes away: its held answers are never delivered. */
void pcd_redislog_forget(pcd_redislog *rl, pcd_client *cl);

#endif
