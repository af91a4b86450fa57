/* learn.h - the handlers of predict, label and their batches (learn.c),
 * called through dispatch.c's table: a handler packs its answer, or returns
 * an error code having packed nothing. */
#ifndef PCD_LEARN_H
#define PCD_LEARN_H

#include "daemon/exec/request.h"

/* One example: the champion's or the experts' answer, with the hint and
 * the explanation asked for; with an event ID, remembered for its label. */
int pcd_h_predict(pcd_req *r);
/* One example learned, then what follows every label (core/models.c). */
int pcd_h_label(pcd_req *r);
/* Many examples in one request: answered one by one, learned all or none. */
int pcd_h_predict_batch(pcd_req *r);
int pcd_h_label_batch(pcd_req *r);

#endif
