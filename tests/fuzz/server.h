/* server.h - a pcd_server set up in memory, as daemon/server.c's pcd_run
 * would but without a loop, sockets or a journal: the state directory is the
 * fuzz scratch directory, auto_create is on with a template of dimension
 * 1024, and two models exist, "m" (binary) and "c" (multiclass: a, b, c),
 * both of dimension DC_DIM, which the seeds name. */
#ifndef PCD_FUZZ_SERVER_H
#define PCD_FUZZ_SERVER_H

#include "daemon/core/server.h"

/* The tokens of the server's auth: a read-only one and an admin one. */
#define FZ_TOKEN_READ "fuzz-token-read-0123"
#define FZ_TOKEN_ADMIN "fuzz-token-admin-0123"

/* Once: the config (the scratch directory as state directory, auto_create
 * with a template of dimension 1024, the two tokens above in a tokens file),
 * limits and zone, no models. */
void fz_server_setup(pcd_server *srv);
/* At each input: the registry with "m" and "c", counters at zero. */
void fz_server_begin(pcd_server *srv);
/* After it: every model the input saw (made, taught, reset or not) and the
 * request scratch freed, so that the next input starts from the same server
 * and a crash replays alone.  Nothing else of a pcd_server changes while it
 * dispatches without a loop, journal or shared log (`save`, which forks, is
 * never dispatched).  Setting up once saves the config and zone at every
 * input; freeing within the input keeps libFuzzer's malloc and free counts
 * equal, else it would rerun every input to look for a leak. */
void fz_server_end(pcd_server *srv);
/* A pcd_replay skip: `save` forks a child to write snapshots, never in a
 * fuzzer (the request, journal and log targets leave it out). */
bool fz_is_save(pcd_server *srv, const msgpack_object *msg, void *ud);

#endif
