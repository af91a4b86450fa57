/* address.c - log.address split for hiredis (redislog/address.h). */
#include "daemon/redislog/address.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pcd_redis_address_split(const char *a, pcd_redis_address *out)
{
    out->path = NULL;
    out->host[0] = 0;
    out->port = 0;
    if (!strncmp(a, "unix:", 5)) {
        out->path = a + 5;
        return;
    }
    const char *h = a + 4, *colon = strrchr(h, ':'); /* tcp:host:port */
    size_t n = (size_t)(colon - h);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']')
        h++, n -= 2;
    snprintf(out->host, sizeof out->host, "%.*s", (int)n, h);
    out->port = atoi(colon + 1);
}
