/* metrics.c - /metrics: what `stats` and `info` report, for Prometheus.
 *
 * Names follow Prometheus' conventions: a perceptrond_ prefix, _total for
 * counters, base units (seconds, bytes).  Per-method request counts, errors
 * by method and code, and a latency histogram of the handler's time (from
 * the request's dispatch to its answer packed: no network or queueing in it)
 * come from dispatch.c; per-model figures from the models themselves; the
 * journal's and the shared log's from their stats.  Model names need no
 * escaping in label values: pcp_model_name_valid allows no quote, backslash
 * or newline.  docs/operations.md lists every metric.
 */
#include "daemon/net/metrics.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/core/budget.h"
#include "daemon/core/rest.h"
#include "daemon/journal/journal.h"
#include "proto/proto.h"

typedef struct out {
    struct evbuffer *b;
    int failed;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (evbuffer_add_vprintf(o->b, fmt, ap) < 0)
        o->failed = -1;
    va_end(ap);
}

/* # HELP and # TYPE of a family. */
static void family(out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP perceptrond_%s %s\n# TYPE perceptrond_%s %s\n", name, help, name, type);
}

static void one(out *o, const char *name, const char *type, const char *help, double v)
{
    family(o, name, type, help);
    put(o, "perceptrond_%s %.17g\n", name, v);
}

/* A histogram's lines: labels ("" or `key="v"`) go before `le`. */
static void histogram(out *o, const char *name, const char *labels, const pcd_latency *h)
{
    const char *comma = *labels ? "," : "";
    uint64_t cum = 0;
    for (size_t b = 0; b <= PCD_LATENCY_BUCKETS; b++) {
        cum += h->le[b];
        char le[32] = "+Inf";
        if (b < PCD_LATENCY_BUCKETS)
            snprintf(le, sizeof le, "%g", pcd_latency_bounds[b]);
        put(o, "perceptrond_%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, comma, le,
            (unsigned long long)cum);
    }
    char braced[80] = "";
    if (*labels)
        snprintf(braced, sizeof braced, "{%s}", labels);
    put(o, "perceptrond_%s_sum%s %.9f\nperceptrond_%s_count%s %llu\n", name, braced, h->seconds,
        name, braced, (unsigned long long)cum);
}

static void methods(out *o, const pcd_counters *k)
{
    family(o, "requests_total", "counter", "Requests and notifications handled, by method.");
    for (size_t m = 0; m < PCP_M_COUNT; m++)
        put(o, "perceptrond_requests_total{method=\"%s\"} %llu\n", pcp_methods[m].name,
            (unsigned long long)k->methods[m].calls);
    family(o, "request_errors_total", "counter",
           "Requests answered with an error, by method and error code.");
    for (size_t m = 0; m < PCP_M_COUNT; m++)
        for (int c = 1; c < PCP_CODE_COUNT; c++)
            if (k->methods[m].errors[c])
                put(o, "perceptrond_request_errors_total{method=\"%s\",code=\"%s\"} %llu\n",
                    pcp_methods[m].name, pcp_code_name((pcp_code)c),
                    (unsigned long long)k->methods[m].errors[c]);
    family(o, "request_duration_seconds", "histogram",
           "Time from a request's dispatch to its answer packed, by method (with metrics.listen).");
    for (size_t m = 0; m < PCP_M_COUNT; m++) {
        char label[64];
        snprintf(label, sizeof label, "method=\"%s\"", pcp_methods[m].name);
        histogram(o, "request_duration_seconds", label, &k->methods[m].time);
    }
    family(o, "errors_total", "counter",
           "Every error answered or closed on, by code (with the framing errors no method has).");
    for (int c = 1; c < PCP_CODE_COUNT; c++)
        put(o, "perceptrond_errors_total{code=\"%s\"} %llu\n", pcp_code_name((pcp_code)c),
            (unsigned long long)k->errors_by_code[c]);
}

static void connections(out *o, const pcd_server *srv)
{
    const pcd_counters *k = &srv->loop.counters;
    one(o, "connections", "gauge", "Client connections open.", srv->loop.nconns);
    one(o, "connections_total", "counter", "Client connections accepted.",
        (double)k->connections_total);
    one(o, "connections_rejected_total", "counter",
        "Connections refused (max_connections, or stopping).", (double)k->connections_rejected);
    family(o, "connections_closed_total", "counter",
           "Connections the daemon closed, by reason (not those the clients closed).");
    put(o, "perceptrond_connections_closed_total{reason=\"idle\"} %llu\n"
           "perceptrond_connections_closed_total{reason=\"error\"} %llu\n",
        (unsigned long long)k->connections_closed_idle,
        (unsigned long long)k->connections_closed_error);
    one(o, "denied_total", "counter", "Requests refused for want of a right (code denied).",
        (double)k->denied);
    one(o, "auth_failures_total", "counter", "auth calls with a token that matches none.",
        (double)k->auth_failures);
    one(o, "received_bytes_total", "counter", "Bytes read from clients.", (double)k->bytes_in);
    one(o, "sent_bytes_total", "counter", "Bytes of answers sent to clients.",
        (double)k->bytes_out);
}

static void models(out *o, const pcd_server *srv, int64_t now)
{
    size_t n;
    pcd_model **all = pcd_registry_list(&srv->models, &n);
    if (!all && srv->models.count) {
        o->failed = -1;
        return;
    }
    one(o, "models", "gauge", "Models served.", (double)n);
    /* per model: the resident ones (a resting model's counts are on disk) */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!pcd_model_resting(all[i]))
            all[k++] = all[i];
    n = k;
    /* each model's counts once: a family's samples must stay together */
    pc_stats *stats = malloc((n ? n : 1) * sizeof *stats);
    if (!stats) {
        free(all);
        o->failed = -1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        pc_model_stats(all[i]->model, &stats[i]);
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        {"model_examples_total", "counter", "Labelled examples the model learned (reset by reset)."},
        {"model_mistakes_total", "counter", "Of those, the ones it predicted wrong before learning."},
        {"model_updates_total", "counter", "Updates of its weights."},
        {"model_dirty", "gauge", "1 when the model changed since its last snapshot."},
        {"model_snapshot_generation", "gauge", "The model's newest snapshot generation on disk."},
        {"model_snapshot_age_seconds", "gauge",
         "Seconds since the model's newest snapshot was written (absent: never)."},
        {"model_memory_bytes", "gauge",
         "Bytes the model holds: weights, learner state and feature names (as max_memory counts)."},
    };
    for (size_t f = 0; f < sizeof fam / sizeof *fam; f++) {
        family(o, fam[f].name, fam[f].type, fam[f].help);
        for (size_t i = 0; i < n; i++) {
            const pcd_model *e = all[i];
            double v;
            switch (f) {
            case 0: v = (double)stats[i].examples; break;
            case 1: v = (double)stats[i].mistakes; break;
            case 2: v = (double)stats[i].updates; break;
            case 3: v = pcd_model_dirty(e); break;
            case 4: v = (double)e->generation; break;
            case 5:
                if (!e->saved_at)
                    continue;
                v = (double)(now - e->saved_at);
                break;
            default: v = (double)pcd_model_bytes(e);
            }
            put(o, "perceptrond_%s{model=\"%s\"} %.17g\n", fam[f].name, e->name, v);
        }
    }
    free(stats);
    free(all);
}

static void persistence(out *o, const pcd_server *srv, int64_t now)
{
    const pcd_counters *k = &srv->loop.counters;
    one(o, "snapshots_written_total", "counter", "Snapshot jobs that succeeded.",
        (double)k->snapshots_written);
    one(o, "auto_promotions_total", "counter",
        "Challengers promoted by promote.auto (the sequential test found them better).",
        (double)k->auto_promotions);
    one(o, "snapshots_failed_total", "counter", "Snapshot jobs that failed (see the log).",
        (double)k->snapshots_failed);
    one(o, "snapshot_running", "gauge", "1 while a snapshot child is writing.", srv->snap.pid != 0);
    const struct pcd_reststats *t = &srv->rest; /* models at rest (core/rest.c) */
    one(o, "models_resident", "gauge", "Models in memory.", (double)srv->models.nresident);
    one(o, "models_resting", "gauge", "Models at rest on disk (limits.resident_max).",
        (double)(srv->models.count - srv->models.nresident));
    one(o, "model_loads_total", "counter", "Resting models loaded back.", (double)t->loads);
    one(o, "model_load_failures_total", "counter", "Loads that failed.", (double)t->load_failed);
    one(o, "model_loads_ahead_total", "counter",
        "Loads started for a request read behind one waiting for a load.", (double)t->loads_ahead);
    one(o, "model_loads_retried_total", "counter",
        "Loads the loader thread could not do, done again by the loop.", (double)t->load_retried);
    one(o, "model_load_seconds_total", "counter", "Time spent loading them.", t->load_seconds);
    one(o, "model_load_max_seconds", "gauge", "The slowest load.", t->load_max_seconds);
    family(o, "model_load_duration_seconds", "histogram", "How long loads from rest took.");
    histogram(o, "model_load_duration_seconds", "", &t->load_time);
    one(o, "models_resting_bytes", "gauge",
        "The resting models' newest snapshot files (older generations not counted).",
        (double)pcd_rest_resting_bytes(srv));
    one(o, "model_evictions_total", "counter", "Models put to rest.", (double)t->evictions);
    one(o, "model_writes_queued", "gauge",
        "Models on their way to rest: their snapshot queued for the rest I/O thread.",
        (double)t->writing);
    one(o, "model_evictions_written_in_loop_total", "counter",
        "Evictions whose snapshot the event loop wrote itself (the queue full, or max_memory reached).",
        (double)t->written_in_loop);
    one(o, "model_writes_taken_back_total", "counter",
        "Models back in memory from their queued write, before the writer began it.",
        (double)t->taken_back);
    one(o, "model_eviction_failures_total", "counter",
        "Evictions refused because the snapshot could not be written (the model stays).",
        (double)t->evict_failed);
    if (srv->journal) {
        pcd_journal_stats st;
        pcd_journal_stats_get(srv->journal, &st);
        one(o, "journal_healthy", "gauge", "1 while the journal accepts writes.", st.healthy);
        one(o, "journal_bytes", "gauge", "Bytes of journal segments on disk.", (double)st.bytes);
        one(o, "journal_unsynced_bytes", "gauge", "Bytes appended but not yet known durable.",
            (double)st.unsynced_bytes);
        one(o, "journal_appended_total", "counter", "Records appended.", (double)st.appended);
        one(o, "journal_fsyncs_total", "counter", "fdatasync calls that succeeded.",
            (double)st.fsyncs);
        one(o, "journal_fsync_failures_total", "counter", "fdatasync calls that failed.",
            (double)st.fsync_failures);
        one(o, "journal_write_failures_total", "counter", "Journal writes that failed.",
            (double)st.write_failures);
        if (st.last_fsync_at)
            one(o, "journal_last_fsync_age_seconds", "gauge", "Seconds since the last fdatasync.",
                (double)(now - st.last_fsync_at));
    }
    if (srv->rlog) {
        const struct pcd_logstats *l = &srv->logst;
        one(o, "log_up", "gauge", "1 while connected to the shared log (Redis).", l->up);
        one(o, "log_appended_total", "counter", "Writes appended to the shared log.",
            (double)l->appended);
        one(o, "log_applied_total", "counter", "Shared log entries applied.", (double)l->applied);
        one(o, "log_apply_failed_total", "counter", "Shared log entries that failed to apply.",
            (double)l->apply_failed);
    }
}

/* A metric under its own name (no perceptrond_ prefix). */
static void std_one(out *o, const char *name, const char *type, const char *help, double v)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

/* The standard process_* metrics of Prometheus' client libraries, from
 * /proc: memory, CPU, descriptors. */
static void process(out *o)
{
    long page = sysconf(_SC_PAGESIZE), tick = sysconf(_SC_CLK_TCK);
    unsigned long long vsize = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%llu %llu", &vsize, &rss) == 2) {
        std_one(o, "process_resident_memory_bytes", "gauge", "Resident memory (RSS) of the daemon.",
            (double)rss * (double)page);
        std_one(o, "process_virtual_memory_bytes", "gauge", "Virtual memory of the daemon.",
            (double)vsize * (double)page);
    }
    if (f)
        fclose(f);
    /* utime and stime are fields 14 and 15, after the ")" that ends the name */
    char buf[1024];
    f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (p && tick > 0 &&
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
        std_one(o, "process_cpu_seconds_total", "counter", "CPU time of the daemon (user + system).",
            (double)(ut + st) / (double)tick);
    DIR *dir = opendir("/proc/self/fd");
    if (dir) {
        size_t fds = 0;
        for (struct dirent *e; (e = readdir(dir));)
            fds += e->d_name[0] != '.';
        closedir(dir);
        std_one(o, "process_open_fds", "gauge", "Open file descriptors (this count's own included).",
            (double)fds);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        std_one(o, "process_max_fds", "gauge", "The descriptor limit (RLIMIT_NOFILE).",
            (double)rl.rlim_cur);
}

int pcd_metrics_render(const pcd_server *srv, struct evbuffer *b)
{
    out o = {b, 0};
    int64_t now = pcd_now();
    family(&o, "info", "gauge", "The daemon's version.");
    put(&o, "perceptrond_info{version=\"%s\"} 1\n", PC_VERSION_STRING);
    one(&o, "start_time_seconds", "gauge", "Unix time the daemon started.",
        (double)srv->started_at);
    one(&o, "ready", "gauge", "1 when /readyz answers 200.", !pcd_metrics_unready(srv, NULL, 0));
    methods(&o, &srv->loop.counters);
    connections(&o, srv);
    models(&o, srv, now);
    persistence(&o, srv, now);
    process(&o);
    return o.failed;
}

bool pcd_metrics_unready(const pcd_server *srv, char *why, size_t len)
{
    const char *w = NULL;
    char buf[300];
    if (srv->stopping)
        w = "stopping";
    else if (!srv->ready)
        w = "starting: models not restored or listeners not bound yet";
    else if (srv->journal && !pcd_journal_writable(srv->journal, buf, sizeof buf))
        w = buf;
    else if (srv->rlog && !srv->logst.up && !(srv->cfg.log_cluster && srv->logst.nodes_up))
        /* a cluster with some masters up takes the writes of their models */
        w = "the shared log (Redis) is not connected: writes are refused";
    else if (srv->rlog && !srv->logst.ready)
        w = "catching up with the shared log (Redis): reads are refused until it has";
    if (w && why)
        snprintf(why, len, "%s", w);
    return w != NULL;
}
