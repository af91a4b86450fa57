/* auth.c - the password given to Redis (redislog/auth.h). */
#include "daemon/redislog/auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "daemon/base/secret.h"

int pcd_redis_auth_load(const pcd_config *cfg, pcd_redis_auth *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    char path[4200];
    if (pcd_secret_path("log.password_file", cfg->log_password_file, "log.password_credential",
                        cfg->log_password_credential, "/etc/perceptrond/redis-password", path,
                        sizeof path, err, errlen) != 0)
        return -1;
    if (!*path)
        return 0;
    FILE *f = pcd_secret_open(path, "the Redis password", err, errlen);
    if (!f)
        return -1;
    char line[PCD_REDIS_USER_MAX + PCD_REDIS_PASSWORD_MAX + 8];
    int rc = -1;
    if (!fgets(line, sizeof line, f)) {
        snprintf(err, errlen, "the Redis password %s is empty%s%s", path, ferror(f) ? ": " : "",
                 ferror(f) ? strerror(errno) : "");
    } else if (strlen(line) == sizeof line - 1 && line[sizeof line - 2] != '\n') {
        snprintf(err, errlen, "the Redis password %s: the line is too long (a user of at most %d "
                 "bytes, a password of at most %d)", path, PCD_REDIS_USER_MAX, PCD_REDIS_PASSWORD_MAX);
    } else {
        line[strcspn(line, "\r\n")] = 0;
        /* "PASSWORD" or "USER PASSWORD": one space splits them */
        char *space = strchr(line, ' '), *pw = space ? space + 1 : line;
        size_t ulen = space ? (size_t)(space - line) : 0;
        if (!*pw || strchr(pw, ' '))
            snprintf(err, errlen, "the Redis password %s must hold one line, PASSWORD or USER "
                     "PASSWORD (no other spaces)", path);
        else if (ulen > PCD_REDIS_USER_MAX || strlen(pw) > PCD_REDIS_PASSWORD_MAX)
            snprintf(err, errlen, "the Redis password %s: a user of at most %d bytes, a password "
                     "of at most %d", path, PCD_REDIS_USER_MAX, PCD_REDIS_PASSWORD_MAX);
        else {
            memcpy(a->user, line, ulen);
            snprintf(a->password, sizeof a->password, "%s", pw);
            a->set = true;
            rc = 0;
        }
    }
    OPENSSL_cleanse(line, sizeof line);
    fclose(f);
    return rc;
}

void pcd_redis_auth_clear(pcd_redis_auth *a)
{
    OPENSSL_cleanse(a, sizeof *a);
}

int pcd_redis_auth_argv(const pcd_redis_auth *a, const char *argv[3], size_t lens[3])
{
    if (!a->set)
        return 0;
    int n = 0;
    argv[n++] = "AUTH";
    if (*a->user)
        argv[n++] = a->user;
    argv[n++] = a->password;
    for (int i = 0; i < n; i++)
        lens[i] = strlen(argv[i]);
    return n;
}
