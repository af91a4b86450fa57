/* conn_internal.h - a connection as conn.c and serve.c share it: its
 * fields, and conn.c's functions over its buffers that serve.c calls.
 * Nothing outside daemon/net/ includes it. */
#ifndef PCD_CONN_INTERNAL_H
#define PCD_CONN_INTERNAL_H

#include "daemon/core/server.h"
#include "daemon/net/answers.h"

/* Bytes moved from libevent per step, and read from the socket per callback
 * (libevent's default is 16 KiB): a pipelining client's requests arrive in
 * large runs, and each run boundary splits a message, which then takes the
 * scanner's slower path. */
#define READ_CHUNK (256 * 1024)

struct pcd_conn {
    pcd_client client;        /* first: persist.c holds it while we wait for a save */
    pcd_server *srv;
    struct bufferevent *bev;
    uint8_t *in;              /* input not yet dispatched: in[0..in_len) */
    size_t in_len, in_cap;
    pcp_scan_state scan;      /* resumable scan of the object at in[0] */
    msgpack_sbuffer out;      /* responses packed during this read */
    bool closing;             /* close once the output is flushed */
    bool throttled;           /* reading paused by back-pressure */
    bool yielded;             /* used its turn (turn_us): goes on after the others */
    bool demoted;             /* uploading a large message: served when nothing else is ready */
    bool proven;              /* has sent a whole message: reads READ_CHUNK at a time */
    double partial_since;     /* monotonic time the incomplete message at in[0] began, 0: none */
    size_t counted_out;       /* its share of srv->loop.output_bytes */
    struct event *turn;       /* the next turn (a zero timer) */
    bool tls;                 /* bev is OpenSSL's: never send() to the socket */
    bool handshaking;         /* TLS: until the handshake is done (a shorter timeout) */
    char peer[64];
    uint64_t requests;
    /* Answers held for the journal's sync (one mark per read that journaled
     * something, fsync always), the shared log and a save or scan it waits
     * for (answers.h): the one queue of its waits. */
    pcd_answers held;
    bool log_wait;            /* a non-write waits for the held answers: input paused */
    bool load_wait;           /* its next message names a model being loaded: input paused */
    bool load_here;           /* that load failed off the loop: the message loads in the loop */
    struct event *resume;     /* sends delivered answers; reads on once all are filled */
    pcd_conn *prev, *next;
};

/* The packer's sink (data: the connection): the output, or behind the
 * answers still held. */
int pcd_conn_write(void *data, const char *buf, size_t len);
/* Recounts the connection's unsent answers into srv->loop.output_bytes. */
void pcd_conn_count_output(pcd_conn *c);
/* Hands the packed answers that may leave to libevent (or the socket), and
 * applies back-pressure (answers held for the journal count as pending). */
void pcd_conn_flush(pcd_conn *c);
/* After a read dispatched messages: what it journaled (LSNs past before) is
 * written before any answer leaves, and with fsync always its answers wait
 * for the sync.  False when the connection was closed. */
bool pcd_conn_commit(pcd_conn *c, uint64_t before);
/* Closes a connection unanswered: the journal did not keep what its
 * answers acknowledge (why is logged). */
void pcd_conn_withhold(pcd_conn *c, const char *why);
/* Stops reading a connection whose stream cannot be resynchronised, sends
 * what was already answered, then closes. */
void pcd_conn_close_after_flush(pcd_conn *c, const char *why);
/* Closes a connection for what a flood would repeat (a message too slow,
 * too large for the input budget): the warning, why in printf style, once a
 * second at most per limit, saying how many were closed so meanwhile. */
void pcd_conn_close_limited(pcd_conn *c, pcd_log_limit *limit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Room for want bytes in the input buffer (at most limit), within the
 * input buffers' budget.  False when the connection was closed. */
bool pcd_conn_input_room(pcd_conn *c, size_t want, size_t limit);
/* Gives back a buffer grown for a large message once it is gone. */
void pcd_conn_input_shrink(pcd_conn *c);

#endif
