/* tls.h - TLS for TCP listeners: OpenSSL contexts from the config, and the
 * bufferevents libevent runs over them (bufferevent_openssl). */
#ifndef PCD_TLS_H
#define PCD_TLS_H

#include <event2/bufferevent.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/config/config.h"

struct ssl_ctx_st;

/* A server context from a's cert, key and (optional) client CA.  NULL with
 * err naming the file and OpenSSL's reason. */
struct ssl_ctx_st *pcd_tls_context(const pcd_access *a, char *err, size_t errlen);
void pcd_tls_context_free(struct ssl_ctx_st *ctx);
/* A bufferevent that accepts a TLS connection on fd (closes fd on free);
 * NULL when out of memory (fd is then still open). */
struct bufferevent *pcd_tls_accept(struct event_base *base, evutil_socket_t fd,
                                   struct ssl_ctx_st *ctx);
/* OpenSSL's reason for the last error on bev, into buf ("" when none). */
void pcd_tls_error(struct bufferevent *bev, char *buf, size_t len);
/* The subject of the client's verified certificate, into buf; false without one. */
bool pcd_tls_peer(struct bufferevent *bev, char *buf, size_t len);

#endif
