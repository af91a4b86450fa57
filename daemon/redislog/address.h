/* address.h - log.address ("unix:/path" | "tcp:host:port", an
 * IPv6 host in brackets) split for hiredis, one reading for the event-loop
 * connections (redislog/connect.c) and the snapshot child's (redislog/publish.c).
 * The config checked its form (config.c). */
#ifndef PCD_REDISLOG_ADDRESS_H
#define PCD_REDISLOG_ADDRESS_H

#include <stdbool.h>

typedef struct pcd_redis_address {
    const char *path;      /* a Unix socket (into the address), or NULL: */
    char host[256];        /* TCP, brackets removed */
    int port;
} pcd_redis_address;

void pcd_redis_address_split(const char *address, pcd_redis_address *out);

#endif
