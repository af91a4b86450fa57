/* restio.h - models at rest moved between memory and disk off the event
 * loop (issue 30): a writer thread writes the snapshot of a model put to
 * rest, a loader thread reads and decodes the snapshot of a model a client
 * asks for, while the loop serves everyone else (restio.c).
 *
 * Eviction: a changed model leaves the loop at once, its parts handed to a
 * write job; the writer thread serializes them (the bytes a snapshot holds),
 * writes them (temporary file, fsync, rename, directory fsync), the writes
 * queued together as one batch, each reusing the file of the generation it
 * would prune (store/snapshot.h), and frees them.  Until that write is done
 * the model is resting with its write pending (pcd_model.writing): its
 * snapshot position is not taken yet, so the journal keeps its records; a
 * request for it takes the write back while the writer has not begun it
 * (pcd_restio_take_back), else its load waits for the write (the writer
 * queues it for the loader thread once the file is written).  A write that fails gives the parts
 * back and the loop puts them in place, still changed (nothing is lost),
 * and counts it.  At most RESTIO_QUEUE_MAX writes (or RESTIO_QUEUE_BYTES of
 * what their models weigh) wait at a time; past that an eviction writes in
 * the loop (rest.c).
 *
 * Loading: a connection whose next request names a resting model waits
 * (its input paused, the request unread) instead of running it, and the
 * requests it has already sent behind that one start their models' loads
 * (pcd_restio_prefetch); when the
 * load is done the model is put in place and the connections that waited
 * go on at once, in the order they came, before the loop serves anyone
 * else (so that no other request's eviction sends the model back first).
 * A load that fails lets its waiters go on too: their requests then load
 * the model in the loop (rest.c), which fails again and answers the error.
 * Where no client waits (the journal's replay, a second model a request
 * names, a sliced scan) loads stay in the loop; such a load of a model
 * whose write is pending first waits for the queue (pcd_restio_drain). */
#ifndef PCD_RESTIO_H
#define PCD_RESTIO_H

#include "daemon/core/server.h"

typedef struct pcd_restio pcd_restio;

/* A client waiting for a load is told it is over: loaded says whether the
 * model is in memory now (false: its request will load it in the loop). */
typedef void (*pcd_loaded_fn)(pcd_client *c, bool loaded);

/* Starts the threads into srv->restio; state_dir is copied (it cannot change
 * without a restart).  0, or -1 with err. */
int pcd_restio_start(pcd_server *srv, pcd_loaded_fn loaded, char *err, size_t errlen);
/* Finishes the writes still queued (made durable, or their models put back
 * in memory to be saved by the final save), stops the threads and frees
 * what it holds; waiting clients are not told (they are closing).
 * srv->restio is NULL afterwards; NULL is fine. */
void pcd_restio_stop(pcd_server *srv);
/* Waits until the threads have done every queued job and applies the
 * writes' results here (the loads' are applied by the loop's next turn,
 * never inside the caller's request).  For a load in the loop of a model
 * whose write is pending, and for the stop. */
void pcd_restio_drain(pcd_server *srv);
/* Changed e goes to rest with its write off the loop: serialized now and
 * freed; true when queued (counted as an eviction once written), false
 * when the queue is full or memory short: the caller writes it here. */
bool pcd_restio_evict(pcd_server *srv, pcd_model *e);
/* c's next request names resting e: c is told when e is loaded (or its
 * load failed); e's load is queued unless one is.  false when c need not
 * wait (e's write taken back: pcd_restio_take_back) or cannot (no thread,
 * out of memory): its request loads e in the loop. */
bool pcd_restio_wait(pcd_server *srv, pcd_model *e, pcd_client *c);
/* Resting e's write, when the writer has not begun it (nor a load waits
 * on it), taken out of the queue and its parts put back in place: e is
 * resident again, still changed, as after a failed write, without waiting
 * for the fsyncs queued ahead of it (a burst of evictions left half a
 * second of them).  true when e is resident now. */
bool pcd_restio_take_back(pcd_server *srv, pcd_model *e);
/* A request read behind a waiting one names resting e: e's load is queued
 * now, unless one is or PCD_RESTIO_AHEAD loads that nobody waits for are
 * queued, so that a pipelined client's misses overlap in the loader
 * instead of following one another; once done, e is in memory (and the
 * least recently used model goes to rest for it) when the request comes. */
#define PCD_RESTIO_AHEAD 8
void pcd_restio_prefetch(pcd_server *srv, pcd_model *e);
/* A client that goes away (blocked.h): it is told nothing. */
void pcd_restio_forget(pcd_server *srv, pcd_client *c);
/* e was loaded (here or in the loop) in `seconds`: counted, marked used. */
void pcd_restio_count_load(pcd_server *srv, pcd_model *e, double seconds);

#endif
