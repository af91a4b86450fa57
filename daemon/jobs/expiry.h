/* expiry.h - events whose join.ttl passed, ended in small slices on the loop
 * (see expiry.c). */
#ifndef PCD_EXPIRY_H
#define PCD_EXPIRY_H

#include "daemon/core/server.h"

/* Arms the expiry timer (srv->expiry_timer); -1 when out of memory. */
int pcd_expiry_start(pcd_server *srv);
/* Ends up to `budget` events older than their ttl at now_ms, oldest first,
 * and forgets old tombstones; returns how many events it ended.  The timer's
 * work, callable from tests. */
size_t pcd_expiry_run(pcd_server *srv, int64_t now_ms, size_t budget);

#endif
