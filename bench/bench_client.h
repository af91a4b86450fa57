/* bench_client.h - what the benchmark programs that talk to a daemon share
 * (header only, beside bench.h): a string packed into a request, and a
 * connection with the environment's options. */
#ifndef PCD_BENCH_CLIENT_H
#define PCD_BENCH_CLIENT_H

#include <string.h>

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

#endif
