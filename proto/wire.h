/* wire.h - MessagePack facts proto/'s readers share (scan.c, features.c,
 * direct.c); internal to proto/, not part of its API. */
#ifndef PERCEPTROND_PROTO_WIRE_H
#define PERCEPTROND_PROTO_WIRE_H

#include <endian.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The big-endian unsigned integer of n = 0, 1, 2, 4 or 8 bytes at p, one
 * load each (a byte loop was a third of a label's parse). */
static inline uint64_t pcp_be(const uint8_t *p, unsigned n)
{
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (n) {
    case 0: return 0;
    case 1: return p[0];
    case 2: memcpy(&u16, p, 2); return be16toh(u16);
    case 4: memcpy(&u32, p, 4); return be32toh(u32);
    default: memcpy(&u64, p, 8); return be64toh(u64);
    }
}

/* An integer or a float as a double; false for any other type (*d then
 * untouched).  Whether it is finite is the caller's question. */
static inline bool pcp_number(const msgpack_object *o, double *d)
{
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *d = (double)o->via.u64; break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *d = (double)o->via.i64; break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *d = o->via.f64; break;
    default: return false;
    }
    return true;
}

#endif
