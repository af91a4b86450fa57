/* cmd_ping.c - `perceptronctl ping`: is the daemon there, and how long does
 * one round trip take?  The connection is timed apart from the call, so a
 * slow connect (a remote TCP address) does not hide in the round trip.
 * --json: {"result": "pong", "connect_ms": .., "round_trip_ms": ..}. */
#include "clients/ctl/ctl.h"

int ctl_cmd_ping(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    double t0 = pcc_monotonic();
    if ((rc = ctl_connect(ctx)))
        return rc;
    double t1 = pcc_monotonic();
    const msgpack_object *res;
    if ((rc = ctl_call_simple(ctx, "ping", NULL, &res)))
        return rc;
    double t2 = pcc_monotonic();
    if (!pcc_str_eq(res, "pong"))
        return ctl_io_error(ctx, "the daemon answered ping with something other than \"pong\"");
    if (ctx->json) {
        ctl_doc d;
        ctl_doc_init(&d);
        msgpack_pack_map(&d.pk, 4);
        ctl_doc_kv_str(&d, "result", "pong");
        ctl_doc_kv_str(&d, "address", ctx->address);
        ctl_doc_kv_double(&d, "connect_ms", (t1 - t0) * 1e3);
        ctl_doc_kv_double(&d, "round_trip_ms", (t2 - t1) * 1e3);
        ctl_doc_print(&d);
    } else {
        printf("pong from %s: round trip %.3f ms (connect %.3f ms)\n", ctx->address,
               (t2 - t1) * 1e3, (t1 - t0) * 1e3);
    }
    return CTL_EXIT_OK;
}
