/* options.h - the options maps of predict, predict_batch and label_event:
 * one table of keys, one reader, so each key is checked in one place and an
 * unknown or ill-typed option is refused with a message naming it
 * (docs/protocol.md, "Options"). */
#ifndef PCD_OPTIONS_H
#define PCD_OPTIONS_H

#include "daemon/exec/request.h"

/* The keys, one bit each: a method's handler says which it takes. */
enum {
    PCD_OPT_EVENT = 1 << 0,   /* predict: remember the example under this ID (join.c) */
    PCD_OPT_AT = 1 << 1,      /* predict, label_event: the time, as the journal keeps it */
    PCD_OPT_EXPIRE = 1 << 2,  /* label_event: an expiry (jobs/expiry.c sends it) */
    PCD_OPT_EXPLAIN = 1 << 3, /* predict, predict_batch, label_event: K contributions */
    PCD_OPT_AFTER = 1 << 4,   /* predict, predict_batch: once this position is applied (position.h) */
};

/* An options map, read.  Absent keys are zero (explain 0: no explanation). */
typedef struct pcd_opts {
    const msgpack_object *event; /* NULL: none */
    bool expire;
    bool has_at;
    int64_t at_ms;
    uint32_t explain;
    bool has_after;
    pcp_position after;          /* of this daemon's kind: an LSN, or an entry ID */
} pcd_opts;

/* Reads o (a map, or nil: no options) into out, taking the keys in
 * `allowed` (PCD_OPT_* bits); fails naming the key and what it takes. */
int pcd_opts_read(pcd_req *r, const msgpack_object *o, unsigned allowed, pcd_opts *out);
/* The options of r: params[i] when the call has more than i params, or the
 * map the direct path read (predict's). */
int pcd_opts_of(pcd_req *r, uint32_t i, unsigned allowed, pcd_opts *out);
/* Whether o (may be NULL) is a map with the key `bit`, its value unread:
 * for what must be known before the examples are read (dispatch.c: an
 * explanation keeps their names as they are hashed). */
bool pcd_opts_has(const msgpack_object *o, unsigned bit);
/* The one key `bit` of params[i], read before the handler runs (the shared
 * log's gate reads "after" so): *has tells whether params[i] is a map that
 * names it; a bad value fails as pcd_opts_of would.  The other keys are
 * left to the handler. */
int pcd_opts_peek(pcd_req *r, uint32_t i, unsigned bit, pcd_opts *out, bool *has);

#endif
