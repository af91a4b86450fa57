/* http.h - the metrics endpoint (metrics.listen): /metrics, /healthz, /readyz
 * over HTTP, served by libevent's evhttp on the daemon's loop. */
#ifndef PCD_HTTP_H
#define PCD_HTTP_H

#include "daemon/core/server.h"

/* Binds srv->cfg.metrics_listen (nothing when ""), setting srv->http.
 * 0, or -1 with err. */
int pcd_http_open(pcd_server *srv, char *err, size_t errlen);
void pcd_http_close(pcd_server *srv);

#endif
