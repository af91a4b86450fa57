/* join.h - label later: a prediction remembered under an event ID, and the
 * outcome joined to it afterwards (docs/label-later.md).  The request side,
 * called by learn.c's predict handler and label_event's; the ttl's side is
 * expiry.c, which sends its decisions through the same label_event so that
 * the journal records them in order. */
#ifndef PCD_JOIN_H
#define PCD_JOIN_H

#include "daemon/exec/options.h"

/* Called before predicting: starts loading the table slot of the event ID
 * predict's options name (NULL: none), so that the cache misses of a new ID
 * overlap the model's scoring instead of following it. */
void pcd_join_prefetch(const pcd_req *r, const msgpack_object *event);
/* predict's options {"event": ID, "at": ms} (o, read by the handler; no
 * event: nothing to do): remembers srv->loop.xs[0], the served prediction p and
 * its hint (PCD_HINT_*) under ID, after expiring what the bounds require.
 * Sets r->raw/len to the bytes a journal must keep (with the time) when they
 * differ from the request's. */
int pcd_join_remember(pcd_req *r, const pcd_opts *o, const pc_prediction *p, uint8_t hint);
/* label_event(model, ID, label or nil, {"expire": bool, "at": ms}?): learns
 * the remembered example with label, answers, and ends the event. */
int pcd_join_label(pcd_req *r);

#endif
