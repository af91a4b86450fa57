/* notify.c - systemd integration through libsystemd's sd-daemon: readiness,
 * a status line with counters, watchdog pings and socket activation.  Every
 * call is a no-op when the daemon does not run under systemd (no
 * NOTIFY_SOCKET / LISTEN_FDS in the environment). */
#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "daemon/core/server.h"
#include "daemon/jobs/notify.h"

/* With the shared log, reads are refused until the daemon has caught up with
 * it (redislog/apply.c): until then it is not ready in systemd's sense either.
 * `systemctl start` waits (within TimeoutStartSec) and units ordered after
 * this one start against a daemon that answers. */
static bool catching_up(const pcd_server *srv)
{
    return srv->rlog && !srv->logst.ready;
}

void pcd_notify_ready(pcd_server *srv)
{
    if (catching_up(srv)) { /* redislog/apply.c calls this again once caught up */
        if (!srv->logst.up && srv->logst.error[0])
            sd_notifyf(0, "STATUS=not ready: %s", srv->logst.error);
        else
            sd_notifyf(0, "STATUS=catching up with the shared log in Redis %s",
                       srv->cfg.log_address);
        return;
    }
    sd_notifyf(0, "READY=1\nSTATUS=serving %zu models on %zu listeners", srv->models.count,
               srv->nlisteners);
}

void pcd_notify_status(pcd_server *srv)
{
    const pcd_counters *k = &srv->loop.counters;
    sd_notifyf(0, "STATUS=%s%zu models, %u connections, %llu labels, %llu predicts, %llu errors",
               catching_up(srv) ? "catching up with the shared log; " : "", srv->models.count,
               srv->loop.nconns, (unsigned long long)k->labels, (unsigned long long)k->predicts,
               (unsigned long long)k->errors);
}

void pcd_notify_stopping(void)
{
    sd_notify(0, "STOPPING=1\nSTATUS=writing final snapshots");
}

void pcd_notify_reloading(void)
{
    sd_notify(0, "RELOADING=1");
}

uint64_t pcd_notify_watchdog_usec(void)
{
    uint64_t usec = 0;
    return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}

void pcd_notify_watchdog(void)
{
    sd_notify(0, "WATCHDOG=1");
}

int pcd_notify_listen_fds(void)
{
    int n = sd_listen_fds(1);
    return n > 0 ? n : 0;
}
