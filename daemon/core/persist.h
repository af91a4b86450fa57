/* persist.h - models on disk (persist.c): restore at start, snapshot jobs
 * while serving (a forked child), the final save at exit. */
#ifndef PCD_PERSIST_H
#define PCD_PERSIST_H

#include <sys/types.h>

#include "daemon/core/server.h"

int pcd_persist_restore(pcd_server *srv, char *err, size_t errlen);
/* Starts a snapshot job for every changed model (the timer, `save`).
 * With a waiter: returns 1 when it was queued and will be answered through
 * waiter->unblock once the changes as of now are on disk, 0 when there was
 * nothing to write, -1 when no job could be started (err says why). */
int pcd_persist_save(pcd_server *srv, pcd_client *waiter, uint32_t msgid, bool notification,
                     char *err, size_t errlen);
/* Models at rest (rest.c): e's state written now, in the loop, as a new
 * generation (fsynced, as every snapshot), and saved; or -1 with err, e
 * unchanged and still dirty. */
int pcd_persist_write(pcd_server *srv, pcd_model *e, char *err, size_t errlen);
/* Loads resting e from the generation it rested in; -1 with err, e still
 * resting.  It is these two: */
int pcd_persist_load(pcd_server *srv, pcd_model *e, char *err, size_t errlen);
/* Reads and decodes generation `generation` of name in dir into parts (a
 * zeroed pcd_model): touches nothing shared, so the loader's thread runs it
 * (core/restio.c).  0, or -1 with err (parts empty). */
int pcd_persist_read(const char *dir, const char *name, uint64_t generation, pcd_model *parts,
                     char *err, size_t errlen);
/* Puts the parts read into resting e (parts left empty, freed on failure)
 * and weighs it.  0, or -1 with err (out of memory). */
int pcd_persist_install(pcd_server *srv, pcd_model *e, pcd_model *parts, char *err, size_t errlen);
void pcd_persist_child_exited(pcd_server *srv, pid_t pid, int status);
/* At exit: waits for a running child, then writes what is still unsaved. */
int pcd_persist_final(pcd_server *srv);
/* Forgets a connection that is going away (it no longer wants an answer). */
void pcd_persist_forget(pcd_server *srv, pcd_client *c);

#endif
