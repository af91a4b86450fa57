/* streams.c - the shared log's records that every other file of the log
 * looks things up in: the streams followed (the catalogue, then one per
 * model served, in the order they were added), the answers owed to clients
 * for the writes this daemon appended (struct pend, found by the sequence
 * number of their entry's origin, apply.c), the node of a connection, and
 * the back-off before the next reconnection.
 *
 * At the bottom of the log's files (internal.h lists them): nothing here
 * calls the others, so that any of them may call it.  stream_add gives the
 * new stream its reader through rl->route (connect.c's pcd_rl_route, set
 * at open): routing dials a connection, whose traffic adds streams again.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/redislog/internal.h"
#include "lib/grow.h"

bool pcd_rl_served(const pcd_redislog *rl, const char *name)
{
    const pcd_config *c = &rl->srv->cfg;
    for (size_t i = 0; i < c->nlog_models; i++)
        if (fnmatch(c->log_models[i], name, 0) == 0)
            return true;
    return c->nlog_models == 0;
}

stream *pcd_rl_stream_find(pcd_redislog *rl, const char *key, size_t len, bool by_model)
{
    for (size_t i = 0; i < rl->nstreams; i++) {
        const char *s = by_model ? rl->streams[i]->model : rl->streams[i]->key;
        if (s && strlen(s) == len && !memcmp(s, key, len))
            return rl->streams[i];
    }
    return NULL;
}

/* Follows model's stream (the catalogue when NULL) after entry last. */
stream *pcd_rl_stream_add(pcd_redislog *rl, const char *model, sid last)
{
    if (!PC_GROW(rl->streams, rl->cap, rl->nstreams, 16))
        return NULL;
    stream *st = calloc(1, sizeof *st);
    const char *prefix = rl->srv->cfg.log_prefix;
    size_t klen = strlen(prefix) + (model ? strlen(model) + 3 : sizeof "models");
    if (st) {
        st->key = malloc(klen);
        st->snapkey = model ? malloc(klen + 5) : NULL;
        st->model = model ? strdup(model) : NULL;
    }
    if (!st || !st->key || (model && (!st->model || !st->snapkey))) {
        if (st) {
            free(st->key);
            free(st->snapkey);
            free(st->model);
        }
        free(st);
        return NULL;
    }
    /* {model}: the hash tag keeps a model's stream on one Redis Cluster slot */
    if (model) {
        snprintf(st->key, klen, "%s{%s}", prefix, model);
        snprintf(st->snapkey, klen + 5, "%s{%s}:snap", prefix, model);
    } else
        snprintf(st->key, klen, "%smodels", prefix);
    st->last = last;
    st->pos_known = last.ms == 0 && last.seq == 0; /* nothing before the start */
    st->catalogued = true; /* the gate says otherwise for a model new here */
    if (!rl->route(rl, st)) {
        free(st->key);
        free(st->snapkey);
        free(st->model);
        free(st);
        return NULL;
    }
    rl->streams[rl->nstreams++] = st;
    rl->srv->logst.streams = rl->nstreams - 1;
    return st;
}

pend *pcd_rl_pend_find(pcd_redislog *rl, uint64_t seq)
{
    pend *p = rl->head; /* usually the first: a daemon's entries come back in order per stream */
    while (p && p->seq != seq)
        p = p->next;
    return p;
}

void pcd_rl_pend_remove(pcd_redislog *rl, pend *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        rl->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        rl->tail = p->prev;
    free(p->answer);
    free(p);
    rl->srv->logst.waiting--;
}

/* Answers p with error 11 (the write was not applied by this daemon's
 * hand: refused, or its fate unknown) and forgets it.  fmt has two %s: the
 * Redis address, then `what`. */
void pcd_rl_owe_error(pcd_redislog *rl, pend *p, const char *fmt, const char *what)
{
    if (p->client) {
        pcp_error err = {.code = PCP_E_INTERNAL};
        snprintf(err.msg, sizeof err.msg, fmt, p->nd ? p->nd->address : rl->srv->cfg.log_address,
                 what);
        msgpack_packer pk;
        rl->answer.size = 0;
        msgpack_packer_init(&pk, &rl->answer, msgpack_sbuffer_write);
        pcp_pack_response_error(&pk, p->msgid, &err);
        rl->srv->loop.counters.errors++;
        rl->srv->loop.counters.errors_by_code[PCP_E_INTERNAL]++;
        p->client->deliver(p->client, p->slot, rl->answer.data, rl->answer.size);
    }
    pcd_rl_pend_remove(rl, p);
}

void pcd_redislog_forget(pcd_redislog *rl, pcd_client *cl)
{
    for (pend *p = rl->head; p; p = p->next)
        if (p->client == cl)
            p->client = NULL;
    pcd_after_forget(rl->after, cl);
}

/* The node whose appending connection ac is, or NULL (every context's data
 * is the log: a node's, a reader's or the map question's). */
node *pcd_rl_node_of(pcd_redislog *rl, const redisAsyncContext *ac)
{
    for (size_t i = 0; i < rl->nnodes; i++)
        if (rl->nodes[i]->wr == ac)
            return rl->nodes[i];
    return NULL;
}

/* Arms the back-off timer: the next reconnection, after a delay doubled
 * at each failure (set_up starts it again at BACKOFF_MIN). */
void pcd_rl_schedule_retry(pcd_redislog *rl)
{
    if (rl->closing || evtimer_pending(rl->retry, NULL))
        return;
    double b = rl->backoff;
    struct timeval tv = {(time_t)b, (suseconds_t)((b - (double)(time_t)b) * 1e6)};
    evtimer_add(rl->retry, &tv);
    rl->backoff = b * 2 > BACKOFF_MAX ? BACKOFF_MAX : b * 2;
}

