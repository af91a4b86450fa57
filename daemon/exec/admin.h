/* admin.h - the short administrative methods (admin.c).
 *
 * Handlers of the method table (dispatch.c): each takes a request whose
 * params proto/ has counted, and packs its answer or returns an error code
 * having packed nothing. */
#ifndef PCD_ADMIN_H
#define PCD_ADMIN_H

#include "daemon/exec/request.h"

/* Reads: the registry's names, a model's info (replies.c packs it), its
 * largest weights (a large model's in slices, scan.c). */
int pcd_h_models(pcd_req *r);
int pcd_h_info(pcd_req *r);
int pcd_h_weights(pcd_req *r);
/* A model made, dropped or emptied: core/models.c, under the budget. */
int pcd_h_create(pcd_req *r);
int pcd_h_drop(pcd_req *r);
int pcd_h_reset(pcd_req *r);
/* A snapshot of every model: the answer waits for the job (PCD_WAIT). */
int pcd_h_save(pcd_req *r);
/* The server's counters. */
int pcd_h_stats(pcd_req *r);
/* The challengers: their figures beside the champion's, one made champion. */
int pcd_h_compare(pcd_req *r);
int pcd_h_promote(pcd_req *r);
/* Open to every connection: a liveness check; a token raising its rights. */
int pcd_h_ping(pcd_req *r);
int pcd_h_auth(pcd_req *r);

#endif
