/* server.h - the daemon's state that every part shares.
 *
 * The configuration, the models (the registry), the listeners, auth, the
 * snapshot job (persist.c), the journal (durability.c over journal.c), the
 * shared log (redislog/), the hooks between layers, the signals and the
 * process-wide timers (server.c), and the one event loop's own state
 * (loop.h: connections, counters, the request scratch).  Everything runs on
 * the loop's thread except the journal's fdatasyncs, which its own threads
 * run (journal/threads.c), and only persist.c forks: the child writes
 * snapshots from its copy-on-write image of the models while the parent
 * keeps serving.  docs/architecture.md, "Threads and processes", says what
 * a second loop would need of this. */
#ifndef PCD_SERVER_H
#define PCD_SERVER_H

#include <event2/event.h>
#include <event2/listener.h>
#include <msgpack.h>
#include <sys/types.h>

#include "daemon/base/log.h"
#include "daemon/config/config.h"
#include "daemon/core/loop.h"
#include "daemon/model/registry.h"
#include "proto/proto.h"

/* libevent priorities (server.c): 1 for everything, 2 for a connection in the
 * middle of a large message (serve.c). */
#define PCD_PRIORITIES 3
#define PCD_PRIORITY_LOW 2
struct pcd_server;

/* A listening socket and what its connections get (listen.c). */
typedef struct pcd_listener {
    struct pcd_server *srv;
    struct evconnlistener *l;
    unsigned rights;            /* pcp_right without a token */
    struct ssl_ctx_st *tls;     /* OpenSSL's SSL_CTX (tls.c); NULL: plain */
    char what[200];             /* "tcp 127.0.0.1:7411", for logs */
} pcd_listener;
#define PCD_WAIT 100   /* handler: the answer comes later, input paused (save, scan.c) */
#define PCD_LOGGED 101 /* log_gate: appended to the shared log, answered later */
struct pcd_req;

#define PCD_WAITS_MAX 4 /* modules a client can wait on (blocked.h) */
#define PCD_SIGNALS 4   /* signals the loop handles (server.c's table) */

/* A client waiting for the answer to `save`. */
typedef struct pcd_waiter {
    pcd_client *client;        /* NULL once it went away */
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
    uint64_t serial;            /* jobs started; a model's saving_job names its last */
} pcd_snapjob;

typedef struct pcd_server {
    struct event_base *base;
    pcd_config cfg;             /* owned */
    const char *config_path;    /* NULL: the built-in default */
    pcp_limits limits;
    pcd_registry models;

    pcd_listener **listeners;
    size_t nlisteners;
    struct pcd_auth *auth;      /* the tokens (auth.c); NULL: none configured */
    pcd_log_limit auth_log;     /* "auth refused": a line a second at most */
    char **unix_paths;          /* bound by us: unlinked at exit */
    size_t nunix_paths;

    /* What the modules a client can wait on forget of a client that goes
     * (blocked.h): registered once at start. */
    void (*forget[PCD_WAITS_MAX])(struct pcd_server *srv, pcd_client *c);
    size_t nforget;
    int64_t started_at;

    pcd_snapjob snap;
    struct event *snap_timer, *status_timer, *watchdog_timer;
    struct event *signals[PCD_SIGNALS];
    bool stopping;
    bool ready;                 /* restored and listening (/readyz) */
    struct pcd_http *http;      /* the metrics endpoint (http.c); NULL when off */

    /* Called after a method flagged PCP_F_WRITES succeeded, with the request
     * and its raw bytes (dispatch.c's run()): where a journal hooks in.
     * NULL: nothing records writes. */
    void (*on_written)(struct pcd_server *srv, const struct pcd_req *r);
    /* The position (proto.h, "Positions") the write being run takes in its
     * model's log, for its answer: the journal's next LSN (durability.c) or
     * the entry being applied (redislog/apply.c); false when there is none (no
     * log, or not inside a write).  NULL: nothing keeps positions. */
    bool (*write_position)(const struct pcd_server *srv, pcp_position *out);
    struct pcd_journal *journal;  /* NULL when journal.enabled is false */
    double journal_pruned_at;     /* when the 1 s tick last walked the models to prune (durability.c) */
    uint64_t replay_lsn;          /* while replaying: the record being applied, else 0 */
    struct event *journal_timer;  /* 1 s: everysec syncs, retries, pruning */
    struct event *expiry_timer;   /* events past their join.ttl, in slices (expiry.c) */

    /* The shared log (redislog.h), NULL without `log: {backend: redis}`.
     * log_gate runs in dispatch.c before the handler of every request that
     * names a model (not while the log's own entries are applied): PCP_OK
     * runs the handler here, PCD_LOGGED means the write was appended and its
     * answer comes later through client->deliver, anything else is an error
     * code with r->err set. */
    struct pcd_redislog *rlog;
    int (*log_gate)(struct pcd_server *srv, struct pcd_req *r);
    /* Called by persist.c after a model's snapshot file is written (in the
     * snapshot child, or at exit), with the bytes it holds: the shared log
     * publishes them in Redis for daemons that start empty.  NULL: nothing. */
    void (*on_snapshot)(struct pcd_server *srv, const pcd_model *e, const uint8_t *buf, size_t len);
    struct pcd_logstats {
        bool up;                  /* connected to Redis: writes are accepted */
        bool ready;               /* caught up once with every stream: reads are served */
        char error[256];          /* why not, when !up */
        char replica[256];        /* this daemon's name in Redis (log.replica) */
        uint64_t appended, applied, apply_failed, refused, lost, waiting, streams, bootstrapped;
        uint64_t unconfirmed;     /* WAITs that returned fewer replicas than log.wait_replicas */
        uint64_t after_waiting;   /* reads parked until their "after" is applied (redislog/after.c) */
        uint64_t after_timeouts;  /* those answered code 18 after limits.after_wait_ms */
        uint64_t nodes, nodes_up; /* Redis servers (a cluster's masters) known; connected */
    } logst;                      /* read by `stats` (replies.c) */

    /* The bounds (budget.c; the buffers' totals are the loop's).  applying: a write accepted
     * before is being applied again (journal replay, the shared log's
     * entries): max_models and max_memory do not refuse it, or the models
     * would differ from what was acknowledged. */
    bool applying;
    /* Models at rest (rest.c, set by server.c): puts the least recently used
     * resident model but keep to rest to make room under max_memory (budget.c);
     * false when none could go.  NULL: models never rest. */
    bool (*evict_one)(struct pcd_server *srv, const pcd_model *keep);
    /* Models at rest written and loaded off the loop (restio.h); NULL
     * without resident_max, and until the journal's replay is over. */
    struct pcd_restio *restio;

    /* Models at rest (rest.c), with limits.resident_max on: counted for
     * `stats` and /metrics; resident and resting are the registry's. */
    struct pcd_reststats {
        uint64_t loads, load_failed, evictions, evict_failed;
        uint64_t loads_ahead;     /* loads queued for a request read behind a waiting one */
        uint64_t load_retried;    /* loads the loader thread could not do, left to the loop */
        uint64_t written_in_loop; /* evictions whose write the loop did itself */
        uint64_t taken_back;      /* models back in memory from their queued write */
        double load_seconds, load_max_seconds, evict_seconds, write_seconds;
        pcd_latency load_time;    /* the loads' histogram */
        uint64_t writing;         /* evictions whose write is queued (restio.c) */
        size_t writing_bytes;     /* and what those models weighed in memory (max_memory
                                     counts it until they are written) */
        uint64_t rng;             /* the sampling's xorshift state */
        pcd_log_limit fail_log;   /* "stays in memory": a line a second at most */
    } rest;

    /* The one event loop's own state (loop.h); everything above is shared. */
    pcd_loop loop;
} pcd_server;

#endif
