/* conn.h - a client connection's end (conn.c); serve.h accepts and serves
 * them.
 *
 * A connection reads MessagePack-RPC messages, runs each through the
 * dispatcher and writes the answers back in request order, holding an answer
 * back while what it acknowledges is not yet durable (the journal's
 * fdatasync, the shared log's append) or while a save it asked for runs. */
#ifndef PCD_CONN_H
#define PCD_CONN_H

#include "daemon/core/server.h"

/* Closes c now (why, when not NULL, is logged): whatever it waited for
 * forgets it (core/blocked.c). */
void pcd_conn_close(pcd_conn *c, const char *why);
/* Closes every connection, at the end. */
void pcd_conn_close_all(pcd_server *srv);

#endif
