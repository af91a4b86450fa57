/* publish.c - publishing a snapshot in Redis (redislog/publish.h).
 * A blocking hiredis connection: the caller is the snapshot child (or the
 * daemon at exit), never the event loop. */
#include "daemon/redislog/publish.h"
#include "daemon/redislog/address.h"
#include "daemon/redislog/auth.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_S 5 /* connecting and each command: a snapshot is megabytes at most */

/* KEYS: stream, snap, held.  ARGV: replica, ms, seq, pos, data.  Entry IDs
 * are compared as two integers (ms fits a Lua double exactly). */
static const char script[] =
    "local function older(a1, a2, b1, b2)\n"
    "  a1, a2, b1, b2 = tonumber(a1), tonumber(a2), tonumber(b1), tonumber(b2)\n"
    "  return a1 < b1 or (a1 == b1 and a2 < b2)\n"
    "end\n"
    "redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. '-' .. ARGV[3])\n"
    "local cur = redis.call('HMGET', KEYS[2], 'ms', 'seq')\n"
    "local newer = not cur[1] or older(cur[1], cur[2], ARGV[2], ARGV[3])\n"
    "if newer then\n"
    "  redis.call('HSET', KEYS[2], 'ms', ARGV[2], 'seq', ARGV[3], 'pos', ARGV[4],\n"
    "             'data', ARGV[5], 'by', ARGV[1])\n"
    "end\n"
    "local m1, m2\n"
    "for _, v in ipairs(redis.call('HVALS', KEYS[3])) do\n"
    "  local a, b = string.match(v, '^(%d+)-(%d+)$')\n"
    "  if a and (not m1 or older(a, b, m1, m2)) then m1, m2 = a, b end\n"
    "end\n"
    "local n = 0\n"
    "if m1 then\n"
    "  n = redis.call('XTRIM', KEYS[1], 'MINID', m1 .. '-' .. m2)\n"
    "  redis.call('HSET', KEYS[2], 'trimmed', m1 .. '-' .. m2)\n"
    "end\n"
    "return {newer and 1 or 0, n}\n";

static redisContext *dial(const char *a)
{
    struct timeval tv = {TIMEOUT_S, 0};
    pcd_redis_address ad;
    pcd_redis_address_split(a, &ad);
    return ad.path ? redisConnectUnixWithTimeout(ad.path, tv) : redisConnectWithTimeout(ad.host, ad.port, tv);
}

int pcd_redislog_publish(const pcd_publication *p, bool *newer, long long *trimmed, char *err,
                         size_t errlen)
{
    redisContext *c = dial(p->address);
    if (!c || c->err) {
        snprintf(err, errlen, "cannot connect to Redis %s: %s", p->address,
                 c ? c->errstr : "out of memory");
        redisFree(c);
        return -1;
    }
    struct timeval tv = {TIMEOUT_S, 0};
    redisSetTimeout(c, tv);
    const char *av[3];
    size_t al[3];
    int an = p->auth ? pcd_redis_auth_argv(p->auth, av, al) : 0;
    if (an) {
        redisReply *r = redisCommandArgv(c, an, av, al);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "Redis %s refused the password (AUTH): %s", p->address,
                     r ? r->str : c->errstr);
            freeReplyObject(r);
            redisFree(c);
            return -1;
        }
        freeReplyObject(r);
    }
    size_t pl = strlen(p->prefix), ml = strlen(p->model);
    char *keys = malloc(3 * (pl + ml + 8));
    if (!keys) {
        redisFree(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *stream = keys, *snap = keys + (pl + ml + 8), *held = keys + 2 * (pl + ml + 8);
    sprintf(stream, "%s{%s}", p->prefix, p->model);
    sprintf(snap, "%s{%s}:snap", p->prefix, p->model);
    sprintf(held, "%s{%s}:held", p->prefix, p->model);
    char ms[24], seq[24], pos[24] = "";
    snprintf(ms, sizeof ms, "%" PRIu64, p->ms);
    snprintf(seq, sizeof seq, "%" PRIu64, p->seq);
    if (p->pos_known)
        snprintf(pos, sizeof pos, "%" PRIu64, p->pos);
    const char *argv[] = {"EVAL", script, "3", stream, snap, held, p->replica, ms, seq, pos,
                          (const char *)p->data};
    size_t lens[11];
    for (int i = 0; i < 10; i++)
        lens[i] = strlen(argv[i]);
    lens[10] = p->len;
    redisReply *r = redisCommandArgv(c, 11, argv, lens);
    int rc = -1;
    if (!r)
        snprintf(err, errlen, "Redis %s: %s", p->address, c->errstr);
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "Redis %s refused the snapshot: %s", p->address, r->str);
    else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
             r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER)
        snprintf(err, errlen, "Redis %s: unexpected reply to the publishing script", p->address);
    else {
        *newer = r->element[0]->integer == 1;
        *trimmed = r->element[1]->integer;
        rc = 0;
    }
    freeReplyObject(r);
    redisFree(c);
    free(keys);
    return rc;
}
