/* bench_rules.c - examples/second per rule across dimensions (not a test).
 *
 * For every registered rule and dim in {2^10, 2^16, 2^20, 2^24}: a stream of
 * random examples with nnz = 32 (indices uniform over the dimension, values
 * in [-1,1], labels from a fixed random hyperplane with 10% noise so updates
 * keep happening), labelled once to warm up, then timed for about 0.4 s.  A rule whose cost does not grow
 * with the dimension shows a flat row; the figure may drop somewhat at 2^24
 * because the touched weights no longer fit in cache.
 *
 * Two tables.  "uniform": indices uniform over the whole dimension, as hashed
 * features are; at 2^20 and 2^24 the touched weights no longer fit in the
 * caches and TLB, so every rule slows down for the memory system's sake.
 * "fixed footprint": indices drawn from a band of 1024 weights at the top of
 * the dimension, so the memory touched is the same at every dimension and
 * only the dimension changes: a rule whose cost is O(nnz) shows a flat row
 * here; one that did O(dim) work per example would fall by 16,000x from 2^10
 * to 2^24.
 *
 * omm-naive is not in these tables (unless named): it re-solves a QP over
 * every kept point at each update, so its cost grows with the points it has
 * kept, not with the dimension, and on the noisy pool above a single cell
 * takes many minutes.  A third table shows that cost instead: the mean time
 * of an update as the kept points grow, on a noise-free stream in 2^16 dims.
 *
 * Storage: every model is dense unless --storage=sparse or --storage=auto is
 * given (anywhere after the seconds).  With uniform indices a sparse model
 * touches most of a small dimension (its table then outgrows the dense array;
 * auto turns dense), and at 2^20 and 2^24 it touches a few 10^5 weights: the
 * table's probes against the array's page and cache misses.
 *
 * Weights: float64 unless --weights=float32 (dense arrays of floats: half the
 * memory, and half the cache lines a dot product reads at 2^20 and 2^24).
 *
 * Calibration: every model learns its probability calibration (the default)
 * unless --no-calibrate is given: the cost of `calibrate: true` is the ratio
 * of the two runs (docs/operations.md).
 *
 * --dim=B (10, 16, 20 or 24) runs that column only (e.g. for perf record on one cell).
 *
 * Usage: bench_rules [seconds-per-cell] [--storage=dense|sparse|auto] [--weights=float64|float32]
 *                    [--no-calibrate] [--dim=B] [rule...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "lib/perceptron.h"

#define NNZ 32
#define POOL 4096

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { return bench_xorshift(&rng); }
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0; }

/* The process's CPU time (user + system), not the wall clock: on a machine
 * shared with other work the wall clock also counts the time others held the
 * CPU (on an idle one the two agree).  Memory stalls count: the core is busy. */
static double now(void) { return bench_cpu(); }

/* A random example of NNZ features with indices in the top `span` of dim,
 * values in [-1, 1]; returns its label under a fixed hyperplane (+-1 by
 * the parity of each index). */
static int random_example(pc_svec *x, uint32_t dim, uint32_t span)
{
    pc_error err;
    double s = 0;
    pc_svec_clear(x);
    for (int k = 0; k < NNZ; k++) {
        uint32_t idx = dim - span + (uint32_t)(next() % span);
        double v = unit() * 2 - 1;
        pc_svec_push(x, idx, v);
        s += (idx % 2 ? 1 : -1) * v;
    }
    pc_svec_normalize(x, dim, &err);
    return s >= 0 ? 1 : -1;
}

static pc_storage storage = PC_STORAGE_DENSE;
static pc_weights weights = PC_WEIGHTS_FLOAT64;
static bool calibrate = true;

static double run(const pc_rule *r, uint32_t dim, double seconds, uint32_t band)
{
    pc_model_config c;
    pc_model_config_default(&c, dim);
    c.storage = storage;
    c.weights = weights;
    c.calibrate = calibrate;
    c.rule = r;
    pc_params_default(r, &c.params);
    pc_model *m;
    pc_error err;
    if (pc_model_new(&c, &m, &err) != PC_OK) {
        fprintf(stderr, "%s: %s\n", pc_rule_name(r), err.msg);
        return -1;
    }
    /* A pool of examples reused cyclically, so generation is not measured. */
    static pc_svec xs[POOL];
    static pc_label ys[POOL];
    for (int i = 0; i < POOL; i++) {
        pc_svec_init(&xs[i]);
        int y = random_example(&xs[i], dim, band && band < dim ? band : dim);
        ys[i].y = unit() < 0.1 ? -y : y;
    }
    /* Warm-up pass: the first touch of each page of a large calloc'd vector
     * is a page fault (a one-off O(dim) cost of the OS, not of the rule). */
    for (int i = 0; i < POOL; i++) {
        pc_outcome o;
        pc_model_label(m, &xs[i], &ys[i], &o, &err);
    }
    uint64_t n = 0;
    double t0 = now(), t;
    do {
        for (int i = 0; i < 1024; i++, n++) {
            pc_outcome o;
            pc_model_label(m, &xs[n % POOL], &ys[n % POOL], &o, &err);
        }
        t = now() - t0;
    } while (t < seconds);
    for (int i = 0; i < POOL; i++)
        pc_svec_free(&xs[i]);
    pc_model_free(m);
    return (double)n / t;
}

/* omm-naive: mean milliseconds per update while the kept points grow from
 * one mark to the next (every update keeps its point). */
static void naive_table(void)
{
    const pc_rule *r = pc_rule_find("omm-naive");
    pc_model_config c;
    pc_model_config_default(&c, 1u << 16);
    c.rule = r;
    pc_params_default(r, &c.params);
    pc_model *m;
    pc_error err;
    if (!r || pc_model_new(&c, &m, &err) != PC_OK)
        return;
    static const uint64_t marks[] = {50, 100, 200, 400, 800};
    printf("# omm-naive: ms per update as the kept points grow (nnz = %d, 2^16 dims, no noise)\n",
           NNZ);
    printf("%-12s %12s %12s\n", "kept points", "updates", "ms/update");
    uint64_t kept = 0, mark = 0, prev = 0;
    double t0 = now();
    pc_svec x;
    pc_svec_init(&x);
    while (mark < sizeof marks / sizeof *marks) {
        pc_label y = {.y = random_example(&x, 1u << 16, 1u << 16)};
        pc_outcome o;
        pc_model_label(m, &x, &y, &o, &err);
        kept += o.updated;
        if (kept == marks[mark]) {
            double t = now();
            printf("%-12llu %12llu %12.3f\n", (unsigned long long)kept,
                   (unsigned long long)(kept - prev), (t - t0) * 1e3 / (double)(kept - prev));
            fflush(stdout);
            prev = kept, t0 = t, mark++;
        }
    }
    pc_svec_free(&x);
    pc_model_free(m);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.4;
    int nrules = 0; /* rule names among the arguments */
    int only_bits = 0; /* --dim=B: only 2^B */
    for (int a = 2; a < argc; a++) {
        if (strncmp(argv[a], "--dim=", 6) == 0) {
            only_bits = atoi(argv[a] + 6);
            if (only_bits != 10 && only_bits != 16 && only_bits != 20 && only_bits != 24) {
                fprintf(stderr, "bench_rules: %s: B is 10, 16, 20 or 24 (the table's columns)\n", argv[a]);
                return 2;
            }
            continue;
        }
        if (strcmp(argv[a], "--no-calibrate") == 0) {
            calibrate = false;
            continue;
        }
        bool is_storage = strncmp(argv[a], "--storage=", 10) == 0;
        if (!is_storage && strncmp(argv[a], "--weights=", 10) != 0) {
            nrules++;
            continue;
        }
        const char *const *names = is_storage ? pc_storage_names : pc_weights_names;
        int k = 0;
        while (names[k] && strcmp(argv[a] + 10, names[k]) != 0)
            k++;
        if (!names[k]) { /* else the table would say the default for what was not asked */
            fprintf(stderr, "bench_rules: %s: the %s\n", argv[a],
                    is_storage ? "storage is dense, sparse or auto" : "weights are float64 or float32");
            return 2;
        }
        if (is_storage)
            storage = (pc_storage)k;
        else
            weights = (pc_weights)k;
    }
    static const uint32_t dims[] = {1u << 10, 1u << 16, 1u << 20, 1u << 24};
    for (int table = 0; table < 2; table++) {
        uint32_t band = table ? 1024 : 0;
        printf("# examples per CPU second, %s storage, %s weights, calibrate %s, nnz = %d, %.2f s per cell, %s\n",
               pc_storage_names[storage], pc_weights_names[weights], calibrate ? "true" : "false", NNZ, seconds,
               table ? "fixed footprint (indices in the top 1024 weights)"
                     : "uniform indices over the whole dimension");
        printf("%-12s %12s %12s %12s %12s\n", "rule", "2^10", "2^16", "2^20", "2^24");
        for (const pc_rule *const *r = pc_rules(); *r; r++) {
            bool want = nrules == 0 && strcmp(pc_rule_name(*r), "omm-naive") != 0;
            for (int a = 2; a < argc; a++)
                want |= strcmp(argv[a], pc_rule_name(*r)) == 0;
            if (!want)
                continue;
            printf("%-12s", pc_rule_name(*r));
            fflush(stdout);
            for (size_t d = 0; d < sizeof dims / sizeof *dims; d++) {
                if (only_bits && dims[d] != 1u << only_bits) {
                    printf(" %12s", "-");
                    continue;
                }
                printf(" %12.0f", run(*r, dims[d], seconds, band));
                fflush(stdout);
            }
            printf("\n");
        }
        printf("\n");
    }
    if (nrules == 0)
        naive_table();
    return 0;
}
