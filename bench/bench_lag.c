/* bench_lag.c - replica lag of daemons following a Redis stream, sampled
 * while the stream grows (not a test).
 *
 *   bench_lag -r REDIS_SOCKET -m MODEL [-p PREFIX] [-i MS] ADDRESS...
 *
 * Every MS milliseconds (default 5) it asks each daemon for info(MODEL).log_id
 * and Redis for the first entry of the model's stream after that ID: the
 * daemon's lag is how long that entry has waited (now minus the entry ID's
 * milliseconds: Redis must run on this machine's clock), 0 when there is
 * none.  Samples count only while the stream grew since the last round, so
 * idle time between a benchmark's phases does not dilute them.  On SIGINT
 * or SIGTERM it prints, per daemon, "lag ADDRESS: N samples, p50 X ms, p99
 * Y ms, max Z ms".
 */
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clients/pcclient.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct follower {
    const char *address;
    pcc_client *c;
    double *lag;
    size_t n, cap;
} follower;

/* The daemon's log_id for model into id ("" when it has none yet). */
static void log_id(follower *f, const char *model, char *id, size_t len)
{
    char err[256];
    id[0] = 0;
    if (!f->c && pcc_connect(f->address, &f->c, err, sizeof err) != 0)
        return;
    uint32_t msgid;
    msgpack_packer *pk = pcc_request(f->c, "info", 1, &msgid);
    msgpack_pack_str_with_body(pk, model, strlen(model));
    const msgpack_object *error, *result;
    if (pcc_call(f->c, msgid, &error, &result, err, sizeof err) != 0) {
        pcc_close(f->c);
        f->c = NULL;
        return;
    }
    const msgpack_object *v = error ? NULL : pcc_map_get(result, "log_id");
    if (v && v->type == MSGPACK_OBJECT_STR)
        snprintf(id, len, "%.*s", (int)v->via.str.size, v->via.str.ptr);
}

int main(int argc, char **argv)
{
    const char *sock = NULL, *model = NULL, *prefix = "pcd:";
    int every = 5, opt;
    while ((opt = getopt(argc, argv, "r:m:p:i:")) != -1) {
        switch (opt) {
        case 'r': sock = optarg; break;
        case 'm': model = optarg; break;
        case 'p': prefix = optarg; break;
        case 'i': every = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
        default: sock = NULL; optind = argc + 1;
        }
    }
    if (!sock || !model || optind >= argc) {
        fprintf(stderr, "usage: bench_lag -r REDIS_SOCKET -m MODEL [-p PREFIX] [-i MS] ADDRESS...\n");
        return 2;
    }
    redisContext *r = redisConnectUnix(sock);
    if (!r || r->err) {
        fprintf(stderr, "bench_lag: cannot connect to %s\n", sock);
        return 1;
    }
    char key[256];
    snprintf(key, sizeof key, "%s{%s}", prefix, model);
    size_t nf = (size_t)(argc - optind);
    follower *fs = calloc(nf, sizeof *fs);
    for (size_t i = 0; i < nf; i++)
        fs[i].address = argv[optind + (int)i];
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    char last[64] = "";
    struct timespec pause = {0, every * 1000000L};
    while (!stop) {
        nanosleep(&pause, NULL);
        redisReply *top = redisCommand(r, "XREVRANGE %s + - COUNT 1", key);
        char newest[64] = "";
        if (top && top->type == REDIS_REPLY_ARRAY && top->elements == 1)
            snprintf(newest, sizeof newest, "%s", top->element[0]->element[0]->str);
        freeReplyObject(top);
        bool grew = *newest && strcmp(newest, last);
        snprintf(last, sizeof last, "%s", newest);
        for (size_t i = 0; i < nf && grew; i++) {
            char id[64];
            log_id(&fs[i], model, id, sizeof id);
            if (!*id)
                continue;
            redisReply *next = redisCommand(r, "XRANGE %s (%s + COUNT 1", key, id);
            double lag = 0;
            if (next && next->type == REDIS_REPLY_ARRAY && next->elements == 1)
                lag = now_ms() - strtod(next->element[0]->element[0]->str, NULL);
            freeReplyObject(next);
            if (fs[i].n == fs[i].cap) {
                fs[i].cap = fs[i].cap ? 2 * fs[i].cap : 1024;
                fs[i].lag = realloc(fs[i].lag, fs[i].cap * sizeof *fs[i].lag);
            }
            fs[i].lag[fs[i].n++] = lag < 0 ? 0 : lag;
        }
    }
    for (size_t i = 0; i < nf; i++) {
        follower *f = &fs[i];
        if (f->n)
            qsort(f->lag, f->n, sizeof *f->lag, cmp);
        printf("lag %s: %zu samples, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", f->address, f->n,
               f->n ? f->lag[f->n / 2] : 0, f->n ? f->lag[(size_t)((double)f->n * 0.99)] : 0,
               f->n ? f->lag[f->n - 1] : 0);
        if (f->c)
            pcc_close(f->c);
        free(f->lag);
    }
    free(fs);
    redisFree(r);
    return 0;
}
