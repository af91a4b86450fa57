/* dir.h - snapshot file names and listings in the state directory (dir.c),
 * for snapshot.c and write.c. */
#ifndef PCD_SNAP_DIR_H
#define PCD_SNAP_DIR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One read(2) or write(2) call at most: Linux caps one at 0x7ffff000 anyway. */
#define PCD_SNAP_IO_CHUNK (1u << 30)

/* path (PATH_MAX bytes) = dir/<name>.<gen>.snap, or the temp
 * dir/.<name>.<gen>.snap.tmp; -1 with err when it does not fit. */
int pcd_snap_path(char *path, const char *dir, const char *name, uint64_t gen, bool tmp,
                  char *err, size_t errlen);
/* "<name>.<gen>.snap" and ".<name>.<gen>.snap.tmp" back into name
 * (PCD_SNAP_NAME_MAX + 1 bytes) and gen: false when fname is neither. */
bool pcd_snap_parse_final(const char *fname, char *name, uint64_t *gen);
bool pcd_snap_parse_temp(const char *fname, char *name, uint64_t *gen);
/* Calls cb for every entry of dir; stops at the first cb returning -1. */
int pcd_snap_scan_dir(const char *dir, int (*cb)(void *ud, const char *fname), void *ud,
                      char *err, size_t errlen);

/* The generations of one name, newest first (g malloc'd). */
typedef struct pcd_snap_gens {
    const char *name;
    uint64_t *g;
    size_t n, cap;
    bool oom;
    /* optional: temp files of name are unlinked while scanning */
    const char *unlink_tmp_dir;
    int tmp_errno;
    char tmp_failed[PATH_MAX];
} pcd_snap_gens;
/* Fills l (l->name set, the rest zero) from dir: 0, or -1 with err. */
int pcd_snap_list_gens(const char *dir, pcd_snap_gens *l, char *err, size_t errlen);

#endif
