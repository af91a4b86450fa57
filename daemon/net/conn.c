/* conn.c - a connection's buffers and its end: input grown within a
 * budget, answers flushed when the journal allows, back-pressure, closing.
 *
 * serve.c reads and runs a connection's requests; this file owns what those
 * requests leave behind in memory.  Bytes are copied from the bufferevent
 * into a linear input buffer (as Redis does with its query buffer), and the
 * answers to one read are packed into one output buffer, written straight to
 * the socket: pipelined requests cost one syscall per batch, not per request.
 *
 * Back-pressure (libevent's le-proxy pattern): when a client does not read
 * its responses and the pending output passes max_output_bytes, we stop
 * reading its requests until the output drains below half of that.
 *
 * Bounds (issue 14).  Input buffers start small and grow with the message
 * they hold, and shrink once it is dispatched; all of them together stay
 * under max_input_bytes: past it the connections holding the largest
 * incomplete messages are closed (Redis's client eviction), so a thousand
 * half-sent 1 MiB messages cannot take the memory.
 *
 * With the journal's fsync `always`, what a read journaled is written before
 * any of its answers leave, and the answers wait for the sync (a mark in
 * answers.c); a connection whose answers acknowledge what the journal did
 * not keep is closed unanswered, so its client retries.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/base/log.h"
#include "daemon/core/blocked.h"
#include "daemon/core/budget.h"
#include "daemon/journal/journal.h"
#include "daemon/net/conn.h"
#include "daemon/net/conn_internal.h"

/* A connection's unsent answers past which it is paused once the daemon
 * holds max_memory (else max_output_bytes). */
#define OUTPUT_UNDER_PRESSURE (64 * 1024)
/* An input buffer's least and its size at rest: what an idle connection
 * and a slowloris byte cost. */
#define SMALL_CHUNK (4 * 1024)

/* What the connections' buffers hold (budget.c reads the totals). */
static void set_input_cap(pcd_conn *c, uint8_t *in, size_t cap)
{
    c->srv->loop.input_bytes += cap;
    c->srv->loop.input_bytes -= c->in_cap;
    c->in = in;
    c->in_cap = cap;
}

void pcd_conn_count_output(pcd_conn *c)
{
    size_t now = evbuffer_get_length(bufferevent_get_output(c->bev)) + c->out.size;
    c->srv->loop.output_bytes += now;
    c->srv->loop.output_bytes -= c->counted_out;
    c->counted_out = now;
}


/* The packer's sink: the output, or behind the answers still held. */
int pcd_conn_write(void *data, const char *buf, size_t len)
{
    pcd_conn *c = data;
    return pcd_answers_write(&c->held, &c->out, buf, len);
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
    srv->loop.input_bytes -= c->in_cap;
    srv->loop.output_bytes -= c->counted_out;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->loop.conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->loop.nconns--;
    bufferevent_free(c->bev);
    msgpack_sbuffer_destroy(&c->out);
    free(c->in);
    free(c);
}

void pcd_conn_close_all(pcd_server *srv)
{
    while (srv->loop.conns)
        pcd_conn_close(srv->loop.conns, NULL);
    if (srv->loop.sweep_timer)
        event_free(srv->loop.sweep_timer);
    srv->loop.sweep_timer = NULL;
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
void pcd_conn_flush(pcd_conn *c)
{
    struct evbuffer *output = bufferevent_get_output(c->bev);
    size_t ready = releasable(c);
    if (ready) {
        c->srv->loop.counters.bytes_out += ready;
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
    pcd_conn_count_output(c);
    size_t pending = c->counted_out;
    size_t max = c->srv->cfg.max_output_bytes;
    /* Past max_memory a connection whose answers pile up is paused sooner:
     * at OUTPUT_UNDER_PRESSURE rather than max_output_bytes. */
    const pcd_server *srv = c->srv;
    bool pressed = srv->cfg.max_memory && pending > OUTPUT_UNDER_PRESSURE &&
                   pcd_budget_held(srv) > srv->cfg.max_memory;
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
void pcd_conn_withhold(pcd_conn *c, const char *why)
{
    c->out.size = 0;
    pcd_answers_unmark(&c->held);
    c->srv->loop.counters.connections_closed_error++;
    pcd_conn_close(c, why);
}

/* After a read dispatched messages: what it journaled (LSNs past before)
 * is written before any answer leaves, and with fsync always its answers
 * wait for the sync.  False when the connection was closed. */
bool pcd_conn_commit(pcd_conn *c, uint64_t before)
{
    pcd_journal *j = c->srv->journal;
    uint64_t next = j ? pcd_journal_next_lsn(j) : before;
    if (next == before)
        return true;
    if (pcd_journal_flush_some(j) != 0) {
        char why[600];
        pcd_journal_writable(j, why, sizeof why);
        pcd_conn_withhold(c, why);
        return false;
    }
    if (pcd_journal_ack_lsn(j) < next - 1) {
        if (!pcd_answers_mark(&c->held, next - 1, c->out.size)) {
            pcd_conn_withhold(c, "out of memory holding answers for the journal");
            return false;
        }
    }
    return true;
}

/* Stops reading a connection whose stream cannot be resynchronised, sends
 * what was already answered, then closes. */
void pcd_conn_close_after_flush(pcd_conn *c, const char *why)
{
    pcd_warn("closing connection from %s: %s", c->peer, why);
    c->srv->loop.counters.connections_closed_error++;
    c->closing = true;
    bufferevent_disable(c->bev, EV_READ);
    pcd_conn_flush(c);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        pcd_conn_close(c, NULL);
    else
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
}

void pcd_conn_close_limited(pcd_conn *c, pcd_log_limit *limit, const char *fmt, ...)
{
    unsigned long long skipped;
    if (pcd_log_limit_ok(limit, 1, &skipped)) {
        char why[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        pcd_warn("closing connection from %s: %s (%llu more closed so since the last such line)",
                 c->peer, why, skipped);
    }
    pcd_conn_close(c, NULL);
}

/* What the input buffers may hold: max_input_bytes, and no more than what
 * max_memory leaves beside the models and the answers, though at least two
 * messages of the largest size (an admin's drop must still get in). */
static size_t input_budget(const pcd_server *srv)
{
    size_t budget = srv->cfg.max_input_bytes, mem = srv->cfg.max_memory;
    if (mem) {
        size_t held = srv->models.counted_bytes + srv->loop.output_bytes;
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
    if (srv->loop.input_bytes <= budget)
        return true;
    for (pcd_conn *x = srv->loop.conns; x; x = x->next)
        if (x != c && x->in_len == 0 && x->in_cap) {
            free(x->in);
            set_input_cap(x, NULL, 0);
        }
    bool alive = true;
    while (srv->loop.input_bytes > budget) {
        pcd_conn *big = NULL;
        for (pcd_conn *x = srv->loop.conns; x; x = x->next)
            if (!big || x->in_len > big->in_len)
                big = x;
        if (!big || big->in_len <= SMALL_CHUNK)
            break;
        static pcd_log_limit limit;
        srv->loop.counters.connections_evicted++;
        alive &= big != c;
        pcd_conn_close_limited(big, &limit, "the input buffers hold %zu bytes, over their budget "
                               "(%zu: limits.max_input_bytes, or what limits.max_memory leaves), "
                               "and its incomplete message (%zu bytes) is the largest",
                               srv->loop.input_bytes, budget, big->in_len);
    }
    return alive;
}

/* Room for want bytes in the input buffer (within limit): powers of two
 * from SMALL_CHUNK.  False when the connection was closed. */
bool pcd_conn_input_room(pcd_conn *c, size_t want, size_t limit)
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
        pcd_conn_close_after_flush(c, "out of memory for its input");
        return false;
    }
    set_input_cap(c, b, cap);
    return within_input_budget(c);
}

/* After a dispatch: a buffer grown for a message larger than two read
 * chunks goes back to its size at rest once that message is gone (smaller
 * ones stay: a pipelining client would grow them again at every read). */
void pcd_conn_input_shrink(pcd_conn *c)
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
