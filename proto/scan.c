/* scan.c - bounded, resumable pre-scan of one msgpack object, and the limits.
 *
 * msgpack-c's unpacker trusts headers: from the 5 bytes `dd ff ff ff ff` it
 * allocates 24 bytes per announced element before a single element arrives
 * (msgpack-c issue #1013).  So no byte reaches it before this scanner has
 * walked the object's headers and proved that (a) the object is complete,
 * (b) it nests no deeper than max_depth, (c) it is no longer than max_message,
 * and (d) every count fits in the bytes left, one byte per announced element at
 * least.  Then the unpacker's allocations are bounded by 24 bytes per byte.
 *
 * The scanner only reads headers: fixed-size values and string/bin/ext bodies
 * are skipped by moving an offset, possibly past the bytes received so far.
 * Its state survives between calls, so bytes arriving one at a time cost O(1)
 * each (a header split across reads is re-read, at most 5 bytes).
 */
#include "proto/proto.h"
#include "proto/wire.h"

#include <string.h>

void pcp_limits_default(pcp_limits *l)
{
    l->max_message = PCP_DEFAULT_MAX_MESSAGE;
    l->max_features = PCP_DEFAULT_MAX_FEATURES;
    l->max_depth = PCP_DEFAULT_MAX_DEPTH;
    l->max_batch = PCP_DEFAULT_MAX_BATCH;
}

pcp_code pcp_limits_check(const pcp_limits *l, pcp_error *err)
{
    if (l->max_message < PCP_MIN_MESSAGE || l->max_message > PCP_MAX_MESSAGE_CEILING)
        return pcp_error_set(err, PCP_E_LIMIT, "max_message %zu is out of range [%u, %u] bytes",
                             l->max_message, PCP_MIN_MESSAGE, PCP_MAX_MESSAGE_CEILING);
    if (l->max_depth < PCP_MIN_DEPTH || l->max_depth > PCP_MAX_DEPTH_CEILING)
        return pcp_error_set(err, PCP_E_LIMIT, "max_depth %u is out of range [%u, %u]",
                             l->max_depth, PCP_MIN_DEPTH, PCP_MAX_DEPTH_CEILING);
    if (l->max_features < 1)
        return pcp_error_set(err, PCP_E_LIMIT, "max_features must be at least 1");
    if (l->max_batch < 1)
        return pcp_error_set(err, PCP_E_LIMIT, "max_batch must be at least 1");
    return PCP_OK;
}

/* What one header says: h bytes of header (type byte + length field), then
 * body bytes skipped unread, then count child objects (arrays: N, maps: 2N). */
typedef struct header {
    uint32_t h;
    uint64_t body;
    uint64_t count;
    bool container;
    const char *kind, *unit;   /* for messages: "map", "pairs" */
    uint64_t announced;        /* the length field as written, in units */
} header;

/* Size of the header that starts with byte b (1..5), 0 for the unused 0xc1. */
static uint32_t header_size(uint8_t b)
{
    switch (b) {
    case 0xc1: return 0;
    case 0xc4: case 0xc7: case 0xd9: return 2;            /* 8-bit length */
    case 0xc5: case 0xc8: case 0xda: case 0xdc: case 0xde: return 3; /* 16-bit */
    case 0xc6: case 0xc9: case 0xdb: case 0xdd: case 0xdf: return 5; /* 32-bit */
    default: return 1;
    }
}

/* Decodes a complete header p[0..header_size(p[0])). */
static header decode(const uint8_t *p)
{
    uint8_t b = p[0];
    header x = {.h = header_size(b), .kind = "value", .unit = "bytes"};
    uint64_t n = pcp_be(p + 1, x.h - 1);
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
        ;                                                  /* fixint, nil, bool */
    else if (b <= 0x8f)
        x.container = true, x.count = 2u * (b & 0x0f), x.kind = "map";
    else if (b <= 0x9f)
        x.container = true, x.count = b & 0x0f, x.kind = "array";
    else if (b <= 0xbf)
        x.body = b & 0x1f, x.kind = "str";
    else
        switch (b) {
        case 0xc4: case 0xc5: case 0xc6: x.body = n, x.kind = "bin"; break;
        case 0xc7: case 0xc8: case 0xc9: x.body = 1 + n, x.kind = "ext"; break; /* type + data */
        case 0xca: x.body = 4; break;
        case 0xcb: x.body = 8; break;
        case 0xcc: case 0xd0: x.body = 1; break;
        case 0xcd: case 0xd1: x.body = 2; break;
        case 0xce: case 0xd2: x.body = 4; break;
        case 0xcf: case 0xd3: x.body = 8; break;
        case 0xd4: x.body = 2, x.kind = "ext"; break;
        case 0xd5: x.body = 3, x.kind = "ext"; break;
        case 0xd6: x.body = 5, x.kind = "ext"; break;
        case 0xd7: x.body = 9, x.kind = "ext"; break;
        case 0xd8: x.body = 17, x.kind = "ext"; break;
        case 0xd9: case 0xda: case 0xdb: x.body = n, x.kind = "str"; break;
        case 0xdc: case 0xdd: x.container = true, x.count = n, x.kind = "array"; break;
        case 0xde: case 0xdf: x.container = true, x.count = 2 * n, x.kind = "map"; break;
        }
    bool map = x.container && x.kind[0] == 'm';
    x.unit = map ? "pairs" : x.container ? "elements" : "bytes";
    x.announced = map ? x.count / 2 : x.container ? x.count : x.body;
    return x;
}

/* The body size of a value that is its type byte and a fixed body, with no
 * children (fixint, nil, bool, fixstr, float, int, uint), else -1: most of
 * a message's elements, taken by pcp_scan's fast path.  A table, not
 * branches: the type bytes of a message's numbers vary at random. */
static const int8_t simple[256] = {
    [0x00 ... 0x7f] = 0, [0x80 ... 0x9f] = -1, /* fixint; fixmap, fixarray */
    [0xa0 ... 0xbf] = -1,                      /* fixstr: set by simple_body */
    [0xc0] = 0, [0xc1] = -1, [0xc2] = 0, [0xc3] = 0, [0xc4 ... 0xc9] = -1,
    [0xca] = 4, [0xcb] = 8, [0xcc] = 1, [0xcd] = 2, [0xce] = 4, [0xcf] = 8,
    [0xd0] = 1, [0xd1] = 2, [0xd2] = 4, [0xd3] = 8, [0xd4 ... 0xdf] = -1,
    [0xe0 ... 0xff] = 0,                       /* negative fixint */
};

static inline int simple_body(uint8_t b)
{
    return (b & 0xe0) == 0xa0 ? b & 0x1f : simple[b];
}

/* Marks the stream dead: after a parse or limit error the next object's start
 * is unknown. */
static int dead(pcp_scan_state *st)
{
    st->failed = true;
    return -1;
}

int pcp_scan(pcp_scan_state *st, const uint8_t *buf, size_t n, const pcp_limits *lim,
             size_t *len, pcp_error *err)
{
    pcp_limits def;
    if (!lim) {
        pcp_limits_default(&def);
        lim = &def;
    }
    uint64_t max_msg = lim->max_message;
    if (max_msg > PCP_MAX_MESSAGE_CEILING)
        max_msg = PCP_MAX_MESSAGE_CEILING;
    uint32_t max_depth = lim->max_depth;
    if (max_depth > PCP_MAX_DEPTH_CEILING)
        max_depth = PCP_MAX_DEPTH_CEILING;

    if (st->failed) {
        pcp_error_set(err, PCP_E_PARSE, "the stream already failed to parse");
        return -1;
    }
    if (!st->started) {
        memset(st, 0, sizeof *st);
        st->started = true;
        st->pending = 1;   /* the object itself */
    }
    while (st->pending > 0) {
        if (st->off >= n)
            return 0;
        const uint8_t *p = buf + st->off;
        /* The fast path: a scalar within max_message does what the general
         * steps below do for it, without decoding a header. */
        int fb = simple_body(p[0]);
        if (fb >= 0 && (uint64_t)st->off + 1 + (uint64_t)fb + st->pending - 1 <= max_msg) {
            /* and the scalars after it in the same container, in locals */
            size_t off = st->off;
            uint64_t pending = st->pending, taken = 0;
            uint64_t left = st->depth > 0 ? st->left[st->depth - 1] : 1;
            for (;;) {
                off += 1 + (size_t)fb;
                pending--;
                taken++;
                if (--left == 0 || off >= n)
                    break;
                fb = simple_body(buf[off]);
                if (fb < 0 || (uint64_t)off + 1 + (uint64_t)fb + pending - 1 > max_msg)
                    break;
            }
            st->off = off;
            st->pending = pending;
            st->examined += taken;
            if (st->depth > 0)
                st->left[st->depth - 1] = left;
            while (st->depth > 0 && st->left[st->depth - 1] == 0)
                st->depth--;
            continue;
        }
        uint32_t h = header_size(p[0]);
        st->examined++;
        if (h == 0) {
            pcp_error_set(err, PCP_E_PARSE,
                          "malformed MessagePack: byte 0xc1 (never used) at offset %zu", st->off);
            return dead(st);
        }
        if (n - st->off < h)
            return 0;      /* the length field is split across reads: re-read it next time */
        st->examined += h - 1;
        header x = decode(p);

        /* Accounting: this object starts now, it announces x.count more. */
        st->pending--;
        if (st->depth > 0)
            st->left[st->depth - 1]--;
        if (x.container && st->depth + 1 > max_depth) {
            pcp_error_set(err, PCP_E_LIMIT, "message nests deeper than max_depth (%u) at offset %zu",
                          max_depth, st->off);
            return dead(st);
        }
        /* off <= max_msg and pending <= max_msg here, body and count < 2^34:
         * the sum cannot overflow 64 bits. */
        uint64_t end = (uint64_t)st->off + h + x.body;
        if (end + st->pending + x.count > max_msg) {
            if (x.container || x.body > 8)
                pcp_error_set(err, PCP_E_LIMIT,
                              "a %s of %llu %s at offset %zu does not fit in max_message "
                              "(%llu bytes)", x.kind, (unsigned long long)x.announced, x.unit,
                              st->off, (unsigned long long)max_msg);
            else
                pcp_error_set(err, PCP_E_LIMIT, "message is larger than max_message (%llu bytes)",
                              (unsigned long long)max_msg);
            return dead(st);
        }
        st->off = (size_t)end;
        if (x.container && x.count > 0) {
            st->left[st->depth++] = x.count;
            st->pending += x.count;
        }
        while (st->depth > 0 && st->left[st->depth - 1] == 0)
            st->depth--;
    }
    if (st->off > n)
        return 0;          /* the last string's body is still arriving */
    *len = st->off;
    uint64_t examined = st->examined;
    memset(st, 0, sizeof *st);
    st->examined = examined;   /* kept for callers measuring the cost; reset by started = false */
    return 1;
}
