/* direct_check.h - the property of proto/direct.c: whenever the direct path
 * accepts bytes, the general path (pcp_scan, msgpack-c, pcp_message_parse,
 * pcp_features, pcp_batch) accepts them too and decodes the same message.
 *
 * Shared by tests/test_direct.c (hand-picked messages and mutations) and the
 * request fuzz target (tests/fuzz/fuzz_request.c), so both check one
 * definition of "the same message".  Needs no Check: a disagreement goes to
 * dc_failed, which the caller may point at its own reporting (the default
 * prints and aborts, which libFuzzer reports as a crash). */
#ifndef PCD_TESTS_DIRECT_CHECK_H
#define PCD_TESTS_DIRECT_CHECK_H

#include "proto/proto.h"

#define DC_DIM 1000u /* the dimension both paths read features for */
#define DC_ITEMS 8   /* examples a batch may hold: callers set max_batch <= DC_ITEMS */

/* Called with a description of the disagreement; must not return. */
extern void (*dc_failed)(const char *msg);

/* Runs both paths on a private copy of exactly msg[0..n) (so a read past the
 * end is an AddressSanitizer or valgrind error); returns whether the direct
 * path accepted, after checking that the general path decodes the same.
 * what names the input in a failure's message. */
bool dc_compare(const uint8_t *msg, size_t n, const pcp_limits *lim, const char *what);

/* The direct path alone, as the daemon drives it: true when it read a whole
 * message, *len its size. */
bool dc_direct_len(const uint8_t *buf, size_t n, const pcp_limits *lim, size_t *len);

#endif
