/* admin.h - the short administrative methods (admin.c).
 *
 * Handlers of the method table (dispatch.c): each takes a request whose
 * params proto/ has counted, and packs its answer or returns an error code
 * having packed nothing. */
#ifndef PCD_ADMIN_H
#define PCD_ADMIN_H

#include "daemon/exec/request.h"

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

#endif
