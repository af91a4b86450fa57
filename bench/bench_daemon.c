/* bench_daemon.c - throughput and latency of a running perceptrond (not a test).
 *
 *   bench_daemon [-a ADDRESS] [-n LABELS] [-p PREDICTS] [-s SYNC_LABELS] [-w WINDOW] [-d NNZ]
 *                [-r RULE] [-b US] [-B] [-f IN_FLIGHT] [-S STORAGE] [-H HASH_BITS] [-N]
 *                [-E K] [-P DAEMON_PID]
 *
 * 1. labels/s: LABELS label requests (nnz features as an {index: value} map,
 *    or with -N as a {name: value} map, names "f<index>" the daemon hashes
 *    through its name step: what feature preparation by name costs),
 *    labels from a fixed hyperplane) pipelined on one connection, keeping up
 *    to WINDOW requests in flight, sent 256 at a time; every response is read
 *    and checked.
 * 2. the same as notifications (fire-and-forget), ended by an empty
 *    label_batch (a ping, but one that waits for a shared log too).
 * 3. the same as label_batch requests of 256 examples, up to IN_FLIGHT (16)
 *    at a time (-B: only this one of 1 to 3).
 * The examples of 1 to 3 are packed before the clock starts, as
 * redis-benchmark does, so the figures are the daemon's and not this
 * program's msgpack packing: up to 2^20 distinct examples (about 460 MB at
 * nnz 32), sent round and round beyond that.  Distinct, because a perceptron
 * that sees a small pool again soon stops making mistakes, and a label
 * without an update is cheaper: the default run is one pass over a stream of
 * 10^6 fresh examples, the same stream the earlier figures used.
 * 4. predicts/s: PREDICTS predict requests pipelined as the labels of 1 (a
 *    pool of up to 2^16 examples packed before the clock starts), with -E K
 *    each asking {"explain": K} (docs/protocol.md, "Explanations"); with -P
 *    also the daemon's CPU time a predict (its own cost, whoever is slower).
 * 5. predict latency: PREDICTS synchronous predict round trips, one at a
 *    time; prints p50, p99, p99.9 and the max.  With -b the client polls for
 *    each answer for up to US microseconds before it sleeps (pcc_set_busy_poll),
 *    as the daemon does by default (busy_poll_us).
 * 6. label latency: SYNC_LABELS synchronous label round trips, the same
 *    percentiles: with `journal.fsync: always` each waits for an fdatasync.
 * Then the daemon's journal figures (stats.journal: fdatasyncs, their mean
 * and max).  bench/journal.sh runs all of it against each fsync mode.
 * The model "bench" is dropped and created (RULE, 2^HASH_BITS dims, default
 * 20, in STORAGE: dense, sparse or auto; by default the template's) first;
 * the indices are uniform over the dimension.  Storages compared A/B:
 *   CONFIG_B="template: {storage: sparse}" bench/ab.sh D D 5 -- OPTIONS
 * with D the same perceptrond binary.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "bench/bench.h"
#include "bench/bench_client.h"
#include "clients/pcclient.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next(void) { return bench_xorshift(&rng); }

static int nnz = 32;
static unsigned hash_bits = 20;
static const char *storage; /* NULL: the template's (bench/ab.sh sets it per side) */

static void pack_model(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "bench", 5);
}

static bool named; /* -N: features by name */
static unsigned explain; /* -E K: predicts ask {"explain": K} */
static long daemon_pid;  /* -P PID: the daemon's CPU time is read from /proc */

/* predict's options, when it has any: {"explain": K} */
static void pack_predict_options(msgpack_packer *pk)
{
    if (!explain)
        return;
    msgpack_pack_map(pk, 1);
    msgpack_pack_str_with_body(pk, "explain", 7);
    msgpack_pack_uint32(pk, explain);
}

/* Packs {idx: value...}(, label), or {"f<idx>": value...} with -N. */
static void pack_example(msgpack_packer *pk, bool with_label)
{
    msgpack_pack_map(pk, (size_t)nnz);
    double s = 0;
    for (int k = 0; k < nnz; k++) {
        uint32_t idx = (uint32_t)(next() & ((1u << hash_bits) - 1));
        double v = (double)(next() >> 11) / 9007199254740992.0 * 2 - 1;
        s += (idx & 1 ? v : -v);
        if (named) {
            char name[16];
            int len = snprintf(name, sizeof name, "f%u", idx);
            msgpack_pack_str_with_body(pk, name, (size_t)len);
        } else {
            msgpack_pack_uint32(pk, idx);
        }
        msgpack_pack_double(pk, v);
    }
    if (with_label)
        msgpack_pack_int(pk, s >= 0 ? 1 : -1);
}

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_daemon: %s: %s\n", what, err);
    exit(1);
}

/* Examples packed once, before any clock starts (at[k]: where example k
 * starts in buf; n of them, used round and round). */
typedef struct pool {
    msgpack_sbuffer buf;
    size_t *at, n;
} pool;

/* n examples, each with its label, or (labelled false) with predict's options */
static void pool_make(pool *p, size_t n, bool labelled)
{
    msgpack_sbuffer_init(&p->buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &p->buf, msgpack_sbuffer_write);
    p->n = n;
    p->at = malloc((n + 1) * sizeof *p->at);
    for (size_t i = 0; i < n; i++) {
        p->at[i] = p->buf.size;
        pack_example(&pk, labelled);
        if (!labelled)
            pack_predict_options(&pk);
    }
    p->at[n] = p->buf.size;
}

static void pool_free(pool *p)
{
    free(p->at);
    msgpack_sbuffer_destroy(&p->buf);
}

/* Appends example i of the pool. */
static void pooled(pcc_client *c, const pool *p, size_t i)
{
    i %= p->n;
    pcc_raw(c, p->buf.data + p->at[i], p->at[i + 1] - p->at[i]);
}

/* The bytes of a label request's or notification's envelope up to its
 * features: [0, msgid, "label", ["bench", ...]] or [2, "label", ["bench", ...]],
 * packed once by msgpack-c.  A request's msgid is a fixed-width uint32 (0xce
 * and 4 bytes at ENVELOPE_ID) so that it can be rewritten per request: packing
 * each envelope anew cost the client more than the daemon spends on a label. */
enum { ENVELOPE_ID = 3 };
enum { CHUNK = 256 }; /* requests or notifications written between two flushes */
static void pack_envelope(msgpack_sbuffer *sb, bool request, const char *method, size_t nparams)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, request ? 4 : 3);
    msgpack_pack_uint8(&pk, request ? 0 : 2);
    if (request)
        msgpack_pack_fix_uint32(&pk, 0);
    msgpack_pack_str_with_body(&pk, method, strlen(method));
    msgpack_pack_array(&pk, nparams);
    pack_model(&pk);
}

/* Reads the next answer, which must be a success and the answer to msgid. */
static const msgpack_object *answer(pcc_client *c, const char *method, uint32_t msgid)
{
    uint32_t id;
    const msgpack_object *error, *result;
    char err[256];
    if (pcc_read(c, &id, &error, &result, 10000, err, sizeof err) != 0)
        die("read", err);
    if (error) {
        pcc_error_message(error, err, sizeof err);
        die(method, err);
    }
    if (id != msgid)
        die(method, "answers out of order");
    return result;
}

/* n requests of envelope `request`, example i of p its params' rest,
 * pipelined CHUNK at a time with up to window in flight, msgids base, base
 * + 1, ...; on_answer (may be NULL) is given each result in order.  Returns
 * the seconds it took. */
static double pipeline(pcc_client *c, msgpack_sbuffer *request, const pool *p, long n,
                       long window, uint32_t base, const char *method,
                       void (*on_answer)(const msgpack_object *result, void *ud), void *ud)
{
    long sent = 0, got = 0;
    char err[256];
    double t0 = bench_now();
    while (got < n) {
        if (sent < n && sent - got + CHUNK <= window) {
            for (long k = 0; k < CHUNK && sent < n; k++, sent++) {
                uint32_t id = htonl(base + (uint32_t)sent);
                memcpy(request->data + ENVELOPE_ID, &id, sizeof id);
                pcc_raw(c, request->data, request->size);
                pooled(c, p, (size_t)sent);
            }
            if (pcc_flush(c, err, sizeof err) != 0)
                die("send", err);
            continue;
        }
        const msgpack_object *res = answer(c, method, base + (uint32_t)got++);
        if (on_answer)
            on_answer(res, ud);
    }
    return bench_now() - t0;
}

/* 4. n predict requests pipelined from a pool of up to 2^16 examples (with
 * their options), msgids from a fresh range (the client's own came before). */
static void predict_throughput(pcc_client *c, long n, long window)
{
    if (n <= 0)
        return;
    pool p;
    pool_make(&p, n < (1L << 16) ? (size_t)n : (size_t)1 << 16, false);
    msgpack_sbuffer request;
    msgpack_sbuffer_init(&request);
    pack_envelope(&request, true, "predict", explain ? 3 : 2);
    double cpu0 = daemon_pid ? bench_cpu_of(daemon_pid) : 0;
    double t = pipeline(c, &request, &p, n, window, 1u << 30, "predict", NULL, NULL);
    printf("predict requests (pipelined, window %ld, explain %u): %ld in %.3f s = %.0f predicts/s\n",
           window, explain, n, t, (double)n / t);
    /* the daemon's own cost: with larger answers the client may be the
     * bottleneck of the pipelined rate */
    if (daemon_pid)
        printf("predict daemon CPU: %.2f us a predict\n",
               (bench_cpu_of(daemon_pid) - cpu0) * 1e6 / (double)n);
    pool_free(&p);
    msgpack_sbuffer_destroy(&request);
}

static void count_mistake(const msgpack_object *res, void *ud)
{
    const msgpack_object *m = pcc_map_get(res, "mistake");
    *(long *)ud += m && m->type == MSGPACK_OBJECT_BOOLEAN && m->via.boolean;
}

static void call_simple(pcc_client *c, const char *method, const char *model, const char *rule)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, method, rule ? 2 : 1, &id);
    msgpack_pack_str(pk, strlen(model));
    msgpack_pack_str_body(pk, model, strlen(model));
    if (rule) {
        msgpack_pack_map(pk, storage ? 3 : 2);
        if (storage) {
            msgpack_pack_str_with_body(pk, "storage", 7);
            msgpack_pack_str_with_body(pk, storage, strlen(storage));
        }
        msgpack_pack_str(pk, 4);
        msgpack_pack_str_body(pk, "rule", 4);
        msgpack_pack_str(pk, strlen(rule));
        msgpack_pack_str_body(pk, rule, strlen(rule));
        msgpack_pack_str(pk, 9);
        msgpack_pack_str_body(pk, "hash_bits", 9);
        msgpack_pack_uint8(pk, (uint8_t)hash_bits);
    }
    const msgpack_object *error, *result;
    char err[256];
    if (pcc_call(c, id, &error, &result, err, sizeof err) != 0)
        die(method, err);
    if (error && strcmp(method, "drop") != 0) {
        pcc_error_message(error, err, sizeof err);
        die(method, err);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n synchronous round trips of method (predict, or label with a label);
 * prints the percentiles. */
static void latency(pcc_client *c, const char *method, long n, unsigned busy_poll)
{
    if (n <= 0)
        return;
    bool label = strcmp(method, "label") == 0;
    double *lat = malloc((size_t)n * sizeof *lat);
    char err[256];
    for (long i = 0; i < n; i++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, method, label || explain ? 3 : 2, &id);
        pack_model(pk);
        pack_example(pk, label);
        if (!label)
            pack_predict_options(pk);
        const msgpack_object *error, *result;
        double s = bench_now();
        if (pcc_call(c, id, &error, &result, err, sizeof err) != 0 || error)
            die(method, error ? "error response" : err);
        lat[i] = (bench_now() - s) * 1e6;
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
#define PCT(p) lat[(size_t)((double)(n - 1) * (p))]
    printf("%s latency (us, %ld synchronous round trips, client busy poll %u us): p50 %.1f  "
           "p99 %.1f  p99.9 %.1f  max %.1f\n",
           method, n, busy_poll, PCT(0.5), PCT(0.99), PCT(0.999), lat[n - 1]);
#undef PCT
    free(lat);
}

/* The daemon's journal figures (stats.journal), when it has one. */
static void journal_stats(pcc_client *c)
{
    uint32_t id;
    const msgpack_object *error, *result;
    char err[256];
    pcc_request(c, "stats", 0, &id);
    if (pcc_call(c, id, &error, &result, err, sizeof err) != 0 || error)
        die("stats", error ? "error response" : err);
    const msgpack_object *j = pcc_map_get(result, "journal");
    if (!j || j->type != MSGPACK_OBJECT_MAP) {
        printf("journal: off\n");
        return;
    }
    const msgpack_object *mode = pcc_map_get(j, "fsync");
    printf("journal: fsync %.*s, %.0f fdatasyncs, avg %.3f ms, max %.3f ms, %.0f bytes\n",
           mode ? (int)mode->via.str.size : 1, mode ? mode->via.str.ptr : "?",
           pcc_number(pcc_map_get(j, "fsyncs")), pcc_number(pcc_map_get(j, "fsync_avg_ms")),
           pcc_number(pcc_map_get(j, "fsync_max_ms")), pcc_number(pcc_map_get(j, "bytes")));
}

int main(int argc, char **argv)
{
    const char *address = getenv("PERCEPTROND_ADDRESS") ? getenv("PERCEPTROND_ADDRESS")
                                                         : PCC_DEFAULT_ADDRESS;
    const char *rule = "perceptron";
    long labels = 1000000, predicts = 100000, window = 4096, sync_labels = 20000;
    unsigned busy_poll = 0;
    bool batch_only = false;
    long in_flight = 16;
    int opt;
    while ((opt = getopt(argc, argv, "a:n:p:s:w:d:r:b:Bf:S:H:NE:P:h")) != -1) {
        switch (opt) {
        case 'a': address = optarg; break;
        case 'n': labels = atol(optarg); break;
        case 'p': predicts = atol(optarg); break;
        case 's': sync_labels = atol(optarg); break;
        case 'w': window = atol(optarg); break;
        case 'd': nnz = atoi(optarg); break;
        case 'r': rule = optarg; break;
        case 'b': busy_poll = (unsigned)atoi(optarg); break;
        case 'B': batch_only = true; break;
        case 'f': in_flight = atol(optarg) > 0 ? atol(optarg) : 1; break;
        case 'S': storage = optarg; break;
        case 'H': hash_bits = (unsigned)atoi(optarg); break;
        case 'N': named = true; break;
        case 'E': explain = (unsigned)atoi(optarg); break;
        case 'P': daemon_pid = atol(optarg); break;
        default:
            fprintf(stderr, "usage: bench_daemon [-a ADDRESS] [-n LABELS] [-p PREDICTS] [-s SYNC_LABELS] [-w WINDOW] "
                            "[-d NNZ] [-r RULE] [-b US] [-B] [-f IN_FLIGHT] [-S STORAGE] [-H HASH_BITS] [-N] [-E K] [-P PID]\n");
            return 2;
        }
    }
    pcc_client *c = NULL;
    char err[256];
    if (bench_connect_env(address, &c, err, sizeof err) != 0)
        die("connect", err);
    call_simple(c, "drop", "bench", NULL);
    call_simple(c, "create", "bench", rule);
    printf("# perceptrond at %s, rule %s, nnz %d, 2^%u dims, %s storage\n", address, rule, nnz,
           hash_bits, storage ? storage : "the template's");

    /* The pool: each example's features and label, packed once. */
    enum { BATCH = 256 };
    pool pl;
    pool_make(&pl, labels < (1L << 20) ? (size_t)(labels > 0 ? labels : 1) : (size_t)1 << 20, true);

    msgpack_sbuffer request, notification;
    msgpack_sbuffer_init(&request);
    msgpack_sbuffer_init(&notification);
    pack_envelope(&request, true, "label", 3);
    pack_envelope(&notification, false, "label", 3);

    /* 1. pipelined label requests; msgids 0, 1, ... */
    long mistakes = 0;
    if (!batch_only) {
        double t = pipeline(c, &request, &pl, labels, window, 0, "label", count_mistake, &mistakes);
        printf("label requests (pipelined, window %ld): %ld in %.3f s = %.0f labels/s (%ld mistakes)\n",
               window, labels, t, (double)labels / t, mistakes);
    }

    /* 2. notifications, then a ping to know they were all processed */
    double t0 = bench_now();
    for (long i = 0; i < (batch_only ? 0 : labels); i++) {
        pcc_raw(c, notification.data, notification.size);
        pooled(c, &pl, (size_t)i);
        if (i % CHUNK == CHUNK - 1 && pcc_flush(c, err, sizeof err) != 0)
            die("send", err);
    }
    /* The end: an empty label_batch, a write, so that with the shared log
     * (answered once applied, in the log's order) it also waits for the
     * notifications to be applied, as a ping waits for them without it. */
    uint32_t id;
    msgpack_packer *epk = pcc_request(c, "label_batch", 2, &id);
    pack_model(epk);
    msgpack_pack_array(epk, 0);
    const msgpack_object *error, *result;
    if (pcc_call(c, id, &error, &result, err, sizeof err) != 0 || error)
        die("label_batch []", error ? "refused" : err);
    double t = bench_now() - t0;
    if (!batch_only)
        printf("label notifications: %ld in %.3f s = %.0f labels/s\n", labels, t, (double)labels / t);

    /* 3. label_batch requests of BATCH examples, up to IN_FLIGHT at a time */
    long batches = (labels + BATCH - 1) / BATCH, bsent = 0, bgot = 0, blabels = 0;
    uint32_t first = 0;
    t0 = bench_now();
    while (bgot < batches) {
        if (bsent < batches && bsent - bgot < in_flight) {
            msgpack_packer *pk = pcc_request(c, "label_batch", 2, &id);
            if (bsent == 0)
                first = id;
            pack_model(pk);
            msgpack_pack_array(pk, BATCH);
            for (long k = 0; k < BATCH; k++) {
                msgpack_pack_array(pk, 2);
                pooled(c, &pl, (size_t)(bsent * BATCH + k));
            }
            if (++bsent - bgot < in_flight && bsent < batches)
                continue;
            if (pcc_flush(c, err, sizeof err) != 0)
                die("send", err);
        }
        result = answer(c, "label_batch", first + (uint32_t)bgot++);
        blabels += (long)pcc_number(pcc_map_get(result, "examples"));
    }
    t = bench_now() - t0;
    printf("label_batch (%d examples a request, %ld in flight): %ld in %.3f s = %.0f labels/s\n",
           BATCH, in_flight, blabels, t, (double)blabels / t);
    pool_free(&pl);
    msgpack_sbuffer_destroy(&request);
    msgpack_sbuffer_destroy(&notification);

    /* 4. pipelined predicts; 5. synchronous predict latency; 6. synchronous
     * label latency (what a journal's fsync mode costs a client that waits
     * for each answer) */
    predict_throughput(c, predicts, window);
    pcc_set_busy_poll(c, busy_poll);
    latency(c, "predict", predicts, busy_poll);
    latency(c, "label", sync_labels, busy_poll);
    journal_stats(c);
    pcc_close(c);
    return 0;
}
