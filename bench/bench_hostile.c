/* bench_hostile.c - a well-behaved client's latency while hostile clients
 * attack the daemon (issue 14; not a test: it prints figures).
 *
 *   PERCEPTROND=build/daemon/perceptrond bench_hostile [-s SECONDS]
 *
 * Starts the daemon in a temporary directory with max_memory 64 MiB,
 * max_input_bytes 64 MiB, message_timeout 5 s.  One thread sends synchronous
 * predicts (a model of 2^16 weights) back to back over a Unix socket; the
 * main thread runs each attack for SECONDS (default 4), one after another:
 *
 *   baseline      nothing
 *   conn-flood    900 connections opened and left idle
 *   slowloris     300 connections each sending a message a byte at a time
 *   big-partial   200 connections each holding 900 KB of an unfinished message
 *   never-reads   8 connections pipelining predict_batch answers they never read
 *   weights-flood 4 connections pipelining `weights` of a 2^20 model, and one
 *                 alternating label and weights (each weights a scan)
 *   memory-fill   4 connections pipelining what a client can make the daemon
 *                 keep: events, new feature names, new models (issue 29)
 *
 * For each: the good client's requests, p50, p99 and max latency, the
 * daemon's largest RSS, what max_memory counted at the end (stats) and the
 * writes it refused so far.  The machine's load (uptime) is printed first: on a
 * shared 2-core VM the figures move with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_client.h"
#include "clients/pcclient.h"

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_hostile: %s: %s\n", what, err);
    exit(1);
}

static char dir[64], sock_path[96];
static pid_t daemon_pid;

/* ---- the good client --------------------------------------------------- */

#define MAXLAT 2000000
static double *lat;
static size_t nlat;
static volatile int phase_on, stop_all;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *good(void *arg)
{
    (void)arg;
    pcc_client *c;
    char err[256];
    if (pcc_connect(sock_path, &c, err, sizeof err) != 0)
        die("good client", err);
    double x[8] = {0.5, -1, 2, 0.25, 1, -0.5, 3, 1};
    while (!stop_all) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
        bench_str(pk, "good");
        msgpack_pack_array(pk, 8);
        for (int i = 0; i < 8; i++)
            msgpack_pack_double(pk, x[i]);
        double t0 = bench_now();
        const msgpack_object *error, *result;
        if (pcc_call(c, id, &error, &result, err, sizeof err) != 0)
            die("good client predict", err);
        double dt = bench_now() - t0;
        if (error)
            die("good client predict", "an error answer");
        pthread_mutex_lock(&mu);
        if (phase_on && nlat < MAXLAT)
            lat[nlat++] = dt;
        pthread_mutex_unlock(&mu);
        usleep(200); /* a client with a steady, modest rate */
    }
    pcc_close(c);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static long rss_kib(void)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)daemon_pid);
    FILE *f = fopen(path, "r");
    long v = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            v = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* ---- attackers --------------------------------------------------------- */

static int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

#define MAXFD 1000
static int fds[MAXFD];
static int nfds;

static void close_all(void)
{
    for (int i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    nfds = 0;
}

/* The first bytes of a predict whose 200000-double feature array never ends. */
static uint8_t partial[1 << 20];
static size_t partial_len;

static void make_partial(size_t len)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 1);
    bench_str(&pk, "predict");
    msgpack_pack_array(&pk, 2);
    bench_str(&pk, "good");
    msgpack_pack_array(&pk, 200000);
    memcpy(partial, sb.data, sb.size);
    partial_len = sb.size;
    msgpack_sbuffer_destroy(&sb);
    while (partial_len + 9 <= len) {
        partial[partial_len] = 0xcb;
        memset(partial + partial_len + 1, 0, 8);
        partial_len += 9;
    }
}

/* A buffer of n pipelined requests made by fill. */
static msgpack_sbuffer pipeline(int n, void (*fill)(msgpack_packer *, int))
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    for (int i = 0; i < n; i++)
        fill(&pk, i);
    return sb;
}

static void fill_batch(msgpack_packer *pk, int i)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_int(pk, 0);
    msgpack_pack_int(pk, i);
    bench_str(pk, "predict_batch");
    msgpack_pack_array(pk, 2);
    bench_str(pk, "good");
    msgpack_pack_array(pk, 100);
    for (int k = 0; k < 100; k++) {
        msgpack_pack_array(pk, 1);
        msgpack_pack_double(pk, k);
    }
}

static void fill_weights(msgpack_packer *pk, int i)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_int(pk, 0);
    msgpack_pack_int(pk, i);
    bench_str(pk, "weights");
    msgpack_pack_array(pk, 1);
    bench_str(pk, "wide");
}

static void fill_label_weights(msgpack_packer *pk, int i)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_int(pk, 0);
    msgpack_pack_int(pk, i);
    if (i % 2) {
        bench_str(pk, "weights");
        msgpack_pack_array(pk, 1);
        bench_str(pk, "wide");
    } else {
        bench_str(pk, "label");
        msgpack_pack_array(pk, 3);
        bench_str(pk, "wide");
        msgpack_pack_map(pk, 1);
        msgpack_pack_uint32(pk, (uint32_t)i * 2654435761u % (1u << 20));
        msgpack_pack_double(pk, 1);
        msgpack_pack_int(pk, i % 4 ? 1 : -1);
    }
}

/* Everything a client can make the daemon keep (issue 29): predicts that
 * keep an event, labels of feature names never seen, labels to new model
 * names (auto_create), each of 200 features; names made unique by a
 * counter, so a pipeline sent again still adds. */
static unsigned fill_round;
static void fill_memory(msgpack_packer *pk, int i)
{
    char name[64];
    msgpack_pack_array(pk, 4);
    msgpack_pack_int(pk, 0);
    msgpack_pack_int(pk, i);
    int kind = i % 3;
    bench_str(pk, kind == 0 ? "predict" : "label");
    msgpack_pack_array(pk, 3);
    if (kind == 2) {
        snprintf(name, sizeof name, "new-%u-%d", fill_round, i);
        bench_str(pk, name);
    } else {
        bench_str(pk, "sink");
    }
    msgpack_pack_map(pk, 200);
    for (int k = 0; k < 200; k++) {
        snprintf(name, sizeof name, "name-%u-%d-%d-padding", fill_round, i, k);
        bench_str(pk, name);
        msgpack_pack_double(pk, k + 1);
    }
    if (kind == 0) {
        msgpack_pack_map(pk, 1);
        bench_str(pk, "event");
        msgpack_pack_uint64(pk, (uint64_t)fill_round << 32 | (uint32_t)i);
    } else {
        msgpack_pack_int(pk, i % 2 ? 1 : -1);
    }
}

/* Writes what the socket takes of buf; reads and drops answers when drain. */
static void pump(int fd, const msgpack_sbuffer *sb, size_t *off, bool drain)
{
    if (*off < sb->size) {
        ssize_t n = send(fd, sb->data + *off, sb->size - *off, MSG_NOSIGNAL);
        if (n > 0)
            *off += (size_t)n;
    } else {
        *off = 0; /* again */
    }
    if (drain) {
        char b[65536];
        while (recv(fd, b, sizeof b, 0) > 0)
            ;
    }
}

typedef enum {
    BASELINE, CONN_FLOOD, SLOWLORIS, BIG_PARTIAL, NEVER_READS, WEIGHTS_FLOOD, MEMORY_FILL
} attack;
static const char *const names[] = {"baseline", "conn-flood", "slowloris", "big-partial",
                                    "never-reads", "weights-flood", "memory-fill"};

/* stats.bounds[key] of the daemon, -1 when it does not answer. */
static double bound(const char *key)
{
    pcc_client *c;
    char err[256];
    if (pcc_connect(sock_path, &c, err, sizeof err) != 0)
        return -1;
    uint32_t id;
    pcc_request(c, "stats", 0, &id);
    const msgpack_object *error, *result;
    double v = -1;
    if (pcc_call(c, id, &error, &result, err, sizeof err) == 0 && !error)
        v = pcc_number(pcc_map_get(pcc_map_get(result, "bounds"), key));
    pcc_close(c);
    return v;
}

static void run(attack a, double seconds)
{
    pthread_mutex_lock(&mu);
    nlat = 0;
    phase_on = 1;
    pthread_mutex_unlock(&mu);
    long rss = rss_kib();
    double t0 = bench_now(), last = 0;
    msgpack_sbuffer sb = {0};
    size_t offs[MAXFD] = {0};
    if (a == NEVER_READS)
        sb = pipeline(2000, fill_batch);
    if (a == WEIGHTS_FLOOD)
        sb = pipeline(4000, fill_weights);
    if (a == MEMORY_FILL)
        sb = pipeline(300, fill_memory);
    msgpack_sbuffer mixed = pipeline(200, fill_label_weights);
    size_t sent = 0;
    while (bench_now() - t0 < seconds) {
        double t = bench_now() - t0;
        switch (a) {
        case BASELINE: usleep(10000); break;
        case CONN_FLOOD:
            while (nfds < 900 && (fds[nfds] = raw_connect()) >= 0)
                nfds++;
            usleep(10000);
            break;
        case SLOWLORIS:
            while (nfds < 300 && (fds[nfds] = raw_connect()) >= 0)
                nfds++;
            if (t - last > 0.1) { /* a byte each, ten times a second */
                for (int i = 0; i < nfds; i++)
                    if (fds[i] >= 0 && send(fds[i], partial + sent, 1, MSG_NOSIGNAL) != 1) {
                        close(fds[i]);
                        fds[i] = raw_connect(); /* closed by message_timeout: again */
                    }
                sent = (sent + 1) % partial_len;
                last = t;
            }
            usleep(5000);
            break;
        case BIG_PARTIAL:
            while (nfds < 200 && (fds[nfds] = raw_connect()) >= 0)
                nfds++;
            for (int i = 0; i < nfds; i++) {
                if (fds[i] < 0)
                    continue;
                if (offs[i] < partial_len) {
                    ssize_t n = send(fds[i], partial + offs[i], partial_len - offs[i], MSG_NOSIGNAL);
                    if (n > 0)
                        offs[i] += (size_t)n;
                    else if (n < 0 && errno != EAGAIN) { /* closed: the budget; come back */
                        close(fds[i]);
                        fds[i] = raw_connect();
                        offs[i] = 0;
                    }
                }
            }
            usleep(5000);
            break;
        case NEVER_READS:
            while (nfds < 8 && (fds[nfds] = raw_connect()) >= 0)
                nfds++;
            for (int i = 0; i < nfds; i++)
                pump(fds[i], &sb, &offs[i], false);
            usleep(1000);
            break;
        case WEIGHTS_FLOOD:
            while (nfds < 5 && (fds[nfds] = raw_connect()) >= 0)
                nfds++;
            for (int i = 0; i < nfds; i++)
                pump(fds[i], i == 4 ? &mixed : &sb, &offs[i], true);
            usleep(500);
            break;
        case MEMORY_FILL:
            while (nfds < 4 && (fds[nfds] = raw_connect()) >= 0)
                nfds++;
            for (int i = 0; i < nfds; i++) {
                if (offs[i] >= sb.size) { /* sent whole: the next round, new names */
                    msgpack_sbuffer_destroy(&sb);
                    fill_round++;
                    sb = pipeline(300, fill_memory);
                    for (int k = 0; k < nfds; k++)
                        offs[k] = 0;
                }
                pump(fds[i], &sb, &offs[i], true);
            }
            usleep(200);
            break;
        }
        long r = rss_kib();
        if (r > rss)
            rss = r;
    }
    pthread_mutex_lock(&mu);
    phase_on = 0;
    size_t n = nlat;
    qsort(lat, n, sizeof *lat, cmp);
    printf("%-14s %8zu %9.3f %9.3f %9.3f %10.1f %12.1f %9.0f\n", names[a], n,
           n ? lat[n / 2] * 1e3 : 0, n ? lat[(size_t)(n * 0.99)] * 1e3 : 0,
           n ? lat[n - 1] * 1e3 : 0, rss / 1024.0, bound("counted_bytes") / (1 << 20),
           bound("refused_memory"));
    fflush(stdout);
    pthread_mutex_unlock(&mu);
    close_all();
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_destroy(&mixed);
    usleep(500000); /* the daemon closes the rest */
}

static void setup_models(void)
{
    pcc_client *c;
    char err[256];
    for (int i = 0; i < 200; i++) {
        if (pcc_connect(sock_path, &c, err, sizeof err) == 0)
            break;
        usleep(20000);
        if (i == 199)
            die("connect", err);
    }
    const char *specs[][2] = {{"good", "16"}, {"wide", "20"}, {"sink", "20"}};
    for (int m = 0; m < 3; m++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "create", 2, &id);
        bench_str(pk, specs[m][0]);
        msgpack_pack_map(pk, m == 2 ? 4 : 1);
        bench_str(pk, "hash_bits");
        msgpack_pack_uint32(pk, (uint32_t)atoi(specs[m][1]));
        if (m == 2) { /* label-later with room for every event, sparse weights */
            bench_str(pk, "storage");
            bench_str(pk, "sparse");
            bench_str(pk, "join.ttl");
            msgpack_pack_uint32(pk, 3600);
            bench_str(pk, "join.max_bytes");
            msgpack_pack_uint64(pk, 1ull << 30);
        }
        const msgpack_object *error, *result;
        if (pcc_call(c, id, &error, &result, err, sizeof err) != 0 || error)
            die("create", error ? "an error answer" : err);
    }
    for (int i = 0; i < 2000; i++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "label", 3, &id);
        bench_str(pk, i % 2 ? "good" : "wide");
        msgpack_pack_map(pk, 2);
        msgpack_pack_uint32(pk, (uint32_t)i * 7919u % 65536u);
        msgpack_pack_double(pk, 1);
        msgpack_pack_uint32(pk, (uint32_t)i * 104729u % 65536u);
        msgpack_pack_double(pk, -0.5);
        msgpack_pack_int(pk, i % 3 ? 1 : -1);
        const msgpack_object *error, *result;
        if (pcc_call(c, id, &error, &result, err, sizeof err) != 0 || error)
            die("label", error ? "an error answer" : err);
    }
    pcc_close(c);
}

int main(int argc, char **argv)
{
    double seconds = 4;
    int opt;
    while ((opt = getopt(argc, argv, "s:")) != -1)
        if (opt == 's')
            seconds = atof(optarg);
    const char *bin = getenv("PERCEPTROND");
    if (!bin)
        die("PERCEPTROND", "not set (the daemon binary)");
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max > 4096 ? 4096 : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    snprintf(dir, sizeof dir, "/tmp/pcd-hostile-XXXXXX");
    if (!mkdtemp(dir))
        die("mkdtemp", strerror(errno));
    snprintf(sock_path, sizeof sock_path, "%s/pcd.sock", dir);
    char conf[128];
    snprintf(conf, sizeof conf, "%s/c.yaml", dir);
    FILE *f = fopen(conf, "w");
    fprintf(f, "listen: {tcp: [], unix: [\"%s\"]}\nstate_dir: %s/state\nlog_level: error\n"
               "snapshot: {interval: 0}\njournal: {enabled: false}\n"
               "limits: {max_memory: 64MiB, max_input_bytes: 64MiB, message_timeout: 5, "
               "max_connections: 1000}\n",
            sock_path, dir);
    fclose(f);
    char logp[128];
    snprintf(logp, sizeof logp, "%s/daemon.log", dir);
    if ((daemon_pid = fork()) == 0) {
        int fd = open(logp, O_WRONLY | O_CREAT, 0644);
        dup2(fd, 2);
        execl(bin, bin, "--config", conf, (char *)NULL);
        _exit(127);
    }
    setup_models();
    make_partial(900000);
    lat = malloc(MAXLAT * sizeof *lat);
    FILE *up = popen("uptime", "r");
    char line[256];
    if (up && fgets(line, sizeof line, up))
        printf("uptime: %s", line);
    if (up)
        pclose(up);
    printf("%.1f s per attack; good client: predict (2^16 weights), one at a time, 0.2 ms apart\n",
           seconds);
    printf("%-14s %8s %9s %9s %9s %10s %12s %9s\n", "attack", "requests", "p50 ms", "p99 ms",
           "max ms", "RSS MiB", "counted MiB", "refused");
    pthread_t th;
    pthread_create(&th, NULL, good, NULL);
    usleep(200000);
    for (attack a = BASELINE; a <= MEMORY_FILL; a++)
        run(a, seconds);
    run(BASELINE, seconds);
    stop_all = 1;
    pthread_join(th, NULL);
    kill(daemon_pid, SIGTERM);
    waitpid(daemon_pid, NULL, 0);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(lat);
    return 0;
}
