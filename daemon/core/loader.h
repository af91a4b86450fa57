/* loader.h - models at rest loaded off the event loop (issue 30): a thread
 * reads and decodes a resting model's snapshot while the loop serves every
 * other client; the loop then puts the model in place, and the clients
 * that waited for it go on at once, in the order they came, before any
 * other request can put it back to rest (loader.c).
 *
 * A connection whose next request names a resting model waits (its input
 * paused, the request unread) instead of running it; when the load is done
 * the request runs as it would have run had the model been in memory.  A
 * load that fails lets its waiters go on too: their requests then load the
 * model in the loop (rest.c), which fails again and answers the error.
 * Without limits.resident_max, or where no client waits (the journal's
 * replay, a second model a request names), loads stay in the loop. */
#ifndef PCD_LOADER_H
#define PCD_LOADER_H

#include "daemon/core/server.h"

typedef struct pcd_loader pcd_loader;

/* A client waiting for a load is told it is over: loaded says whether the
 * model is in memory now (false: its request will load it in the loop). */
typedef void (*pcd_loaded_fn)(pcd_client *c, bool loaded);

/* Starts the loader's thread into srv->loader; state_dir is copied (it
 * cannot change without a restart).  0, or -1 with err. */
int pcd_loader_start(pcd_server *srv, pcd_loaded_fn loaded, char *err, size_t errlen);
/* Stops the thread and frees what it holds; waiting clients are not told
 * (they are closing).  srv->loader NULL afterwards; NULL is fine. */
void pcd_loader_stop(pcd_server *srv);
/* c's next request names resting e: c is told when e is loaded (or its
 * load failed); e's load starts unless one runs.  false when c cannot wait
 * (out of memory): its request loads e in the loop. */
bool pcd_loader_wait(pcd_server *srv, pcd_model *e, pcd_client *c);
/* A client that goes away (blocked.h): it is told nothing. */
void pcd_loader_forget(pcd_server *srv, pcd_client *c);

#endif
