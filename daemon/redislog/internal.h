/* internal.h - the shared log's state, shared by the files of the log
 * (redislog.h says what the log is): its records (streams, owed answers,
 * queued appends, nodes, readers, the log itself) and the functions one
 * file calls in another, named pcd_rl_; the rest of each file is static.
 * Not an API.
 *
 * The files, lowest first; each calls only files listed before it
 * (scripts/check-circles holds the daemon's objects to that):
 *
 *   streams.c   the streams followed, the answers owed, the lookups and the
 *               back-off every other file uses
 *   append.c    XADD: pipelined, queued past OBUF_MAX, WAIT for replicas
 *   readers.c   nodes and readers: who serves a stream, what a loss does
 *   apply.c     applying an entry: the write run, its answer delivered
 *   lag.c       the lag: the streams' entry counts, once a second
 *   follow.c    preparing a stream (bootstrapping from a published
 *               snapshot), then XREAD BLOCK on its reader
 *   connect.c   the connections: dialling, AUTH, connected and lost
 *   slots.c     the cluster's slot map: asked, applied, retried
 *   gate.c      the gate before every request that names a model
 *   redislog.c  open and close, and publishing at a snapshot
 *
 * The log's work goes round in circles: a stream added is routed to a
 * reader that is dialled, whose connection, once up, reads entries, whose
 * apply may add a stream (a catalogue entry) and runs the write past the
 * gate, which adds streams too.  Two of those calls go upwards, through
 * the hooks below, set once at open as the server's own hooks are
 * (on_written, log_gate): route (streams.c's stream_add to connect.c)
 * and gate (apply.c puts the gate back after an entry ran).
 */
#ifndef PCD_REDISLOG_INTERNAL_H
#define PCD_REDISLOG_INTERNAL_H

#include <event2/event.h>
#include <hiredis/async.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/redislog/after.h"
#include "daemon/redislog/auth.h"
#include "daemon/redislog/cluster.h"
#include "daemon/redislog/redislog.h"
#include "daemon/redislog/reply.h"

#define BACKOFF_MIN 0.1    /* seconds before the first reconnection, doubled up to */
#define BACKOFF_MAX 2.0

typedef pcd_sid sid;
typedef struct node node;
typedef struct reader reader;

typedef struct stream {
    char *model;           /* NULL: the catalogue */
    char *key, *snapkey;   /* the stream; its published snapshot (model streams) */
    reader *rdr;           /* who follows it (never NULL) */
    sid last;              /* read after this entry */
    bool prepared;         /* checked against Redis since the connection */
    bool followed;         /* read at least once in this process */
    bool caught_up;        /* reached `target` once */
    bool catalogued;       /* named in the catalogue (else the first write names it) */
    sid target;            /* the stream's last entry when it was prepared */
    /* Entry counts (XINFO STREAM's entries-added, Redis >= 7): `pos` is the
     * count up to `last`; until known, it becomes `sync_pos` when entry
     * `sync_id` is applied; `added` is the count at the last look. */
    bool pos_known, sync, added_known;
    uint64_t pos, sync_pos, added;
    sid sync_id;
    sid boot;              /* the published snapshot being loaded */
    bool boot_pos_known;
    uint64_t boot_pos;
} stream;

/* A write this daemon appended whose answer is owed to a client. */
typedef struct pend {
    struct pend *prev, *next;
    uint64_t seq;          /* the "o" sequence number of its entry */
    uint32_t msgid;
    pcd_client *client;    /* NULL once it went away */
    void *slot;            /* its held place (client->hold) */
    stream *st;
    node *nd;              /* the node its XADD went to */
    /* With log.wait_replicas: the answer waits for both its entry applied
     * here and a WAIT after its XADD that enough replicas confirmed;
     * whichever comes first is noted. */
    bool confirmed;        /* a WAIT covering it returned enough replicas */
    char *answer;          /* applied first: the answer, owned, until confirmed */
    size_t answer_len;
} pend;

/* An append waiting for room in hiredis's output buffer (append.c). */
typedef struct queued {
    struct queued *next;
    stream *st;
    uint64_t seq;
    bool owed;             /* a pend waits for it */
    size_t len;
    uint8_t raw[];
} queued;

/* A Redis server that appends: log.address, or a master of the cluster.
 * Kept until close (pends name it), even when it left the map. */
struct node {
    pcd_redislog *rl;
    char *address;         /* "unix:/path" | "tcp:host:port" */
    redisAsyncContext *wr; /* XADD, the catalogue's XADD, XINFO probes, WAIT */
    bool up, warned, in_map;
    char error[256];       /* why not up: writes of its streams are refused with it */
    /* AUTH's refusal on the connection now closing ("" none): the commands
     * pipelined behind it were refused too (NOAUTH), never applied */
    char refused[240];
    queued *qhead, *qtail;
    /* WAIT (log.wait_replicas): after the appends of one loop pass, one WAIT
     * covers every entry sent to this node up to sent_seq. */
    uint64_t sent_seq, waited_seq;
    struct event *wait_ev;
};

/* A following connection: XREAD BLOCK over the streams of one slot, on the
 * node that serves it (slot -1: every stream, one server). */
struct reader {
    pcd_redislog *rl;
    node *nd;              /* NULL: no master serves the slot (CLUSTERDOWN) */
    int slot;
    redisAsyncContext *rd;
    bool up, reading;
    unsigned preparing;    /* replies owed to the preparation of its streams */
    char error[256];       /* why not connected: writes of its streams are refused with it */
};

struct pcd_redislog {
    pcd_server *srv;
    bool cluster, closing;
    node **nodes;          /* one server: nodes[0] is log.address */
    size_t nnodes;
    reader **readers;
    size_t nreaders;
    pcd_slot_map map;      /* cluster: the last CLUSTER SLOTS */
    bool mapped;
    redisAsyncContext *ctl; /* cluster: asking CLUSTER SLOTS */
    size_t ctl_next;       /* whom it asks: log.address, then the masters in turn */
    bool ctl_warned;
    bool announce;         /* say "connected" when all is up (at start, after a failure) */
    struct event *retry;
    double backoff;
    uint64_t instance, seq;
    stream **streams;      /* streams[0] is the catalogue */
    size_t nstreams, cap;
    pend *head, *tail;
    bool in_apply;         /* the log's own entries pass the gate */
    sid applying;
    stream *cur;           /* the stream of the entry being applied */
    struct event *probe;
    msgpack_sbuffer answer;
    pcd_redis_auth auth;   /* sent first on every connection */
    pcd_after *after;      /* reads parked until an entry is applied (after.h) */
    /* The calls upwards, set at open (the top comment says why) */
    bool (*route)(pcd_redislog *rl, stream *st); /* connect.c's pcd_rl_route */
    int (*gate)(pcd_server *srv, pcd_req *r);    /* gate.c's pcd_rl_gate */
};

/* ---- streams.c ---- */

/* Whether this daemon serves the model (log.models). */
bool pcd_rl_served(const pcd_redislog *rl, const char *name);
/* The stream of that key, or of that model when by_model; NULL if none. */
stream *pcd_rl_stream_find(pcd_redislog *rl, const char *key, size_t len, bool by_model);
/* Follows model's stream (the catalogue when NULL) after entry last,
 * routed to its reader; NULL out of memory. */
stream *pcd_rl_stream_add(pcd_redislog *rl, const char *model, sid last);
/* The answer owed for the entry of sequence number seq, or NULL. */
pend *pcd_rl_pend_find(pcd_redislog *rl, uint64_t seq);
/* Forgets p (answered, or its client gone). */
void pcd_rl_pend_remove(pcd_redislog *rl, pend *p);
/* Answers p with error 11 and forgets it; fmt has two %s: the Redis
 * address, then `what`. */
void pcd_rl_owe_error(pcd_redislog *rl, pend *p, const char *fmt, const char *what);
/* The node whose appending connection ac is, or NULL. */
node *pcd_rl_node_of(pcd_redislog *rl, const redisAsyncContext *ac);
/* Arms the back-off timer (slots.c's pcd_rl_on_retry), unless it is armed. */
void pcd_rl_schedule_retry(pcd_redislog *rl);

/* ---- append.c ---- */

/* Sends the write raw (its entry's sequence number seq; p the answer owed
 * for it, or NULL) to nd, whose connection is up, or queues it behind the
 * appends waiting there. */
void pcd_rl_append(node *nd, stream *st, const uint8_t *raw, size_t len, uint64_t seq, pend *p);
/* Moves nd's queued appends to hiredis while there is room; with no
 * connection, fails them. */
void pcd_rl_drain(node *nd);
/* The event of a node's WAIT (nd->wait_ev, log.wait_replicas), arg the node. */
void pcd_rl_on_wait_event(evutil_socket_t fd, short what, void *arg);

/* ---- readers.c ---- */

/* The node of address, made when new (not connected yet); NULL out of memory. */
node *pcd_rl_node_get(pcd_redislog *rl, const char *address);
/* The node that serves slot now: NULL when none does (or no map yet). */
node *pcd_rl_slot_node(pcd_redislog *rl, int slot);
/* stats.log: connected when every node of the map and every reader is. */
void pcd_rl_set_up(pcd_redislog *rl);
/* Closes the reader's connection; its streams are prepared again on the next. */
void pcd_rl_reader_drop(reader *rdr);
/* The reader's connection failed for why: dropped, dialled again later. */
void pcd_rl_reader_lost(reader *rdr, const char *why);
/* Closes nd's appending connection and its readers. */
void pcd_rl_node_close(node *nd);
/* nd failed for why: its writes refused, its connections closed, dialled
 * again later. */
void pcd_rl_node_lost(node *nd, const char *why);
/* A reader's XREAD (or preparation) got the error err. */
void pcd_rl_reader_error(reader *rdr, const char *err);
/* Why st's writes are refused now (buf may hold it), or NULL. */
const char *pcd_rl_unwritable(pcd_redislog *rl, const stream *st, char *buf, size_t len);

/* ---- apply.c ---- */

/* Applies an entry of st's XREAD reply; the answer owed for it, if this
 * daemon appended it, is delivered. */
void pcd_rl_apply_entry(pcd_redislog *rl, stream *st, const redisReply *e);
/* Serves reads once every stream followed has caught up (sticky). */
void pcd_rl_check_ready(pcd_redislog *rl);
/* after.c's run of a parked read (pcd_after_run_fn, ud the log). */
void pcd_rl_run_read(void *ud, const uint8_t *msg, size_t len, msgpack_packer *pk);
/* The server's write_position and on_written hooks (server.h). */
bool pcd_rl_write_position(const pcd_server *srv, pcp_position *out);
void pcd_rl_on_written(pcd_server *srv, const pcd_req *r);

/* ---- lag.c ---- */

/* The model's view of its stream's lag, for `info`. */
void pcd_rl_note_lag(pcd_redislog *rl, const stream *st);
/* XINFO STREAM's reply r: the stream's count into st, its last entry into
 * *last; false when Redis gave no count. */
bool pcd_rl_note_count(stream *st, const redisReply *r, sid *last);
/* The probe's timer (rl->probe), arg the log: XINFO STREAM of each stream. */
void pcd_rl_on_probe_timer(evutil_socket_t fd, short what, void *arg);

/* ---- follow.c ---- */

/* Prepares the reader's streams when needed, then XREAD BLOCK over them. */
void pcd_rl_read_more(reader *rdr);

/* ---- connect.c ---- */

/* A connection to address (AUTH sent first), its data the log; NULL with why. */
redisAsyncContext *pcd_rl_dial(pcd_redislog *rl, const char *address, char *why, size_t whylen);
/* Dials every node of the map not connected, and the readers of those up. */
void pcd_rl_connect_all(pcd_redislog *rl);
/* The map question failed for why: asked again later, of someone else. */
void pcd_rl_ctl_lost(pcd_redislog *rl, const char *why);
/* Gives st its reader (rl->route); false out of memory. */
bool pcd_rl_route(pcd_redislog *rl, stream *st);

/* ---- slots.c ---- */

/* Reads the cluster's slot map (CLUSTER SLOTS). */
void pcd_rl_ask_map(pcd_redislog *rl);
/* The back-off timer (rl->retry), arg the log. */
void pcd_rl_on_retry(evutil_socket_t fd, short what, void *arg);

/* ---- gate.c ---- */

/* The gate before every handler that names a model (server.h, log_gate). */
int pcd_rl_gate(pcd_server *srv, pcd_req *r);

#endif
