/* server.c - the daemon's life: start, serve, reload, stop.
 *
 * Order at start: config is loaded (main.c), models are restored from the
 * state directory, listeners are bound, and only then is systemd told READY,
 * so a client never reaches a daemon that is missing its models.  Order at
 * stop (SIGTERM/SIGINT): stop listening, close connections, wait for a
 * running snapshot, write every unsaved model, exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/blocked.h"
#include "daemon/core/models.h"
#include "daemon/core/persist.h"
#include "daemon/core/restio.h"
#include "daemon/core/rest.h"
#include "daemon/core/server.h"
#include "daemon/exec/auth.h"
#include "daemon/exec/dispatch.h"
#include "daemon/exec/durability.h"
#include "daemon/exec/request.h"
#include "daemon/exec/scan.h"
#include "daemon/jobs/expiry.h"
#include "daemon/jobs/notify.h"
#include "daemon/net/conn.h"
#include "daemon/net/serve.h"
#include "daemon/net/http.h"
#include "daemon/net/listen.h"
#include "daemon/pcd.h"
#include "daemon/redislog/redislog.h"

/* Descriptors the daemon needs besides its connections: listeners, the
 * journal's segments, snapshot files, Redis, libevent's own. */
#define FD_RESERVE 64

/* max_connections against RLIMIT_NOFILE (as Redis fits maxclients): the
 * soft limit is raised towards the hard one if it is short; if that is not
 * enough, max_connections is lowered to fit, with a warning, rather than
 * accept failing with EMFILE under load (perceptrond.service sets
 * LimitNOFILE; its seccomp filter refuses setrlimit). */
static void fit_connections(pcd_server *srv)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t need = (rlim_t)srv->cfg.max_connections + FD_RESERVE;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        struct rlimit up = rl;
        up.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
        if (up.rlim_cur > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        unsigned fit = rl.rlim_cur > FD_RESERVE + 1 ? (unsigned)(rl.rlim_cur - FD_RESERVE) : 1;
        pcd_warn("limits.max_connections %u needs %llu file descriptors, but RLIMIT_NOFILE is "
                 "%llu (hard %llu): serving at most %u connections (raise LimitNOFILE or "
                 "`ulimit -n`)", srv->cfg.max_connections, (unsigned long long)need,
                 (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, fit);
        srv->cfg.max_connections = fit;
    }
}

static void apply_limits(pcd_server *srv)
{
    fit_connections(srv);
    srv->limits.max_message = srv->cfg.max_message_bytes;
    srv->limits.max_features = srv->cfg.max_features;
    srv->limits.max_depth = srv->cfg.max_depth;
    srv->limits.max_batch = srv->cfg.max_batch;
    pcd_log_set_level(srv->cfg.log_level);
}

static struct timeval seconds(double s)
{
    struct timeval tv = {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
    return tv;
}

static void arm_snapshot_timer(pcd_server *srv)
{
    event_del(srv->snap_timer);
    if (srv->cfg.snapshot_interval > 0) {
        struct timeval tv = seconds(srv->cfg.snapshot_interval);
        event_add(srv->snap_timer, &tv);
    }
}

static void on_snapshot_timer(evutil_socket_t fd, short what, void *arg)
{
    pcd_server *srv = arg;
    (void)fd;
    (void)what;
    char err[200];
    pcd_persist_save(srv, NULL, 0, true, err, sizeof err);
}

static void on_journal_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pcd_durability_tick(arg);
}

static void on_status_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pcd_notify_status(arg);
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    /* Pinged from the loop itself: a stuck loop stops the pings. */
    pcd_notify_watchdog();
}

static void stop(pcd_server *srv, const char *why)
{
    if (srv->stopping)
        return;
    srv->stopping = true;
    pcd_info("%s: stopping", why);
    pcd_notify_stopping();
    event_base_loopexit(srv->base, NULL);
}

static void on_term(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    stop(arg, sig == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* SIGHUP: reread the config.  New models are created, limits and the log
 * level apply at once (also to open connections); listeners and the state
 * directory need a restart.  A broken file changes nothing. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
    pcd_server *srv = arg;
    (void)sig;
    (void)what;
    if (!srv->config_path) {
        pcd_info("SIGHUP: running on the built-in default config, nothing to reload");
        return;
    }
    pcd_notify_reloading();
    pcd_config fresh;
    char err[512];
    if (pcd_config_load(srv->config_path, &fresh, err, sizeof err) != 0) {
        pcd_error("SIGHUP: config not reloaded, keeping the running one: %s", err);
        pcd_notify_ready(srv);
        return;
    }
    /* The tokens are read again: a broken file keeps the old ones. */
    pcd_auth *auth;
    if (pcd_auth_load(&fresh, &auth, err, sizeof err) != 0) {
        pcd_error("SIGHUP: config not reloaded, keeping the running one: %s", err);
        pcd_config_free(&fresh);
        pcd_notify_ready(srv);
        return;
    }
    pcd_auth_free(srv->auth);
    srv->auth = auth;
    if (strcmp(fresh.state_dir, srv->cfg.state_dir) != 0)
        pcd_warn("SIGHUP: state_dir changes need a restart (keeping %s)", srv->cfg.state_dir);
    /* Listeners and the state directory stay as they are (they need a
     * restart): move them into the fresh config before the old one goes. */
#define KEEP(field) do { __typeof__(fresh.field) t_ = fresh.field; fresh.field = srv->cfg.field; \
                         srv->cfg.field = t_; } while (0)
    KEEP(tcp);
    KEEP(ntcp);
    KEEP(tcp_access);
    KEEP(unix_paths);
    KEEP(nunix);
    KEEP(unix_mode);
    KEEP(unix_modes);
    KEEP(unix_rights);
    KEEP(tcp_rights_default);
    KEEP(unix_rights_default);
    KEEP(metrics_listen);
    KEEP(state_dir);
    /* The journal is opened once, at start. */
    KEEP(journal_enabled);
    KEEP(journal_fsync);
    KEEP(journal_dir);
    KEEP(journal_segment_bytes);
    KEEP(journal_on_corrupt);
    /* So is the shared log, and the models it serves. */
    KEEP(log_backend);
    KEEP(log_address);
    KEEP(log_prefix);
    KEEP(log_replica);
    KEEP(log_models);
    KEEP(nlog_models);
#undef KEEP
    pcd_config_free(&srv->cfg);
    srv->cfg = fresh;
    apply_limits(srv);
    size_t created = 0;
    for (size_t i = 0; i < srv->cfg.nmodels; i++) {
        const pcd_model_def *d = &srv->cfg.models[i];
        if (pcd_registry_find(&srv->models, d->name, strlen(d->name)))
            continue;
        pcp_error perr;
        pcd_model *e = pcd_model_create(srv, d->name, &d->cfg, &perr);
        if (e && !pcd_model_extras(e, &d->join, d->challengers, d->nchallengers, &d->experts, &perr))
            created++;
        else
            pcd_error("SIGHUP: model %s: %s", d->name, perr.msg);
    }
    arm_snapshot_timer(srv);
    pcd_info("SIGHUP: config %s reloaded (%zu new models)", srv->config_path, created);
    pcd_notify_ready(srv);
}

static void on_chld(evutil_socket_t sig, short what, void *arg)
{
    pcd_server *srv = arg;
    (void)sig;
    (void)what;
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        pcd_persist_child_exited(srv, pid, status);
}

/* The event loop.  With busy_poll_us, after any input the loop keeps polling
 * without sleeping for that long: a synchronous client's next request then
 * finds the daemon's CPU awake.  On a VM, waking a halted vCPU was most of a
 * predict's round trip (70 us at p50 instead of 9: docs/operations.md).  An
 * idle daemon sleeps in epoll as usual, and timers and signals are served
 * the same either way. */
static void run(pcd_server *srv)
{
    uint64_t seen = srv->loop.counters.bytes_in;
    double last_input = pcd_monotonic();
    while (!event_base_got_exit(srv->base) && !event_base_got_break(srv->base)) {
        double poll = srv->cfg.busy_poll_us * 1e-6; /* read each turn: SIGHUP may change it */
        bool spin = poll > 0 && pcd_monotonic() - last_input < poll;
        if (event_base_loop(srv->base, EVLOOP_ONCE | (spin ? EVLOOP_NONBLOCK : 0)) < 0)
            break;
        if (srv->loop.counters.bytes_in != seen) {
            seen = srv->loop.counters.bytes_in;
            last_input = pcd_monotonic();
        }
    }
}

/* The signals the loop handles, and how (srv->signals, in this order). */
static const struct {
    int signo;
    event_callback_fn fn;
} signals[PCD_SIGNALS] = {{SIGTERM, on_term}, {SIGINT, on_term}, {SIGHUP, on_hup},
                          {SIGCHLD, on_chld}};

static int setup_events(pcd_server *srv)
{
    /* EV_PERSIST: the snapshot timer fires every interval, not once. */
    srv->snap_timer = event_new(srv->base, -1, EV_PERSIST, on_snapshot_timer, srv);
    srv->status_timer = event_new(srv->base, -1, EV_PERSIST, on_status_timer, srv);
    if (!srv->snap_timer || !srv->status_timer)
        return -1;
    for (size_t i = 0; i < PCD_SIGNALS; i++)
        if (!(srv->signals[i] = evsignal_new(srv->base, signals[i].signo, signals[i].fn, srv)))
            return -1;
    for (size_t i = 0; i < PCD_SIGNALS; i++)
        event_add(srv->signals[i], NULL);
    struct timeval five = {5, 0};
    event_add(srv->status_timer, &five);
    uint64_t wd = pcd_notify_watchdog_usec();
    if (wd) {
        srv->watchdog_timer = event_new(srv->base, -1, EV_PERSIST, on_watchdog, srv);
        struct timeval half = {(time_t)(wd / 2000000), (suseconds_t)((wd / 2) % 1000000)};
        event_add(srv->watchdog_timer, &half);
    }
    arm_snapshot_timer(srv);
    return 0;
}

static void free_event(struct event *e)
{
    if (e)
        event_free(e);
}

static void teardown(pcd_server *srv)
{
    pcd_durability_close(srv); /* a start that failed after opening it */
    pcd_conn_close_all(srv);
    pcd_restio_stop(srv); /* after the connections: none waits any more */
    pcd_redislog_close(srv);
    pcd_scan_free_all(srv);
    pcd_unlisten(srv);
    pcd_http_close(srv);
    free_event(srv->snap_timer);
    free_event(srv->journal_timer);
    free_event(srv->expiry_timer);
    free_event(srv->status_timer);
    free_event(srv->watchdog_timer);
    for (size_t i = 0; i < PCD_SIGNALS; i++)
        free_event(srv->signals[i]);
    pcd_registry_free(&srv->models);
    pcd_auth_free(srv->auth);
    pcd_req_scratch_free(srv);
    msgpack_zone_destroy(&srv->loop.zone);
    if (srv->base)
        event_base_free(srv->base);
    pcd_config_free(&srv->cfg);
}

/* A client gone forgets its writes waiting in the shared log, if there is one. */
static void forget_logged(pcd_server *srv, pcd_client *c)
{
    if (srv->rlog)
        pcd_redislog_forget(srv->rlog, c);
}

int pcd_run(pcd_config *cfg, const char *config_path)
{
    pcd_server srv_storage = {0}, *srv = &srv_storage;
    srv->cfg = *cfg; /* taken over */
    memset(cfg, 0, sizeof *cfg);
    srv->config_path = config_path;
    srv->started_at = pcd_now();
    apply_limits(srv);
    signal(SIGPIPE, SIG_IGN);
    char err[600];
    int rc = 1;
    if (!pcd_dispatch_complete()) { /* a method of proto's table without a handler */
        pcd_error("internal error: a method has no handler");
        goto out;
    }
    /* Three priorities, everything at the middle one (libevent's default,
     * nprio / 2) except connections net/serve.c demotes while they upload a large
     * message: their reads wait until no other event is ready, and after
     * each of them the loop polls again, so a small request that arrives
     * meanwhile does not wait for every upload's read. */
    struct event_config *ec = event_config_new();
    if (ec) {
        struct timeval asap = {0, 0};
        event_config_set_max_dispatch_interval(ec, &asap, 1, PCD_PRIORITY_LOW);
        srv->base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    if (srv->base && event_base_priority_init(srv->base, PCD_PRIORITIES) != 0)
        pcd_warn("event priorities unavailable: large uploads are not demoted");
    if (!srv->base || !msgpack_zone_init(&srv->loop.zone,
                                         65536) || pcd_registry_init(&srv->models) ||
        setup_events(srv) != 0) {
        pcd_error("cannot initialise the event loop (out of memory?)");
        goto out;
    }
    /* the modules a client can wait on, told when it goes (blocked.h) */
    pcd_waits_register(srv, pcd_persist_forget);
    pcd_waits_register(srv, pcd_scan_forget);
    pcd_waits_register(srv, forget_logged);
    pcd_waits_register(srv, pcd_restio_forget);
    if (pcd_auth_load(&srv->cfg, &srv->auth, err, sizeof err) != 0) {
        pcd_error("%s", err);
        goto out;
    }
    if (srv->auth)
        pcd_info("%zu tokens loaded", pcd_auth_count(srv->auth));
    if (pcd_persist_restore(srv, err, sizeof err) != 0) {
        pcd_error("%s", err);
        goto out;
    }
    /* The journal after the snapshots (replay starts at their positions),
     * before the listeners: no client sees a model still replaying. */
    /* With the shared log, Redis keeps the writes and the local journal is
     * not used: the log is followed from each model's snapshot position. */
    bool shared = !strcmp(srv->cfg.log_backend, "redis");
    if (shared && pcd_redislog_open(srv, err, sizeof err) != 0) {
        pcd_error("%s", err);
        goto out;
    }
    if (!shared && pcd_durability_open(srv, pcd_serve_journal_durable, err, sizeof err) != 0) {
        pcd_error("%s", err);
        goto out;
    }
    /* Models at rest: all were restored and replayed; those past
     * limits.resident_max go back to rest now (docs/operations.md). */
    pcd_rest_trim(srv, NULL);
    srv->evict_one = pcd_rest_evict_one; /* budget.c's way to it (a hook: rest.c uses budget.c) */
    /* from now on a client's request loads a resting model off the loop */
    if (srv->cfg.resident_max && pcd_restio_start(srv, pcd_serve_loaded, err, sizeof err) != 0) {
        pcd_error("models at rest: %s", err);
        goto out;
    }
    if (srv->journal) {
        struct timeval one = {1, 0};
        srv->journal_timer = event_new(srv->base, -1, EV_PERSIST, on_journal_timer, srv);
        if (!srv->journal_timer || event_add(srv->journal_timer, &one) != 0) {
            pcd_error("cannot set up the journal's timer (out of memory?)");
            goto out;
        }
    }
    if (pcd_expiry_start(srv) != 0) {
        pcd_error("cannot set up the expiry timer (out of memory?)");
        goto out;
    }
    /* The metrics endpoint first: whoever sees the RPC listeners can scrape. */
    if (pcd_http_open(srv, err, sizeof err) != 0 || pcd_listen(srv, err, sizeof err) != 0) {
        pcd_error("%s", err);
        goto out;
    }
    srv->ready = true;
    pcd_info("perceptrond %s ready: %zu models, state in %s, config %s", PC_VERSION_STRING,
             srv->models.count, srv->cfg.state_dir, config_path ? config_path : "(built-in default)");
    pcd_notify_ready(srv);
    run(srv);
    pcd_unlisten(srv);
    pcd_conn_close_all(srv);
    pcd_restio_stop(srv); /* models going to rest: written, or back in memory for the final save */
    rc = pcd_persist_final(srv) == 0 ? 0 : 1;
    pcd_redislog_close(srv);
    if (pcd_durability_close(srv) != 0 && rc)
        pcd_error("the journal could not be synced either: changes since the last snapshot may be lost");
    pcd_info("stopped%s", rc ? " with unsaved models (see above)" : "");
out:
    teardown(srv);
    return rc;
}
