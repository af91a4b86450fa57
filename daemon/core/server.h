/* server.h - the daemon's state, shared by its parts.
 *
 * One libevent loop: listeners (listen.c), connections (serve.c, conn.c), the method
 * handlers (dispatch.c, request.c, replies.c), models (models.c), snapshots
 * (persist.c), the journal (durability.c over journal.c), the clock
 * (clock.c), systemd notification (notify.c) and the signals and timers that
 * tie them together (server.c).  Everything runs on the loop's thread except
 * the journal's fdatasyncs, which its own thread runs (journal.c), and only
 * persist.c forks: the child writes snapshots from its copy-on-write image of
 * the models while the parent keeps serving. */
#ifndef PCD_SERVER_H
#define PCD_SERVER_H

#include <event2/event.h>
#include <event2/listener.h>
#include <msgpack.h>
#include <sys/types.h>

#include "daemon/base/log.h"
#include "daemon/config/config.h"
#include "daemon/model/registry.h"
#include "proto/proto.h"

typedef struct pcd_conn pcd_conn;
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

/* Latency buckets of the request histogram (metrics.c names them), seconds. */
#define PCD_LATENCY_BUCKETS 14
extern const double pcd_latency_bounds[PCD_LATENCY_BUCKETS];

_Static_assert(PCP_CODE_COUNT <= 32, "the error counters are indexed by code & 31");

/* One method's requests and notifications (dispatch.c's run()). */
typedef struct pcd_method_counters {
    uint64_t calls;
    uint64_t errors[32];                    /* by pcp_code (masked with 31) */
    uint64_t le[PCD_LATENCY_BUCKETS + 1];   /* handler times <= each bound; last: +Inf */
    double seconds;                         /* their sum */
} pcd_method_counters;

typedef struct pcd_counters {
    uint64_t connections_total, connections_rejected, connections_closed_idle,
        connections_closed_error;
    uint64_t requests, notifications, errors, labels, predicts;
    uint64_t bytes_in, bytes_out;
    uint64_t errors_by_code[32];         /* by pcp_code, masked with 31 */
    uint64_t snapshots_written, snapshots_failed;
    /* the bounds (issue 14): connections closed for the input budget or a
     * message that took longer than message_timeout; writes refused by
     * max_models / max_memory; failed accepts (EMFILE ...) */
    uint64_t connections_evicted, connections_slow, refused_memory, refused_models, accept_errors;
    uint64_t denied, auth_failures;  /* refused for want of a right; `auth` with a bad token */
    uint64_t auto_promotions;        /* challengers promoted by promote.auto */
    pcd_method_counters methods[PCP_M_COUNT];
} pcd_counters;

/* Someone who asked for a save and waits for its answer: a connection
 * (serve.c), blocked as Redis's blocked.c blocks a client.  persist.c answers
 * through unblock and knows nothing else of it. */
typedef struct pcd_client pcd_client;
struct pcd_client {
    /* Answers the save request msgid (ok: written models were written; not
     * ok: msg says why) and lets the client go on. */
    void (*unblock)(pcd_client *cl, uint32_t msgid, bool notification, bool ok, const char *msg,
                    uint64_t written);
    const char *name; /* for logs */
    /* What it may do (pcp_right): its listener's, raised by `auth`, which
     * also names it (user: the token's name, "" before). */
    unsigned rights, listener_rights;
    char user[65];
    /* The shared log (redislog.c): hold reserves the place of an answer that
     * comes once the write is applied (NULL when out of memory); deliver
     * fills it with one whole response, in the order places were held. */
    void *(*hold)(pcd_client *cl);
    void (*deliver)(pcd_client *cl, void *slot, const char *bytes, size_t len);
    /* Sends the answer of a request that returned PCD_WAIT (a sliced
     * weights scan, scan.c) and reads on; NULL: the client cannot wait. */
    void (*resume)(pcd_client *cl, const char *bytes, size_t len);
};

#define PCD_WAITS_MAX 4 /* modules a client can wait on (blocked.h) */

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

    pcd_conn *conns;            /* doubly linked */
    unsigned nconns;
    /* What the modules a client can wait on forget of a client that goes
     * (blocked.h): registered once at start. */
    void (*forget[PCD_WAITS_MAX])(struct pcd_server *srv, pcd_client *c);
    size_t nforget;
    pcd_counters counters;
    int64_t started_at;

    pcd_snapjob snap;
    struct event *snap_timer, *status_timer, *watchdog_timer;
    struct event *sig_term, *sig_int, *sig_hup, *sig_chld;
    bool stopping;
    bool ready;                 /* restored and listening (/readyz) */
    struct pcd_http *http;      /* the metrics endpoint (http.c); NULL when off */

    /* Called after a method flagged PCP_F_WRITES succeeded, with the request
     * and its raw bytes (dispatch.c's run()): where a journal hooks in.
     * NULL: nothing records writes. */
    void (*on_written)(struct pcd_server *srv, const struct pcd_req *r);
    /* The position (proto.h, "Positions") the write being run takes in its
     * model's log, for its answer: the journal's next LSN (durability.c) or
     * the entry being applied (redislog.c); false when there is none (no
     * log, or not inside a write).  NULL: nothing keeps positions. */
    bool (*write_position)(const struct pcd_server *srv, pcp_position *out);
    struct pcd_journal *journal;  /* NULL when journal.enabled is false */
    uint64_t replay_lsn;          /* while replaying: the record being applied, else 0 */
    struct event *journal_timer;  /* 1 s: everysec syncs, retries, pruning */
    struct event *expiry_timer;   /* events past their join.ttl, in slices (expiry.c) */
    /* A connection's turn (serve.c) reads the wall clock for join.c once, when
     * a join first asks: its predicts and label_events share that time (a
     * read cost 0.05 to 0.17 us on the 2-core VM, two a pair).  in_turn is
     * false outside a turn (replay, timers), turn_ms 0 until asked. */
    bool in_turn;
    int64_t turn_ms;
    struct pcd_scan *scans;       /* weights scans under way, a slice a turn (scan.c) */
    struct event *scan_timer;

    /* The shared log (redislog.c), NULL without `log: {backend: redis}`.
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

    /* The bounds (budget.c, conn.c, listen.c).  applying: a write accepted
     * before is being applied again (journal replay, the shared log's
     * entries): max_models and max_memory do not refuse it, or the models
     * would differ from what was acknowledged. */
    bool applying;
    size_t input_bytes;           /* the connections' input buffers together (conn.c) */
    size_t output_bytes;          /* their answers not yet sent, as of each flush (conn.c) */
    struct event *sweep_timer;    /* 1 s: message_timeout (serve.c) */
    struct event *accept_timer;   /* listeners paused after EMFILE resume (listen.c) */
    unsigned accept_pause_ms;     /* the current pause, doubling up to 1 s */
    pcd_log_limit accept_log;     /* "accept failed": a line every 10 s at most */

    /* scratch reused by every request: one thread, so no per-request malloc */
    msgpack_zone zone;
    msgpack_sbuffer rewritten;  /* a write journaled with the time it happened (join.c) */
    pc_svec *xs;
    pc_label *ys;
    size_t nxs;
    double *scores;
    size_t nscores;
    pc_outcome *outcomes;
    size_t noutcomes;
    pcp_names_at *names_at;     /* where each example's feature names are (nxs of them) */
    pc_namer namer;             /* the name step, set for the request's model (its buffer owned) */
    pc_svec derived;            /* scratch: the name step's entries when only names are wanted */
    pcd_name_ref *names;        /* the feature names to note, noted together (request.c) */
    size_t nnames, names_cap;
} pcd_server;

#endif
