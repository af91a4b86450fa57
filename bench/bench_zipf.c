/* bench_zipf.c - issue 30's goals for models at rest (limits.resident_max,
 * daemon/core/rest.c): many small models in bounded memory, and a Zipf
 * stream of labels over them (not a test; docs/operations.md, "Models at
 * rest").
 *
 *   bench_zipf PERCEPTROND [DIR] [MODELS] [LABELS] [RESIDENT_MAX] [MAX_MEMORY] [SEQ_LABELS] [FSYNC]
 *
 * Starts PERCEPTROND with limits.resident_max: RESIDENT_MAX (default 1000;
 * 0: every model resident), limits.max_memory: MAX_MEMORY (default 512MiB,
 * as the config writes sizes) and journal fsync FSYNC (default `always`;
 * `everysec` is the config's default) in a fresh directory under DIR
 * (default /var/tmp, a disk), then:
 *  1. creates MODELS (default 10,000) models (perceptron, sparse storage,
 *     dim 2^20, the rest the default template's) and teaches each 20
 *     examples of 32 named features "f<k>" (k < 1024, values in [0, 1),
 *     the label the sign of a per-model hyperplane): `create` and one
 *     `label_batch` per model, 64 models pipelined; prints the rate every
 *     10,000 models (every MODELS/10 below 100,000) with the state
 *     directory's file count, to show how the rate follows the models;
 *  2. a Zipf (s = 1.1) stream over the models (rank r has weight
 *     1/(r+1)^1.1; ranks are a fixed random permutation of the models):
 *     a. SEQ_LABELS (default LABELS/5) labels one at a time, each followed
 *        by `stats`: a label during which `rest.loads` grew hit a resting
 *        model (`stats` costs O(models): keep SEQ_LABELS small for many).  Latency p50/p99/p99.9 of all labels, of those to resident
 *        and to resting models;
 *     b. the next LABELS (default 100,000) labels of the stream, 64 in
 *        flight: labels/s;
 *     c. 2,000 (at most SEQ_LABELS) predicts of uniformly drawn models one
 *        at a time, each followed by `stats`: the latency of a predict to a resting model;
 *  3. predicts every model (64 in flight: every model still answers), checks
 *     `info` examples of 200 models against the labels sent, and prints the
 *     daemon's RSS (VmRSS, VmHWM) against max_memory, the state directory's
 *     files and bytes, and `stats` rest.
 * Every draw comes from fixed seeds: two runs with the same MODELS and
 * LABELS send the same requests whatever RESIDENT_MAX and MAX_MEMORY are.
 * The daemon is stopped and its directory removed at the end.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_client.h"
#include "clients/pcclient.h"

enum { EXAMPLES = 20, FEATURES = 32, NAMES = 1024, WINDOW = 64, PREDICTS = 2000, CHECKS = 200 };

static char dir[256], sock[300];
static pid_t daemon_pid;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_zipf: %s: %s\n", what, err);
    if (daemon_pid)
        kill(daemon_pid, SIGTERM);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("malloc", "out of memory");
    return p;
}

static double uniform(void)
{
    return (double)(bench_xorshift(&rng) >> 11) * 0x1.0p-53;
}

static void model_name(char *buf, size_t len, uint32_t m)
{
    snprintf(buf, len, "m%06u", m);
}

/* Packs one example of model m (FEATURES named features) and returns its
 * label: the sign of the model's own hyperplane (+-1 per name). */
static int pack_example(msgpack_packer *pk, uint32_t m)
{
    double score = 0;
    msgpack_pack_map(pk, FEATURES);
    for (int i = 0; i < FEATURES; i++) {
        /* FEATURES distinct names: a stride through the NAMES from a random start */
        uint32_t k = (uint32_t)((bench_xorshift(&rng) % NAMES + (uint64_t)i * 31) % NAMES);
        double v = uniform();
        char name[16];
        snprintf(name, sizeof name, "f%u", k);
        bench_str(pk, name);
        msgpack_pack_double(pk, v);
        score += (bench_mix(((uint64_t)m << 20) ^ k) & 1 ? v : -v);
    }
    return score >= 0 ? 1 : -1;
}

/* A label (its example's label packed after it) or a predict of model m. */
static uint32_t send_example(pcc_client *c, uint32_t m, bool label)
{
    char name[16];
    uint32_t id;
    model_name(name, sizeof name, m);
    msgpack_packer *pk = pcc_request(c, label ? "label" : "predict", label ? 3 : 2, &id);
    bench_str(pk, name);
    int y = pack_example(pk, m);
    if (label)
        msgpack_pack_int(pk, y);
    return id;
}

static uint32_t send_label(pcc_client *c, uint32_t m)
{
    return send_example(c, m, true);
}

static uint32_t send_predict(pcc_client *c, uint32_t m)
{
    return send_example(c, m, false);
}

/* Reads the answers to ids [first, first + n) in order; dies on an error. */
static void read_answers(pcc_client *c, uint32_t n)
{
    char err[256];
    if (pcc_flush(c, err, sizeof err) != 0)
        die("flush", err);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t msgid;
        const msgpack_object *error, *result;
        if (pcc_read(c, &msgid, &error, &result, -1, err, sizeof err) != 0)
            die("read", err);
        if (error) {
            pcc_error_message(error, err, sizeof err);
            die("answer", err);
        }
    }
}

static const msgpack_object *stats(pcc_client *c)
{
    uint32_t id;
    pcc_request(c, "stats", 0, &id);
    return bench_call_or_die(c, id, die);
}

static double stat_of(pcc_client *c, const char *section, const char *key)
{
    return pcc_number(pcc_map_get(pcc_map_get(stats(c), section), key));
}

/* kB of a /proc/PID/status line ("VmRSS", "VmHWM"), in bytes. */
static double proc_status(const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)daemon_pid);
    FILE *f = fopen(path, "r");
    double v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            v = atof(line + n + 1) * 1024;
    if (f)
        fclose(f);
    return v;
}

/* Files, bytes (st_size) and allocated bytes (st_blocks) under path; the
 * snapshot files' count and bytes (*.snap) in snaps[0], snaps[1]. */
static long long snaps[2];
static void disk_use(const char *path, long long *files, long long *bytes, long long *alloc)
{
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char f[1024];
        struct stat st;
        snprintf(f, sizeof f, "%s/%s", path, de->d_name);
        if (lstat(f, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            disk_use(f, files, bytes, alloc);
            continue;
        }
        ++*files;
        *bytes += st.st_size;
        *alloc += (long long)st.st_blocks * 512;
        size_t n = strlen(de->d_name);
        if (n > 5 && !strcmp(de->d_name + n - 5, ".snap")) {
            snaps[0]++;
            snaps[1] += st.st_size;
        }
    }
    if (d)
        closedir(d);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "n p50/p99/p99.9 ms (max)" of t[0..n), sorted in place. */
static void print_latency(const char *what, double *t, size_t n)
{
    if (!n) {
        printf("  %-34s n 0\n", what);
        return;
    }
    qsort(t, n, sizeof *t, by_value);
    printf("  %-34s n %7zu  p50 %8.3f  p99 %8.3f  p99.9 %8.3f  max %8.3f ms\n", what, n,
           t[n / 2], t[(size_t)((double)n * 0.99)], t[(size_t)((double)n * 0.999)], t[n - 1]);
}

/* Sequential requests (labels, or predicts) of the models ms[0..n), each
 * followed by `stats`: the request loaded its model back from rest when
 * `rest.loads` grew (`stats` costs O(models) in the daemon, and `info`
 * O(dim): neither is timed).  Latencies of all, and split by whether the
 * request loaded a resting model. */
static void sequential(pcc_client *c, const uint32_t *ms, size_t n, bool label, uint64_t *sent)
{
    double *all = xmalloc(n * sizeof *all), *hot = xmalloc(n * sizeof *hot),
           *cold = xmalloc(n * sizeof *cold), busy = 0;
    size_t nh = 0, nc = 0;
    const msgpack_object *r = pcc_map_get(stats(c), "rest");
    double l0 = pcc_number(pcc_map_get(r, "loads")), ls0 = pcc_number(pcc_map_get(r, "load_seconds"));
    double cpu0 = bench_cpu_of(daemon_pid), w0 = bench_now(), before = l0;
    for (size_t i = 0; i < n; i++) {
        double t0 = bench_now();
        uint32_t id = label ? send_label(c, ms[i]) : send_predict(c, ms[i]);
        bench_call_or_die(c, id, die);
        double t = (bench_now() - t0) * 1e3;
        busy += t;
        if (label)
            sent[ms[i]]++;
        double now = stat_of(c, "rest", "loads");
        all[i] = t;
        if (now > before)
            cold[nc++] = t;
        else
            hot[nh++] = t;
        before = now;
    }
    double wall = bench_now() - w0, cpu = bench_cpu_of(daemon_pid) - cpu0;
    r = pcc_map_get(stats(c), "rest");
    double loads = pcc_number(pcc_map_get(r, "loads")) - l0;
    double ls = pcc_number(pcc_map_get(r, "load_seconds")) - ls0;
    const char *what = label ? "labels" : "predicts";
    printf("  %zu %s in %.1f s (with a stats after each): %.0f %s/s of request time; "
           "loads %.0f (%.1f %%), daemon mean load %.3f ms; daemon CPU %.1f s\n",
           n, what, wall, busy > 0 ? (double)n / busy * 1e3 : 0, what, loads,
           loads / (double)n * 100, loads > 0 ? ls / loads * 1e3 : 0, cpu);
    print_latency("all", all, n);
    print_latency("to a resident model", hot, nh);
    print_latency("to a resting model (loaded)", cold, nc);
    free(all);
    free(hot);
    free(cold);
}

static void print_scalars(const char *title, const msgpack_object *map)
{
    printf("  %s:", title);
    if (map && map->type == MSGPACK_OBJECT_MAP)
        for (uint32_t i = 0; i < map->via.map.size; i++) {
            const msgpack_object_kv *kv = &map->via.map.ptr[i];
            double v = pcc_number(&kv->val);
            if (kv->key.type != MSGPACK_OBJECT_STR || isnan(v))
                continue;
            printf(" %.*s %.6g", (int)kv->key.via.str.size, kv->key.via.str.ptr, v);
        }
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_zipf PERCEPTROND [DIR] [MODELS] [LABELS] [RESIDENT_MAX] "
                        "[MAX_MEMORY] [SEQ_LABELS]\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s/pcd_bench_zipf_XXXXXX", argc > 2 ? argv[2] : "/var/tmp");
    uint32_t nmodels = argc > 3 ? (uint32_t)atol(argv[3]) : 10000;
    size_t nlabels = argc > 4 ? (size_t)atol(argv[4]) : 100000;
    long resident_max = argc > 5 ? atol(argv[5]) : 1000;
    const char *max_memory = argc > 6 ? argv[6] : "512MiB";
    size_t nseq = argc > 7 ? (size_t)atol(argv[7]) : nlabels / 5;
    const char *fsync_mode = argc > 8 ? argv[8] : "always";
    if (nmodels < 1 || nlabels < 1)
        die("usage", "MODELS and LABELS must be positive");
    if (!mkdtemp(dir))
        die("mkdtemp", dir);
    snprintf(sock, sizeof sock, "%s/pcd.sock", dir);
    char config[400], log[400], state[400];
    snprintf(config, sizeof config, "%s/perceptrond.yaml", dir);
    snprintf(log, sizeof log, "%s/daemon.log", dir);
    snprintf(state, sizeof state, "%s/state", dir);
    FILE *f = fopen(config, "w");
    if (!f)
        die("config", config);
    fprintf(f, "listen: {unix: [\"%s\"], tcp: []}\nstate_dir: %s\nlog_level: warning\n"
               "limits: {resident_max: %ld, max_memory: %s, max_models: %u, "
               "max_message_bytes: 16MiB}\n"
               "journal: {fsync: %s}\n", sock, state, resident_max, max_memory,
            nmodels + 16, fsync_mode);
    fclose(f);
    char err[256];
    pcc_client *c = bench_daemon_start(argv[1], config, log, sock, &daemon_pid, err, sizeof err);
    if (!c)
        die("connect", err);
    printf("bench_zipf: %u models, %zu + %zu labels, resident_max %ld, max_memory %s, "
           "journal fsync %s, state dir %s, daemon pid %ld\n", nmodels, nseq, nlabels,
           resident_max, max_memory, fsync_mode, state, (long)daemon_pid);
    uint64_t *sent = calloc(nmodels, sizeof *sent);
    if (!sent)
        die("calloc", "out of memory");

    /* 1. create and teach */
    uint32_t step = nmodels >= 100000 ? 10000 : (nmodels >= 10 ? nmodels / 10 : 1);
    printf("phase 1: create + label_batch of %d examples x %d named features, %d models in "
           "flight\n", EXAMPLES, FEATURES, WINDOW);
    printf("  %8s %10s %10s %10s %12s %10s %10s %9s\n", "models", "models/s", "examples/s",
           "total s", "daemon cpu s", "evictions", "state files", "rss MiB");
    double t1 = bench_now(), tstep = t1, cpu_step = bench_cpu_of(daemon_pid), paused = 0;
    for (uint32_t m = 0; m < nmodels;) {
        uint32_t n = nmodels - m < WINDOW ? nmodels - m : WINDOW;
        if (m / step != (m + n) / step && (m + n) % step)
            n = step - m % step; /* end a window on each step */
        for (uint32_t j = 0; j < n; j++) {
            char name[16];
            uint32_t id;
            model_name(name, sizeof name, m + j);
            msgpack_packer *pk = pcc_request(c, "create", 2, &id);
            bench_str(pk, name);
            msgpack_pack_map(pk, 3);
            bench_str(pk, "rule");
            bench_str(pk, "perceptron");
            bench_str(pk, "dim");
            msgpack_pack_uint32(pk, 1u << 20);
            bench_str(pk, "storage");
            bench_str(pk, "sparse");
            pk = pcc_request(c, "label_batch", 2, &id);
            bench_str(pk, name);
            msgpack_pack_array(pk, EXAMPLES);
            for (int e = 0; e < EXAMPLES; e++) {
                msgpack_pack_array(pk, 2);
                msgpack_pack_int(pk, pack_example(pk, m + j));
            }
            sent[m + j] += EXAMPLES;
        }
        read_answers(c, 2 * n);
        m += n;
        if (m % step == 0 || m == nmodels) {
            double now = bench_now(), cpu = bench_cpu_of(daemon_pid);
            uint32_t k = m % step ? m % step : step;
            double p0 = bench_now();
            long long files = 0, bytes = 0, alloc = 0;
            disk_use(state, &files, &bytes, &alloc);
            printf("  %8u %10.0f %10.0f %10.1f %12.1f %10.0f %10lld %9.0f\n", m,
                   k / (now - tstep), k * EXAMPLES / (now - tstep), now - t1 - paused,
                   cpu - cpu_step, stat_of(c, "rest", "evictions"), files,
                   proc_status("VmRSS") / 1048576);
            fflush(stdout);
            paused += bench_now() - p0;
            tstep = bench_now();
            cpu_step = bench_cpu_of(daemon_pid);
        }
    }
    double secs = bench_now() - t1 - paused;
    printf("  %u models in %.1f s: %.0f models/s, %.0f examples/s; loads so far %.0f\n",
           nmodels, secs, nmodels / secs, nmodels * (double)EXAMPLES / secs,
           stat_of(c, "rest", "loads"));


    /* 2. the Zipf stream */
    double *cdf = xmalloc(nmodels * sizeof *cdf), sum = 0;
    for (uint32_t r = 0; r < nmodels; r++)
        cdf[r] = sum += pow((double)r + 1, -1.1);
    uint32_t *model_of = xmalloc(nmodels * sizeof *model_of); /* rank -> model */
    uint64_t perm = 0x2545f4914f6cdd1dull;
    for (uint32_t r = 0; r < nmodels; r++)
        model_of[r] = r;
    for (uint32_t r = nmodels - 1; r > 0; r--) {
        uint32_t j = (uint32_t)(bench_xorshift(&perm) % (r + 1)), t = model_of[r];
        model_of[r] = model_of[j];
        model_of[j] = t;
    }
    uint64_t zrng = 0x1234567887654321ull;
    size_t ntotal = nseq + nlabels;
    uint32_t *stream = xmalloc(ntotal * sizeof *stream);
    uint32_t *seen = calloc(nmodels, sizeof *seen), distinct = 0;
    if (!seen)
        die("calloc", "out of memory");
    for (size_t i = 0; i < ntotal; i++) {
        double u = (double)(bench_xorshift(&zrng) >> 11) * 0x1.0p-53 * sum;
        uint32_t lo = 0, hi = nmodels - 1;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        stream[i] = model_of[lo];
        distinct += !seen[stream[i]]++;
    }
    printf("phase 2: Zipf s = 1.1 over %u models: %zu labels touch %u distinct models; the "
           "top 1 %% of ranks draws %.1f %%\n", nmodels, ntotal, distinct,
           cdf[nmodels / 100 ? nmodels / 100 - 1 : 0] / sum * 100);
    printf(" a. sequential labels\n");
    sequential(c, stream, nseq, true, sent);

    printf(" b. pipelined labels, %d in flight\n", WINDOW);
    double loads0 = stat_of(c, "rest", "loads"), ev0 = stat_of(c, "rest", "evictions");
    double ls0 = stat_of(c, "rest", "load_seconds"), es0 = stat_of(c, "rest", "evict_seconds");
    double cpu0 = bench_cpu_of(daemon_pid), t2 = bench_now();
    for (size_t i = nseq; i < ntotal;) {
        size_t n = ntotal - i < WINDOW ? ntotal - i : WINDOW;
        for (size_t j = 0; j < n; j++) {
            send_label(c, stream[i + j]);
            sent[stream[i + j]]++;
        }
        read_answers(c, (uint32_t)n);
        i += n;
    }
    secs = bench_now() - t2;
    double loads = stat_of(c, "rest", "loads") - loads0, ev = stat_of(c, "rest", "evictions") - ev0;
    printf("  %zu labels in %.2f s: %.0f labels/s; loads %.0f (%.1f %% of labels, daemon mean "
           "%.3f ms), evictions %.0f (daemon mean %.3f ms); daemon CPU %.1f s\n", nlabels, secs,
           (double)nlabels / secs, loads, loads / (double)nlabels * 100,
           loads ? (stat_of(c, "rest", "load_seconds") - ls0) / loads * 1e3 : 0, ev,
           ev ? (stat_of(c, "rest", "evict_seconds") - es0) / ev * 1e3 : 0,
           bench_cpu_of(daemon_pid) - cpu0);

    printf(" c. sequential predicts of uniformly drawn models\n");
    size_t npredicts = nseq < PREDICTS ? nseq : PREDICTS;
    uint32_t *uni = xmalloc((npredicts ? npredicts : 1) * sizeof *uni);
    for (size_t i = 0; i < npredicts; i++)
        uni[i] = (uint32_t)(bench_xorshift(&zrng) % nmodels);
    sequential(c, uni, npredicts, false, sent);

    /* 3. every model answers; what the daemon holds */
    printf("phase 3: what it holds\n");
    printf("  before the predict of every model: daemon RSS %.1f MiB (peak %.1f MiB)\n",
           proc_status("VmRSS") / 1048576, proc_status("VmHWM") / 1048576);
    fflush(stdout);
    double t3 = bench_now();
    loads0 = stat_of(c, "rest", "loads");
    for (uint32_t m = 0; m < nmodels;) {
        uint32_t n = nmodels - m < WINDOW ? nmodels - m : WINDOW;
        for (uint32_t j = 0; j < n; j++)
            send_predict(c, m + j);
        read_answers(c, n);
        m += n;
        if (nmodels >= 100000 && m % 20000 < n && m < nmodels) {
            printf("  ... %u answered, %.0f/s\n", m, m / (bench_now() - t3));
            fflush(stdout);
        }
    }
    secs = bench_now() - t3;
    printf("  predict of every model: %u answered in %.1f s (%.0f/s), %.0f loads\n", nmodels,
           secs, nmodels / secs, stat_of(c, "rest", "loads") - loads0);
    int checked = 0, wrong = 0;
    double bytes_sum = 0, names_sum = 0;
    for (int i = 0; i < CHECKS && i < (int)nmodels; i++) {
        uint32_t m = i < 10 ? model_of[i] : (uint32_t)(bench_xorshift(&zrng) % nmodels), id;
        char name[16];
        model_name(name, sizeof name, m);
        bench_str(pcc_request(c, "info", 1, &id), name);
        const msgpack_object *r = bench_call_or_die(c, id, die);
        double ex = pcc_number(pcc_map_get(r, "examples"));
        if (ex != (double)sent[m]) {
            if (wrong++ < 5)
                fprintf(stderr, "bench_zipf: %s has %.0f examples, %llu were sent\n", name, ex,
                        (unsigned long long)sent[m]);
        }
        bytes_sum += pcc_number(pcc_map_get(r, "bytes"));
        names_sum += pcc_number(pcc_map_get(r, "feature_names"));
        checked++;
    }
    printf("  info of %d models (the 10 hottest, the rest drawn): %d with examples != labels "
           "sent; mean bytes %.0f, mean feature_names %.0f\n", checked, wrong,
           bytes_sum / checked, names_sum / checked);
    long long files = 0, bytes = 0, alloc = 0;
    snaps[0] = snaps[1] = 0;
    disk_use(state, &files, &bytes, &alloc);
    const msgpack_object *s = stats(c);
    double max_mem = pcc_number(pcc_map_get(pcc_map_get(s, "bounds"), "max_memory"));
    double rss = proc_status("VmRSS"), hwm = proc_status("VmHWM");
    printf("  daemon RSS %.1f MiB (peak %.1f MiB) vs max_memory %.1f MiB: %.0f %% (peak %.0f %%)\n",
           rss / 1048576, hwm / 1048576, max_mem / 1048576, rss / max_mem * 100,
           hwm / max_mem * 100);
    printf("  state dir: %lld files, %.1f MiB (st_size), %.1f MiB allocated; %.0f bytes a "
           "model; of which %lld snapshot files (%.2f a model), %.1f MiB, %.0f bytes a file; "
           "the rest (journal) %.1f MiB\n", files, (double)bytes / 1048576,
           (double)alloc / 1048576, (double)bytes / nmodels, snaps[0],
           (double)snaps[0] / nmodels, (double)snaps[1] / 1048576,
           snaps[0] ? (double)snaps[1] / (double)snaps[0] : 0,
           (double)(bytes - snaps[1]) / 1048576);
    print_scalars("stats rest", pcc_map_get(s, "rest"));
    print_scalars("stats bounds", pcc_map_get(s, "bounds"));
    double st0 = bench_now();
    for (int i = 0; i < 20; i++)
        stats(c);
    printf("  a stats request: %.3f ms\n", (bench_now() - st0) / 20 * 1e3);

    pcc_close(c);
    kill(daemon_pid, SIGTERM);
    int status;
    waitpid(daemon_pid, &status, 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (getenv("BENCH_ZIPF_KEEP"))
        printf("kept %s\n", dir);
    else if (system(cmd) != 0)
        fprintf(stderr, "bench_zipf: could not remove %s\n", dir);
    free(cdf);
    free(model_of);
    free(stream);
    free(seen);
    free(uni);
    free(sent);
    return wrong ? 1 : 0;
}
