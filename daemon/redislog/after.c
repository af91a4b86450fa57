/* after.c - reads parked until an entry of the shared log is applied (see
 * after.h).
 *
 * The parked reads are one list in the order they came.  One timer, set to
 * the earliest deadline, answers those whose wait ran out; limits.after_wait_ms
 * may change on a reload, so the list is not assumed in deadline order.
 * Memory: a connection parks one read at most (after.h), so the bytes held
 * are bounded by max_connections times max_message_bytes, as the input
 * buffers are. */
#include "daemon/redislog/after.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/clock.h"

typedef struct parked {
    struct parked *next;
    pcd_client *client;   /* NULL once it went away */
    void *slot;           /* its answer's place (client->hold) */
    uint32_t msgid;
    const pcp_method *method;
    char model[PCP_MODEL_NAME_MAX + 1];
    pcd_sid at;
    double deadline;      /* monotonic seconds */
    size_t len;
    uint8_t raw[];        /* the request, as it came */
} parked;

struct pcd_after {
    pcd_server *srv;
    pcd_after_run_fn run;
    void *ud;
    parked *head;
    struct event *timer;
    msgpack_sbuffer answer;
};

static void on_timer(evutil_socket_t fd, short what, void *arg);

pcd_after *pcd_after_new(pcd_server *srv, pcd_after_run_fn run, void *ud)
{
    pcd_after *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    *a = (pcd_after){.srv = srv, .run = run, .ud = ud};
    if (!(a->timer = evtimer_new(srv->base, on_timer, a))) {
        free(a);
        return NULL;
    }
    msgpack_sbuffer_init(&a->answer);
    return a;
}

void pcd_after_free(pcd_after *a)
{
    if (!a)
        return;
    while (a->head) {
        parked *p = a->head;
        a->head = p->next;
        free(p);
    }
    a->srv->logst.after_waiting = 0;
    event_free(a->timer);
    msgpack_sbuffer_destroy(&a->answer);
    free(a);
}

/* The timer at the earliest deadline of those parked (none: off). */
static void arm(pcd_after *a)
{
    double first = 0;
    for (const parked *p = a->head; p; p = p->next)
        if (!first || p->deadline < first)
            first = p->deadline;
    if (!first) {
        evtimer_del(a->timer);
        return;
    }
    double d = first - pcd_monotonic();
    d = d > 0 ? d : 0;
    struct timeval tv = {(time_t)d, (suseconds_t)((d - (double)(time_t)d) * 1e6)};
    evtimer_add(a->timer, &tv);
}

/* The error code 18 for a read that waited its limit. */
static void pack_behind(pcd_after *a, const parked *p, msgpack_packer *pk)
{
    pcd_server *srv = a->srv;
    const pcd_model *e = pcd_registry_find(&srv->models, p->model, strlen(p->model));
    pcp_error err = {.code = PCP_E_BEHIND};
    char here[80] = "has none of it";
    if (e)
        snprintf(here, sizeof here, "is at entry %llu-%llu", (unsigned long long)e->log_ms,
                 (unsigned long long)e->log_seq);
    snprintf(err.msg, sizeof err.msg, "%s: this daemon had not applied position %llu-%llu of "
             "model '%s''s log within limits.after_wait_ms (%u ms); here the model %s "
             "(info: log_lag): retry, or ask another replica", p->method->name, p->at.ms,
             p->at.seq, p->model, srv->cfg.after_wait_ms, here);
    pcp_pack_response_error(pk, p->msgid, &err);
    srv->loop.counters.errors++;
    srv->loop.counters.errors_by_code[PCP_E_BEHIND]++;
    srv->loop.counters.methods[p->method->id].errors[PCP_E_BEHIND]++;
}

int pcd_after_park(pcd_after *a, pcd_req *r, const char *model, pcd_sid at)
{
    pcd_server *srv = a->srv;
    if (!r->client || !r->client->hold)
        return pcd_req_fail(r, PCP_E_INTERNAL, "option 'after': this caller cannot wait");
    if (!srv->cfg.after_wait_ms)
        return pcd_req_fail(r, PCP_E_BEHIND, "%s: this daemon has not applied position %llu-%llu "
                            "of model '%s''s log, and limits.after_wait_ms is 0: retry, or ask "
                            "another replica", r->method->name, at.ms, at.seq, model);
    parked *p = malloc(sizeof *p + r->len);
    void *slot = p ? r->client->hold(r->client) : NULL;
    if (!slot) {
        free(p);
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory");
    }
    *p = (parked){.next = NULL, .client = r->client, .slot = slot, .msgid = r->msgid,
                  .method = r->method, .at = at, .len = r->len,
                  .deadline = pcd_monotonic() + srv->cfg.after_wait_ms / 1000.0};
    snprintf(p->model, sizeof p->model, "%s", model);
    memcpy(p->raw, r->raw, r->len);
    parked **tail = &a->head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    srv->logst.after_waiting++;
    if (!evtimer_pending(a->timer, NULL))
        arm(a);
    return PCD_LOGGED;
}

/* Takes p out of the list (prev: the one before it, NULL at the head). */
static void unlink_parked(pcd_after *a, parked *prev, parked *p)
{
    if (prev)
        prev->next = p->next;
    else
        a->head = p->next;
    a->srv->logst.after_waiting--;
}

/* Answers p (run: its read, its entry being applied; else code 18) and
 * frees it. */
static void answer(pcd_after *a, parked *p, bool run)
{
    msgpack_packer pk;
    a->answer.size = 0;
    msgpack_packer_init(&pk, &a->answer, msgpack_sbuffer_write);
    if (p->client && run)
        a->run(a->ud, p->raw, p->len, &pk);
    else if (p->client)
        pack_behind(a, p, &pk);
    if (p->client && !a->answer.size) { /* out of memory packing it */
        pcp_error err = {.code = PCP_E_INTERNAL};
        snprintf(err.msg, sizeof err.msg, "out of memory answering a parked %s", p->method->name);
        a->answer.size = 0;
        pcp_pack_response_error(&pk, p->msgid, &err);
    }
    if (p->client)
        p->client->deliver(p->client, p->slot, a->answer.data, a->answer.size);
    free(p);
}

void pcd_after_reached(pcd_after *a, const char *model, pcd_sid last)
{
    if (!a->head)
        return;
    bool any = false;
    for (parked *prev = NULL, *p = a->head, *next; p; p = next) {
        next = p->next;
        if (strcmp(p->model, model) || pcd_sid_cmp(p->at, last) > 0) {
            prev = p;
            continue;
        }
        unlink_parked(a, prev, p);
        answer(a, p, true);
        any = true;
    }
    if (any)
        arm(a);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    pcd_after *a = arg;
    (void)fd;
    (void)what;
    double now = pcd_monotonic();
    for (parked *prev = NULL, *p = a->head, *next; p; p = next) {
        next = p->next;
        if (p->deadline > now) {
            prev = p;
            continue;
        }
        unlink_parked(a, prev, p);
        a->srv->logst.after_timeouts++;
        answer(a, p, false);
    }
    arm(a);
}

void pcd_after_forget(pcd_after *a, pcd_client *cl)
{
    for (parked *p = a->head; p; p = p->next)
        if (p->client == cl)
            p->client = NULL;
}
