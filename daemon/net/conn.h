/* conn.h - a client connection: transport, framing, answers in order (conn.c).
 *
 * A connection reads MessagePack-RPC messages, runs each through the
 * dispatcher and writes the answers back in request order, holding an answer
 * back while what it acknowledges is not yet durable (the journal's
 * fdatasync, the shared log's append) or while a save it asked for runs. */
#ifndef PCD_CONN_H
#define PCD_CONN_H

#include "daemon/core/server.h"

/* A connection accepted on l (its rights, its TLS) from peer. */
void pcd_conn_accept(pcd_server *srv, evutil_socket_t fd, const char *peer, bool tcp,
                     const pcd_listener *l);
void pcd_conn_close(pcd_conn *c, const char *why);
void pcd_conn_close_all(pcd_server *srv);
/* The journal's durable callback (ud is the server): sends the answers an
 * fdatasync now covers; when it failed, closes the connections whose
 * answers it did not cover, unanswered. */
void pcd_conn_journal_durable(void *ud, uint64_t lsn, bool failed);

#endif
