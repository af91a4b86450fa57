/* auth.h - the password this daemon gives Redis: log.password_file,
 * or the systemd credential named by log.password_credential.  Its first
 * line is "PASSWORD", or "USER PASSWORD" for a Redis 6+ ACL user; the file is
 * a secret file (secret.h: refused when other users may read it).  Read at
 * start and by --check-config; every connection to Redis (redislog/connect.c's,
 * the snapshot child's in redislog/publish.c) sends AUTH first. */
#ifndef PCD_REDISLOG_AUTH_H
#define PCD_REDISLOG_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/config/config.h"

#define PCD_REDIS_USER_MAX 128
#define PCD_REDIS_PASSWORD_MAX 512

typedef struct pcd_redis_auth {
    bool set;                               /* false: no AUTH (neither key given) */
    char user[PCD_REDIS_USER_MAX + 1];      /* "" : Redis's default user */
    char password[PCD_REDIS_PASSWORD_MAX + 1];
} pcd_redis_auth;

/* 0 with *a filled (a->set false when neither key is given), or -1 with err
 * saying what is wrong with the file (never quoting it). */
int pcd_redis_auth_load(const pcd_config *cfg, pcd_redis_auth *a, char *err, size_t errlen);
/* Wipes the password from memory. */
void pcd_redis_auth_clear(pcd_redis_auth *a);
/* The AUTH command's words for hiredis's *CommandArgv: returns their count
 * (2 or 3; 0 when no AUTH is to be sent). */
int pcd_redis_auth_argv(const pcd_redis_auth *a, const char *argv[3], size_t lens[3]);

#endif
