/* readers.c - who serves a stream, and what losing a server does.
 *
 * Connections to Redis: per server (a node: the one of log.address, or each
 * master of a Redis Cluster) one appends (XADD, pipelined), and per group of
 * streams one follows (XREAD BLOCK 0, a reader), because a blocked XREAD
 * holds its connection.  On one server one reader follows every stream
 * served plus the catalogue.  A cluster refuses one command over keys of
 * several slots (CROSSSLOT), so there each slot in use has its reader, on the
 * master that serves the slot (redislog/cluster.h: slots and the map, read
 * with CLUSTER SLOTS from log.address or any master known, slots.c).  One
 * server is the simple case of the same code: one node, one reader of
 * "every slot".
 *
 * Failures are per node: a node lost (or a reader's connection) refuses the
 * writes of the streams it serves, answers the appends it did not confirm
 * with code 11, and is dialled again with back-off; in a cluster each retry
 * and each MOVED / ASK / TRYAGAIN / CLUSTERDOWN reads the map again first
 * (slots.c), so streams whose slot moved are followed on their new master.
 *
 * Here are the nodes and readers as records, and what a failure does to
 * them; dialling them is connect.c's, which calls down into this file when
 * a connection fails.  A loss only closes and schedules (the back-off
 * timer): it never dials at once, so nothing here calls upwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/redislog/internal.h"

/* The node of address, made when new (not connected yet); NULL out of memory. */
node *pcd_rl_node_get(pcd_redislog *rl, const char *address)
{
    for (size_t i = 0; i < rl->nnodes; i++)
        if (!strcmp(rl->nodes[i]->address, address))
            return rl->nodes[i];
    node **v = realloc(rl->nodes, (rl->nnodes + 1) * sizeof *v);
    if (!v)
        return NULL;
    rl->nodes = v;
    node *nd = calloc(1, sizeof *nd);
    if (nd && !(nd->address = strdup(address)))
        nd = (free(nd), NULL);
    if (!nd)
        return NULL;
    nd->rl = rl;
    snprintf(nd->error, sizeof nd->error, "Redis %.100s: connecting", address);
    if (rl->srv->cfg.log_wait_replicas && !(nd->wait_ev = event_new(rl->srv->base, -1, 0,
                                                                     pcd_rl_on_wait_event, nd))) {
        free(nd->address);
        free(nd);
        return NULL;
    }
    return rl->nodes[rl->nnodes++] = nd;
}

/* The node that serves slot now: NULL when none does (or no map yet). */
node *pcd_rl_slot_node(pcd_redislog *rl, int slot)
{
    if (!rl->cluster)
        return rl->nodes[0];
    if (!rl->mapped || rl->map.owner[slot] == PCD_SLOT_NONE)
        return NULL;
    return pcd_rl_node_get(rl, rl->map.address[rl->map.owner[slot]]);
}

/* stats.log: connected when every node of the map and every reader is. */
void pcd_rl_set_up(pcd_redislog *rl)
{
    bool up = !rl->cluster || rl->mapped;
    uint64_t nodes = 0, nodes_up = 0;
    for (size_t i = 0; i < rl->nnodes; i++) {
        if (!rl->nodes[i]->in_map)
            continue;
        nodes++;
        nodes_up += rl->nodes[i]->up;
        up = up && rl->nodes[i]->up;
    }
    for (size_t i = 0; i < rl->nreaders; i++)
        up = up && rl->readers[i]->up;
    rl->srv->logst.nodes = nodes;
    rl->srv->logst.nodes_up = nodes_up;
    if (up) /* the next failure, or redirection, is retried soon */
        rl->backoff = BACKOFF_MIN;
    if (up && rl->announce) {
        rl->announce = false;
        pcd_info("log: connected to Redis %s%s (%llu node%s), following %zu streams",
                 rl->cluster ? "Cluster " : "", rl->srv->cfg.log_address, (unsigned long long)nodes,
                 nodes == 1 ? "" : "s", rl->nstreams - 1);
        rl->ctl_warned = false;
    }
    rl->srv->logst.up = up;
}

/* nd is unavailable for `why`: the refusals of its writes say so. */
static void node_down(node *nd, const char *why)
{
    pcd_server *srv = nd->rl->srv;
    /* A cluster refuses our one-server XREAD over several slots */
    bool hint = !nd->rl->cluster && why && (!strncmp(why, "CROSSSLOT", 9) || !strncmp(why, "MOVED", 5));
    /* bounded so that the line fits logst.error whatever the lengths */
    snprintf(nd->error, sizeof nd->error, "Redis %.80s is unavailable (%.100s%s)", nd->address,
             why && *why ? why : "unknown error", hint ? ": it is a Redis Cluster, set log.cluster: true" : "");
    snprintf(srv->logst.error, sizeof srv->logst.error, "%s", nd->error);
    /* once until it works again (a read or an append succeeds): a failure
     * that comes back at each reconnection is not logged ten times a second */
    if (!nd->warned) {
        pcd_warn("log: %s: writes to its streams are refused until it is back; reconnecting", nd->error);
        nd->rl->announce = true;
    }
    nd->warned = true;
}

/* Closes the reader's connection; its streams are prepared again on the next. */
void pcd_rl_reader_drop(reader *rdr)
{
    redisAsyncContext *r = rdr->rd;
    rdr->rd = NULL;
    rdr->up = rdr->reading = false;
    rdr->preparing = 0;
    if (!rdr->error[0])
        snprintf(rdr->error, sizeof rdr->error, "Redis %.100s: connecting",
                 rdr->nd ? rdr->nd->address : rdr->rl->srv->cfg.log_address);
    for (size_t i = 0; i < rdr->rl->nstreams; i++)
        if (rdr->rl->streams[i]->rdr == rdr)
            rdr->rl->streams[i]->prepared = false;
    if (r)
        redisAsyncFree(r);
}

void pcd_rl_reader_lost(reader *rdr, const char *why)
{
    if (rdr->nd)
        node_down(rdr->nd, why);
    snprintf(rdr->error, sizeof rdr->error, "%s", rdr->nd ? rdr->nd->error : why);
    pcd_rl_reader_drop(rdr);
    pcd_rl_set_up(rdr->rl);
    pcd_rl_schedule_retry(rdr->rl);
}

/* Closes nd's appending connection and its readers: the queued appends fail
 * (they never reached Redis), those in flight are answered by hiredis with
 * no reply (their fate unknown), and the readers are dialled again later. */
void pcd_rl_node_close(node *nd)
{
    redisAsyncContext *w = nd->wr;
    nd->wr = NULL;
    nd->up = false;
    pcd_rl_drain(nd); /* nd->wr is NULL: the queued appends fail */
    for (size_t i = 0; i < nd->rl->nreaders; i++)
        if (nd->rl->readers[i]->nd == nd)
            pcd_rl_reader_drop(nd->rl->readers[i]);
    if (w)
        redisAsyncFree(w);
}

/* nd is gone (or never came): writes to its streams are refused from now
 * on, and a reconnection is scheduled. */
void pcd_rl_node_lost(node *nd, const char *why)
{
    node_down(nd, why);
    pcd_rl_node_close(nd);
    pcd_rl_set_up(nd->rl);
    pcd_rl_schedule_retry(nd->rl);
}

/* A reader's XREAD (or the preparation before it) got an error: in a
 * cluster a redirection means the map is stale; either way the reader is
 * dialled again (after the map is read again). */
void pcd_rl_reader_error(reader *rdr, const char *err)
{
    if (!rdr->rl->cluster || !pcd_cluster_redirected(err) || !rdr->nd) {
        pcd_rl_reader_lost(rdr, err);
        return;
    }
    /* the node is fine: the slot moved (or the cluster is down there) */
    char was[sizeof rdr->error];
    memcpy(was, rdr->error, sizeof was);
    snprintf(rdr->error, sizeof rdr->error, "Redis Cluster %.80s: slot %d: %.100s: reading the slot "
             "map again", rdr->rl->srv->cfg.log_address, rdr->slot, err);
    if (strcmp(was, rdr->error)) { /* not again and again while the cluster is down */
        pcd_info("log: %s", rdr->error);
        rdr->rl->announce = true;
    }
    snprintf(rdr->rl->srv->logst.error, sizeof rdr->rl->srv->logst.error, "%s", rdr->error);
    pcd_rl_reader_drop(rdr);
    pcd_rl_set_up(rdr->rl);
    pcd_rl_schedule_retry(rdr->rl);
}

/* Why st's writes are refused now, or NULL when they are accepted. */
const char *pcd_rl_unwritable(pcd_redislog *rl, const stream *st, char *buf, size_t len)
{
    const reader *rdr = st->rdr;
    if (rl->cluster && !rl->mapped)
        return rl->srv->logst.error;
    if (!rdr->nd) {
        snprintf(buf, len, "Redis Cluster %.100s: no master serves slot %d of %.100s (CLUSTERDOWN)",
                 rl->srv->cfg.log_address, rdr->slot, st->key);
        return buf;
    }
    if (!rdr->nd->up)
        return rdr->nd->error;
    return rdr->rd ? NULL : rdr->error;
}

