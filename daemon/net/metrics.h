/* metrics.h - the daemon's counters in the Prometheus text format
 * (exposition format 0.0.4), for the HTTP endpoint (http.c). */
#ifndef PCD_METRICS_H
#define PCD_METRICS_H

#include <event2/buffer.h>

#include "daemon/core/server.h"

/* Appends every metric to out.  0, or -1 when out of memory. */
int pcd_metrics_render(const pcd_server *srv, struct evbuffer *out);
/* Why the daemon is not ready (/readyz) into why, or false when it is. */
bool pcd_metrics_unready(const pcd_server *srv, char *why, size_t len);

#endif
