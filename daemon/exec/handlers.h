/* handlers.h - the handlers of the method table (dispatch.c), one line a
 * method, grouped by the file that holds them, as Redis's server.h lists its
 * command procs.
 *
 * Each takes a request whose params proto/ has counted (proto/methods.c)
 * and, where the method's row in dispatch.c says so, whose model (with its
 * example or batch) request.c has read; it checks the other params' types,
 * does the work and packs its answer, or returns an error code having
 * packed nothing (pcd_req_fail).  label_event's handler,
 * which the ttl's expiry calls too, is join.h's pcd_join_label. */
#ifndef PCD_HANDLERS_H
#define PCD_HANDLERS_H

#include "daemon/exec/request.h"

/* learn.c.  One example: the champion's or the experts' answer, with the
 * hint and the explanation asked for; with an event ID, remembered for its
 * label.  A label: the example learned, then what follows every label
 * (core/models.c).  Batches: answered one by one, learned all or none. */
int pcd_h_predict(pcd_req *r);
int pcd_h_label(pcd_req *r);
int pcd_h_predict_batch(pcd_req *r);
int pcd_h_label_batch(pcd_req *r);

/* admin.c.  Reads: the registry's names, a model's info (replies.c packs
 * it), its largest weights (a large model's in slices, scan.c).  A model
 * made, dropped or emptied: core/models.c, under the budget.  save: the
 * answer waits for the snapshot job (PCD_WAIT).  stats: the server's
 * counters.  compare, promote: the challengers' figures beside the
 * champion's, one made champion.  ping and auth, open to every connection:
 * a liveness check; a token raising the connection's rights. */
int pcd_h_models(pcd_req *r);
int pcd_h_info(pcd_req *r);
int pcd_h_weights(pcd_req *r);
int pcd_h_create(pcd_req *r);
int pcd_h_drop(pcd_req *r);
int pcd_h_reset(pcd_req *r);
int pcd_h_save(pcd_req *r);
int pcd_h_stats(pcd_req *r);
int pcd_h_compare(pcd_req *r);
int pcd_h_promote(pcd_req *r);
int pcd_h_ping(pcd_req *r);
int pcd_h_auth(pcd_req *r);

/* lifecycle.c, a model's lifecycle: its snapshot generations, rollback to
 * one, export and import in the snapshot file format, copy under a new
 * name. */
int pcd_h_snapshots(pcd_req *r);
int pcd_h_rollback(pcd_req *r);
int pcd_h_export(pcd_req *r);
int pcd_h_import(pcd_req *r);
int pcd_h_copy(pcd_req *r);

#endif
