/* loop.h - one event loop's own state: its connections and what they hold,
 * the request scratch, its counters and its timers.
 *
 * The daemon runs one libevent loop today; what that loop owns is apart from
 * what every part of the daemon shares (server.h: the configuration, the
 * models, the journal, the shared log, snapshots, listeners, signals), so
 * that a second loop on a second core can be added with a pcd_loop of its
 * own.  Only the loop's thread touches its pcd_loop; see
 * docs/architecture.md, "Threads and processes", for who may touch what. */
#ifndef PCD_LOOP_H
#define PCD_LOOP_H

#include <event2/event.h>
#include <msgpack.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/model/names.h"
#include "lib/perceptron.h"
#include "proto/proto.h"

typedef struct pcd_conn pcd_conn;


_Static_assert(PCP_CODE_COUNT <= 32, "the error counters are indexed by code & 31");

/* One method's requests and notifications (dispatch.c's run()). */
typedef struct pcd_method_counters {
    uint64_t calls;
    uint64_t errors[32];                    /* by pcp_code (masked with 31) */
    pcd_latency time;                       /* handler times (with metrics.listen) */
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
    /* The shared log (redislog.h): hold reserves the place of an answer that
     * comes once the write is applied (NULL when out of memory); deliver
     * fills it with one whole response, in the order places were held. */
    void *(*hold)(pcd_client *cl);
    void (*deliver)(pcd_client *cl, void *slot, const char *bytes, size_t len);
    /* Sends the answer of a request that returned PCD_WAIT (a sliced
     * weights scan, scan.c) and reads on; NULL: the client cannot wait. */
    void (*resume)(pcd_client *cl, const char *bytes, size_t len);
};

typedef struct pcd_loop {
    pcd_conn *conns;            /* doubly linked */
    unsigned nconns;
    /* The bounds (serve.c, conn.c, listen.c): budget.c reads the totals. */
    size_t input_bytes;           /* the connections' input buffers together (conn.c) */
    size_t output_bytes;          /* their answers not yet sent, as of each flush (conn.c) */
    struct event *sweep_timer;    /* 1 s: message_timeout (serve.c) */
    struct event *accept_timer;   /* listeners paused after EMFILE resume (listen.c) */
    unsigned accept_pause_ms;     /* the current pause, doubling up to 1 s */
    pcd_log_limit accept_log;     /* "accept failed": a line every 10 s at most */
    pcd_counters counters;
    /* A connection's turn (serve.c) reads the wall clock for join.c once, when
     * a join first asks: its predicts and label_events share that time (a
     * read cost 0.05 to 0.17 us on the 2-core VM, two a pair).  in_turn is
     * false outside a turn (replay, timers), turn_ms 0 until asked. */
    bool in_turn;
    int64_t turn_ms;
    struct pcd_scan *scans;       /* weights scans under way, a slice a turn (scan.c) */
    struct event *scan_timer;

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
    /* An explained request's names, kept as its examples are read
     * (request.c): kept[0..nkept), each in the request's bytes (name) or,
     * built for the name step's call only, copied to kept_bytes + at */
    struct pcd_kept_name {
        const char *name;
        uint32_t idx, example, len, at;
    } *kept;
    size_t nkept, kept_cap;
    char *kept_bytes;
    size_t kept_len, kept_bytes_cap;
    uint32_t kept_example;      /* the example being read */
    struct pcd_explainer *explainer; /* explain.h's, made ready by each explained request */
} pcd_loop;

#endif
