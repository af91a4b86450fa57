/* snapshot.h - model snapshot files: one file per model and generation,
 * written atomically, checksummed, read back newest-intact-first.
 *
 * File: <dir>/<name>.<generation>.snap, generation a canonical decimal u64 >= 1
 * (no leading zeros) that increases per model; its bytes are format.h's.
 *
 * The writer is plain synchronous code meant to run in a child forked from the
 * event loop: until the new file is durable it allocates nothing (the msgpack
 * prefix is packed into a stack buffer and the model bytes are written straight
 * from the caller's buffer) and uses no stdio, only open/write/fsync/close/
 * rename/unlink; pruning afterwards uses opendir() and one small malloc'd array
 * (fine in the child of a single-threaded parent, and in any glibc child).  At most one writer per model at a time:
 * a write removes every other temp file of that model (leftovers of a crash).
 *
 * Model names are validated by the caller; every function here refuses (returns
 * an error, never touches the file system) a name that pcd_snap_name_ok()
 * rejects, since names become file names.
 *
 * Errors: functions returning int give 0 (or a count) on success and a negative
 * value with a message in err (truncated to errlen, always NUL-terminated when
 * errlen > 0) naming the step and the path.  err may be NULL when errlen is 0.
 * Nothing here logs; warnings go through the caller's callback.
 */
#ifndef PCD_SNAPSHOT_H
#define PCD_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/store/format.h"

/* Return values of pcd_snapshot_read besides 0. */
#define PCD_SNAP_ERR (-1)      /* files exist but none is intact, or dir unreadable */
#define PCD_SNAP_NONE (-2)     /* no snapshot file of that name at all */

/* What a writer knows of one model's files (pcd_snapshot_write). */
typedef struct pcd_snap_disk {
    uint64_t oldest; /* no generation below it is on disk (0: not known) */
    uint64_t bytes;  /* the size of the file written */
} pcd_snap_disk;

/* Writes generation `generation` (>= 1) of name atomically:
 * <dir>/.<name>.<gen>.snap.tmp (mode 0640), write all, fsync, rename to
 * <dir>/<name>.<gen>.snap, fsync dir; then deletes the generations of name
 * older than the newest max(keep, 1) and any leftover temp file of name.
 * disk (may be NULL): in, disk->oldest, the oldest generation of name that
 * may still be on disk, so that pruning tries those numbers by name instead
 * of listing dir (0, or a range wider than 64: it lists); out, after a
 * success, the oldest generation left (0: unknown, a removal failed) and
 * the new file's size.  Returns 0 on success.  Returns 1 when the snapshot is written and durable but
 * pruning failed: err then says which file could not be removed (worth a
 * warning, since the directory will grow).  On failure returns -1 with err
 * naming the step ("fsync /var/lib/x/.a.3.snap.tmp: No space left on device")
 * and leaves no temp file behind.  When the disk is full (ENOSPC, EDQUOT) it
 * first deletes the generations of name but the newest intact one and tries
 * once more (docs/persistence.md, "Disk full").  A failure after the rename (fsync of the
 * directory) also returns -1: the new file is in place but may not survive a
 * power loss.  Safe to call in a forked child (see above). */
int pcd_snapshot_write(const char *dir, const char *name, uint64_t generation, int64_t written_at,
                       uint64_t journal_lsn, uint64_t stream_ms, uint64_t stream_seq,
                       const uint8_t *model, size_t len, unsigned keep, pcd_snap_disk *disk,
                       char *err, size_t errlen);

/* One model's write in a batch: pcd_snapshot_write's arguments, and its
 * return value in rc. */
typedef struct pcd_snap_job {
    const char *name;
    uint64_t generation;
    int64_t written_at;
    uint64_t journal_lsn, stream_ms, stream_seq;
    const uint8_t *model;
    size_t len;
    unsigned keep;
    pcd_snap_disk *disk;      /* may be NULL */
    char *err;
    size_t errlen;
    /* The file of the oldest generation, when pruning would delete it once
     * this one is durable (keep >= 2, disk->oldest known), is renamed to
     * the temp name and overwritten instead of a new file made and it
     * deleted: a model written at the rate of its evictions allocates no
     * inode (40 % of the rest thread's time on ext4 without a journal).
     * Meanwhile keep - 1 generations stay, the newest among them.  Not for
     * the periodic save: its full-disk path frees room from old generations,
     * which a reused file would not need and so would not free. */
    bool reuse;
    int rc;                   /* out: as pcd_snapshot_write returns */
    int fd;                   /* the writer's: the temp file between its halves */
} pcd_snap_job;
#define PCD_SNAP_BATCH_MAX 16

/* pcd_snapshot_write for up to PCD_SNAP_BATCH_MAX models of dir, synced
 * together: every temp file written (its writeback started), then each
 * fsynced and renamed, the directory fsynced once for all, then each
 * model's old generations pruned.  Per model the same files, the same order
 * of durability (its file durable before its rename, the rename durable
 * before any older generation goes) and the same outcome as its own call;
 * the fsyncs of one batch share the filesystem's commits, and one directory
 * sync serves them all (core/restio.c's evictions).  A job's failure fails
 * it alone, but for the directory's sync, which fails every job renamed. */
void pcd_snapshot_write_batch(const char *dir, pcd_snap_job *jobs, size_t n);

/* Reads the newest generation of name whose file is intact: magic, version,
 * header length equal to the file size minus the header (checked BEFORE
 * allocating), CRC, a well-formed bounded msgpack payload, and name and
 * generation inside equal to the file name's.  Every generation skipped is
 * reported through warn (may be NULL) with one line such as
 * "a.7.snap: CRC mismatch (file corrupt), trying generation 6".
 * On success returns 0, *model is a malloc'd buffer the caller frees, *len its
 * size, and *info (may be NULL) is filled (free with pcd_snap_info_free).
 * Returns PCD_SNAP_NONE (-2) when name has no snapshot file ("no snapshot of
 * 'a' in DIR"), PCD_SNAP_ERR (-1) when none is intact ("3 generations of 'a'
 * in DIR, all unreadable") or dir cannot be listed; outputs are untouched then. */
int pcd_snapshot_read(const char *dir, const char *name, uint8_t **model, size_t *len, pcd_snap_info *info,
                      void (*warn)(void *ud, const char *msg), void *ud, char *err, size_t errlen);

/* Like pcd_snapshot_read, and a generation intact as a file must also pass
 * accept (may be NULL): accept gets the model bytes and returns 0 to take
 * them, or -1 with a reason in why (e.g. the model does not decode), and then
 * the generation is skipped like a damaged file ("a.7.snap: passed its CRC but
 * REASON, trying generation 6").  accept may keep what it decoded: it is
 * called at most once with a result of 0, for the generation returned. */
typedef int (*pcd_snap_accept)(void *ud, const uint8_t *model, size_t len, uint64_t generation,
                               char *why, size_t whylen);
int pcd_snapshot_read_accepted(const char *dir, const char *name, pcd_snap_accept accept,
                               void *accept_ud, uint8_t **model, size_t *len, pcd_snap_info *info,
                               void (*warn)(void *ud, const char *msg), void *ud, char *err,
                               size_t errlen);

/* pcd_snapshot_read_accepted over generations the caller already knows
 * (gens[0..n), newest first; pcd_snapshot_index's), without listing dir. */
int pcd_snapshot_read_gens(const char *dir, const char *name, const uint64_t *gens, size_t n,
                           pcd_snap_accept accept, void *accept_ud, uint8_t **model, size_t *len,
                           pcd_snap_info *info, void (*warn)(void *ud, const char *msg), void *ud,
                           char *err, size_t errlen);

/* What generation gen of name says of itself (info, to free with
 * pcd_snap_info_free), from its first bytes only: the header and the
 * payload's fields before the model's bytes (format.h's pcd_snap_peek).  No
 * CRC: a model at rest is entered at start this way, and its file is read
 * whole (and checked) when it is loaded.  0, or -1 with err. */
int pcd_snapshot_peek(const char *dir, const char *name, uint64_t gen, pcd_snap_info *info,
                      char *err, size_t errlen);

/* Every model name with a snapshot file in dir, sorted by strcmp, with its
 * generations newest first: one listing of the directory for the start, not
 * one per model.  Ignores temp files, dot files and names that do not match
 * the scheme.  *v (NULL when *n is 0) is freed with pcd_snapshot_index_free.
 * 0 or -1. */
typedef struct pcd_snap_entry {
    char *name;
    uint64_t *gens;
    size_t n;
} pcd_snap_entry;
int pcd_snapshot_index(const char *dir, pcd_snap_entry **v, size_t *n, char *err, size_t errlen);
void pcd_snapshot_index_free(pcd_snap_entry *v, size_t n);

/* The newest generation number present for name, intact or not (0 if none or
 * dir unreadable), so that a restarted daemon continues the sequence instead of
 * reusing a number. */
uint64_t pcd_snapshot_latest_generation(const char *dir, const char *name);

/* Removes every generation (and temp file) of name, fsyncs dir; returns the
 * number of generations removed, or -1. */
int pcd_snapshot_remove(const char *dir, const char *name, char *err, size_t errlen);

/* Removes generation `generation` of name (absent is not an error), fsyncs
 * dir; returns 0 or -1. */
int pcd_snapshot_remove_generation(const char *dir, const char *name, uint64_t generation,
                                   char *err, size_t errlen);

/* ---- lifecycle: export, import, rollback (issue 14) ---- */

/* Reads generation gen of name (checked as pcd_snapshot_read checks): 0 with
 * *model malloc'd, or -1 with err. */
int pcd_snapshot_read_generation(const char *dir, const char *name, uint64_t gen, uint8_t **model,
                                 size_t *len, pcd_snap_info *info, char *err, size_t errlen);
/* The generations of name on disk, newest first (*gens malloc'd, NULL when
 * *n is 0).  0 or -1. */
int pcd_snapshot_generations(const char *dir, const char *name, uint64_t **gens, size_t *n,
                             char *err, size_t errlen);

#endif
