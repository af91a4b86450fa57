/* e2e.h - start the real perceptrond binary and talk to it over real sockets.
 *
 * Each test gets a fresh temporary directory holding the config, the state
 * directory and the Unix socket, plus a free loopback TCP port.  The daemon
 * binary's path comes from $PERCEPTROND (set by tests/meson.build).  Its
 * stderr goes to <dir>/daemon.log, which tests may grep. */
#ifndef PC_E2E_H
#define PC_E2E_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clients/pcclient.h"

typedef struct e2e {
    char dir[128];
    char sock[192];
    char tcp[64];
    char config[192];
    char log[192];
    int port;
    pid_t pid;
} e2e;

/* Seconds on the monotonic clock. */
static inline double e2e_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void e2e_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline int e2e_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ck_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    ck_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    int port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* The keys that make a template's models plain: the rule as its paper states
 * it, without the default template's averaging and feature preparation.
 * Tests whose figures are computed by hand for a rule use it; the default
 * template itself is tested by readme_quickstart and test_config. */
#define E2E_PLAIN "averaged: false, scale: none, transforms: []"

/* Writes the config: the listeners and state of this test, then `extra`
 * (YAML lines: limits, models...); without a template in extra, the plain
 * perceptron's (E2E_PLAIN). */
static inline void e2e_write_config(e2e *d, const char *extra)
{
    FILE *f = fopen(d->config, "w");
    ck_assert(f != NULL);
    fprintf(f,
            "listen:\n  tcp: [\"127.0.0.1:%d\"]\n  unix: [\"%s\"]\n"
            "state_dir: %s/state\n"
            "%s\n%s",
            d->port, d->sock, d->dir, extra ? extra : "",
            extra && strstr(extra, "template:") ? ""
                                                : "template: {rule: perceptron, " E2E_PLAIN "}\n");
    fclose(f);
}

/* Starts the daemon on the current config and waits until it answers. */
static inline void e2e_start(e2e *d)
{
    const char *bin = getenv("PERCEPTROND");
    ck_assert_msg(bin != NULL, "PERCEPTROND is not set");
    /* The socket file a killed daemon left is not the new one's: its
     * snapshot child, until it closes its copy of the listener (slow under
     * valgrind), still queues connections there and resets them as it
     * exits.  Without the file, a connect succeeds once this daemon listens. */
    unlink(d->sock);
    d->pid = fork();
    ck_assert(d->pid >= 0);
    if (d->pid == 0) {
        int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, 2);
        dup2(fd, 1);
        /* PCD_TEST_WRAPPER (e.g. "valgrind -q ..."): run the daemon under it. */
        const char *wrap = getenv("PCD_TEST_WRAPPER");
        if (wrap && *wrap)
            execl("/bin/sh", "sh", "-c", "exec $PCD_TEST_WRAPPER \"$0\" \"$@\"", bin, "--config",
                  d->config, (char *)NULL);
        else
            execl(bin, bin, "--config", d->config, (char *)NULL);
        _exit(127);
    }
    char err[256];
    for (int i = 0; i < 500; i++) {
        pcc_client *c;
        if (pcc_connect(d->sock, &c, err, sizeof err) == 0) {
            pcc_close(c);
            return;
        }
        int status;
        if (waitpid(d->pid, &status, WNOHANG) == d->pid)
            ck_abort_msg("perceptrond exited during start (status %d); see %s", status, d->log);
        e2e_sleep_ms(10);
    }
    ck_abort_msg("perceptrond did not start listening on %s", d->sock);
}

static inline void e2e_init(e2e *d, const char *extra)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "/tmp/pcd-e2e-XXXXXX");
    ck_assert(mkdtemp(d->dir) != NULL);
    snprintf(d->sock, sizeof d->sock, "%s/pcd.sock", d->dir);
    snprintf(d->config, sizeof d->config, "%s/perceptrond.yaml", d->dir);
    snprintf(d->log, sizeof d->log, "%s/daemon.log", d->dir);
    d->port = e2e_free_port();
    snprintf(d->tcp, sizeof d->tcp, "tcp:127.0.0.1:%d", d->port);
    e2e_write_config(d, extra);
}

/* SIGTERM and wait; returns the exit status. */
static inline int e2e_stop(e2e *d)
{
    if (d->pid <= 0)
        return -1;
    kill(d->pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 1000; i++) {
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        e2e_sleep_ms(10);
    }
    kill(d->pid, SIGKILL);
    waitpid(d->pid, &status, 0);
    d->pid = 0;
    ck_abort_msg("perceptrond did not stop within 10 s of SIGTERM");
    return -1;
}

/* kill -9 and reap: no final snapshot, no flush; what is on disk is all. */
static inline void e2e_kill9(e2e *d)
{
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
}

static inline bool e2e_alive(e2e *d)
{
    int status;
    return d->pid > 0 && waitpid(d->pid, &status, WNOHANG) == 0;
}

static inline void e2e_cleanup(e2e *d)
{
    if (d->pid > 0)
        e2e_stop(d);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", d->dir);
}

/* Stops n daemons d (calloc'd) cleanly, each checked (valgrind's 99 would
 * show here), removes their directories and frees d. */
static inline void e2e_stop_all(e2e *d, int n)
{
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(e2e_stop(&d[i]), 0);
        e2e_cleanup(&d[i]);
    }
    free(d);
}

static inline bool e2e_log_has(e2e *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return false;
    char line[2048];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* The daemon runs under PCD_TEST_WRAPPER (valgrind in scripts/test). */
static inline bool e2e_daemon_wrapped(void)
{
    const char *w = getenv("PCD_TEST_WRAPPER");
    return w && *w;
}

/* The daemon runs plain (not under valgrind or a sanitizer), so that its
 * memory figures (RSS, an address-space cap) mean what they say. */
static inline bool e2e_daemon_plain(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return false;
#else
    return !e2e_daemon_wrapped();
#endif
}

static inline pcc_client *e2e_connect(const char *address)
{
    pcc_client *c;
    char err[256];
    ck_assert_msg(pcc_connect(address, &c, err, sizeof err) == 0, "%s", err);
    return c;
}

/* A fixture's halves for a suite whose every test gets a fresh daemon d of
 * the default config: started, then stopped cleanly (exit status 0, checked:
 * valgrind's 99 would be a leak or a memory error) and its directory removed. */
static inline void e2e_fixture_start(e2e *d)
{
    e2e_init(d, NULL);
    e2e_start(d);
}

static inline void e2e_fixture_stop(e2e *d)
{
    if (d->pid > 0)
        ck_assert_int_eq(e2e_stop(d), 0);
    e2e_cleanup(d);
}

/* The opening of most tests: a daemon of the default config in a fresh
 * directory, started, and a client on its Unix socket. */
static inline pcc_client *e2e_up(e2e *d)
{
    e2e_init(d, NULL);
    e2e_start(d);
    return e2e_connect(d->sock);
}

/* The closing: c closed, the daemon stopped cleanly (checked: exit status
 * 0) and its directory removed. */
static inline void e2e_down(e2e *d, pcc_client *c)
{
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(d), 0);
    e2e_cleanup(d);
}

/* The i-th example of a deterministic stream of 6 dense features around a
 * fixed hyperplane, 10 % of labels flipped towards +1 when noisy (the
 * journal and Redis suites replay such streams into twin daemons). */
#define E2E_DIM 6
static inline void e2e_example(uint64_t i, uint64_t seed, bool noisy, double x[E2E_DIM], int *y)
{
    uint64_t s = i * 0x9E3779B97F4A7C15ull + seed;
    double dot = 0;
    static const double w[E2E_DIM] = {1, -2, 0.5, 3, -1, 0.25};
    for (int k = 0; k < E2E_DIM; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[k] = (double)(s % 2001) / 1000.0 - 1.0;
        dot += w[k] * x[k];
    }
    *y = dot + (noisy && (s >> 20) % 10 == 0 ? 1.5 : 0) > 0 ? 1 : -1;
}

/* ---- packing helpers ---- */

static inline void e2e_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

/* A dense feature array. */
static inline void e2e_dense(msgpack_packer *pk, size_t n, const double *v)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++)
        msgpack_pack_double(pk, v[i]);
}

/* Starts method(model, x, ...) with x an example of E2E_DIM dense values:
 * the packer for the params after them; *id the request's msgid. */
static inline msgpack_packer *e2e_request_x(pcc_client *c, const char *method, uint32_t nparams,
                                            const char *model, const double *x, uint32_t *id)
{
    msgpack_packer *pk = pcc_request(c, method, nparams, id);
    e2e_str(pk, model);
    e2e_dense(pk, E2E_DIM, x);
    return pk;
}

/* predict's options {"event": ev} (label later). */
static inline void e2e_pack_event(msgpack_packer *pk, int64_t ev)
{
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    msgpack_pack_int64(pk, ev);
}

/* Calls and returns the result; fails the test on an error response unless
 * want_code >= 0, in which case the error code must be want_code. */
static inline const msgpack_object *e2e_call(pcc_client *c, uint32_t id, int64_t want_code)
{
    const msgpack_object *error, *result;
    char err[256];
    ck_assert_msg(pcc_call(c, id, &error, &result, err, sizeof err) == 0, "%s", err);
    if (want_code < 0) {
        if (error) {
            pcc_error_message(error, err, sizeof err);
            ck_abort_msg("unexpected error %lld: %s", (long long)pcc_error_code(error), err);
        }
        return result;
    }
    ck_assert_msg(error != NULL, "expected error code %lld, got success", (long long)want_code);
    pcc_error_message(error, err, sizeof err);
    ck_assert_msg(pcc_error_code(error) == want_code, "expected error code %lld, got %lld: %s",
                  (long long)want_code, (long long)pcc_error_code(error), err);
    ck_assert_msg(err[0] != 0, "error without a message");
    return error;
}

/* label(model, dense x, y) -> result map */
static inline const msgpack_object *e2e_label(pcc_client *c, const char *model, size_t n,
                                              const double *x, int y)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, model);
    e2e_dense(pk, n, x);
    msgpack_pack_int(pk, y);
    return e2e_call(c, id, -1);
}

static inline double e2e_score(pcc_client *c, const char *model, size_t n, const double *x)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
    e2e_str(pk, model);
    e2e_dense(pk, n, x);
    const msgpack_object *r = e2e_call(c, id, -1);
    return pcc_number(pcc_map_get(r, "score"));
}

/* A one-param admin call (model name) or none (name NULL). */
static inline const msgpack_object *e2e_admin(pcc_client *c, const char *method, const char *name,
                                              int64_t want_code)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, method, name ? 1 : 0, &id);
    if (name)
        e2e_str(pk, name);
    return e2e_call(c, id, want_code);
}

/* create(name, {rule: perceptron, challengers: [{rule: pa}]}) */
static inline void e2e_create_with_challenger(pcc_client *c, const char *name)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, 2);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "challengers");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "rule");
    e2e_str(pk, "pa");
    e2e_call(c, id, -1);
}

/* create(name, {rule: rule, dim: dim, ...extra key/values as str->str}) */
static inline void e2e_create(pcc_client *c, const char *name, const char *rule, uint32_t dim,
                              bool bias)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, 3);
    e2e_str(pk, "rule");
    e2e_str(pk, rule);
    e2e_str(pk, "dim");
    msgpack_pack_uint32(pk, dim);
    e2e_str(pk, "bias");
    if (bias)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    e2e_call(c, id, -1);
}

/* info's digest of model (a string shorter than cap) into out, to compare
 * two models' weights bit for bit. */
static inline void e2e_info_digest(pcc_client *c, const char *model, char *out, size_t cap)
{
    const msgpack_object *d = pcc_map_get(e2e_admin(c, "info", model, -1), "digest");
    ck_assert(d && d->type == MSGPACK_OBJECT_STR && d->via.str.size < cap);
    memcpy(out, d->via.str.ptr, d->via.str.size);
    out[d->via.str.size] = 0;
}

static inline uint64_t e2e_info_u64(pcc_client *c, const char *model, const char *key)
{
    const msgpack_object *r = e2e_admin(c, "info", model, -1);
    double v = pcc_number(pcc_map_get(r, key));
    ck_assert_msg(!isnan(v), "info has no numeric '%s'", key);
    return (uint64_t)v;
}

/* The sentinel: a small model that bad input aimed elsewhere must leave
 * exactly as it was.  e2e_sentinel_make creates it on address, teaches it
 * 20 examples and returns its score on probe; e2e_sentinel_check asserts
 * that address still serves it with that score, bit for bit, and those 20
 * examples. */
static inline double e2e_sentinel_make(const char *address, const double probe[3])
{
    pcc_client *c = e2e_connect(address);
    e2e_create(c, "sentinel", "perceptron", 3, true);
    for (int i = 0; i < 20; i++)
        e2e_label(c, "sentinel", 3, (double[]){i % 3 - 1.0, i % 5 - 2.0, 1}, i % 2 ? 1 : -1);
    double score = e2e_score(c, "sentinel", 3, probe);
    pcc_close(c);
    return score;
}

static inline void e2e_sentinel_check(const char *address, const double probe[3], double score)
{
    pcc_client *c = e2e_connect(address);
    double s = e2e_score(c, "sentinel", 3, probe);
    ck_assert(memcmp(&s, &score, sizeof s) == 0);
    ck_assert_uint_eq(e2e_info_u64(c, "sentinel", "examples"), 20);
    pcc_close(c);
}

/* The end of a suite that attacks d with a sentinel in it: d still serves,
 * the sentinel is untouched (e2e_sentinel_check over TCP), and d stops
 * cleanly (exit status 0, checked); its directory is removed. */
static inline void e2e_sentinel_stop(e2e *d, const double probe[3], double score)
{
    e2e_sentinel_check(d->tcp, probe, score);
    ck_assert(e2e_alive(d));
    ck_assert_int_eq(e2e_stop(d), 0);
    e2e_cleanup(d);
}

/* path (cap bytes) = model's newest snapshot file in the state directory dir. */
static inline void e2e_newest_snapshot(const char *dir, const char *model, char *path, size_t cap)
{
    uint64_t best = 0;
    DIR *dd = opendir(dir);
    ck_assert(dd != NULL);
    struct dirent *de;
    size_t ml = strlen(model);
    while ((de = readdir(dd)))
        if (!strncmp(de->d_name, model, ml) && de->d_name[ml] == '.' &&
            strtoull(de->d_name + ml + 1, NULL, 10) > best)
            best = strtoull(de->d_name + ml + 1, NULL, 10);
    closedir(dd);
    ck_assert_msg(best > 0, "no snapshot of %s in %s", model, dir);
    snprintf(path, cap, "%s/%s.%llu.snap", dir, model, (unsigned long long)best);
}

/* Flips two bytes near the end of model's newest snapshot (its model bytes:
 * the head still reads, the CRC no longer matches). */
static inline void e2e_corrupt_newest(const char *dir, const char *model)
{
    char path[400];
    e2e_newest_snapshot(dir, model, path, sizeof path);
    FILE *f = fopen(path, "r+b");
    ck_assert_msg(f != NULL, "%s", path);
    fseek(f, -10, SEEK_END);
    fputc(0x5a, f);
    fputc(0xa5, f);
    fclose(f);
}

#endif
