/* server.h - the daemon's state, shared by its parts.
 *
 * One libevent loop, one thread: listeners (listen.c), connections (conn.c),
 * the method handlers (dispatch.c), snapshots (persist.c), systemd
 * notification (notify.c) and the signals and timers that tie them together
 * (server.c).  Only persist.c forks: the child writes snapshots from its
 * copy-on-write image of the models while the parent keeps serving. */
#ifndef PCD_SERVER_H
#define PCD_SERVER_H

#include <event2/event.h>
#include <event2/listener.h>
#include <msgpack.h>
#include <sys/types.h>

#include "daemon/config.h"
#include "daemon/registry.h"
#include "proto/proto.h"

typedef struct pcd_conn pcd_conn;

typedef struct pcd_counters {
    uint64_t connections_total, connections_rejected, connections_closed_idle,
        connections_closed_error;
    uint64_t requests, notifications, errors, labels, predicts;
    uint64_t bytes_in, bytes_out;
    uint64_t errors_by_code[16];
    uint64_t snapshots_written, snapshots_failed;
} pcd_counters;

/* A connection waiting for the answer to `save`. */
typedef struct pcd_waiter {
    pcd_conn *conn;
    uint32_t msgid;
    bool notification;
    struct pcd_waiter *next;
} pcd_waiter;

typedef struct pcd_snapjob {
    pid_t pid;                  /* the child writing, 0 when none */
    char **names;               /* models in the running job, owned */
    uint64_t *generations;
    uint64_t *ids;              /* registry id of each model written (pcd_model.id) */
    struct pcd_snapresult *results; /* per model, shared with the child (persist.c) */
    size_t n;
    pcd_waiter *waiters;        /* answered when the running job ends */
    pcd_waiter *next_waiters;   /* a save asked during the job: start another */
    bool again;                 /* run another job after this one */
    double started;
    double fork_seconds;        /* how long fork() held the event loop */
} pcd_snapjob;

typedef struct pcd_server {
    struct event_base *base;
    pcd_config cfg;             /* owned */
    const char *config_path;    /* NULL: the built-in default */
    pcp_limits limits;
    pcd_registry models;

    struct evconnlistener **listeners;
    size_t nlisteners;
    char **unix_paths;          /* bound by us: unlinked at exit */
    size_t nunix_paths;

    pcd_conn *conns;            /* doubly linked */
    unsigned nconns;
    pcd_counters counters;
    int64_t started_at;

    pcd_snapjob snap;
    struct event *snap_timer, *status_timer, *watchdog_timer;
    struct event *sig_term, *sig_int, *sig_hup, *sig_chld;
    bool stopping;

    /* scratch reused by every request: one thread, so no per-request malloc */
    msgpack_zone zone;
    pc_svec *xs;
    pc_label *ys;
    size_t nxs;
    double *scores;
    size_t nscores;
    pc_outcome *outcomes;
    size_t noutcomes;
} pcd_server;

/* conn.c */
void pcd_conn_accept(pcd_server *srv, evutil_socket_t fd, const char *peer, bool tcp);
void pcd_conn_close(pcd_conn *c, const char *why);
void pcd_conn_close_all(pcd_server *srv);
/* Sends the answer a waiting connection was held for, then resumes it. */
void pcd_conn_resume(pcd_conn *c, uint32_t msgid, bool notification, bool ok, const char *msg,
                     uint64_t written);

/* dispatch.c: one decoded message; packs the response (if any) into pk.
 * Returns false when the connection must wait (save) before its next message. */
bool pcd_dispatch(pcd_server *srv, pcd_conn *c, const msgpack_object *obj, msgpack_packer *pk);
/* The same for a predict, label, predict_batch or label_batch whose envelope
 * proto's direct path read: true with *len the message's size, or false,
 * having changed nothing the general path would not change, when the message
 * needs the general path. */
bool pcd_dispatch_direct(pcd_server *srv, pcp_direct *d, msgpack_packer *pk, size_t *len);
/* The scratch arrays for n examples / k classes (false when out of memory). */
bool pcd_scratch(pcd_server *srv, size_t n, size_t k);

/* listen.c */
int pcd_listen(pcd_server *srv, char *err, size_t errlen);
void pcd_unlisten(pcd_server *srv);

/* persist.c */
int pcd_persist_restore(pcd_server *srv, char *err, size_t errlen);
/* Starts a snapshot job for every changed model (the timer, SIGUSR1, `save`).
 * With a waiter: returns 1 when it was queued and will be answered through
 * pcd_conn_resume once the changes as of now are on disk, 0 when there was
 * nothing to write, -1 when no job could be started (err says why). */
int pcd_persist_save(pcd_server *srv, pcd_conn *waiter, uint32_t msgid, bool notification,
                     char *err, size_t errlen);
void pcd_persist_child_exited(pcd_server *srv, pid_t pid, int status);
/* At exit: waits for a running child, then writes what is still unsaved. */
int pcd_persist_final(pcd_server *srv);
/* Forgets a connection that is going away (it no longer wants an answer). */
void pcd_persist_forget(pcd_server *srv, pcd_conn *c);
/* Creates a model from a definition (config or template); logs. */
pcd_model *pcd_model_create(pcd_server *srv, const char *name, const pc_model_config *cfg,
                            pcp_error *err);
/* Drops a model and its snapshot files. */
int pcd_model_drop(pcd_server *srv, pcd_model *e, char *err, size_t errlen);

/* notify.c: systemd readiness, status and watchdog (no-ops without systemd). */
void pcd_notify_ready(pcd_server *srv);
void pcd_notify_status(pcd_server *srv);
void pcd_notify_stopping(void);
void pcd_notify_reloading(void);
/* Watchdog interval in microseconds, 0 when systemd asks for none. */
uint64_t pcd_notify_watchdog_usec(void);
void pcd_notify_watchdog(void);
/* Listening sockets passed by systemd (socket activation): count, fds from 3. */
int pcd_notify_listen_fds(void);

int64_t pcd_now(void);
double pcd_monotonic(void);

#endif
