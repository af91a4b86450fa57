/* listen.h - the listening sockets of the config (listen.c): Unix, TCP, TLS,
 * HTTP, or those systemd passed; accept with back-off when descriptors run
 * out. */
#ifndef PCD_LISTEN_H
#define PCD_LISTEN_H

#include "daemon/core/server.h"

int pcd_listen(pcd_server *srv, char *err, size_t errlen);
void pcd_unlisten(pcd_server *srv);

#endif
