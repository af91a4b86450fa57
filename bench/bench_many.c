/* bench_many.c - many small models in one process: labels/s and resident
 * memory per storage (not a test).
 *
 *   bench_many [-m MODELS] [-e EXAMPLES] [-v VOCAB] [-d NNZ] [-b HASH_BITS] [-s STORAGE] [-r RULE]
 *
 * MODELS binary models (default 1000) of 2^HASH_BITS weights (default 20) in
 * STORAGE (dense, sparse or auto; default sparse).  Each receives EXAMPLES
 * examples (default 10,000) of NNZ features (default 32) drawn uniformly
 * from its own vocabulary of VOCAB names (default 5,000), value 1, labelled
 * by a hyperplane of its own with 10 % of the labels flipped (so updates go
 * on).  A name stands for a hashed feature name: the index is a 64-bit mix of
 * (model, name number) modulo the dimension, as XXH3 of a string would be.
 * The models are fed in rounds: one example each, in a new random order
 * every round, as interleaved customers would.  Only pc_model_label is
 * timed: a round's examples are drawn before its clock starts.  Prints
 * labels/s by the wall clock and per CPU second (the steadier figure on a
 * busy machine), the process's resident memory at the end (VmRSS) and its
 * peak (VmHWM), and the bytes pc_model_bytes reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "lib/perceptron.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { return bench_xorshift(&rng); }

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0)
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

int main(int argc, char **argv)
{
    long models = 1000, examples = 10000, vocab = 5000, bits = 20;
    int nnz = 32;
    const char *storage = "sparse", *rule = "perceptron";
    int opt;
    while ((opt = getopt(argc, argv, "m:e:v:d:b:s:r:")) != -1) {
        switch (opt) {
        case 'm': models = atol(optarg); break;
        case 'e': examples = atol(optarg); break;
        case 'v': vocab = atol(optarg); break;
        case 'd': nnz = atoi(optarg); break;
        case 'b': bits = atol(optarg); break;
        case 's': storage = optarg; break;
        case 'r': rule = optarg; break;
        default:
            fprintf(stderr, "usage: bench_many [-m MODELS] [-e EXAMPLES] [-v VOCAB] [-d NNZ] "
                            "[-b HASH_BITS] [-s dense|sparse|auto] [-r RULE]\n");
            return 2;
        }
    }
    pc_model_config c;
    pc_model_config_default(&c, 1u << bits);
    c.rule = pc_rule_find(rule);
    if (!c.rule || models < 1 || vocab < nnz) {
        fprintf(stderr, "bench_many: bad rule or sizes\n");
        return 2;
    }
    pc_params_default(c.rule, &c.params);
    c.storage = strcmp(storage, "dense") == 0    ? PC_STORAGE_DENSE
                : strcmp(storage, "auto") == 0   ? PC_STORAGE_AUTO
                                                 : PC_STORAGE_SPARSE;
    long rss0 = status_kb("VmRSS:");
    pc_model **m = calloc((size_t)models, sizeof *m);
    pc_svec *xs = calloc((size_t)models, sizeof *xs);
    pc_label *ys = calloc((size_t)models, sizeof *ys);
    long *order = calloc((size_t)models, sizeof *order);
    pc_error err;
    for (long i = 0; i < models; i++) {
        if (pc_model_new(&c, &m[i], &err) != PC_OK) {
            fprintf(stderr, "bench_many: model %ld: %s\n", i, err.msg);
            return 1;
        }
        pc_svec_init(&xs[i]);
        order[i] = i;
    }
    double busy = 0, busy_cpu = 0;
    uint64_t mistakes = 0;
    for (long r = 0; r < examples; r++) {
        for (long i = models - 1; i > 0; i--) { /* Fisher-Yates */
            long j = (long)(next() % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (long i = 0; i < models; i++) {
            pc_svec *x = &xs[i];
            pc_svec_clear(x);
            int s = 0;
            for (int k = 0; k < nnz; k++) {
                uint64_t w = next() % (uint64_t)vocab, h = bench_mix((uint64_t)i * 1000003u + w);
                pc_svec_push(x, (uint32_t)(h & (c.dim - 1)), 1);
                s += (h >> 40) & 1 ? 1 : -1; /* the model's own hyperplane */
            }
            pc_svec_normalize(x, c.dim, &err);
            ys[i].y = (s >= 0) != (next() % 10 == 0) ? 1 : -1;
        }
        double t0 = bench_now(), c0 = bench_cpu();
        for (long k = 0; k < models; k++) {
            long i = order[k];
            pc_outcome o;
            pc_model_label(m[i], &xs[i], &ys[i], &o, &err);
            mistakes += o.mistake;
        }
        busy += bench_now() - t0;
        busy_cpu += bench_cpu() - c0;
    }
    size_t bytes = 0;
    for (long i = 0; i < models; i++)
        bytes += pc_model_bytes(m[i]);
    long rss = status_kb("VmRSS:"), hwm = status_kb("VmHWM:");
    double n = (double)models * (double)examples;
    printf("many models: %ld %s models of 2^%ld, rule %s, %ld examples each (nnz %d, vocabulary "
           "%ld): %.0f labels/s (%.0f per CPU second), %.1f%% mistakes, RSS %.1f MB (peak %.1f MB, %.1f MB before the "
           "models), model bytes %.1f MB (%.0f per model)\n",
           models, storage, bits, rule, examples, nnz, vocab, n / busy, n / busy_cpu,
           100.0 * (double)mistakes / n, rss / 1024.0, hwm / 1024.0, rss0 / 1024.0,
           (double)bytes / 1048576.0, (double)bytes / (double)models);
    for (long i = 0; i < models; i++) {
        pc_model_free(m[i]);
        pc_svec_free(&xs[i]);
    }
    free(m);
    free(xs);
    free(ys);
    free(order);
    return 0;
}
