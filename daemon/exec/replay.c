/* replay.c - a logged message run as a live request (see replay.h).  The
 * journal's replay at start and the Redis log's followers both come here, so
 * a model rebuilt from a log went through exactly the code a live client's
 * request goes through: the direct path for the messages it takes, the
 * general one for the rest. */
#include "daemon/exec/replay.h"

#include "daemon/exec/dispatch.h"

static int discard(void *data, const char *buf, size_t len)
{
    (void)data;
    (void)buf;
    (void)len;
    return 0;
}

int pcd_replay(pcd_server *srv, const uint8_t *msg, size_t len, msgpack_packer *pk,
               pcd_replay_skip_fn skip, void *ud)
{
    pcp_limits lim = srv->limits;
    lim.max_message = len; /* it was accepted under the limits of its day */
    msgpack_packer null_pk;
    msgpack_packer_init(&null_pk, NULL, discard);
    /* A predict, label or batch in the usual shape: the direct path, as a
     * live request takes it (it reads only msg[0..len), and declines all
     * it does not take whole, leaving nothing behind).  Not when skip must
     * see the decoded message first. */
    pcp_direct d;
    size_t used;
    uint64_t errors = srv->loop.counters.errors;
    if (!skip && pcp_direct_message(msg, len, &lim, &d) &&
        pcd_dispatch_direct(srv, NULL, &d, pk ? pk : &null_pk, &used))
        return used == len && srv->loop.counters.errors == errors ? 1 : -1;
    pcp_scan_state scan = {0};
    pcp_error err;
    size_t framed;
    if (pcp_scan(&scan, msg, len, &lim, &framed, &err) != 1 || framed != len)
        return -1;
    msgpack_object obj;
    size_t pos = 0;
    int rc = -1;
    if (msgpack_unpack((const char *)msg, len, &pos, &srv->loop.zone,
                       &obj) == MSGPACK_UNPACK_SUCCESS) {
        if (skip && skip(srv, &obj, ud)) {
            rc = 0;
        } else {
            pcd_dispatch(srv, NULL, msg, len, &obj, pk ? pk : &null_pk);
            rc = srv->loop.counters.errors == errors ? 1 : -1;
        }
    }
    msgpack_zone_clear(&srv->loop.zone);
    return rc;
}
