/* test_e2e_metrics.c - the HTTP endpoint: /metrics parsed and checked for
 * the counters of a known run, /healthz, /readyz, and what it refuses.
 *
 * The exposition text is parsed strictly (every sample line is
 * `name{labels} value`, every family has its # TYPE before its samples,
 * histograms are cumulative and end in +Inf == _count), so a malformed line
 * fails the test, not only a wrong number. */
#include "tests/e2e.h"
#include "tests/testutil.h"

#include <netdb.h>
#include <sys/mount.h>

static e2e d;
static int mport;

static void setup(void)
{
    e2e_init(&d, NULL);
    mport = e2e_free_port();
    char extra[200];
    snprintf(extra, sizeof extra, "metrics: {listen: \"127.0.0.1:%d\"}\nsnapshot: {interval: 0}\n",
             mport);
    e2e_write_config(&d, extra);
    e2e_start(&d);
}

static void teardown(void)
{
    if (d.pid > 0)
        ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}

/* One HTTP/1.0 request; returns the status, the body in body (malloc'd). */
static int http(const char *method, const char *path, char **body)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)mport),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    char req[256];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: localhost\r\n\r\n", method, path);
    ck_assert(write(fd, req, (size_t)n) == n);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)r;
        if (cap - len < 4096)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    buf[len] = 0;
    int status = 0;
    ck_assert_msg(sscanf(buf, "HTTP/1.%*d %d", &status) == 1, "not HTTP: %.80s", buf);
    char *b = strstr(buf, "\r\n\r\n");
    ck_assert(b != NULL);
    *body = strdup(b + 4);
    free(buf);
    return status;
}

/* ---- a strict reader of the text format -------------------------------- */

typedef struct sample {
    char name[96];
    char labels[160];
    double value;
} sample;

static sample samples[4096];
static size_t nsamples;

static void parse(char *text)
{
    char typed[256][96];
    size_t ntyped = 0;
    nsamples = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "# HELP ", 7))
            continue;
        if (!strncmp(line, "# TYPE ", 7)) {
            char fam[96], type[32];
            ck_assert_msg(sscanf(line + 7, "%95s %31s", fam, type) == 2, "%s", line);
            ck_assert(!strcmp(type, "counter") || !strcmp(type, "gauge") ||
                      !strcmp(type, "histogram"));
            ck_assert(ntyped < 256);
            snprintf(typed[ntyped++], 96, "%s", fam);
            continue;
        }
        ck_assert_msg(line[0] != '#', "stray comment %s", line);
        sample *s = &samples[nsamples++];
        ck_assert(nsamples < 4096);
        memset(s, 0, sizeof *s);
        size_t nl = strcspn(line, "{ ");
        ck_assert(nl > 0 && nl < sizeof s->name);
        memcpy(s->name, line, nl);
        char *p = line + nl;
        if (*p == '{') {
            char *end = strchr(p, '}');
            ck_assert_msg(end && (size_t)(end - p - 1) < sizeof s->labels, "%s", line);
            memcpy(s->labels, p + 1, (size_t)(end - p - 1));
            p = end + 1;
        }
        ck_assert_msg(*p == ' ', "%s", line);
        char *e;
        s->value = strtod(p + 1, &e);
        ck_assert_msg(*e == 0 && e != p + 1, "bad value: %s", line);
        /* its family was typed before it */
        bool found = false;
        for (size_t i = 0; i < ntyped && !found; i++) {
            size_t fl = strlen(typed[i]);
            found = !strncmp(s->name, typed[i], fl) &&
                    (!s->name[fl] || !strcmp(s->name + fl, "_bucket") ||
                     !strcmp(s->name + fl, "_sum") || !strcmp(s->name + fl, "_count"));
        }
        ck_assert_msg(found, "no # TYPE before %s", line);
    }
}

/* The value of name{labels}; fails the test when there is none. */
static double get(const char *name, const char *labels)
{
    for (size_t i = 0; i < nsamples; i++)
        if (!strcmp(samples[i].name, name) && !strcmp(samples[i].labels, labels ? labels : ""))
            return samples[i].value;
    ck_abort_msg("no sample %s{%s}", name, labels ? labels : "");
    return NAN;
}

static bool has(const char *name, const char *labels)
{
    for (size_t i = 0; i < nsamples; i++)
        if (!strcmp(samples[i].name, name) && !strcmp(samples[i].labels, labels ? labels : ""))
            return true;
    return false;
}

static char *scrape(void)
{
    char *body;
    ck_assert_int_eq(http("GET", "/metrics", &body), 200);
    parse(body);
    return body;
}

/* The histogram of method: cumulative buckets, +Inf equal to _count. */
static double histogram_count(const char *method)
{
    char labels[160];
    double prev = 0, inf = -1;
    size_t buckets = 0;
    for (size_t i = 0; i < nsamples; i++) {
        snprintf(labels, sizeof labels, "method=\"%s\",le=", method);
        if (strcmp(samples[i].name, "perceptrond_request_duration_seconds_bucket") ||
            strncmp(samples[i].labels, labels, strlen(labels)))
            continue;
        ck_assert(samples[i].value >= prev);
        prev = samples[i].value;
        buckets++;
        if (strstr(samples[i].labels, "le=\"+Inf\""))
            inf = samples[i].value;
    }
    ck_assert_uint_eq(buckets, 15);
    snprintf(labels, sizeof labels, "method=\"%s\"", method);
    ck_assert(inf == get("perceptrond_request_duration_seconds_count", labels));
    return inf;
}

START_TEST(metrics_count_a_known_run)
{
    pcc_client *u = e2e_connect(d.sock), *t = e2e_connect(d.tcp);
    e2e_create(u, "m", "perceptron", 2, true);
    /* 10 labels: mistakes and updates as the model itself counts them */
    for (int i = 0; i < 10; i++)
        e2e_label(t, "m", 2, (double[]){i % 2 ? 1 : -1, (i % 3) - 1.0}, i % 2 ? 1 : -1);
    for (int i = 0; i < 5; i++)
        e2e_score(t, "m", 2, (double[]){1, 0});
    uint32_t id;
    msgpack_packer *pk = pcc_request(t, "predict", 2, &id); /* unknown model: code 5 */
    e2e_str(pk, "nope");
    e2e_dense(pk, 2, (double[]){1, 0});
    e2e_call(t, id, 5);
    e2e_admin(t, "drop", "m", 13);       /* TCP has learn, not admin */
    e2e_admin(t, "auth", "not-a-token-at-all", 14);
    pcc_raw(t, "\xc1", 1);               /* never-used byte: a framing error, connection closed */
    char err[256];
    ck_assert(pcc_flush(t, err, sizeof err) == 0);
    const msgpack_object *e, *r;
    ck_assert(pcc_read(t, &id, &e, &r, 5000, err, sizeof err) != 0);
    pcc_close(t);
    const msgpack_object *info = e2e_admin(u, "info", "m", -1);
    double mistakes = pcc_number(pcc_map_get(info, "mistakes"));
    double updates = pcc_number(pcc_map_get(info, "updates"));
    ck_assert(mistakes >= 1 && updates >= 1);
    /* what the model holds, as max_memory counts it: its learners and names, and a little more
     * (the registry entry) */
    double held = pcc_number(pcc_map_get(info, "bytes")) +
                  pcc_number(pcc_map_get(info, "feature_names_bytes"));
    ck_assert(held >= 2 * sizeof(double)); /* at least its 2 weights */

    char *body = scrape();
    ck_assert(get("perceptrond_requests_total", "method=\"create\"") == 1);
    ck_assert(get("perceptrond_requests_total", "method=\"label\"") == 10);
    ck_assert(get("perceptrond_requests_total", "method=\"predict\"") == 6);
    ck_assert(get("perceptrond_requests_total", "method=\"drop\"") == 1);
    ck_assert(get("perceptrond_requests_total", "method=\"auth\"") == 1);
    ck_assert(get("perceptrond_requests_total", "method=\"info\"") == 1);
    ck_assert(get("perceptrond_request_errors_total", "method=\"predict\",code=\"model\"") == 1);
    ck_assert(get("perceptrond_request_errors_total", "method=\"drop\",code=\"denied\"") == 1);
    ck_assert(get("perceptrond_request_errors_total", "method=\"auth\",code=\"auth\"") == 1);
    ck_assert(!has("perceptrond_request_errors_total", "method=\"label\",code=\"model\""));
    ck_assert(get("perceptrond_errors_total", "code=\"parse\"") == 1);
    ck_assert(get("perceptrond_errors_total", "code=\"denied\"") == 1);
    ck_assert(get("perceptrond_denied_total", NULL) == 1);
    ck_assert(get("perceptrond_auth_failures_total", NULL) == 1);
    /* the histograms: every timed request once */
    ck_assert(histogram_count("label") == 10);
    ck_assert(histogram_count("predict") == 6); /* the unknown model's too: its handler ran */
    ck_assert(histogram_count("create") == 1);
    ck_assert(histogram_count("drop") == 0);    /* denied before its handler ran */
    ck_assert(get("perceptrond_request_duration_seconds_sum", "method=\"label\"") > 0);
    /* per model */
    ck_assert(get("perceptrond_models", NULL) == 1);
    ck_assert(get("perceptrond_model_examples_total", "model=\"m\"") == 10);
    ck_assert(get("perceptrond_model_mistakes_total", "model=\"m\"") == mistakes);
    ck_assert(get("perceptrond_model_updates_total", "model=\"m\"") == updates);
    ck_assert(get("perceptrond_model_dirty", "model=\"m\"") == 1);
    ck_assert(!has("perceptrond_model_snapshot_age_seconds", "model=\"m\"")); /* never saved */
    double mem = get("perceptrond_model_memory_bytes", "model=\"m\"");
    ck_assert_msg(mem >= held && mem < held + 4096, "memory %g, info says %g", mem, held);
    /* connections: u is open, t was closed on the framing error (and e2e_start's probe) */
    ck_assert(get("perceptrond_connections", NULL) == 1);
    ck_assert(get("perceptrond_connections_total", NULL) == 3);
    ck_assert(get("perceptrond_connections_closed_total", "reason=\"error\"") == 1);
    ck_assert(get("perceptrond_journal_healthy", NULL) == 1);
    ck_assert(get("perceptrond_journal_appended_total", NULL) == 11); /* create + 10 labels */
    ck_assert(get("perceptrond_ready", NULL) == 1);
    ck_assert(get("perceptrond_snapshots_written_total", NULL) == 0);
    /* the process: its RSS within 10 % of what /proc says now, descriptors, CPU */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)d.pid);
    FILE *f = fopen(path, "r");
    unsigned long long vsz, rss;
    ck_assert(f && fscanf(f, "%llu %llu", &vsz, &rss) == 2);
    fclose(f);
    double bytes = (double)rss * (double)sysconf(_SC_PAGESIZE);
    double said = get("process_resident_memory_bytes", NULL);
    ck_assert_msg(fabs(said - bytes) < 0.1 * bytes, "RSS %g, /proc says %g", said, bytes);
    ck_assert(get("process_open_fds", NULL) >= 6); /* 3 std, epoll, listeners, u, journal */
    ck_assert(get("process_max_fds", NULL) >= 64);
    ck_assert(get("process_cpu_seconds_total", NULL) >= 0);
    free(body);

    /* a save: the snapshot figures move */
    e2e_admin(u, "save", NULL, -1);
    body = scrape();
    ck_assert(get("perceptrond_snapshots_written_total", NULL) == 1);
    ck_assert(get("perceptrond_model_dirty", "model=\"m\"") == 0);
    ck_assert(get("perceptrond_model_snapshot_generation", "model=\"m\"") == 1);
    double age = get("perceptrond_model_snapshot_age_seconds", "model=\"m\"");
    ck_assert(age >= 0 && age < 5);
    ck_assert(get("perceptrond_requests_total", "method=\"save\"") == 1);
    free(body);
    pcc_close(u);
}
END_TEST

START_TEST(health_and_readiness)
{
    char *body;
    ck_assert_int_eq(http("GET", "/healthz", &body), 200);
    ck_assert_str_eq(body, "ok\n");
    free(body);
    ck_assert_int_eq(http("GET", "/readyz", &body), 200);
    ck_assert_str_eq(body, "ready\n");
    free(body);
    ck_assert_int_eq(http("GET", "/nothing", &body), 404);
    free(body);
    ck_assert_int_eq(http("POST", "/metrics", &body), 501);
    free(body);
    /* HEAD answers without a body */
    ck_assert_int_eq(http("HEAD", "/metrics", &body), 200);
    ck_assert_str_eq(body, "");
    free(body);
    ck_assert(e2e_log_has(&d, "metrics on http://127.0.0.1:"));
}
END_TEST

/* Not ready while the shared log is unreachable: writes would be refused. */
START_TEST(not_ready_without_the_shared_log)
{
    ck_assert_int_eq(e2e_stop(&d), 0);
    char extra[400];
    snprintf(extra, sizeof extra,
             "metrics: {listen: \"127.0.0.1:%d\"}\nlog: {backend: redis, address: \"unix:%s/no-redis.sock\"}\n",
             mport, d.dir);
    e2e_write_config(&d, extra);
    e2e_start(&d);
    char *body;
    ck_assert_int_eq(http("GET", "/readyz", &body), 503);
    ck_assert_msg(strstr(body, "the shared log (Redis) is not connected"), "%s", body);
    free(body);
    ck_assert_int_eq(http("GET", "/healthz", &body), 200);
    free(body);
    body = scrape();
    ck_assert(get("perceptrond_ready", NULL) == 0);
    ck_assert(get("perceptrond_log_up", NULL) == 0);
    ck_assert(!has("perceptrond_journal_healthy", NULL)); /* the shared log replaces the journal */
    free(body);
}
END_TEST

/* A full disk under the journal: /readyz says why with 503 while writes are
 * refused, the journal's metrics show the failure, and it is ready again once
 * space is freed. */
START_TEST(not_ready_while_the_journal_is_failed)
{
    ck_assert_int_eq(e2e_stop(&d), 0);
    char jdir[300], filler[400], extra[600];
    snprintf(jdir, sizeof jdir, "%s/jfs", d.dir);
    mkdir(jdir, 0700);
    if (mount("tmpfs", jdir, "tmpfs", 0, "size=256k") != 0) {
        fprintf(stderr, "not_ready_while_the_journal_is_failed: skipped, cannot mount a tmpfs (%s)\n",
                strerror(errno));
        return;
    }
    snprintf(extra, sizeof extra, "metrics: {listen: \"127.0.0.1:%d\"}\njournal: {dir: %s}\n", mport,
             jdir);
    e2e_write_config(&d, extra);
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "m", "perceptron", 2, true);
    snprintf(filler, sizeof filler, "%s/filler", jdir);
    int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char block[4096] = {0};
    while (write(fd, block, sizeof block) > 0)
        ;
    close(fd);
    bool refused = false;
    for (int i = 0; i < 20000 && !refused; i++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "label", 3, &id);
        e2e_str(pk, "m");
        e2e_dense(pk, 2, (double[]){i % 2 ? 1 : -1, 0.5});
        msgpack_pack_int(pk, i % 2 ? 1 : -1);
        const msgpack_object *e, *r;
        char why[256];
        if (pcc_call(c, id, &e, &r, why, sizeof why) != 0) { /* closed unanswered */
            pcc_close(c);
            c = e2e_connect(d.sock);
            continue;
        }
        refused = e != NULL;
    }
    ck_assert(refused);
    char *body;
    ck_assert_int_eq(http("GET", "/readyz", &body), 503);
    ck_assert_msg(strstr(body, "No space left on device"), "%s", body);
    free(body);
    body = scrape();
    ck_assert(get("perceptrond_ready", NULL) == 0);
    ck_assert(get("perceptrond_journal_healthy", NULL) == 0);
    ck_assert(get("perceptrond_journal_write_failures_total", NULL) >= 1);
    free(body);
    unlink(filler);
    int status = 503;
    for (int i = 0; i < 50 && status != 200; i++) {
        e2e_sleep_ms(100);
        status = http("GET", "/readyz", &body);
        free(body);
    }
    ck_assert_int_eq(status, 200);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    umount(jdir);
}
END_TEST

/* A busy port stops the start; without metrics.listen nothing listens. */
START_TEST(the_port_must_be_free)
{
    ck_assert_int_eq(e2e_stop(&d), 0);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)mport),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ck_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0);
    const char *bin = getenv("PERCEPTROND");
    char cmd[800];
    snprintf(cmd, sizeof cmd, "'%s' --config '%s' >>'%s' 2>&1", bin, d.config, d.log);
    int st = system(cmd);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    ck_assert(e2e_log_has(&d, "cannot listen on metrics.listen 127.0.0.1:"));
    close(fd);
    e2e_write_config(&d, NULL);
    e2e_start(&d);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert(connect(fd, (struct sockaddr *)&a, sizeof a) != 0);
    close(fd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_metrics");
    TCase *tc = TU_TCASE(s, "metrics", 120, metrics_count_a_known_run, health_and_readiness,
        the_port_must_be_free, not_ready_without_the_shared_log,
        not_ready_while_the_journal_is_failed);
    tcase_add_checked_fixture(tc, setup, teardown);
    return tu_run(s);
}
