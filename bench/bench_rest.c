/* bench_rest.c - models at rest (limits.resident_max, daemon/core/rest.c):
 * what a resting model costs in memory and on disk, and what bringing one
 * back costs a request (not a test; docs/operations.md, "Models at rest").
 *
 *   bench_rest PERCEPTROND [DIR] [REQUESTS]
 *
 * Starts PERCEPTROND with limits.resident_max: 1 and journal fsync
 * `always` in a fresh directory under DIR (default /var/tmp, a disk: fsync
 * on tmpfs is free), then:
 *  - 2,000 tiny models created one after the other (each evicts the one
 *    before): the daemon's RSS growth per resting model;
 *  - for models of 100 to 100,000 touched weights (perceptron, sparse
 *    storage, dim 2^20): two such models, and REQUESTS (default 200)
 *    requests alternating between them, so that each one evicts the other
 *    and loads its own: predicts (the evicted model is clean: freed
 *    without a write) and labels (dirty: written and fsynced first).
 *    Prints the snapshot's bytes, the request latency (p50, p99) and the
 *    daemon's own mean load and eviction times (`stats` rest).
 * The daemon is stopped and its directory removed at the end.
 */
#define _GNU_SOURCE
#include <dirent.h>
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

static char dir[256], sock[300];
static pid_t daemon_pid;

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_rest: %s: %s\n", what, err);
    if (daemon_pid)
        kill(daemon_pid, SIGTERM);
    exit(1);
}

static void create(pcc_client *c, const char *name, uint32_t dim, const char *storage)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    bench_str(pk, name);
    msgpack_pack_map(pk, 3);
    bench_str(pk, "rule");
    bench_str(pk, "perceptron");
    bench_str(pk, "dim");
    msgpack_pack_uint32(pk, dim);
    bench_str(pk, "storage");
    bench_str(pk, storage);
    bench_call_or_die(c, id, die);
}

/* label (y given) or predict (y 0) of the k features [0, k) * stride. */
static void request(pcc_client *c, const char *name, uint32_t k, int y)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, y ? "label" : "predict", y ? 3 : 2, &id);
    bench_str(pk, name);
    msgpack_pack_map(pk, k);
    for (uint32_t i = 0; i < k; i++) {
        msgpack_pack_uint32(pk, (i * 2654435761u) & ((1u << 20) - 1));
        msgpack_pack_double(pk, 1.0);
    }
    if (y)
        msgpack_pack_int(pk, y);
    bench_call_or_die(c, id, die);
}

static double rest_stat(pcc_client *c, const char *key)
{
    uint32_t id;
    pcc_request(c, "stats", 0, &id);
    const msgpack_object *r = bench_call_or_die(c, id, die);
    return pcc_number(pcc_map_get(pcc_map_get(r, key[0] == '@' ? "bounds" : "rest"),
                                  key[0] == '@' ? key + 1 : key));
}

/* The bytes of name's newest snapshot file in the state directory. */
static long long snap_bytes(const char *name)
{
    char path[400];
    snprintf(path, sizeof path, "%s/state", dir);
    DIR *d = opendir(path);
    long long best = -1, gen = -1;
    struct dirent *de;
    size_t n = strlen(name);
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, name, n) || de->d_name[n] != '.' || !strstr(de->d_name, ".snap"))
            continue;
        long long g = atoll(de->d_name + n + 1);
        struct stat st;
        char f[700];
        snprintf(f, sizeof f, "%s/%s", path, de->d_name);
        if (g > gen && stat(f, &st) == 0) {
            gen = g;
            best = (long long)st.st_size;
        }
    }
    if (d)
        closedir(d);
    return best;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* REQUESTS requests alternating between a and b; p50 and p99 in ms. */
static void alternate(pcc_client *c, const char *a, const char *b, uint32_t k, bool label, int n,
                      double *p50, double *p99)
{
    double *t = malloc((size_t)n * sizeof *t);
    if (!t)
        die("malloc", "out of memory");
    for (int i = 0; i < n; i++) {
        double t0 = bench_now();
        request(c, i % 2 ? b : a, k, label ? (i / 2 % 2 ? 1 : -1) : 0);
        t[i] = (bench_now() - t0) * 1e3;
    }
    qsort(t, (size_t)n, sizeof *t, by_value);
    *p50 = t[n / 2];
    *p99 = t[n * 99 / 100];
    free(t);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_rest PERCEPTROND [DIR] [REQUESTS]\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s/pcd_bench_rest_XXXXXX", argc > 2 ? argv[2] : "/var/tmp");
    int n = argc > 3 ? atoi(argv[3]) : 200;
    if (!mkdtemp(dir))
        die("mkdtemp", dir);
    snprintf(sock, sizeof sock, "%s/pcd.sock", dir);
    char config[400], log[400];
    snprintf(config, sizeof config, "%s/perceptrond.yaml", dir);
    snprintf(log, sizeof log, "%s/daemon.log", dir);
    FILE *f = fopen(config, "w");
    if (!f)
        die("config", config);
    fprintf(f, "listen: {unix: [\"%s\"], tcp: []}\nstate_dir: %s/state\nlog_level: warning\n"
               "limits: {resident_max: 1, max_models: 10000, max_features: 200000, "
               "max_message_bytes: 16MiB}\n"
               "journal: {fsync: always}\n", sock, dir);
    fclose(f);
    char err[256];
    pcc_client *c = bench_daemon_start(argv[1], config, log, sock, &daemon_pid, err, sizeof err);
    if (!c)
        die("connect", err);

    /* The index: RSS per resting model, 2,000 tiny models, first (before the
     * large models' memory comes and goes). */
    enum { TINY = 2000 };
    double rss0 = rest_stat(c, "@rss_bytes"), t0 = bench_now();
    for (int i = 0; i < TINY; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        create(c, name, 16, "dense");
    }
    double secs = bench_now() - t0, rss1 = rest_stat(c, "@rss_bytes");
    printf("%d tiny models created, each evicting the one before (write + fsync): %.2f ms each; "
           "RSS +%.0f bytes per resting model; %.0f resting\n",
           TINY, secs / TINY * 1e3, (rss1 - rss0) / TINY, rest_stat(c, "resting"));
    printf("models at rest: resident_max 1, journal fsync always, state dir %s\n", dir);
    printf("%9s %12s %27s %27s %10s %10s\n", "weights", "snap bytes", "predict p50/p99 ms",
           "label p50/p99 ms", "load ms", "evict ms");
    static const uint32_t sizes[] = {100, 1000, 10000, 100000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "s%u_a", sizes[s]);
        snprintf(b, sizeof b, "s%u_b", sizes[s]);
        create(c, a, 1u << 20, "sparse");
        create(c, b, 1u << 20, "sparse");
        request(c, a, sizes[s], -1); /* score 0 says +1: a mistake, every weight touched */
        request(c, b, sizes[s], -1);
        double l0 = rest_stat(c, "load_seconds"), n0 = rest_stat(c, "loads");
        double e0 = rest_stat(c, "evict_seconds"), m0 = rest_stat(c, "evictions");
        double pp50, pp99, lp50, lp99;
        alternate(c, a, b, sizes[s], false, n, &pp50, &pp99);
        alternate(c, a, b, sizes[s], true, n, &lp50, &lp99);
        double loads = rest_stat(c, "loads") - n0, evictions = rest_stat(c, "evictions") - m0;
        printf("%9u %12lld %13.3f / %-11.3f %13.3f / %-11.3f %10.3f %10.3f\n", sizes[s],
               snap_bytes(a), pp50, pp99, lp50, lp99,
               loads ? (rest_stat(c, "load_seconds") - l0) / loads * 1e3 : 0,
               evictions ? (rest_stat(c, "evict_seconds") - e0) / evictions * 1e3 : 0);
    }

    pcc_close(c);
    kill(daemon_pid, SIGTERM);
    int status;
    waitpid(daemon_pid, &status, 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_rest: could not remove %s\n", dir);
    return 0;
}
