/* bench_daemon_many.c - many small models in a running perceptrond: labels/s
 * (not a test; bench/many.sh runs it against each storage and reads the
 * daemon's memory).
 *
 *   bench_daemon_many [-a ADDRESS] [-m MODELS] [-e EXAMPLES] [-v VOCAB] [-d NNZ] [-s STORAGE]
 *
 * Creates MODELS models "m0", "m1", ... (default 1000; perceptron, 2^20
 * dims, STORAGE dense, sparse or auto, or STORAGE+float32 for weights:
 * float32; an existing one is dropped first).
 * Each then receives EXAMPLES label requests (default 10,000) of NNZ string
 * features (default 32, value 1) drawn uniformly from its own vocabulary of
 * VOCAB names (default 5,000: "<model>.w<k>", hashed by the daemon), labelled
 * by a hyperplane of the model's own with 10 % of the labels flipped.  The
 * models are fed in rounds, one example each in a new random order every
 * round, pipelined on one connection (up to 4096 in flight, as bench_daemon).
 * Requests are packed (a group of rounds at a time) before the clock starts
 * for them, so the figure is
 * the daemon's (and this program's reading of the answers).  Prints labels/s
 * and the mistakes.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_client.h"
#include "clients/pcclient.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next(void) { return bench_xorshift(&rng); }

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_daemon_many: %s: %s\n", what, err);
    exit(1);
}

static void call(pcc_client *c, const char *method, const char *model, const char *storage)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, method, storage ? 2 : 1, &id);
    bench_str(pk, model);
    if (storage) {
        const char *plus = strchr(storage, '+'); /* "dense+float32": the weights' width */
        msgpack_pack_map(pk, plus ? 3 : 2);
        bench_str(pk, "hash_bits");
        msgpack_pack_uint8(pk, 20);
        bench_str(pk, "storage");
        msgpack_pack_str_with_body(pk, storage, plus ? (size_t)(plus - storage) : strlen(storage));
        if (plus) {
            bench_str(pk, "weights");
            bench_str(pk, plus + 1);
        }
    }
    const msgpack_object *error, *result;
    char err[256];
    if (pcc_call(c, id, &error, &result, err, sizeof err) != 0)
        die(method, err);
    if (error && storage) {
        pcc_error_message(error, err, sizeof err);
        die(method, err);
    }
}

int main(int argc, char **argv)
{
    const char *address = PCC_DEFAULT_ADDRESS, *storage = "sparse";
    long models = 1000, examples = 10000, vocab = 5000, window = 4096;
    int nnz = 32, opt;
    while ((opt = getopt(argc, argv, "a:m:e:v:d:s:")) != -1) {
        switch (opt) {
        case 'a': address = optarg; break;
        case 'm': models = atol(optarg); break;
        case 'e': examples = atol(optarg); break;
        case 'v': vocab = atol(optarg); break;
        case 'd': nnz = atoi(optarg); break;
        case 's': storage = optarg; break;
        default:
            fprintf(stderr, "usage: bench_daemon_many [-a ADDRESS] [-m MODELS] [-e EXAMPLES] "
                            "[-v VOCAB] [-d NNZ] [-s dense|sparse|auto]\n");
            return 2;
        }
    }
    pcc_client *c;
    char err[256];
    if (pcc_connect(address, &c, err, sizeof err) != 0)
        die("connect", err);
    char name[32];
    for (long i = 0; i < models; i++) {
        snprintf(name, sizeof name, "m%ld", i);
        call(c, "drop", name, NULL);
        call(c, "create", name, storage);
    }
    long *order = malloc((size_t)models * sizeof *order);
    size_t *at = malloc(((size_t)models + 1) * sizeof *at);
    for (long i = 0; i < models; i++)
        order[i] = i;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    double busy = 0;
    long mistakes = 0;
    uint32_t msgid = 0;
    /* Rounds are packed a group at a time (at least 4096 requests, so the
     * pipeline stays full across rounds), then sent and answered on the clock. */
    long per = (4096 + models - 1) / models;
    size_t cap = (size_t)(per * models);
    at = realloc(at, (cap + 1) * sizeof *at);
    for (long r0 = 0; r0 < examples; r0 += per) {
        long nr = examples - r0 < per ? examples - r0 : per, total = nr * models;
        msgpack_sbuffer_clear(&sb);
        for (long r = 0; r < nr; r++) {
            for (long i = models - 1; i > 0; i--) { /* Fisher-Yates */
                long j = (long)(next() % (uint64_t)(i + 1)), t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            for (long k = 0; k < models; k++) {
                long i = order[k];
                at[r * models + k] = sb.size;
                msgpack_pack_array(&pk, 4);
                msgpack_pack_uint8(&pk, 0);
                msgpack_pack_uint32(&pk, msgid + (uint32_t)(r * models + k));
                bench_str(&pk, "label");
                msgpack_pack_array(&pk, 3);
                snprintf(name, sizeof name, "m%ld", i);
                bench_str(&pk, name);
                msgpack_pack_map(&pk, (size_t)nnz);
                int s = 0;
                for (int f = 0; f < nnz; f++) {
                    char feat[48];
                    uint64_t w = next() % (uint64_t)vocab;
                    snprintf(feat, sizeof feat, "m%ld.w%llu", i, (unsigned long long)w);
                    bench_str(&pk, feat);
                    msgpack_pack_double(&pk, 1);
                    s += bench_mix((uint64_t)i * 1000003u + w) & 1 ? 1 : -1;
                }
                msgpack_pack_int(&pk, (s >= 0) != (next() % 10 == 0) ? 1 : -1);
            }
        }
        at[total] = sb.size;
        double t0 = bench_now();
        long sent = 0, got = 0;
        while (got < total) {
            if (sent < total && sent - got + 256 <= window) {
                long end = sent + 256 < total ? sent + 256 : total;
                pcc_raw(c, sb.data + at[sent], at[end] - at[sent]);
                sent = end;
                if (pcc_flush(c, err, sizeof err) != 0)
                    die("send", err);
                continue;
            }
            uint32_t id;
            const msgpack_object *error, *result;
            if (pcc_read(c, &id, &error, &result, 60000, err, sizeof err) != 0)
                die("read", err);
            if (error) {
                pcc_error_message(error, err, sizeof err);
                die("label", err);
            }
            if (id != msgid + (uint32_t)got)
                die("label", "answers out of order");
            const msgpack_object *m = pcc_map_get(result, "mistake");
            mistakes += m && m->type == MSGPACK_OBJECT_BOOLEAN && m->via.boolean;
            got++;
        }
        busy += bench_now() - t0;
        msgid += (uint32_t)total;
    }
    double n = (double)models * (double)examples;
    printf("daemon many models: %ld %s models of 2^20, %ld examples each (nnz %d, vocabulary %ld): "
           "%.0f labels/s, %.1f%% mistakes\n",
           models, storage, examples, nnz, vocab, n / busy, 100.0 * (double)mistakes / n);
    msgpack_sbuffer_destroy(&sb);
    free(order);
    free(at);
    pcc_close(c);
    return 0;
}
