/* serve.h - accepting and serving client connections (serve.c). */
#ifndef PCD_SERVE_H
#define PCD_SERVE_H

#include "daemon/core/server.h"

/* A connection accepted on l (its rights, its TLS) from peer. */
void pcd_serve_accept(pcd_server *srv, evutil_socket_t fd, const char *peer, bool tcp,
                      const pcd_listener *l);
/* The journal's durable callback (ud is the server): sends the answers an
 * fdatasync now covers; when it failed, closes the connections whose
 * answers it did not cover, unanswered. */
void pcd_serve_journal_durable(void *ud, uint64_t lsn, bool failed);
/* The loader's word to a connection waiting for a model (core/restio.h). */
void pcd_serve_loaded(pcd_client *cl, bool loaded);

#endif
