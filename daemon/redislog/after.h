/* after.h - reads parked until this daemon has applied a position of a
 * model's shared log (after.c).
 *
 * predict and predict_batch with {"after": POSITION} (a write's answer's
 * "position", exec/position.h) are answered once this daemon's reader has
 * applied that entry of the model's stream: the log's gate (gate.c)
 * parks a read whose entry is not applied yet.  A parked read holds the
 * place of its answer in its connection's queue (client->hold, the same
 * place a write to the log holds: later answers queue behind it, and a
 * later read on that connection waits for it, so a connection parks one
 * read at most), and keeps its bytes; it is run, as the journal's records
 * are replayed, when its entry is applied, and answered code 18 (behind)
 * once limits.after_wait_ms has passed.  Nothing blocks the loop. */
#ifndef PCD_REDISLOG_AFTER_H
#define PCD_REDISLOG_AFTER_H

#include "daemon/exec/request.h"
#include "daemon/redislog/reply.h"

typedef struct pcd_after pcd_after;

/* Runs a parked read's message, its answer into pk (the log's gate out of
 * the way: its entry is applied). */
typedef void (*pcd_after_run_fn)(void *ud, const uint8_t *msg, size_t len, msgpack_packer *pk);

/* NULL when out of memory. */
pcd_after *pcd_after_new(pcd_server *srv, pcd_after_run_fn run, void *ud);
void pcd_after_free(pcd_after *a);
/* Parks r until entry `at` of model's stream is applied: PCD_LOGGED (the
 * answer comes through r->client->deliver), or an error code with r->err
 * set (out of memory; code 18 at once when limits.after_wait_ms is 0). */
int pcd_after_park(pcd_after *a, pcd_req *r, const char *model, pcd_sid at);
/* model's stream has been applied up to `last` here: the reads parked on
 * it up to there are run and answered. */
void pcd_after_reached(pcd_after *a, const char *model, pcd_sid last);
/* A client that goes away: its parked reads are dropped unanswered. */
void pcd_after_forget(pcd_after *a, pcd_client *cl);

#endif
