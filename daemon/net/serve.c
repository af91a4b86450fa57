/* serve.c - a connection's requests: accepted, read, run in order, and the
 * waits that pause it.
 *
 * predict, label and their batches in the usual shapes are read from the
 * input directly (proto/direct.c); for everything else proto's bounded
 * scanner finds where each MessagePack object ends before msgpack-c ever
 * sees it.  Every complete object is dispatched in order (exec/dispatch.c)
 * and its answer packed into the connection's output (conn.c owns the
 * buffers and when answers may leave).
 *
 * Time: a client that neither sends nor reads for idle_timeout seconds is
 * closed; a message must arrive whole within message_timeout of its first
 * byte (slowloris).  Fairness: a connection is served for turn_us
 * microseconds, then its input waits for the loop's next turn (a zero timer
 * runs after the next poll), so others' requests are answered between a
 * pipelining client's runs.
 *
 * On a TLS listener the bufferevent is OpenSSL's (tls.c): the same buffers,
 * but answers always go through it, never straight to the socket.  A
 * connection starts with its listener's rights; dispatch.c checks them.
 *
 * A connection's input pauses while it waits, and every wait is a place in
 * its one queue of held answers (answers.c): for a save or a sliced scan
 * it asked for (the wait slot, filled through the client's unblock or
 * resume), or, with the shared log (redislog/), for its writes' answers.  A
 * write there is answered only when its entry comes back from Redis and is
 * applied, possibly after later writes to other models: each such write
 * holds a place in the queue of answers (answers.c), and every answer packed
 * while places are held queues behind them, so a connection's answers keep
 * their order.  Writes are pipelined; the first message that is not a write
 * waits (`log_wait`, input paused) until every held answer is filled, so a
 * predict sees the writes sent before it.  A client that goes while it
 * waits takes core/blocked.c's one path.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/restio.h"
#include "daemon/exec/dispatch.h"
#include "daemon/exec/replies.h"
#include "daemon/journal/journal.h"
#include "daemon/net/conn.h"
#include "daemon/net/conn_internal.h"
#include "daemon/net/serve.h"
#include "daemon/net/tls.h"

/* An incomplete message past this: its connection is demoted (priority
 * PCD_PRIORITY_LOW) until it is whole, so that two hundred uploads of 1 MiB
 * messages do not each take a 256 KiB read before a small request's turn. */
#define LARGE_PARTIAL (64 * 1024)
/* What a connection reads per callback until its first message is whole: a
 * newcomer (an attacker reconnecting, perhaps) does not get a 256 KiB read
 * at the normal priority before it is known to send large messages. */
#define FIRST_READ (16 * 1024)

static void on_read(struct bufferevent *bev, void *arg);
static void on_write(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);
static void unblock(pcd_client *cl, uint32_t msgid, bool notification, bool ok, const char *msg,
                    uint64_t written);
static void *hold(pcd_client *cl);
static void deliver(pcd_client *cl, void *slot, const char *bytes, size_t len);
static void resume(pcd_client *cl, const char *bytes, size_t len);
static void on_resume(evutil_socket_t fd, short what, void *arg);
static void on_turn(evutil_socket_t fd, short what, void *arg);
static void on_sweep(evutil_socket_t fd, short what, void *arg);

/* Whether its reading is paused for an answer it waits for: its wait slot
 * (a save, a scan), the shared log's slots ahead of a read, or a model
 * being loaded off the loop (core/restio.h). */
static bool paused(const pcd_conn *c)
{
    return pcd_answers_waiting(&c->held) || c->log_wait || c->load_wait;
}

/* A TLS handshake has this long at most (or idle_timeout when shorter): a
 * client that never finishes it holds a connection for no request. */
#define HANDSHAKE_TIMEOUT 10.0

static void set_timeouts(pcd_conn *c)
{
    double idle = c->srv->cfg.idle_timeout;
    if (c->handshaking && (idle <= 0 || idle > HANDSHAKE_TIMEOUT))
        idle = HANDSHAKE_TIMEOUT;
    if (idle > 0) {
        struct timeval tv = {(time_t)idle, (suseconds_t)((idle - (double)(time_t)idle) * 1e6)};
        bufferevent_set_timeouts(c->bev, &tv, &tv);
    } else {
        bufferevent_set_timeouts(c->bev, NULL, NULL);
    }
}

void pcd_serve_accept(pcd_server *srv, evutil_socket_t fd, const char *peer, bool tcp,
                     const pcd_listener *l)
{
    if (srv->stopping || srv->loop.nconns >= srv->cfg.max_connections) {
        static pcd_log_limit limit; /* a flood of them is not logged line by line */
        unsigned long long skipped;
        srv->loop.counters.connections_rejected++;
        if (pcd_log_limit_ok(&limit, 1, &skipped))
            pcd_warn("rejecting connection from %s: %u connections open, max_connections is %u"
                     " (%llu more rejected since the last such line)", peer, srv->loop.nconns,
                     srv->cfg.max_connections, skipped);
        evutil_closesocket(fd);
        return;
    }
    if (!srv->loop.sweep_timer && srv->cfg.message_timeout > 0) {
        srv->loop.sweep_timer = event_new(srv->base, -1, EV_PERSIST, on_sweep, srv);
        struct timeval second = {1, 0};
        if (srv->loop.sweep_timer)
            event_add(srv->loop.sweep_timer, &second);
    }
    if (tcp) { /* answers are small and latency matters: no Nagle delay */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    evutil_make_socket_nonblocking(fd);
    pcd_conn *c = calloc(1, sizeof *c);
    struct bufferevent *bev = l->tls ? pcd_tls_accept(srv->base, fd, l->tls)
                                     : bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c || !bev) {
        pcd_error("out of memory accepting a connection from %s", peer);
        free(c);
        if (bev)
            bufferevent_free(bev);
        else
            evutil_closesocket(fd);
        return;
    }
    c->srv = srv;
    c->bev = bev;
    c->tls = c->handshaking = l->tls != NULL;
    c->client.rights = c->client.listener_rights = l->rights;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    c->client.unblock = unblock;
    c->client.name = c->peer;
    c->client.hold = hold;
    c->client.deliver = deliver;
    c->client.resume = resume;
    msgpack_sbuffer_init(&c->out);
    bufferevent_setcb(bev, on_read, on_write, on_event, c);
    bufferevent_set_max_single_read(bev, FIRST_READ);
    set_timeouts(c);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    c->next = srv->loop.conns;
    if (srv->loop.conns)
        srv->loop.conns->prev = c;
    srv->loop.conns = c;
    srv->loop.nconns++;
    srv->loop.counters.connections_total++;
    pcd_debug("connection from %s on %s (%u open)", peer, l->what, srv->loop.nconns);
}

void pcd_serve_journal_durable(void *ud, uint64_t lsn, bool failed)
{
    pcd_server *srv = ud;
    (void)lsn;
    for (pcd_conn *c = srv->loop.conns, *next; c; c = next) {
        next = c->next;
        if (!pcd_answers_wait_journal(&c->held) || c->closing)
            continue;
        pcd_conn_flush(c); /* what the sync covers */
        if (failed && pcd_answers_wait_journal(&c->held))
            pcd_conn_withhold(c, "the journal's fdatasync failed: answers withheld (see the log)");
        else if (c->throttled && evbuffer_get_length(bufferevent_get_output(c->bev)) +
                                         c->out.size <= c->srv->cfg.max_output_bytes / 2)
            on_write(c->bev, c); /* it was held answers that paused its input */
    }
}

/* A write (PCP_F_WRITES), which may be appended while answers are held;
 * anything else waits for them. */
static bool is_write(const msgpack_object *o)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 3)
        return false;
    const msgpack_object *m = &o->via.array.ptr[o->via.array.size == 4 ? 2 : 1];
    if (m->type != MSGPACK_OBJECT_STR)
        return false;
    const pcp_method *pm = pcp_method_find(m->via.str.ptr, m->via.str.size);
    return pm && (pm->flags & PCP_F_WRITES);
}

/* The direct path (proto/direct.c) on in[off..off+n): true when it read and
 * answered a whole predict, label or batch of them, of *len bytes. */
static bool take_direct(pcd_conn *c, size_t off, size_t n, msgpack_packer *pk, size_t *len)
{
    pcp_direct d;
    return pcp_direct_message(c->in + off, n, &c->srv->limits, &d) &&
           pcd_dispatch_direct(c->srv, &c->client, &d, pk, len);
}

static bool process_turn(pcd_conn *c);

/* How many requests behind a waiting one load_ahead looks at. */
#define LOAD_AHEAD_MESSAGES 32

/* c waits for a model's load: the whole requests already read behind the
 * waiting one that name other resting models have their loads queued now
 * (pcd_restio_prefetch), so that a pipelined client's misses overlap in the
 * rest thread instead of each waiting for the one before.  Nothing is run
 * or consumed: each request is read again, in order, when its turn comes. */
static void load_ahead(pcd_conn *c, size_t from)
{
    pcd_server *srv = c->srv;
    for (int k = 0; k < LOAD_AHEAD_MESSAGES && from < c->in_len; k++) {
        pcp_scan_state st = {0};
        pcp_error err = {0};
        size_t len;
        if (pcp_scan(&st, c->in + from, c->in_len - from, &srv->limits, &len, &err) <= 0)
            return; /* the rest has not all arrived, or is garbage its turn will answer */
        msgpack_object obj;
        if (pcp_unpack(c->in + from, len, &srv->loop.zone, &obj, &err) == PCP_OK) {
            pcd_model *e = pcd_dispatch_resting(srv, &obj);
            if (e)
                pcd_restio_prefetch(srv, e);
        }
        msgpack_zone_clear(&srv->loop.zone);
        from += len;
    }
}

/* Dispatches every complete object in the input, in one turn of this
 * connection.  Returns false when the connection was closed. */
static bool process(pcd_conn *c)
{
    pcd_server *srv = c->srv;
    srv->loop.in_turn = true; /* the time of its joins: read once (server.h) */
    srv->loop.turn_ms = 0;
    bool open = process_turn(c);
    srv->loop.in_turn = false;
    return open;
}

static bool process_turn(pcd_conn *c)
{
    pcd_server *srv = c->srv;
    uint64_t before = srv->journal ? pcd_journal_next_lsn(srv->journal) : 0;
    size_t off = 0;
    msgpack_packer pk;
    /* Answers queue behind held ones only with the shared log; without it
     * they go straight into out (the sink is called for every packed item). */
    if (srv->rlog)
        msgpack_packer_init(&pk, c, pcd_conn_write);
    else
        msgpack_packer_init(&pk, &c->out, msgpack_sbuffer_write);
    /* This connection's turn ends turn_us after it began (the clock is read
     * every 16 requests: most take a microsecond or two).  `start` also
     * dates an incomplete message left at the end (message_timeout counts
     * whole seconds): no second clock read per read. */
    double start = pcd_monotonic(), turn_end = start + srv->cfg.turn_us * 1e-6;
    uint64_t first = c->requests;
    while (!paused(c) && off < c->in_len) {
        if (c->requests != first && (c->requests - first) % 16 == 0 &&
            pcd_monotonic() > turn_end) {
            c->yielded = true;
            break;
        }
        size_t len;
        /* The direct path first: a complete predict, label or batch of them in
         * the usual shape is read in one pass.  It declines the rest,
         * including a message whose bytes have not all arrived: that one goes
         * to the resumable scanner, and to the direct path once whole. */
        /* a message the scanner resumes was not tried; nor is any while
         * answers are held (it may have to wait for them) */
        bool tried = !c->scan.started && !pcd_answers_wait_log(&c->held);
        if (tried && take_direct(c, off, c->in_len - off, &pk, &len)) {
            off += len;
            c->requests++;
            continue;
        }
        pcp_error err = {0};
        int r = pcp_scan(&c->scan, c->in + off, c->in_len - off, &srv->limits, &len, &err);
        if (r == 0)
            break;
        if (r < 0) {
            srv->loop.counters.errors++;
            srv->loop.counters.errors_by_code[err.code & 31]++;
            /* No msgid can be trusted in bytes we could not frame. */
            memmove(c->in, c->in + off, c->in_len - off);
            c->in_len -= off;
            if (pcd_conn_commit(c, before))
                pcd_conn_close_after_flush(c, err.msg);
            return false;
        }
        memset(&c->scan, 0, sizeof c->scan);
        size_t taken; /* all len framed bytes, when the direct path takes them */
        if (!tried && !pcd_answers_wait_log(&c->held) && take_direct(c, off, len, &pk, &taken)) {
            off += taken;
            c->requests++;
            continue;
        }
        const uint8_t *raw = c->in + off;
        if (srv->rlog && pcd_dispatch_logged(srv, &c->client, raw, len, &pk)) {
            off += len; /* a write, to the shared log without decoding it */
            c->requests++;
            continue;
        }
        msgpack_object obj;
        /* proto's unpack tells a malformed object from one msgpack-c had no
         * memory for, and says which in uerr. */
        pcp_error uerr = {0};
        pcp_code uc = pcp_unpack(raw, len, &srv->loop.zone, &obj, &uerr);
        if (uc == PCP_OK && pcd_answers_wait_log(&c->held) && !is_write(&obj)) {
            msgpack_zone_clear(&srv->loop.zone); /* read again once the held answers are out */
            c->log_wait = true;
            break;
        }
        /* a model at rest is loaded off the loop: this message waits for
         * it, unread, and runs once it is in memory (on_loaded) */
        pcd_model *resting = uc == PCP_OK && !c->load_here ? pcd_dispatch_resting(srv, &obj) : NULL;
        if (resting && pcd_restio_wait(srv, resting, &c->client)) {
            msgpack_zone_clear(&srv->loop.zone);
            c->load_wait = true;
            load_ahead(c, off + len);
            break;
        }
        c->load_here = false;
        off += len;
        if (uc != PCP_OK) {
            msgpack_zone_clear(&srv->loop.zone);
            srv->loop.counters.errors++;
            srv->loop.counters.errors_by_code[uc & 31]++;
            if (pcd_conn_commit(c, before))
                pcd_conn_close_after_flush(c, uerr.msg);
            return false;
        }
        c->requests++;
        if (!pcd_dispatch(srv, &c->client, raw, len, &obj, &pk))
            pcd_answers_hold_wait(&c->held); /* reading stops until it is filled */
        msgpack_zone_clear(&srv->loop.zone);
        /* a general-path request may be costly (weights, create): the clock
         * after each */
        if (pcd_monotonic() > turn_end) {
            c->yielded = !pcd_answers_waiting(&c->held) && off < c->in_len;
            break;
        }
    }
    if (off) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
    /* an incomplete message left at in[0]: since when (message_timeout) */
    if (!c->in_len)
        c->partial_since = 0;
    else if (off || !c->partial_since)
        c->partial_since = start;
    if (c->requests && !c->proven) { /* it sent a whole message: full reads from now on */
        c->proven = true;
        bufferevent_set_max_single_read(c->bev, READ_CHUNK);
    }
    bool large = c->in_len > LARGE_PARTIAL && !c->yielded;
    if (large != c->demoted &&
        bufferevent_priority_set(c->bev, large ? PCD_PRIORITY_LOW : PCD_PRIORITIES / 2) == 0)
        c->demoted = large;
    if (!pcd_conn_commit(c, before))
        return false;
    pcd_conn_flush(c);
    if (c->yielded) {
        if (!c->turn)
            c->turn = evtimer_new(bufferevent_get_base(c->bev), on_turn, c);
        if (!c->turn) {
            c->yielded = false; /* out of memory: no fairness, but no stall either */
        } else {
            static const struct timeval now = {0, 0};
            evtimer_add(c->turn, &now);
        }
    }
    if (paused(c) || c->yielded)
        bufferevent_disable(c->bev, EV_READ);
    return true;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    pcd_conn *c = arg;
    struct evbuffer *input = bufferevent_get_input(bev);
    size_t avail;
    while (!paused(c) && !c->closing && !c->yielded &&
           (avail = evbuffer_get_length(input)) > 0) {
        /* The buffer never needs more than one message plus one chunk: the
         * scanner rejects a message larger than max_message_bytes. */
        size_t limit = c->srv->cfg.max_message_bytes + READ_CHUNK;
        if (!pcd_conn_input_room(c, c->in_len + (avail < READ_CHUNK ? avail : READ_CHUNK), limit))
            return;
        size_t room = c->in_cap - c->in_len;
        if (room == 0) { /* cannot happen: the scanner stops us first */
            pcd_conn_close_after_flush(c, "message exceeds max_message_bytes");
            return;
        }
        int n = evbuffer_remove(input, c->in + c->in_len, room < avail ? room : avail);
        if (n <= 0)
            break;
        c->in_len += (size_t)n;
        c->srv->loop.counters.bytes_in += (size_t)n;
        if (!process(c))
            return;
        pcd_conn_input_shrink(c);
    }
}

/* The next turn of a connection that used its own (process()). */
static void on_turn(evutil_socket_t fd, short what, void *arg)
{
    pcd_conn *c = arg;
    (void)fd;
    (void)what;
    if (!c->yielded)
        return;
    c->yielded = false;
    if (c->closing || c->throttled) /* on_write goes on once it drains */
        return;
    if (!paused(c))
        bufferevent_enable(c->bev, EV_READ);
    if (process(c)) {
        pcd_conn_input_shrink(c);
        on_read(c->bev, c);
    }
}

/* Once a second: a connection whose incomplete message began longer than
 * message_timeout ago is closed (a slowloris holds a slot and a buffer). */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    pcd_server *srv = arg;
    (void)fd;
    (void)what;
    double now = pcd_monotonic(), limit = srv->cfg.message_timeout;
    for (pcd_conn *c = srv->loop.conns, *next; c; c = next) {
        next = c->next;
        if (limit <= 0 || !c->partial_since || now - c->partial_since <= limit || paused(c) ||
            c->yielded || c->throttled)
            continue;
        static pcd_log_limit slow;
        srv->loop.counters.connections_slow++;
        pcd_conn_close_limited(c, &slow, "its message (%zu bytes so far) did not arrive whole "
                               "within limits.message_timeout (%g s)", c->in_len, limit);
    }
}

static void on_write(struct bufferevent *bev, void *arg)
{
    pcd_conn *c = arg;
    (void)bev;
    pcd_conn_count_output(c);
    if (c->closing) {
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            pcd_conn_close(c, NULL);
        return;
    }
    if (c->throttled) {
        c->throttled = false;
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
        if (!paused(c) && !c->yielded) {
            bufferevent_enable(c->bev, EV_READ);
            if (process(c))
                on_read(c->bev, c);
        }
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    pcd_conn *c = arg;
    (void)bev;
    if (what & BEV_EVENT_TIMEOUT) {
        c->srv->loop.counters.connections_closed_idle++;
        pcd_conn_close(c, c->handshaking ? "its TLS handshake did not finish in time"
                          : what & BEV_EVENT_WRITING
                              ? "its responses could not be delivered within idle_timeout"
                              : "idle for longer than idle_timeout");
    } else if (what & BEV_EVENT_ERROR) {
        char why[300], tls[256] = "";
        if (c->tls)
            pcd_tls_error(bev, tls, sizeof tls);
        if (*tls)
            snprintf(why, sizeof why, "TLS error: %s", tls);
        else
            snprintf(why, sizeof why, "socket error: %s", strerror(EVUTIL_SOCKET_ERROR()));
        pcd_conn_close(c, why);
    } else if (what & BEV_EVENT_CONNECTED) { /* a TLS handshake completed */
        char subject[256];
        c->handshaking = false;
        set_timeouts(c);
        if (pcd_tls_peer(bev, subject, sizeof subject))
            pcd_info("TLS connection from %s with client certificate %s", c->peer, subject);
        else
            pcd_debug("TLS connection from %s", c->peer);
    } else if (what & BEV_EVENT_EOF) {
        pcd_debug("%s closed its connection", c->peer);
        pcd_conn_close(c, NULL);
    }
}

/* A wait of this connection ended (its flag is cleared): it reads on,
 * unless something else still holds it (process() then stops at once). */
static void read_on(pcd_conn *c)
{
    if (!c->throttled && !c->closing && !paused(c) && !c->yielded)
        bufferevent_enable(c->bev, EV_READ);
    if (process(c))
        on_read(c->bev, c);
}

/* The model this connection's next message names is loaded (or its load
 * failed: the message then loads it in the loop, and answers the error):
 * the message runs now, before the loop serves anyone else (restio.c). */
void pcd_serve_loaded(pcd_client *cl, bool loaded)
{
    pcd_conn *c = (pcd_conn *)cl;
    c->load_wait = false;
    c->load_here = !loaded;
    read_on(c);
}

/* Answers the save this connection waited for, then reads on. */
static void unblock(pcd_client *cl, uint32_t msgid, bool notification, bool ok, const char *msg,
                    uint64_t written)
{
    msgpack_sbuffer answer;
    msgpack_sbuffer_init(&answer);
    if (!notification) {
        msgpack_packer pk;
        msgpack_packer_init(&pk, &answer, msgpack_sbuffer_write);
        if (ok) {
            pcp_pack_response_ok(&pk, msgid);
            pcd_reply_saved(&pk, written);
        } else {
            pcp_error err = {.code = PCP_E_INTERNAL};
            snprintf(err.msg, sizeof err.msg, "%s", msg);
            pcp_pack_response_error(&pk, msgid, &err);
        }
    }
    resume(cl, answer.data, answer.size);
    msgpack_sbuffer_destroy(&answer);
}

/* Answers a request that made this connection wait (scan.c, or a save
 * through unblock), then reads on. */
static void resume(pcd_client *cl, const char *bytes, size_t len)
{
    pcd_conn *c = (pcd_conn *)cl;
    pcd_answers_fill_wait(&c->held, bytes, len, &c->out);
    read_on(c);
}

/* Holds the place of a write's answer (the shared log's hold). */
static void *hold(pcd_client *cl)
{
    pcd_conn *c = (pcd_conn *)cl;
    return pcd_answers_hold(&c->held);
}

/* Fills a held place; the answers now at the head of the queue leave, and
 * a connection waiting for them reads on (from the loop, not from inside
 * the log's callback). */
static void deliver(pcd_client *cl, void *slot, const char *bytes, size_t len)
{
    pcd_conn *c = (pcd_conn *)cl;
    pcd_answers_fill(&c->held, slot, bytes, len, &c->out);
    if (c->closing)
        return;
    /* The answers delivered while the log applies one read of entries leave
     * in one write, on the loop's next turn (on_resume), not one each. */
    if (!c->resume)
        c->resume = evtimer_new(bufferevent_get_base(c->bev), on_resume, c);
    if (c->resume)
        event_active(c->resume, EV_TIMEOUT, 1);
    else
        pcd_conn_flush(c);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    pcd_conn *c = arg;
    (void)fd;
    (void)what;
    if (!c->closing)
        pcd_conn_flush(c);
    if (pcd_answers_wait_log(&c->held) || !c->log_wait)
        return;
    c->log_wait = false;
    read_on(c);
}
