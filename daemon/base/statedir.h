/* statedir.h - the state directory on disk (statedir.c). */
#ifndef PCD_STATEDIR_H
#define PCD_STATEDIR_H

#include <stddef.h>

/* Creates dir and its missing parents with mode 0750 (subject to umask),
 * each new one synced into its parent; checks it is a directory the process
 * can write to.  Returns 0 or -1 (err says why). */
int pcd_state_dir_prepare(const char *dir, char *err, size_t errlen);
/* fsync(2) of a directory: what makes an entry made, renamed or removed in
 * it durable.  0 (also where the file system cannot sync a directory:
 * EINVAL), or -1 with errno. */
int pcd_fsync_dir(const char *dir);

#endif
