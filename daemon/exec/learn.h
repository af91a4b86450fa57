/* learn.h - predict, label, predict_batch, label_batch (learn.c).
 *
 * Handlers of the method table (dispatch.c): each takes a request whose
 * params proto/ has counted, and packs its answer or returns an error code
 * having packed nothing. */
#ifndef PCD_LEARN_H
#define PCD_LEARN_H

#include "daemon/exec/request.h"

int pcd_h_predict(pcd_req *r);
int pcd_h_label(pcd_req *r);
int pcd_h_predict_batch(pcd_req *r);
int pcd_h_label_batch(pcd_req *r);

#endif
