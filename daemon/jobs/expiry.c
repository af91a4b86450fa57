/* expiry.c - events whose join.ttl passed without an outcome.
 *
 * Every 100 ms the timer ends at most SLICE events, oldest first (each
 * model's pending list is in time order, so finding them costs nothing
 * beyond them); when the slice was not enough it comes back at once, after
 * the loop has served what arrived meanwhile, so a flood of expiries never
 * stalls the clients.  An event ends as a label_event with {"expire": true}
 * (the default label, or nil to learn nothing) run through the dispatcher:
 * the journal records it like any write and a replay learns the default
 * labels exactly where they were learned.
 *
 * Pruning tombstones is the one change to a model's bytes made outside a
 * request, so the sweep counts those models again for max_memory
 * (budget.c); an expiry is a request, counted by the dispatcher.
 *
 * With the shared Redis log (log.backend: redis) nothing expires here: the
 * daemons reading one stream would each append the same expiry.  Their
 * events end by max_pending / max_bytes only (docs/label-later.md).
 */
#include "daemon/jobs/expiry.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/budget.h"
#include "daemon/exec/replay.h"
#include "daemon/model/pending.h"

#define SLICE 256
#define PERIOD_MS 100

/* [2, "label_event", [model, ID, label or nil, {"expire": true}]] through the
 * dispatcher; true when it was applied. */
static bool expire(pcd_server *srv, const pcd_model *e, const pcd_event *ev, bool with_default)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    const pcp_join_config *c = &e->pending->cfg;
    msgpack_pack_array(&pk, 3);
    msgpack_pack_uint8(&pk, 2);
    pcp_pack_str(&pk, "label_event");
    msgpack_pack_array(&pk, 4);
    pcp_pack_str(&pk, e->name);
    pcd_event_id_pack(&pk, ev);
    if (!with_default)
        msgpack_pack_nil(&pk);
    else if (pc_model_config_of(e->model)->multiclass)
        pcp_pack_str(&pk, c->default_label);
    else
        msgpack_pack_int8(&pk, c->default_label[0] == '-' ? -1 : 1);
    msgpack_pack_map(&pk, 1);
    pcp_pack_str(&pk, "expire");
    msgpack_pack_true(&pk);
    bool ok = sb.data && pcd_replay(srv, (const uint8_t *)sb.data, sb.size, NULL, NULL, NULL) == 1;
    msgpack_sbuffer_destroy(&sb);
    return ok;
}

size_t pcd_expiry_run(pcd_server *srv, int64_t now_ms, size_t budget)
{
    if (srv->rlog)
        return 0; /* see the top of this file */
    size_t n, done = 0;
    /* resident models only: a resting model's events rest with it (its
     * expiry runs once it is loaded) */
    pcd_model **all = pcd_registry_resident_list(&srv->models, &n);
    for (size_t i = 0; all && i < n && done < budget; i++) {
        pcd_pending *p = all[i]->pending;
        if (!p)
            continue;
        size_t before = pcd_pending_held_bytes(p);
        pcd_pending_prune(p, now_ms);
        if (pcd_pending_held_bytes(p) != before)
            pcd_budget_recount(srv, all[i]);
        int64_t ttl_ms = (int64_t)p->cfg.ttl * 1000;
        while (done < budget && p->head && now_ms - p->head->at_ms >= ttl_ms) {
            /* a default the model refuses (a class it does not have) ends it unlearned */
            if (!(p->cfg.has_default && expire(srv, all[i], p->head, true)) &&
                !expire(srv, all[i], p->head, false)) {
                /* the journal refusing writes says so itself, once: not every tick */
                pcd_debug("model %s: an event could not expire (is the journal failing?); "
                          "trying again later", all[i]->name);
                budget = 0;
                break;
            }
            done++;
        }
    }
    free(all);
    return done;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pcd_server *srv = arg;
    size_t done = pcd_expiry_run(srv, pcd_now_ms(), SLICE);
    struct timeval tv = {0, done == SLICE ? 0 : PERIOD_MS * 1000};
    event_add(srv->expiry_timer, &tv);
}

int pcd_expiry_start(pcd_server *srv)
{
    srv->expiry_timer = evtimer_new(srv->base, on_timer, srv);
    struct timeval tv = {0, PERIOD_MS * 1000};
    return srv->expiry_timer && event_add(srv->expiry_timer, &tv) == 0 ? 0 : -1;
}
