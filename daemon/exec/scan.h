/* scan.h - `weights` of a large model, found a slice at a time between the
 * event loop's other work (see scan.c). */
#ifndef PCD_SCAN_H
#define PCD_SCAN_H

#include "daemon/core/server.h"
#include "daemon/exec/request.h"

/* Weights scanned per turn of the loop: about 60 us of a dense 2^20 model's
 * scan on the 2-core VM, so the scan of 2^24 weights no longer stops every
 * other client for 16 ms. */
#define PCD_SCAN_SLICE 65536

/* Whether weights(r->model, cls) takes more than one slice and r's client
 * can wait for it (client->resume): then pcd_scan_weights, else the caller
 * scans at once. */
bool pcd_scan_wanted(const pcd_req *r, size_t cls);
/* Starts the scan: PCD_WAIT, the connection's input pauses, and the answer
 * comes through client->resume when the scan is done (and becomes the
 * model's top cache), or an error when the model was dropped meanwhile.  A
 * scan the model's learning overtook starts again, at most twice; the third
 * time it finishes at once, so the answer is exact for one state of the
 * model.  An error code (out of memory) when it cannot start. */
int pcd_scan_weights(pcd_req *r, size_t cls, size_t k);
/* The client went away: its scans go on without anyone to answer. */
void pcd_scan_forget(pcd_server *srv, pcd_client *cl);
/* At exit: frees every scan and the timer. */
void pcd_scan_free_all(pcd_server *srv);

#endif
