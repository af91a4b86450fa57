/* main.c - perceptrond's command line: options, config, then pcd_run. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/config/config.h"
#include "daemon/exec/auth.h"
#include "daemon/net/tls.h"
#include "daemon/pcd.h"
#include "daemon/redislog/auth.h"
#include "lib/perceptron.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: perceptrond [--config FILE] [--check-config] [--help] [--version]\n"
            "\n"
            "Serves named online linear classifiers over MessagePack-RPC (TCP and Unix\n"
            "sockets), snapshots them to disk and restores them on start.  Runs in the\n"
            "foreground and logs to stderr (systemd style).\n"
            "\n"
            "  -c, --config FILE   YAML configuration (default: the built-in default:\n"
            "                      tcp 127.0.0.1:7411, unix ./perceptrond.sock, state in\n"
            "                      ./state, models created on first use)\n"
            "  -t, --check-config  validate the configuration, print it and exit\n"
            "  -h, --help          this text\n"
            "  -V, --version       the version\n"
            "\n"
            "Signals: SIGTERM/SIGINT save and stop, SIGHUP reloads the config.\n"
            "Rules: ");
    for (const pc_rule *const *r = pc_rules(); *r; r++)
        fprintf(out, "%s%s", pc_rule_name(*r), r[1] ? ", " : "\n");
}

/* --check-config reads what the daemon would read at start besides the
 * config: the tokens, the Redis password, and the TLS certificates and keys (under systemd,
 * ExecStartPre sees the same credentials as the daemon). */
static int check_files(const pcd_config *cfg, char *err, size_t errlen)
{
    pcd_auth *a;
    if (pcd_auth_load(cfg, &a, err, errlen) != 0)
        return -1;
    pcd_auth_free(a);
    pcd_redis_auth ra;
    int rc = pcd_redis_auth_load(cfg, &ra, err, errlen);
    pcd_redis_auth_clear(&ra);
    if (rc != 0)
        return -1;
    for (size_t i = 0; i < cfg->ntcp; i++) {
        if (!cfg->tcp_access[i].tls_cert)
            continue;
        struct ssl_ctx_st *ctx = pcd_tls_context(&cfg->tcp_access[i], err, errlen);
        if (!ctx)
            return -1;
        pcd_tls_context_free(ctx);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"check-config", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},         {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    /* A fixed mmap threshold: glibc's moving one serves a large buffer freed
     * once (a connection's message, a batch's answers) from the heap ever
     * after, where freeing it does not return it to the system; the RSS
     * then stays at its peak, far from what max_memory counts.  And a low
     * one, 16 KiB: a small model's tables (sparse weights, scale
     * statistics, names: tens of KB each) come and go as models are put to
     * rest and loaded, and from the heap they left holes between live ones
     * that no later table fitted; mapped on their own, they go back to the
     * system when freed (bench_zipf, 20,000 models in max_memory 64 MiB:
     * RSS 170 to 173 % of the bound with 256 KiB, 131 to 133 % with 16 KiB,
     * the rest mostly the resting models' index; labels/s unchanged).  At
     * most 32,768 of them, half the kernel's vm.max_map_count (65,530
     * mappings by default; adjacent ones merge, 1,400 at 10,000 models, but
     * a freed one between two does not), so that the daemon's own maps (a
     * journal segment read at start, the snapshot child's shared results)
     * still find room; past that glibc serves them from the heap again. */
    mallopt(M_MMAP_THRESHOLD, 16 * 1024);
    mallopt(M_MMAP_MAX, 32768);
    /* One arena for every thread, not glibc's one per thread: a model
     * loaded from rest is decoded by the loader thread, and with an arena
     * of its own those models filled it while the memory freed by the
     * models put to rest stayed in the loop's, for no one else to use (two
     * arenas keep that split); under max_memory alone the RSS ended near
     * twice what max_memory counts (bench_zipf, 10,000 models, max_memory
     * 512 MiB: 914 MiB, with one arena 627 MiB, labels/s no lower;
     * test_e2e_cold's max_memory_churn_evicts_off_the_loop_and_bounds_rss).
     * The threads that share it allocate little beside the loop: the
     * loader its decoded models, the writer its encodings.  Set before
     * any thread starts. */
    mallopt(M_ARENA_MAX, 1);
    const char *path = NULL;
    bool check = false;
    int opt;
    while ((opt = getopt_long(argc, argv, "c:thV", opts, NULL)) != -1) {
        switch (opt) {
        case 'c': path = optarg; break;
        case 't': check = true; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("perceptrond %s\n", PC_VERSION_STRING); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "perceptrond: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    pcd_config cfg;
    char err[600];
    if (path) {
        if (pcd_config_load(path, &cfg, err, sizeof err) != 0) {
            fprintf(stderr, "perceptrond: %s\n", err);
            return 2;
        }
    } else {
        pcd_config_default(&cfg);
    }
    if (check) {
        if (check_files(&cfg, err, sizeof err) != 0) {
            fprintf(stderr, "perceptrond: %s\n", err);
            pcd_config_free(&cfg);
            return 2;
        }
        pcd_config_dump(&cfg, stdout);
        fprintf(stderr, "perceptrond: configuration %s is valid\n", path ? path : "(built-in default)");
        pcd_config_free(&cfg);
        return 0;
    }
    if (!pcd_log_set_level(cfg.log_level)) {
        fprintf(stderr, "perceptrond: unknown log_level '%s'\n", cfg.log_level);
        pcd_config_free(&cfg);
        return 2;
    }
    return pcd_run(&cfg, path);
}
