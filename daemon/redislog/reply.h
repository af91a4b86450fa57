/* reply.h - reading the values the shared log (redislog.h) gets
 * back from Redis: stream entry IDs, decimal counts, an entry's fields and
 * XINFO STREAM.  Pure functions of a hiredis reply: no connection, no
 * server state, so they are one place to check a reply's shape. */
#ifndef PCD_REDISLOG_REPLY_H
#define PCD_REDISLOG_REPLY_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

/* A stream entry ID, "ms-seq". */
typedef struct pcd_sid {
    unsigned long long ms, seq;
} pcd_sid;

/* An entry ID "ms-seq" in a string reply (digits only, no overflow). */
bool pcd_sid_parse(const redisReply *r, pcd_sid *id);
/* <0, 0, >0 as a is before, at, after b. */
int pcd_sid_cmp(pcd_sid a, pcd_sid b);
/* A decimal u64 in a string reply. */
bool pcd_reply_u64(const redisReply *r, uint64_t *v);
/* One stream of an XREAD reply, [key, [entry, ...]]: its key (a string)
 * and its entries (an array); false when it has another shape. */
bool pcd_reply_stream(const redisReply *s, const redisReply **key, const redisReply **entries);
/* One entry of a stream, [ID, [field, value, ...]]: its ID and its field
 * array; false when it has another shape (the log skips it). */
bool pcd_reply_entry(const redisReply *e, pcd_sid *id, const redisReply **fields);
/* The string value of field `name` in an entry's field array, or NULL. */
const redisReply *pcd_reply_field(const redisReply *fields, const char *name);
/* XINFO STREAM's reply: the last entry ID and (Redis >= 7) the entry count
 * (*known); an error (no such key) is an empty stream, its count known. */
void pcd_reply_stream_info(const redisReply *r, pcd_sid *last, bool *known, uint64_t *added);

#endif
