/* durability.h - the daemon's side of the journal (durability.c): records
 * every acknowledged write, replays them at start, keeps the journal short. */
#ifndef PCD_DURABILITY_H
#define PCD_DURABILITY_H

#include "daemon/core/server.h"
#include "daemon/journal/journal.h"

/* After the snapshots are restored: opens the journal (unless
 * journal.enabled is false), replays it into srv's models and hooks
 * dispatch so that every WRITES request is appended.  durable is told when
 * held answers may go (fsync always).  0, or -1 with err. */
int pcd_durability_open(pcd_server *srv, pcd_journal_durable_fn durable, char *err, size_t errlen);
/* The 1 s timer: everysec's fdatasync, a retry while failed, pruning (each
 * second up to 20,000 models, less often above: prune_interval). */
void pcd_durability_tick(pcd_server *srv);
/* The first LSN some model still needs from the journal (its newest
 * snapshot is older); segments wholly below it can go. */
uint64_t pcd_durability_needed_lsn(const pcd_server *srv);
/* At exit, after the final snapshot: prunes, syncs and closes.  0, or -1
 * when the last records could not be made durable. */
int pcd_durability_close(pcd_server *srv);

#endif
