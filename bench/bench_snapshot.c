/* bench_snapshot.c - time to write and read back one large snapshot (not a test).
 *
 * Builds a binary perceptron of dimension 2^24 (2^24 doubles of weights, about
 * 128 MiB encoded; weights filled so the bytes are not all zero), encodes it
 * with pc_model_encode, then times pcd_snapshot_write (header, CRC-32, write,
 * fsync, rename, directory fsync) and pcd_snapshot_read (size check, read, CRC,
 * payload check).  The write time is what the daemon's forked child spends per
 * save of such a model; the event loop does not wait for it.  fsync cost
 * depends on the file system: run it in the real state directory to see yours
 * (on tmpfs fsync is free).
 *
 * Usage: bench_snapshot [dir]     (default: a fresh directory under /tmp, removed after)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/statedir.h"
#include "daemon/store/snapshot.h"
#include "lib/perceptron.h"

#define LOG2_DIM 24

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    char tmpl[] = "/tmp/pcd_bench_snap_XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpl);
    if (!dir) {
        perror("mkdtemp");
        return 1;
    }
    char err[512];
    if (pcd_state_dir_prepare(dir, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }

    /* A model whose 2^24 weights are all touched: one dense-ish sweep of updates. */
    uint32_t dim = 1u << LOG2_DIM;
    pc_model_config c;
    pc_model_config_default(&c, dim);
    c.bias = false;
    pc_model *m;
    pc_error perr;
    if (pc_model_new(&c, &m, &perr) != PC_OK) {
        fprintf(stderr, "pc_model_new: %s\n", perr.msg);
        return 1;
    }
    pc_svec x;
    pc_svec_init(&x);
    for (uint32_t i = 0; i < dim; i++)
        pc_svec_push(&x, i, 1.0 + (double)(i % 1000) * 1e-3);
    pc_svec_normalize(&x, dim, &perr);
    pc_label y = {.y = -1};
    pc_outcome o;
    pc_model_label(m, &x, &y, &o, &perr);   /* score 0 predicts +1: a mistake, w = -x */
    pc_svec_free(&x);

    double t0 = now();
    uint8_t *buf;
    size_t len;
    if (pc_model_encode(m, &buf, &len, &perr) != PC_OK) {
        fprintf(stderr, "pc_model_encode: %s\n", perr.msg);
        return 1;
    }
    double t_enc = now() - t0;
    pc_model_free(m);

    double mib = (double)len / (1024.0 * 1024.0);
    printf("model: dim 2^%d, %zu bytes (%.1f MiB) encoded in %.3f s\n", LOG2_DIM, len, mib, t_enc);
    printf("dir: %s\n", dir);
    int rc = 0;
    for (uint64_t gen = 1; gen <= 3; gen++) {
        t0 = now();
        int w = pcd_snapshot_write(dir, "bench", gen, (int64_t)time(NULL), 0, 0, 0, buf, len, 2, NULL, err, sizeof err);
        double tw = now() - t0;
        if (w != 0) {
            fprintf(stderr, "write: %s\n", err);
            rc = 1;
            break;
        }
        t0 = now();
        uint8_t *back;
        size_t blen;
        if (pcd_snapshot_read(dir, "bench", &back, &blen, NULL, NULL, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "read: %s\n", err);
            rc = 1;
            break;
        }
        double tr = now() - t0;
        if (blen != len || memcmp(back, buf, len) != 0) {
            fprintf(stderr, "read back different bytes\n");
            rc = 1;
        }
        free(back);
        printf("generation %llu: write %.3f s (%.0f MiB/s), read %.3f s (%.0f MiB/s)\n",
               (unsigned long long)gen, tw, mib / tw, tr, mib / tr);
    }
    free(buf);
    if (argc <= 1 && pcd_snapshot_remove(dir, "bench", err, sizeof err) >= 0)
        rmdir(dir);
    return rc;
}
