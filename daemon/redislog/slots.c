/* slots.c - the Redis Cluster's slot map, as the log uses it (log.cluster):
 * asked with CLUSTER SLOTS (cluster.c reads the reply) of log.address, or
 * after a failure of the next master known, in turn (any node of a cluster
 * answers), and applied: nodes that left it are closed, readers whose slot
 * moved go to their new master and read on there after their last entry.
 *
 * The back-off timer's work is here too: in a cluster a failure may be a
 * slot that moved (a reader's MOVED, ASK, TRYAGAIN or CLUSTERDOWN, an
 * append's redirection), so each retry reads the map again first, then
 * dials what is not connected (connect.c); on one server it only dials.
 * Not in cluster.c, which is pure functions of bytes and replies, with no
 * connection and none of the log's state.
 */
#include <stdlib.h>

#include "daemon/base/log.h"
#include "daemon/redislog/address.h"
#include "daemon/redislog/internal.h"

/* A new map: nodes that left it are closed, readers whose slot moved go to
 * their new master (their streams read on after their last entry there). */
static void apply_map(pcd_redislog *rl, pcd_slot_map *m)
{
    pcd_slot_map_free(&rl->map);
    rl->map = *m;
    rl->mapped = true;
    for (size_t i = 0; i < rl->nnodes; i++)
        rl->nodes[i]->in_map = false;
    for (size_t i = 0; i < m->nnodes; i++) {
        node *nd = pcd_rl_node_get(rl, m->address[i]);
        if (nd)
            nd->in_map = true;
    }
    for (size_t i = 0; i < rl->nnodes; i++)
        if (!rl->nodes[i]->in_map && rl->nodes[i]->wr)
            pcd_rl_node_close(rl->nodes[i]);
    for (size_t i = 0; i < rl->nreaders; i++) {
        reader *rdr = rl->readers[i];
        node *want = pcd_rl_slot_node(rl, rdr->slot);
        if (want != rdr->nd) {
            if (rdr->nd) /* it moved (the first map only places it) */
                pcd_info("log: slot %d moved from %s to %s", rdr->slot, rdr->nd->address,
                         want ? want->address : "no master");
            pcd_rl_reader_drop(rdr);
            rdr->nd = want;
        }
    }
    pcd_rl_set_up(rl);
}

static void on_slots(redisAsyncContext *ac, void *reply, void *privdata)
{
    pcd_redislog *rl = ac->data;
    (void)privdata;
    if (!reply || ac != rl->ctl)
        return;
    pcd_redis_address a;
    pcd_redis_address_split(rl->ctl_next % (rl->map.nnodes + 1) && rl->map.nnodes
                            ? rl->map.address[rl->ctl_next % (rl->map.nnodes + 1) - 1]
                            : rl->srv->cfg.log_address, &a);
    pcd_slot_map *m = malloc(sizeof *m);
    char err[256] = "out of memory";
    if (!m || pcd_slot_map_read(reply, a.path ? "127.0.0.1" : a.host, m, err, sizeof err) != 0) {
        free(m);
        pcd_rl_ctl_lost(rl, err);
        return;
    }
    rl->ctl = NULL;
    redisAsyncFree(ac); /* after this callback (hiredis) */
    apply_map(rl, m);
    free(m);
    pcd_rl_connect_all(rl);
}

/* Reads the map from log.address, or (after a failure) the next master
 * known, in turn: any node of a cluster answers CLUSTER SLOTS. */
void pcd_rl_ask_map(pcd_redislog *rl)
{
    if (rl->ctl)
        return; /* a question is under way */
    size_t k = rl->ctl_next % (rl->map.nnodes + 1);
    const char *address = k ? rl->map.address[k - 1] : rl->srv->cfg.log_address;
    char why[256];
    if (!(rl->ctl = pcd_rl_dial(rl, address, why, sizeof why))) {
        pcd_rl_ctl_lost(rl, why);
        return;
    }
    if (redisAsyncCommand(rl->ctl, on_slots, NULL, "CLUSTER SLOTS") != REDIS_OK)
        pcd_rl_ctl_lost(rl, "cannot send CLUSTER SLOTS");
}

/* The back-off timer: in a cluster the map first (a failure may be a slot
 * that moved), then whatever is not connected. */
void pcd_rl_on_retry(evutil_socket_t fd, short what, void *arg)
{
    pcd_redislog *rl = arg;
    (void)fd;
    (void)what;
    if (rl->cluster)
        pcd_rl_ask_map(rl);
    else
        pcd_rl_connect_all(rl);
}

