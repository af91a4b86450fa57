/* bench_client.h - what the benchmark programs that talk to a daemon share
 * (header only, beside bench.h): a string packed into a request, and a
 * connection with the environment's options. */
#ifndef PCD_BENCH_CLIENT_H
#define PCD_BENCH_CLIENT_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "clients/pcclient.h"

static inline void bench_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

/* Connects to address with the options of the environment
 * (PERCEPTROND_TOKEN etc.: create and drop need admin over TCP).  0, or -1
 * with err. */
static inline int bench_connect_env(const char *address, pcc_client **c, char *err, size_t errlen)
{
    char token[600];
    pcc_options o;
    if (pcc_options_from_env(&o, token, sizeof token, err, errlen) != 0)
        return -1;
    return pcc_connect_with(address, &o, c, err, errlen);
}

/* flush + read the answer to id: its result, or NULL with err set to why
 * (the call failed, or the daemon answered an error). */
static inline const msgpack_object *bench_call(pcc_client *c, uint32_t id, char *err,
                                               size_t errlen)
{
    const msgpack_object *error, *result;
    if (pcc_call(c, id, &error, &result, err, errlen) != 0)
        return NULL;
    if (error) {
        pcc_error_message(error, err, errlen);
        return NULL;
    }
    return result;
}

/* bench_call, or the program ends through its die(what, why). */
static inline const msgpack_object *bench_call_or_die(pcc_client *c, uint32_t id,
                                                      void (*die)(const char *, const char *))
{
    char err[256];
    const msgpack_object *result = bench_call(c, id, err, sizeof err);
    if (!result)
        die("call", err);
    return result;
}

/* Starts the daemon binary `bin` on `config`, its stderr appended to `log`,
 * into *pid, and connects to its Unix socket `sock` (5 s at most): the
 * client, or NULL with err (the daemon may still run: *pid is set). */
static inline pcc_client *bench_daemon_start(const char *bin, const char *config, const char *log,
                                             const char *sock, pid_t *pid, char *err,
                                             size_t errlen)
{
    if ((*pid = fork()) == 0) {
        if (!freopen(log, "a", stderr))
            _exit(126);
        execl(bin, bin, "--config", config, (char *)NULL);
        _exit(127);
    }
    pcc_client *c = NULL;
    for (int i = 0; i < 500 && pcc_connect(sock, &c, err, errlen) != 0; i++)
        usleep(10000);
    return c;
}

#endif
