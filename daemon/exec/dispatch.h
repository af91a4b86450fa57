/* dispatch.h - from a message to its method's handler, on either path.
 *
 * serve.c hands over each message twice at most: first to the direct path
 * (pcd_dispatch_direct, predict, label and their batches read from the
 * bytes), then, if that declined, decoded to the general path (pcd_dispatch).
 * Both build one pcd_req and end in the same function, run(), which calls the
 * method's handler and is the one place that knows "this method succeeded". */
#ifndef PCD_DISPATCH_H
#define PCD_DISPATCH_H

#include "daemon/exec/request.h"


/* A client's rights are checked against the method's (pcp_method_right) on
 * both paths; client NULL is the daemon itself (replay), which may do all. */
/* One decoded message from client, whose bytes are raw[0..len); packs the
 * response (if any) into pk.  Returns false when the client must wait (save)
 * before its next message: it is then answered through client->unblock. */
bool pcd_dispatch(pcd_server *srv, pcd_client *client, const uint8_t *raw, size_t len,
                  const msgpack_object *obj, msgpack_packer *pk);
/* The same for a message whose envelope proto's direct path read: true with
 * *len the message's size, or false, having changed nothing the general path
 * would not change, when the message needs the general path. */
bool pcd_dispatch_direct(pcd_server *srv, pcd_client *client, pcp_direct *d, msgpack_packer *pk,
                         size_t *len);
/* With the shared log: raw[0..len), one framed message from client, when it
 * is a predict/label-shaped write, goes to the log from its envelope alone
 * (its examples are decoded where the entry is applied); true when it was
 * appended or refused (an error packed into pk), false for the general path. */
bool pcd_dispatch_logged(pcd_server *srv, pcd_client *client, const uint8_t *raw, size_t len,
                         msgpack_packer *pk);
/* The resting model a decoded message names first (params[0]) when models
 * are loaded off the loop (core/restio.h): its client waits for the load
 * before the message runs.  NULL otherwise (the message runs now). */
pcd_model *pcd_dispatch_resting(pcd_server *srv, const msgpack_object *obj);
/* True when every method of proto's table has a handler (checked at start). */
bool pcd_dispatch_complete(void);

#endif
