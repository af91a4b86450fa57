/* server.h - a pcd_server set up in memory, as daemon/server.c's pcd_run
 * would but without a loop, sockets or a journal: the state directory is the
 * fuzz scratch directory, auto_create is on with a template of dimension
 * 1024, and two models exist, "m" (binary) and "c" (multiclass: a, b, c),
 * both of dimension DC_DIM, which the seeds name. */
#ifndef PCD_FUZZ_SERVER_H
#define PCD_FUZZ_SERVER_H

#include "daemon/server.h"

void fz_server_setup(pcd_server *srv);
void fz_server_teardown(pcd_server *srv);

#endif
