/* bench_join.c - label later against a running perceptrond (not a test).
 *
 *   bench_join [-a ADDRESS] [-n EXAMPLES] [-r ROUNDS] [-m EVENTS] [-P DAEMON_PID]
 *
 * 1. Throughput, A B A B: A is EXAMPLES `label` requests pipelined on one
 *    connection (window 4096, 256 a flush); B is EXAMPLES pairs of `predict`
 *    with {"event": id} and `label_event` of that id, the same examples,
 *    pipelined the same way (each flush: 128 predicts, then their 128
 *    label_events).  The requests are packed before the clock starts.  Prints
 *    each round, then the medians: labels/s, pairs/s and their ratio; with
 *    -P also the daemon's CPU time per label and per pair (from /proc), the
 *    steadier figure on a loaded machine.
 * 2. Bit identity: model A learned every example by `label`, model B the
 *    same examples in the same order by joins: their digests must be equal.
 * 3. Memory per pending event at nnz 32: EVENTS predicts with an event that
 *    is never labelled, into a third model; the daemon's RSS before and
 *    after (from /proc/DAEMON_PID/status, when -P is given), and the
 *    model's join.pending_bytes, each divided by EVENTS.
 * Examples: 32 features {index: value}, indices < 2^20, values uniform doubles
 * in [-1, 1) (full 53-bit mantissas: nothing the join could round), labels
 * from a fixed hyperplane.  The models are perceptrons of 2^20 dims.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_client.h"
#include "clients/pcclient.h"

enum { NNZ = 32, CHUNK = 256, WINDOW = 4096 };

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { return bench_xorshift(&rng); }

typedef struct example {
    uint32_t idx[NNZ];
    double val[NNZ];
    int y;
} example;

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_join: %s: %s\n", what, err);
    exit(1);
}

static void pack_features(msgpack_packer *pk, const example *e)
{
    msgpack_pack_map(pk, NNZ);
    for (int k = 0; k < NNZ; k++) {
        msgpack_pack_uint32(pk, e->idx[k]);
        msgpack_pack_double(pk, e->val[k]);
    }
}

/* One request [0, msgid, method, [model, ...]] into sb; at[] marks where each starts. */
static void pack_label(msgpack_packer *pk, uint32_t id, const char *model, const example *e)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, 0);
    msgpack_pack_uint32(pk, id);
    bench_str(pk, "label");
    msgpack_pack_array(pk, 3);
    bench_str(pk, model);
    pack_features(pk, e);
    msgpack_pack_int(pk, e->y);
}

static void pack_predict_event(msgpack_packer *pk, uint32_t id, const char *model,
                               const example *e, uint64_t ev)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, 0);
    msgpack_pack_uint32(pk, id);
    bench_str(pk, "predict");
    msgpack_pack_array(pk, 3);
    bench_str(pk, model);
    pack_features(pk, e);
    msgpack_pack_map(pk, 1);
    bench_str(pk, "event");
    msgpack_pack_uint64(pk, ev);
}

static void pack_label_event(msgpack_packer *pk, uint32_t id, const char *model, uint64_t ev,
                             int y)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, 0);
    msgpack_pack_uint32(pk, id);
    bench_str(pk, "label_event");
    msgpack_pack_array(pk, 3);
    bench_str(pk, model);
    msgpack_pack_uint64(pk, ev);
    msgpack_pack_int(pk, y);
}

/* Sends the n requests of sb (request k spans at[k]..at[k+1]) CHUNK a flush,
 * at most WINDOW unanswered, reading every answer (which must be a success
 * for msgid k, in order).  Returns the seconds it took. */
static double run(pcc_client *c, const msgpack_sbuffer *sb, const size_t *at, size_t n)
{
    char err[256];
    size_t sent = 0, got = 0;
    double t0 = bench_now();
    while (got < n) {
        if (sent < n && sent - got + CHUNK <= WINDOW) {
            size_t k = sent + CHUNK < n ? sent + CHUNK : n;
            pcc_raw(c, sb->data + at[sent], at[k] - at[sent]);
            sent = k;
            if (pcc_flush(c, err, sizeof err) != 0)
                die("send", err);
            continue;
        }
        uint32_t id;
        const msgpack_object *error, *result;
        if (pcc_read(c, &id, &error, &result, 30000, err, sizeof err) != 0)
            die("read", err);
        if (error) {
            pcc_error_message(error, err, sizeof err);
            die("answer", err);
        }
        if (id != (uint32_t)got)
            die("answer", "out of order");
        got++;
    }
    return bench_now() - t0;
}

static void create(pcc_client *c, const char *name)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "drop", 1, &id);
    bench_str(pk, name);
    const msgpack_object *error, *result;
    char err[256];
    pcc_call(c, id, &error, &result, err, sizeof err); /* unknown is fine */
    pk = pcc_request(c, "create", 2, &id);
    bench_str(pk, name);
    msgpack_pack_map(pk, 4);
    bench_str(pk, "rule");
    bench_str(pk, "perceptron");
    bench_str(pk, "hash_bits");
    msgpack_pack_uint8(pk, 20);
    bench_str(pk, "join.max_pending");
    msgpack_pack_uint32(pk, 100000000);
    bench_str(pk, "join.max_bytes");
    msgpack_pack_uint64(pk, (uint64_t)1 << 40);
    bench_call_or_die(c, id, die);
}

static const msgpack_object *info(pcc_client *c, const char *name)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "info", 1, &id);
    bench_str(pk, name);
    return bench_call_or_die(c, id, die);
}

static long rss_kb(long pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *address = getenv("PERCEPTROND_ADDRESS") ? getenv("PERCEPTROND_ADDRESS")
                                                         : PCC_DEFAULT_ADDRESS;
    long n = 100000, rounds = 5, events = 200000, pid = 0;
    int opt;
    while ((opt = getopt(argc, argv, "a:n:r:m:P:")) != -1) {
        switch (opt) {
        case 'a': address = optarg; break;
        case 'n': n = atol(optarg); break;
        case 'r': rounds = atol(optarg); break;
        case 'm': events = atol(optarg); break;
        case 'P': pid = atol(optarg); break;
        default:
            fprintf(stderr, "usage: bench_join [-a ADDRESS] [-n EXAMPLES] [-r ROUNDS] [-m EVENTS] "
                            "[-P DAEMON_PID]\n");
            return 2;
        }
    }
    if (n < 1 || rounds < 1 || rounds > 99 || events < 1)
        die("usage", "EXAMPLES, EVENTS >= 1, ROUNDS in [1, 99]");
    pcc_client *c;
    char err[256];
    if (pcc_connect(address, &c, err, sizeof err) != 0)
        die("connect", err);
    create(c, "bj_label");
    create(c, "bj_join");
    create(c, "bj_mem");
    printf("# perceptrond at %s: perceptron, 2^20 dims, nnz %d, %ld examples a round\n", address,
           NNZ, n);

    example *ex = malloc((size_t)n * sizeof *ex);
    for (long i = 0; i < n; i++) {
        double s = 0;
        for (int k = 0; k < NNZ; k++) {
            ex[i].idx[k] = (uint32_t)(next() & ((1u << 20) - 1));
            ex[i].val[k] = (double)(next() >> 11) / 9007199254740992.0 * 2 - 1;
            s += ex[i].idx[k] & 1 ? ex[i].val[k] : -ex[i].val[k];
        }
        ex[i].y = s >= 0 ? 1 : -1;
    }
    /* A: the labels, packed once (the same bytes every round) */
    msgpack_sbuffer la;
    msgpack_sbuffer_init(&la);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &la, msgpack_sbuffer_write);
    size_t *at_a = malloc(((size_t)n + 1) * sizeof *at_a);
    for (long i = 0; i < n; i++) {
        at_a[i] = la.size;
        pack_label(&pk, (uint32_t)i, "bj_label", &ex[i]);
    }
    at_a[n] = la.size;
    size_t *at_b = malloc((2 * (size_t)n + 1) * sizeof *at_b);
    msgpack_sbuffer lb;
    msgpack_sbuffer_init(&lb);

    double ra[99], rb[99], ca[99], cb[99];
    for (long r = 0; r < rounds; r++) {
        double c0 = pid ? bench_cpu_of(pid) : 0;
        ra[r] = (double)n / run(c, &la, at_a, (size_t)n);
        double c1 = pid ? bench_cpu_of(pid) : 0;
        ca[r] = (c1 - c0) / (double)n * 1e6;
        /* B: fresh event IDs every round, packed before the clock starts */
        lb.size = 0;
        msgpack_packer_init(&pk, &lb, msgpack_sbuffer_write);
        size_t k = 0;
        for (long i = 0; i < n; i += CHUNK / 2) {
            long end = i + CHUNK / 2 < n ? i + CHUNK / 2 : n;
            for (long j = i; j < end; j++, k++) {
                at_b[k] = lb.size;
                pack_predict_event(&pk, (uint32_t)k, "bj_join", &ex[j], (uint64_t)(r * n + j));
            }
            for (long j = i; j < end; j++, k++) {
                at_b[k] = lb.size;
                pack_label_event(&pk, (uint32_t)k, "bj_join", (uint64_t)(r * n + j), ex[j].y);
            }
        }
        at_b[k] = lb.size;
        c0 = pid ? bench_cpu_of(pid) : 0;
        rb[r] = (double)n / run(c, &lb, at_b, k);
        c1 = pid ? bench_cpu_of(pid) : 0;
        cb[r] = (c1 - c0) / (double)n * 1e6;
        printf("round %ld: label %.0f labels/s   predict+label_event %.0f pairs/s   (%.0f%%)",
               r + 1, ra[r], rb[r], 100 * rb[r] / ra[r]);
        if (pid)
            printf("   daemon CPU %.2f us/label, %.2f us/pair", ca[r], cb[r]);
        printf("\n");
        fflush(stdout);
    }
    qsort(ra, (size_t)rounds, sizeof *ra, cmp);
    qsort(rb, (size_t)rounds, sizeof *rb, cmp);
    double ma = ra[rounds / 2], mb = rb[rounds / 2];
    printf("medians of %ld: label %.0f labels/s, predict+label_event %.0f pairs/s: %.0f%% of "
           "plain label\n", rounds, ma, mb, 100 * mb / ma);
    if (pid) {
        qsort(ca, (size_t)rounds, sizeof *ca, cmp);
        qsort(cb, (size_t)rounds, sizeof *cb, cmp);
        printf("daemon CPU, medians: %.2f us/label, %.2f us/pair: a pair costs %.0f%% of a "
               "label's throughput\n", ca[rounds / 2], cb[rounds / 2],
               100 * ca[rounds / 2] / cb[rounds / 2]);
    }

    char da[24] = "", db[24] = "";
    const msgpack_object *d = pcc_map_get(info(c, "bj_label"), "digest");
    snprintf(da, sizeof da, "%.*s", (int)d->via.str.size, d->via.str.ptr);
    d = pcc_map_get(info(c, "bj_join"), "digest");
    snprintf(db, sizeof db, "%.*s", (int)d->via.str.size, d->via.str.ptr);
    printf("model fed by label %s, model fed by joins %s: %s\n", da, db,
           strcmp(da, db) ? "DIFFERENT" : "bit-identical");

    /* 3. memory per pending event */
    long before = pid ? rss_kb(pid) : -1;
    msgpack_sbuffer lm;
    msgpack_sbuffer_init(&lm);
    msgpack_packer_init(&pk, &lm, msgpack_sbuffer_write);
    size_t *at_m = malloc(((size_t)events + 1) * sizeof *at_m);
    for (long i = 0; i < events; i++) {
        at_m[i] = lm.size;
        pack_predict_event(&pk, (uint32_t)i, "bj_mem", &ex[i % n], (uint64_t)i);
    }
    at_m[events] = lm.size;
    run(c, &lm, at_m, (size_t)events);
    long after = pid ? rss_kb(pid) : -1;
    const msgpack_object *j = pcc_map_get(info(c, "bj_mem"), "join");
    double pending = pcc_number(pcc_map_get(j, "pending"));
    double bytes = pcc_number(pcc_map_get(j, "pending_bytes"));
    printf("%.0f pending events at nnz %d: join.pending_bytes %.1f bytes/event", pending, NNZ,
           bytes / pending);
    if (pid)
        printf(", daemon RSS +%.1f MB = %.1f bytes/event", (double)(after - before) / 1024,
               (double)(after - before) * 1024 / pending);
    printf("\n");
    free(ex);
    free(at_a);
    free(at_b);
    free(at_m);
    msgpack_sbuffer_destroy(&la);
    msgpack_sbuffer_destroy(&lb);
    msgpack_sbuffer_destroy(&lm);
    pcc_close(c);
    return 0;
}
