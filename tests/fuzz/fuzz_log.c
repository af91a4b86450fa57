/* fuzz_log.c - the entries of the shared log as Redis sends them: the bytes
 * are RESP (Redis's wire format), read by hiredis's reader as the log's
 * connections read them, and every reply walked as redislog/follow.c walks
 * an XREAD reply, with the same readers (redislog/reply.c): each stream [key,
 * entries], each entry [ID, fields], its fields `m` (a request's MessagePack
 * bytes, applied through pcd_replay to an in-memory server as the daemon
 * applies it), `o` (the origin) and `model` (a catalogue entry); and the
 * XINFO STREAM reader on the same reply.
 *
 * Asserted: an entry ID or count the readers accept is what an independent
 * parse of the string gives (digits, one '-', no overflow), and one they
 * refuse is not such a string; pcd_reply_field finds the first string value
 * of its name or nothing; an entry applied to two fresh servers leaves the
 * same models, bit for bit; whatever the bytes, no crash and no leak (a
 * protocol error ends the input, as it ends the connection). */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "daemon/base/log.h"
#include "daemon/exec/replay.h"
#include "daemon/model/registry.h"
#include "daemon/redislog/reply.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/server.h"

static pcd_server server; /* set up once, models made and freed at every input */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pcd_log_set_level("error");
    fz_tmpdir();
    fz_server_setup(&server);
    return 0;
}

/* The string as digits into *v: true when it is 1..20 digits that fit. */
static bool number(const char *s, size_t len, unsigned long long *v)
{
    if (len == 0 || len > 20 || strspn(s, "0123456789") < len)
        return false;
    char buf[24];
    memcpy(buf, s, len);
    buf[len] = 0;
    errno = 0;
    *v = strtoull(buf, NULL, 10);
    return errno == 0;
}

/* Every string of the reply tree through the ID and count readers. */
static void check_strings(const redisReply *r)
{
    if (r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++)
            check_strings(r->element[i]);
        return;
    }
    pcd_sid id;
    uint64_t u;
    const char *s = r->str;
    size_t len = r->type == REDIS_REPLY_STRING ? (size_t)r->len : 0;
    const char *dash = len ? memchr(s, '-', len) : NULL;
    unsigned long long a, b;
    bool is_id = dash && number(s, (size_t)(dash - s), &a) &&
                 number(dash + 1, len - (size_t)(dash - s) - 1, &b);
    bool got = pcd_sid_parse(r, &id);
    FZ_ASSERT(got == is_id, "pcd_sid_parse says %d of an ID-like %d string", got, is_id);
    FZ_ASSERT(!got || (id.ms == a && id.seq == b), "pcd_sid_parse read another ID");
    bool is_u64 = len && number(s, len, &a);
    got = pcd_reply_u64(r, &u);
    FZ_ASSERT(got == is_u64 && (!got || u == a), "pcd_reply_u64 disagrees with strtoull");
}

/* The first string value of `name` in a field array, by hand. */
static const redisReply *field(const redisReply *fields, const char *name)
{
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i], *v = fields->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && (size_t)k->len == strlen(name) &&
            !memcmp(k->str, name, strlen(name)) && v->type == REDIS_REPLY_STRING)
            return v;
    }
    return NULL;
}

/* m applied to a fresh server as the daemon applies an entry (the direct
 * path first), unless the bytes may be a `save`, which the general path then
 * leaves out; returns pcd_replay's result, and in *digest what the models
 * hold after it (their names and pcd_model_digest, in name order). */
static int apply(const redisReply *m, uint64_t *digest)
{
    fz_server_begin(&server);
    bool maybe_save = memmem(m->str, (size_t)m->len, "save", 4) != NULL;
    int rc = pcd_replay(&server, (const uint8_t *)m->str, (size_t)m->len, NULL,
                        maybe_save ? fz_is_save : NULL, NULL);
    size_t n;
    pcd_model **all = pcd_registry_list(&server.models, &n);
    *digest = n;
    for (size_t i = 0; all && i < n; i++)
        *digest = (*digest ^ XXH3_64bits(all[i]->name, strlen(all[i]->name)) ^
                   pcd_model_digest(all[i])) * 0x9E3779B97F4A7C15ull;
    free(all);
    fz_server_end(&server);
    return rc;
}

static void entry(const redisReply *e)
{
    pcd_sid id;
    const redisReply *fields;
    if (!pcd_reply_entry(e, &id, &fields))
        return;
    const char *names[] = {"m", "o", "model"};
    for (size_t i = 0; i < 3; i++)
        FZ_ASSERT(pcd_reply_field(fields, names[i]) == field(fields, names[i]),
                  "pcd_reply_field(%s) found another value", names[i]);
    const redisReply *m = field(fields, "m");
    if (!m)
        return;
    /* Every daemon applies the entry: two fresh servers end with the same
     * models, bit for bit.  (Not the same answer: a read that reached the
     * log, say `stats`, answers the uptime and the process's memory.) */
    uint64_t d1, d2;
    fz_clock_ms = FZ_CLOCK_START_MS;
    int r1 = apply(m, &d1);
    fz_clock_ms = FZ_CLOCK_START_MS;
    int r2 = apply(m, &d2);
    FZ_ASSERT(fz_refused() || (r1 == r2 && d1 == d2),
              "the same entry left different models (%d, %d)", r1, r2);
}

static void walk(const redisReply *r)
{
    check_strings(r);
    pcd_sid last;
    bool known;
    uint64_t added;
    pcd_reply_stream_info(r, &last, &known, &added);
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *key, *entries;
        if (!pcd_reply_stream(r->element[i], &key, &entries))
            continue;
        for (size_t k = 0; k < entries->elements; k++)
            entry(entries->element[k]);
    }
}

/* hiredis, a shared library whose allocations pass the harness's limit by,
 * allocates an array of the count a `*` header declares before its elements
 * come (0.14 has no bound): a count the input cannot hold is left out, as
 * libFuzzer would report its allocation (hundreds of MB) as out of memory.
 * Redis never sends one; the daemon would allocate it lazily (calloc). */
static bool counts_fit(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (data[i] != '*')
            continue;
        unsigned long long n = 0;
        for (size_t j = i + 1; j < size && data[j] >= '0' && data[j] <= '9' && n <= size; j++)
            n = n * 10 + (unsigned)(data[j] - '0');
        if (n > size)
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!counts_fit(data, size))
        return 0;
    fz_begin(FZ_MEM_LIMIT);
    redisReader *rd = redisReaderCreate();
    if (rd && redisReaderFeed(rd, (const char *)data, size) == REDIS_OK) {
        void *reply;
        /* up to 64 replies, as one read of the connection may hold */
        for (int n = 0; n < 64 && redisReaderGetReply(rd, &reply) == REDIS_OK && reply; n++) {
            walk(reply);
            freeReplyObject(reply);
        }
    }
    if (rd)
        redisReaderFree(rd);
    fz_end();
    return 0;
}
