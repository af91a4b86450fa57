/* bench_stall.c - the longest pause a snapshot causes to serving (not a test).
 *
 *   bench_stall [-a ADDRESS] [-b HASH_BITS] [-s SAVES]
 *
 * Creates a model "stall" of 2^HASH_BITS weights (default 24: 128 MiB of
 * doubles) and touches every page of it with dense labels, so the snapshot
 * really has 128 MiB to write.  Then one connection sends synchronous
 * predicts back to back while a second one asks for `save` SAVES times; the
 * program prints the predict latency percentiles and the maximum, both
 * outside and during the saves.  The daemon forks to write, so the only
 * pause should be fork() copying the page tables.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_client.h"
#include "clients/pcclient.h"

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_stall: %s: %s\n", what, err);
    exit(1);
}

static void call(pcc_client *c, uint32_t id, const char *what)
{
    const msgpack_object *error, *result;
    char err[256];
    if (pcc_call(c, id, &error, &result, err, sizeof err) != 0)
        die(what, err);
    if (error) {
        pcc_error_message(error, err, sizeof err);
        if (strcmp(what, "drop") != 0)
            die(what, err);
    }
}

static const char *address;
static volatile int saving, done;
static int saves = 5;

static void *saver(void *arg)
{
    (void)arg;
    pcc_client *c;
    char err[256];
    if (bench_connect_env(address, &c, err, sizeof err) != 0)
        die("connect", err);
    for (int i = 0; i < saves; i++) {
        usleep(300000);
        /* the model must be dirty for save to write it: one label first */
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "label", 3, &id);
        bench_str(pk, "stall");
        msgpack_pack_map(pk, 1);
        msgpack_pack_uint32(pk, (uint32_t)i);
        msgpack_pack_double(pk, 1.0);
        msgpack_pack_int(pk, i % 2 ? 1 : -1);
        call(c, id, "label");
        double t0 = bench_now();
        saving = 1;
        pcc_request(c, "save", 0, &id);
        call(c, id, "save");
        saving = 0;
        fprintf(stderr, "save %d: %.3f s\n", i + 1, bench_now() - t0);
    }
    done = 1;
    pcc_close(c);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, size_t n)
{
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, cmp);
    printf("%-14s %8zu predicts: p50 %7.1f us  p99 %7.1f us  p99.9 %7.1f us  max %8.1f us\n", what, n,
           v[n / 2], v[(size_t)((double)(n - 1) * 0.99)], v[(size_t)((double)(n - 1) * 0.999)],
           v[n - 1]);
}

int main(int argc, char **argv)
{
    address = getenv("PERCEPTROND_ADDRESS") ? getenv("PERCEPTROND_ADDRESS") : PCC_DEFAULT_ADDRESS;
    int bits = 24, opt;
    while ((opt = getopt(argc, argv, "a:b:s:")) != -1) {
        switch (opt) {
        case 'a': address = optarg; break;
        case 'b': bits = atoi(optarg); break;
        case 's': saves = atoi(optarg); break;
        default: fprintf(stderr, "usage: bench_stall [-a ADDRESS] [-b HASH_BITS] [-s SAVES]\n"); return 2;
        }
    }
    pcc_client *c = NULL;
    char err[256];
    if (bench_connect_env(address, &c, err, sizeof err) != 0)
        die("connect", err);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "drop", 1, &id);
    bench_str(pk, "stall");
    call(c, id, "drop");
    pk = pcc_request(c, "create", 2, &id);
    bench_str(pk, "stall");
    msgpack_pack_map(pk, 2);
    bench_str(pk, "hash_bits");
    msgpack_pack_int(pk, bits);
    bench_str(pk, "rule");
    bench_str(pk, "perceptron");
    call(c, id, "create");
    /* touch every page: one weight in each 512 (a 4 KiB page of doubles) */
    uint32_t dim = 1u << bits, per = 4096;
    for (uint32_t base = 0; base < dim; base += 512 * per) {
        pk = pcc_request(c, "label", 3, &id);
        bench_str(pk, "stall");
        uint32_t n = 0;
        for (uint32_t i = base; i < dim && n < per; i += 512)
            n++;
        msgpack_pack_map(pk, n);
        for (uint32_t i = base, k = 0; k < n; i += 512, k++) {
            msgpack_pack_uint32(pk, i);
            msgpack_pack_double(pk, 1.0);
        }
        msgpack_pack_int(pk, -1);
        call(c, id, "label");
    }
    printf("# model stall: 2^%d weights (%u MiB), every page touched; %d saves\n", bits,
           (unsigned)((uint64_t)dim * 8 >> 20), saves);
    size_t cap = 4 << 20, nq = 0, ns = 0;
    double *quiet = malloc(cap * sizeof *quiet), *during = malloc(cap * sizeof *during);
    pthread_t t;
    pthread_create(&t, NULL, saver, NULL);
    while (!done && nq < cap && ns < cap) {
        pk = pcc_request(c, "predict", 2, &id);
        bench_str(pk, "stall");
        msgpack_pack_map(pk, 4);
        for (int k = 0; k < 4; k++) {
            msgpack_pack_uint32(pk, (uint32_t)(rand() % (int)dim));
            msgpack_pack_double(pk, 1.0);
        }
        int s = saving;
        double t0 = bench_now();
        call(c, id, "predict");
        double us = (bench_now() - t0) * 1e6;
        if (s || saving)
            during[ns++] = us;
        else
            quiet[nq++] = us;
    }
    pthread_join(t, NULL);
    report("outside saves", quiet, nq);
    report("during saves", during, ns);
    free(quiet);
    free(during);
    pcc_close(c);
    return 0;
}
