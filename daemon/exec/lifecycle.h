/* lifecycle.h - the handlers of a model's lifecycle (issue 14): its
 * snapshot generations, rollback to one, export and import in the snapshot
 * file format, and copy under a new name.  dispatch.c's table holds them. */
#ifndef PCD_LIFECYCLE_H
#define PCD_LIFECYCLE_H

#include "daemon/exec/request.h"

int pcd_h_snapshots(pcd_req *r);
int pcd_h_rollback(pcd_req *r);
int pcd_h_export(pcd_req *r);
int pcd_h_import(pcd_req *r);
int pcd_h_copy(pcd_req *r);

#endif
