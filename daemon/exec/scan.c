/* scan.c - `weights` of a large model, a slice at a time (scan.h).
 *
 * The largest weights of a model take a scan of all of them: 1 ms for 2^20
 * dense weights, 16 ms for 2^24 on the 2-core VM, while the loop serves no
 * one else.  Like Redis's incremental rehash, the scan advances
 * PCD_SCAN_SLICE weights per turn of the loop (a zero timeout: after the
 * loop has polled for input), and the connection that asked waits, its input
 * paused, as for `save`.  The answer is exact: slices of one state of the
 * model (lib's pc_model_top_weights_slice), restarted when the model
 * changes in between, and finished in one go after two restarts.
 */
#include "daemon/exec/scan.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/core/rest.h"
#include "daemon/exec/replies.h"

#define RESTARTS_MAX 2

typedef struct pcd_scan {
    struct pcd_scan *next;
    pcd_client *client;        /* NULL once it went away */
    uint32_t msgid;
    bool notification;
    char name[PCP_MODEL_NAME_MAX + 1];
    uint64_t model_id;         /* the incarnation of the name it scans */
    uint64_t changes;          /* the model's state the slices so far read */
    size_t cls, k, n;
    uint32_t pos;              /* the next slice starts here */
    unsigned restarts;
    uint32_t *idx;             /* k each, owned (handed to the model's cache) */
    double *w;
} pcd_scan;

static void scan_free(pcd_scan *s)
{
    free(s->idx);
    free(s->w);
    free(s);
}

/* The answer (or an error), then the client reads on. */
static void answer(pcd_server *srv, pcd_scan *s, const pcd_model *e, const pcp_error *err)
{
    if (!s->client)
        return;
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    if (!s->notification) {
        msgpack_packer pk;
        msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
        if (err) {
            pcp_pack_response_error(&pk, s->msgid, err);
            srv->loop.counters.errors++;
            srv->loop.counters.errors_by_code[err->code & 31]++;
        } else {
            pcp_pack_response_ok(&pk, s->msgid);
            pcd_reply_weights(&pk, e, e->top.idx, e->top.w, e->top.n);
        }
    }
    s->client->resume(s->client, buf.data, buf.size);
    msgpack_sbuffer_destroy(&buf);
}

/* The scan is whole: it becomes the model's cached answer (struct pcd_top). */
static void finish(pcd_model *e, pcd_scan *s)
{
    free(e->top.idx);
    free(e->top.w);
    e->top = (struct pcd_top){.changes = s->changes, .cls = s->cls, .k = s->k, .n = s->n,
                              .idx = s->idx, .w = s->w};
    s->idx = NULL;
    s->w = NULL;
}

/* One slice of scan s; true when it is done (answered). */
static bool step(pcd_server *srv, pcd_scan *s)
{
    pcd_model *e = pcd_registry_find(&srv->models, s->name, strlen(s->name));
    if (!e || e->id != s->model_id) {
        pcp_error err = {.code = PCP_E_MODEL};
        snprintf(err.msg, sizeof err.msg, "model '%s' was dropped while its weights were scanned",
                 s->name);
        answer(srv, s, NULL, &err);
        return true;
    }
    pcp_error lerr = {0};
    if (pcd_model_resting(e) && pcd_rest_load(srv, e, &lerr) != 0) { /* evicted between slices */
        answer(srv, s, NULL, &lerr);
        return true;
    }
    if (e->changes != s->changes) { /* learnt meanwhile: the slices so far are stale */
        s->changes = e->changes;
        s->pos = 0;
        s->n = 0;
        s->restarts++;
    }
    uint32_t len = pc_model_scan_length(e->model, s->cls);
    uint32_t to = s->restarts > RESTARTS_MAX || len - s->pos <= PCD_SCAN_SLICE ? len
                                                                              : s->pos + PCD_SCAN_SLICE;
    s->n = pc_model_top_weights_slice(e->model, s->cls, s->pos, to, s->k, s->idx, s->w, s->n);
    s->pos = to;
    if (to < len)
        return false;
    finish(e, s);
    answer(srv, s, e, NULL);
    return true;
}

static void on_slice(evutil_socket_t fd, short what, void *arg)
{
    pcd_server *srv = arg;
    (void)fd;
    (void)what;
    /* Taken off the list first: an answer lets its connection read on, and
     * the next request may start a scan (pushed on srv->loop.scans) meanwhile. */
    pcd_scan *list = srv->loop.scans;
    srv->loop.scans = NULL;
    while (list) {
        pcd_scan *s = list;
        list = s->next;
        if (step(srv, s)) {
            scan_free(s);
        } else {
            s->next = srv->loop.scans;
            srv->loop.scans = s;
        }
    }
    if (srv->loop.scans) {
        struct timeval now = {0, 0};
        evtimer_add(srv->loop.scan_timer, &now);
    }
}

bool pcd_scan_wanted(const pcd_req *r, size_t cls)
{
    return r->client && r->client->resume &&
           pc_model_scan_length(r->model->model, cls) > PCD_SCAN_SLICE;
}

int pcd_scan_weights(pcd_req *r, size_t cls, size_t k)
{
    pcd_server *srv = r->srv;
    pcd_model *e = r->model;
    if (!srv->loop.scan_timer && !(srv->loop.scan_timer = evtimer_new(srv->base, on_slice, srv)))
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory for a scan of the weights");
    pcd_scan *s = calloc(1, sizeof *s);
    uint32_t *idx = malloc(k * sizeof *idx);
    double *w = malloc(k * sizeof *w);
    if (!s || !idx || !w) {
        free(s);
        free(idx);
        free(w);
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory for %zu weights", k);
    }
    *s = (pcd_scan){.next = srv->loop.scans, .client = r->client, .msgid = r->msgid,
                    .notification = r->notification, .model_id = e->id, .changes = e->changes,
                    .cls = cls, .k = k, .idx = idx, .w = w};
    snprintf(s->name, sizeof s->name, "%s", e->name);
    srv->loop.scans = s;
    struct timeval now = {0, 0};
    evtimer_add(srv->loop.scan_timer, &now);
    return PCD_WAIT;
}

void pcd_scan_forget(pcd_server *srv, pcd_client *cl)
{
    for (pcd_scan *s = srv->loop.scans; s; s = s->next)
        if (s->client == cl)
            s->client = NULL;
}

void pcd_scan_free_all(pcd_server *srv)
{
    while (srv->loop.scans) {
        pcd_scan *s = srv->loop.scans;
        srv->loop.scans = s->next;
        scan_free(s);
    }
    if (srv->loop.scan_timer)
        event_free(srv->loop.scan_timer);
    srv->loop.scan_timer = NULL;
}
