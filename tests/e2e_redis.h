/* e2e_redis.h - a real redis-server for the end-to-end tests of the shared
 * log (test_e2e_redis.c, test_e2e_after.c): started in a temp dir on a Unix
 * socket (appendonly yes; a loopback port when replication needs one),
 * stopped, killed, asked commands with hiredis; and daemons on it.  Include
 * after e2e.h and e2e_log.h (DIM, find_program); main() finds redis_bin. */
#ifndef PC_E2E_REDIS_H
#define PC_E2E_REDIS_H

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <sys/un.h>

static char redis_bin[512];

typedef struct rds {
    char dir[40], sock[80], log[80];
    pid_t pid;
    bool always;   /* appendfsync always: a kill -9 loses nothing Redis answered */
    bool locked;   /* requirepass REDIS_PASSWORD, and an ACL user REDIS_USER */
    int port;      /* a loopback TCP port too (replication needs one), 0: none */
    int primary;   /* a replica of the Redis on this port, 0: a primary */
} rds;

#define REDIS_PASSWORD "s3cret-pw"
#define REDIS_USER "alice"
#define REDIS_USER_PASSWORD "alice-pw"

/* PING over the Unix socket, raw RESP. */
static inline bool redis_ping(const rds *r)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", r->sock);
    bool ok = false;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(fd, "PING\r\n", 6) == 6) {
        char buf[16] = "";
        ok = read(fd, buf, sizeof buf - 1) > 0 &&
             (!strncmp(buf, "+PONG", 5) || (r->locked && !strncmp(buf, "-NOAUTH", 7)));
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

static inline void redis_start(rds *r)
{
    r->pid = fork();
    ck_assert(r->pid >= 0);
    if (r->pid == 0) {
        char port[16], primary[16];
        snprintf(port, sizeof port, "%d", r->port);
        snprintf(primary, sizeof primary, "%d", r->primary);
        const char *argv[40] = {redis_bin, "--port", port, "--bind", "127.0.0.1", "--unixsocket",
                                r->sock, "--dir", r->dir, "--appendonly", "yes", "--appendfsync",
                                r->always ? "always" : "everysec", "--save", "", "--daemonize",
                                "no", "--logfile", r->log, "--repl-diskless-sync-delay", "0"};
        int n = 21; /* no delay: a replica syncs at once */
        if (r->locked) {
            const char *more[] = {"--requirepass", REDIS_PASSWORD, "--user", REDIS_USER, "on",
                                  (">" REDIS_USER_PASSWORD), "~*", "&*", "+@all"};
            for (size_t k = 0; k < sizeof more / sizeof *more; k++)
                argv[n++] = more[k];
        }
        if (r->primary) {
            argv[n++] = "--replicaof";
            argv[n++] = "127.0.0.1";
            argv[n++] = primary;
        }
        argv[n] = NULL;
        execv(redis_bin, (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) {
        if (redis_ping(r))
            return;
        e2e_sleep_ms(10);
    }
    ck_abort_msg("redis-server did not answer on %s (see %s)", r->sock, r->log);
}

/* SIGTERM: Redis syncs its AOF and exits. */
static inline void redis_stop(rds *r)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, SIGTERM);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
}

/* kill -9: whatever its AOF holds is all that is left. */
static inline void redis_kill9(rds *r)
{
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
}

/* One command to the test's Redis (hiredis), its reply; caller frees. */
static inline redisReply *redis_cmd(const rds *r, const char *fmt, ...)
{
    redisContext *c = redisConnectUnix(r->sock);
    ck_assert_msg(c && !c->err, "cannot connect to %s", r->sock);
    if (r->locked)
        freeReplyObject(redisCommand(c, "AUTH %s", REDIS_PASSWORD));
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(c, fmt, ap);
    va_end(ap);
    ck_assert_msg(rep != NULL, "redis: %s", c->errstr);
    redisFree(c);
    return rep;
}

static inline long long redis_int(const rds *r, const char *fmt, const char *arg)
{
    redisReply *rep = redis_cmd(r, fmt, arg);
    ck_assert_msg(rep->type == REDIS_REPLY_INTEGER, "%s: not an integer", fmt);
    long long v = rep->integer;
    freeReplyObject(rep);
    return v;
}

/* A fresh temp dir for a Redis: its socket and log inside. */
static inline void redis_init_dir(rds *r)
{
    snprintf(r->dir, sizeof r->dir, "/tmp/pcd-redis-XXXXXX");
    ck_assert(mkdtemp(r->dir) != NULL);
    snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
    snprintf(r->log, sizeof r->log, "%s/redis.log", r->dir);
}

static inline void redis_init_with(rds *r, bool always, bool locked)
{
    memset(r, 0, sizeof *r);
    r->always = always;
    r->locked = locked;
    redis_init_dir(r);
    redis_start(r);
}

static inline void redis_init(rds *r)
{
    redis_init_with(r, false, false);
}

static inline void redis_cleanup(rds *r)
{
    redis_stop(r);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", r->dir);
}

/* A daemon on the log, serving patterns (a YAML list, "" for all), with
 * the config lines more ("" for none). */
static inline void daemon_start_with(e2e *d, const rds *r, const char *patterns, const char *more)
{
    char extra[800];
    snprintf(extra, sizeof extra,
             "log: {backend: redis, address: \"unix:%s\"%s%s}\n"
             "template: {rule: pa, dim: %d}\nsnapshot: {interval: 0}\n%s",
             r->sock, *patterns ? ", models: " : "", patterns, DIM, more);
    e2e_init(d, extra);
    e2e_start(d);
}

static inline void daemon_start(e2e *d, const rds *r, const char *patterns)
{
    daemon_start_with(d, r, patterns, "");
}

/* The end of a test with n daemons d (calloc'd) and its Redis: each daemon
 * stops cleanly (valgrind's 99 would show here), then all is removed. */
static inline void finish_all(e2e *d, int n, rds *r)
{
    e2e_stop_all(d, n);
    redis_cleanup(r);
}

#endif
