/* notify.h - systemd readiness, status and watchdog (notify.c); no-ops
 * without systemd. */
#ifndef PCD_NOTIFY_H
#define PCD_NOTIFY_H

#include <stdint.h>

#include "daemon/core/server.h"

void pcd_notify_ready(pcd_server *srv);
void pcd_notify_status(pcd_server *srv);
void pcd_notify_stopping(void);
void pcd_notify_reloading(void);
/* Watchdog interval in microseconds, 0 when systemd asks for none. */
uint64_t pcd_notify_watchdog_usec(void);
void pcd_notify_watchdog(void);
/* Listening sockets passed by systemd (socket activation): count, fds from 3. */
int pcd_notify_listen_fds(void);

#endif
