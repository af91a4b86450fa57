/* blocked.h - clients that wait for an answer that comes later, and the one
 * path taken when such a client goes away (blocked.c).
 *
 * As in Redis's blocked.c: a request may leave its client waiting (a `save`
 * while a snapshot job runs: core/persist.c; a sliced `weights` scan:
 * exec/scan.c; a write appended to the shared log: redislog/).  Each module
 * a client can wait on registers once, at start, what it must forget of a
 * client that goes; a connection that closes calls pcd_client_gone, and
 * knows none of them. */
#ifndef PCD_BLOCKED_H
#define PCD_BLOCKED_H

#include "daemon/core/server.h"

typedef void (*pcd_forget_fn)(pcd_server *srv, pcd_client *c);

/* Adds forget to what runs when a client goes (at most PCD_WAITS_MAX; a
 * module registered twice runs once).  false when the table is full: a
 * programming error, logged. */
bool pcd_waits_register(pcd_server *srv, pcd_forget_fn forget);
/* c is going away: every module forgets it (it no longer wants answers). */
void pcd_client_gone(pcd_server *srv, pcd_client *c);

#endif
