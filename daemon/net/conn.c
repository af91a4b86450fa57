/* conn.c - one client connection: framing, back-pressure, limits, closing.
 *
 * Bytes arrive through a bufferevent and are copied into a linear input
 * buffer (as Redis does with its query buffer).  predict, label and their
 * batches in the usual shapes are read there directly (proto/direct.c); for
 * everything else proto's bounded scanner finds where each MessagePack object
 * ends before msgpack-c ever sees it.  Every complete object is dispatched in
 * order; the answers to one read are packed into one output buffer and
 * written straight to the socket, so pipelined requests cost one syscall per
 * batch, not per request.
 *
 * Back-pressure (libevent's le-proxy pattern): when a client does not read
 * its responses and the pending output passes max_output_bytes, we stop
 * reading its requests until the output drains below half of that.  A client
 * that neither sends nor reads for idle_timeout seconds is closed.
 *
 * Bounds (issue 14).  Input buffers start small and grow with the message
 * they hold, and shrink once it is dispatched; all of them together stay
 * under max_input_bytes: past it the connections holding the largest
 * incomplete messages are closed (Redis's client eviction), so a thousand
 * half-sent 1 MiB messages cannot take the memory.  A message must arrive
 * whole within message_timeout of its first byte (slowloris).  Fairness: a
 * connection is served for turn_us microseconds, then its input waits for
 * the loop's next turn (a zero timer runs after the next poll), so others'
 * requests are answered between a pipelining client's runs.
 *
 * On a TLS listener the bufferevent is OpenSSL's (tls.c): the same buffers,
 * but answers always go through it, never straight to the socket.  A
 * connection starts with its listener's rights; dispatch.c checks them.
 *
 * With the shared log (redislog.c) a write is answered only when its entry
 * comes back from Redis and is applied, possibly after later writes to other
 * models: each such write holds a place in a queue of answers (a
 * pcd_answer), and every answer packed while places are held queues behind
 * them, so a connection's answers keep their order (answers.c holds both
 * kinds of held answers).  Writes are pipelined;
 * the first message that is not a write waits (input paused) until every
 * held answer is filled, so a predict sees the writes sent before it.
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
#include "daemon/core/blocked.h"
#include "daemon/exec/dispatch.h"
#include "daemon/exec/replies.h"
#include "daemon/journal/journal.h"
#include "daemon/net/answers.h"
#include "daemon/net/conn.h"
#include "daemon/net/tls.h"

/* Bytes moved from libevent per step, and read from the socket per callback
 * (libevent's default is 16 KiB): a pipelining client's requests arrive in
 * large runs, and each run boundary splits a message, which then takes the
 * scanner's slower path. */
/* A connection's unsent answers past which it is paused once the daemon
 * holds max_memory (else max_output_bytes). */
#define OUTPUT_UNDER_PRESSURE (64 * 1024)
#define READ_CHUNK (256 * 1024)
/* An input buffer's least and its size at rest: what an idle connection
 * and a slowloris byte cost. */
#define SMALL_CHUNK (4 * 1024)
/* An incomplete message past this: its connection is demoted (priority
 * PCD_PRIORITY_LOW) until it is whole, so that two hundred uploads of 1 MiB
 * messages do not each take a 256 KiB read before a small request's turn. */
#define LARGE_PARTIAL (64 * 1024)
/* What a connection reads per callback until its first message is whole: a
 * newcomer (an attacker reconnecting, perhaps) does not get a 256 KiB read
 * at the normal priority before it is known to send large messages. */
#define FIRST_READ (16 * 1024)

struct pcd_conn {
    pcd_client client;        /* first: persist.c holds it while we wait for a save */
    pcd_server *srv;
    struct bufferevent *bev;
    uint8_t *in;              /* input not yet dispatched: in[0..in_len) */
    size_t in_len, in_cap;
    pcp_scan_state scan;      /* resumable scan of the object at in[0] */
    msgpack_sbuffer out;      /* responses packed during this read */
    bool waiting;             /* a `save` answer is pending: hold the rest */
    bool closing;             /* close once the output is flushed */
    bool throttled;           /* reading paused by back-pressure */
    bool yielded;             /* used its turn (turn_us): goes on after the others */
    bool demoted;             /* uploading a large message: served when nothing else is ready */
    bool proven;              /* has sent a whole message: reads READ_CHUNK at a time */
    double partial_since;     /* monotonic time the incomplete message at in[0] began, 0: none */
    size_t counted_out;       /* its share of srv->output_bytes */
    struct event *turn;       /* the next turn (a zero timer) */
    bool tls;                 /* bev is OpenSSL's: never send() to the socket */
    bool handshaking;         /* TLS: until the handshake is done (a shorter timeout) */
    char peer[64];
    uint64_t requests;
    /* Answers held for the journal's sync (one mark per read that journaled
     * something, fsync always) and for the shared log (see the top). */
    pcd_answers held;
    bool log_wait;            /* a non-write waits for the held answers: input paused */
    struct event *resume;     /* sends delivered answers; reads on once all are filled */
    pcd_conn *prev, *next;
};

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

/* What the connections' buffers hold (budget.c reads the totals). */
static void set_input_cap(pcd_conn *c, uint8_t *in, size_t cap)
{
    c->srv->input_bytes += cap;
    c->srv->input_bytes -= c->in_cap;
    c->in = in;
    c->in_cap = cap;
}

static void count_output(pcd_conn *c)
{
    size_t now = evbuffer_get_length(bufferevent_get_output(c->bev)) + c->out.size;
    c->srv->output_bytes += now;
    c->srv->output_bytes -= c->counted_out;
    c->counted_out = now;
}


/* The packer's sink: the output, or behind the answers still held. */
static int conn_write(void *data, const char *buf, size_t len)
{
    pcd_conn *c = data;
    return pcd_answers_write(&c->held, &c->out, buf, len);
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

void pcd_conn_accept(pcd_server *srv, evutil_socket_t fd, const char *peer, bool tcp,
                     const pcd_listener *l)
{
    if (srv->stopping || srv->nconns >= srv->cfg.max_connections) {
        static pcd_log_limit limit; /* a flood of them is not logged line by line */
        unsigned long long skipped;
        srv->counters.connections_rejected++;
        if (pcd_log_limit_ok(&limit, 1, &skipped))
            pcd_warn("rejecting connection from %s: %u connections open, max_connections is %u"
                     " (%llu more rejected since the last such line)", peer, srv->nconns,
                     srv->cfg.max_connections, skipped);
        evutil_closesocket(fd);
        return;
    }
    if (!srv->sweep_timer && srv->cfg.message_timeout > 0) {
        srv->sweep_timer = event_new(srv->base, -1, EV_PERSIST, on_sweep, srv);
        struct timeval second = {1, 0};
        if (srv->sweep_timer)
            event_add(srv->sweep_timer, &second);
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
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++;
    srv->counters.connections_total++;
    pcd_debug("connection from %s on %s (%u open)", peer, l->what, srv->nconns);
}

void pcd_conn_close(pcd_conn *c, const char *why)
{
    pcd_server *srv = c->srv;
    if (why)
        pcd_info("closing connection from %s%s%s after %llu requests: %s", c->peer,
                 c->client.user[0] ? " as " : "", c->client.user,
                 (unsigned long long)c->requests, why);
    pcd_client_gone(srv, &c->client);
    pcd_answers_free(&c->held);
    if (c->resume)
        event_free(c->resume);
    if (c->turn)
        event_free(c->turn);
    srv->input_bytes -= c->in_cap;
    srv->output_bytes -= c->counted_out;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    bufferevent_free(c->bev);
    msgpack_sbuffer_destroy(&c->out);
    free(c->in);
    free(c);
}

void pcd_conn_close_all(pcd_server *srv)
{
    while (srv->conns)
        pcd_conn_close(srv->conns, NULL);
    if (srv->sweep_timer)
        event_free(srv->sweep_timer);
    srv->sweep_timer = NULL;
}

/* How much of out may leave now: all of it, unless answers wait for the
 * journal's fdatasync (then up to the last mark it covers). */
static size_t releasable(pcd_conn *c)
{
    if (!pcd_answers_wait_journal(&c->held))
        return c->out.size;
    uint64_t durable = c->srv->journal ? pcd_journal_ack_lsn(c->srv->journal) : UINT64_MAX;
    return pcd_answers_releasable(&c->held, durable, c->out.size);
}

/* Hands the packed responses that may leave to libevent, and applies
 * back-pressure (answers held for the journal count as pending). */
static void flush(pcd_conn *c)
{
    struct evbuffer *output = bufferevent_get_output(c->bev);
    size_t ready = releasable(c);
    if (ready) {
        c->srv->counters.bytes_out += ready;
        /* Write now rather than on the loop's next turn, and straight to the
         * socket (as Redis does): no epoll round trip before an answer, and
         * no write interest to register and drop again, two epoll_ctl calls
         * per batch.  Only what the socket does not take now goes through
         * libevent, which writes it when it can (and reports the errors). */
        size_t sent = 0;
        if (!c->tls && evbuffer_get_length(output) == 0) {
            ssize_t n = send(bufferevent_getfd(c->bev), c->out.data, ready,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0)
                sent = (size_t)n;
        }
        if (sent < ready)
            bufferevent_write(c->bev, c->out.data + sent, ready - sent);
        memmove(c->out.data, c->out.data + ready, c->out.size - ready);
        c->out.size -= ready;
    }
    count_output(c);
    size_t pending = c->counted_out;
    size_t max = c->srv->cfg.max_output_bytes;
    /* Past max_memory a connection whose answers pile up is paused sooner:
     * at OUTPUT_UNDER_PRESSURE rather than max_output_bytes. */
    const pcd_server *srv = c->srv;
    bool pressed = srv->cfg.max_memory && pending > OUTPUT_UNDER_PRESSURE &&
                   srv->models.counted_bytes + srv->input_bytes + srv->output_bytes >
                       srv->cfg.max_memory;
    if (!c->throttled && (pending > max || pressed)) {
        c->throttled = true;
        bufferevent_disable(c->bev, EV_READ);
        bufferevent_setwatermark(c->bev, EV_WRITE, max / 2, 0);
        pcd_debug("%s is not reading its responses (%zu bytes pending): pausing its input",
                  c->peer, pending);
    }
}

/* A connection whose answers must not leave: the journal did not keep what
 * they acknowledge.  Closed unanswered, so the client retries them. */
static void withhold(pcd_conn *c, const char *why)
{
    c->out.size = 0;
    pcd_answers_unmark(&c->held);
    c->srv->counters.connections_closed_error++;
    pcd_conn_close(c, why);
}

/* After a read dispatched messages: what it journaled (LSNs past before)
 * is written before any answer leaves, and with fsync always its answers
 * wait for the sync.  False when the connection was closed. */
static bool commit(pcd_conn *c, uint64_t before)
{
    pcd_journal *j = c->srv->journal;
    uint64_t next = j ? pcd_journal_next_lsn(j) : before;
    if (next == before)
        return true;
    if (pcd_journal_flush_some(j) != 0) {
        char why[600];
        pcd_journal_writable(j, why, sizeof why);
        withhold(c, why);
        return false;
    }
    if (pcd_journal_ack_lsn(j) < next - 1) {
        if (!pcd_answers_mark(&c->held, next - 1, c->out.size)) {
            withhold(c, "out of memory holding answers for the journal");
            return false;
        }
    }
    return true;
}

void pcd_conn_journal_durable(void *ud, uint64_t lsn, bool failed)
{
    pcd_server *srv = ud;
    (void)lsn;
    for (pcd_conn *c = srv->conns, *next; c; c = next) {
        next = c->next;
        if (!pcd_answers_wait_journal(&c->held) || c->closing)
            continue;
        flush(c); /* what the sync covers */
        if (failed && pcd_answers_wait_journal(&c->held))
            withhold(c, "the journal's fdatasync failed: answers withheld (see the log)");
        else if (c->throttled && evbuffer_get_length(bufferevent_get_output(c->bev)) +
                                         c->out.size <= c->srv->cfg.max_output_bytes / 2)
            on_write(c->bev, c); /* it was held answers that paused its input */
    }
}

/* Stops reading a connection whose stream cannot be resynchronised, sends
 * what was already answered, then closes. */
static void close_after_flush(pcd_conn *c, const char *why)
{
    pcd_warn("closing connection from %s: %s", c->peer, why);
    c->srv->counters.connections_closed_error++;
    c->closing = true;
    bufferevent_disable(c->bev, EV_READ);
    flush(c);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        pcd_conn_close(c, NULL);
    else
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
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

/* Dispatches every complete object in the input, in one turn of this
 * connection.  Returns false when the connection was closed. */
static bool process(pcd_conn *c)
{
    pcd_server *srv = c->srv;
    srv->in_turn = true; /* the time of its joins: read once (server.h) */
    srv->turn_ms = 0;
    bool open = process_turn(c);
    srv->in_turn = false;
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
        msgpack_packer_init(&pk, c, conn_write);
    else
        msgpack_packer_init(&pk, &c->out, msgpack_sbuffer_write);
    /* This connection's turn ends turn_us after it began (the clock is read
     * every 16 requests: most take a microsecond or two).  `start` also
     * dates an incomplete message left at the end (message_timeout counts
     * whole seconds): no second clock read per read. */
    double start = pcd_monotonic(), turn_end = start + srv->cfg.turn_us * 1e-6;
    uint64_t first = c->requests;
    while (!c->waiting && !c->log_wait && off < c->in_len) {
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
            srv->counters.errors++;
            srv->counters.errors_by_code[err.code & 31]++;
            /* No msgid can be trusted in bytes we could not frame. */
            memmove(c->in, c->in + off, c->in_len - off);
            c->in_len -= off;
            if (commit(c, before))
                close_after_flush(c, err.msg);
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
        pcp_code uc = pcp_unpack(raw, len, &srv->zone, &obj, &uerr);
        if (uc == PCP_OK && pcd_answers_wait_log(&c->held) && !is_write(&obj)) {
            msgpack_zone_clear(&srv->zone); /* read again once the held answers are out */
            c->log_wait = true;
            break;
        }
        off += len;
        if (uc != PCP_OK) {
            msgpack_zone_clear(&srv->zone);
            srv->counters.errors++;
            srv->counters.errors_by_code[uc & 31]++;
            if (commit(c, before))
                close_after_flush(c, uerr.msg);
            return false;
        }
        c->requests++;
        if (!pcd_dispatch(srv, &c->client, raw, len, &obj, &pk))
            c->waiting = true;
        msgpack_zone_clear(&srv->zone);
        /* a general-path request may be costly (weights, create): the clock
         * after each */
        if (pcd_monotonic() > turn_end) {
            c->yielded = !c->waiting && off < c->in_len;
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
    if (!commit(c, before))
        return false;
    flush(c);
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
    if (c->waiting || c->log_wait || c->yielded)
        bufferevent_disable(c->bev, EV_READ);
    return true;
}

/* What the input buffers may hold: max_input_bytes, and no more than what
 * max_memory leaves beside the models and the answers, though at least two
 * messages of the largest size (an admin's drop must still get in). */
static size_t input_budget(const pcd_server *srv)
{
    size_t budget = srv->cfg.max_input_bytes, mem = srv->cfg.max_memory;
    if (mem) {
        size_t held = srv->models.counted_bytes + srv->output_bytes;
        size_t left = held < mem ? mem - held : 0, floor = 2 * srv->cfg.max_message_bytes;
        if (left < floor)
            left = floor;
        if (left < budget)
            budget = left;
    }
    return budget;
}

/* Brings the input buffers within input_budget(): first by freeing the
 * empty buffers of the others (a pipelining client keeps one between reads),
 * then by closing the connections holding the largest incomplete messages.
 * False when c was one of them. */
static bool within_input_budget(pcd_conn *c)
{
    pcd_server *srv = c->srv;
    size_t budget = input_budget(srv);
    if (srv->input_bytes <= budget)
        return true;
    for (pcd_conn *x = srv->conns; x; x = x->next)
        if (x != c && x->in_len == 0 && x->in_cap) {
            free(x->in);
            set_input_cap(x, NULL, 0);
        }
    bool alive = true;
    while (srv->input_bytes > budget) {
        pcd_conn *big = NULL;
        for (pcd_conn *x = srv->conns; x; x = x->next)
            if (!big || x->in_len > big->in_len)
                big = x;
        if (!big || big->in_len <= SMALL_CHUNK)
            break;
        static pcd_log_limit limit;
        unsigned long long skipped;
        if (pcd_log_limit_ok(&limit, 1, &skipped))
            pcd_warn("closing connection from %s: the input buffers hold %zu bytes, over "
                     "their budget (%zu: limits.max_input_bytes, or what limits.max_memory "
                     "leaves), and its incomplete message (%zu bytes) is the largest (%llu more "
                     "closed so since the last such line)", big->peer, srv->input_bytes, budget,
                     big->in_len, skipped);
        srv->counters.connections_evicted++;
        alive &= big != c;
        pcd_conn_close(big, NULL);
    }
    return alive;
}

/* Room for want bytes in the input buffer (within limit): powers of two
 * from SMALL_CHUNK.  False when the connection was closed. */
static bool input_room(pcd_conn *c, size_t want, size_t limit)
{
    if (want > limit)
        want = limit;
    if (c->in_cap >= want)
        return true;
    size_t cap = c->in_cap > SMALL_CHUNK ? c->in_cap : SMALL_CHUNK;
    while (cap < want)
        cap *= 2;
    if (cap > limit)
        cap = limit;
    uint8_t *b = realloc(c->in, cap);
    if (!b) {
        close_after_flush(c, "out of memory for its input");
        return false;
    }
    set_input_cap(c, b, cap);
    return within_input_budget(c);
}

/* After a dispatch: a buffer grown for a message larger than two read
 * chunks goes back to its size at rest once that message is gone (smaller
 * ones stay: a pipelining client would grow them again at every read). */
static void input_shrink(pcd_conn *c)
{
    if (c->in_cap <= 2 * READ_CHUNK || c->in_len > c->in_cap / 4)
        return;
    size_t cap = SMALL_CHUNK;
    while (cap < c->in_len)
        cap *= 2;
    uint8_t *b = realloc(c->in, cap);
    if (b)
        set_input_cap(c, b, cap);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    pcd_conn *c = arg;
    struct evbuffer *input = bufferevent_get_input(bev);
    size_t avail;
    while (!c->waiting && !c->log_wait && !c->closing && !c->yielded &&
           (avail = evbuffer_get_length(input)) > 0) {
        /* The buffer never needs more than one message plus one chunk: the
         * scanner rejects a message larger than max_message_bytes. */
        size_t limit = c->srv->cfg.max_message_bytes + READ_CHUNK;
        if (!input_room(c, c->in_len + (avail < READ_CHUNK ? avail : READ_CHUNK), limit))
            return;
        size_t room = c->in_cap - c->in_len;
        if (room == 0) { /* cannot happen: the scanner stops us first */
            close_after_flush(c, "message exceeds max_message_bytes");
            return;
        }
        int n = evbuffer_remove(input, c->in + c->in_len, room < avail ? room : avail);
        if (n <= 0)
            break;
        c->in_len += (size_t)n;
        c->srv->counters.bytes_in += (size_t)n;
        if (!process(c))
            return;
        input_shrink(c);
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
    if (!c->waiting && !c->log_wait)
        bufferevent_enable(c->bev, EV_READ);
    if (process(c)) {
        input_shrink(c);
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
    for (pcd_conn *c = srv->conns, *next; c; c = next) {
        next = c->next;
        if (limit <= 0 || !c->partial_since || now - c->partial_since <= limit || c->waiting ||
            c->log_wait || c->yielded || c->throttled)
            continue;
        static pcd_log_limit slow;
        unsigned long long skipped;
        if (pcd_log_limit_ok(&slow, 1, &skipped))
            pcd_warn("closing connection from %s: its message (%zu bytes so far) did not arrive "
                     "whole within limits.message_timeout (%g s) (%llu more closed so since the "
                     "last such line)", c->peer, c->in_len, limit, skipped);
        srv->counters.connections_slow++;
        pcd_conn_close(c, NULL);
    }
}

static void on_write(struct bufferevent *bev, void *arg)
{
    pcd_conn *c = arg;
    (void)bev;
    count_output(c);
    if (c->closing) {
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            pcd_conn_close(c, NULL);
        return;
    }
    if (c->throttled) {
        c->throttled = false;
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
        if (!c->waiting && !c->log_wait && !c->yielded) {
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
        c->srv->counters.connections_closed_idle++;
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
    if (!c->throttled && !c->closing && !c->waiting && !c->log_wait && !c->yielded)
        bufferevent_enable(c->bev, EV_READ);
    if (process(c))
        on_read(c->bev, c);
}

/* Answers the save this connection waited for, then reads on. */
static void unblock(pcd_client *cl, uint32_t msgid, bool notification, bool ok, const char *msg,
                    uint64_t written)
{
    pcd_conn *c = (pcd_conn *)cl; /* the first member */
    if (!notification) {
        msgpack_packer pk;
        msgpack_packer_init(&pk, c, conn_write);
        if (ok) {
            pcp_pack_response_ok(&pk, msgid);
            pcd_reply_saved(&pk, written);
        } else {
            pcp_error err = {.code = PCP_E_INTERNAL};
            snprintf(err.msg, sizeof err.msg, "%s", msg);
            pcp_pack_response_error(&pk, msgid, &err);
        }
    }
    c->waiting = false;
    read_on(c);
}

/* Answers a request that made this connection wait (scan.c), then reads on. */
static void resume(pcd_client *cl, const char *bytes, size_t len)
{
    pcd_conn *c = (pcd_conn *)cl;
    if (len)
        conn_write(c, bytes, len);
    c->waiting = false;
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
        flush(c);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    pcd_conn *c = arg;
    (void)fd;
    (void)what;
    if (!c->closing)
        flush(c);
    if (pcd_answers_wait_log(&c->held) || !c->log_wait)
        return;
    c->log_wait = false;
    read_on(c);
}
