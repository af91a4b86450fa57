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

#endif
