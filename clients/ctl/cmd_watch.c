/* cmd_watch.c - `perceptronctl watch MODEL [-i SECONDS] [--count N]`: a live
 * view of one model, refreshed every interval: examples, mistakes, updates,
 * the mistake rate overall, over the daemon's recent window and over the last
 * interval, and the throughput (examples/s) since the last refresh.
 *
 * On a terminal each refresh clears the screen and redraws (plain ANSI, no
 * curses); into a pipe the frames follow each other.  --json streams one
 * array of frame objects, closed when the watch ends, so the output stays one
 * JSON document.  Ctrl-C (or SIGTERM) ends the watch with status 0. */
#include <math.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clients/ctl/ctl.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

typedef struct opts {
    double interval;
    uint64_t count; /* 0: until interrupted */
} opts;

typedef struct sample {
    double t;
    uint64_t examples, mistakes, updates;
} sample;

static int on_opt(ctl_ctx *ctx, int opt, const char *arg, void *ud)
{
    opts *o = ud;
    if (opt == 'i') {
        if (!ctl_parse_double(arg, &o->interval) || o->interval < 0.05 || o->interval > 86400)
            return ctl_usage_error(ctx, "--interval wants seconds in [0.05, 86400], not '%s'", arg);
        return 0;
    }
    if (opt == 'c' && ctl_parse_u64(arg, 1, UINT32_MAX, &o->count))
        return 0;
    return ctl_usage_error(ctx, "--count wants a positive integer, not '%s'", arg);
}

/* Sleeps s seconds unless a signal asks to stop. */
static void pause_for(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (!stop && nanosleep(&ts, &ts) != 0)
        ;
}

static void draw(const ctl_ctx *ctx, const msgpack_object *info, const sample *now,
                 const sample *prev, double interval, bool tty)
{
    const msgpack_object *recent = pcc_map_get(info, "recent");
    const msgpack_object *snap = pcc_map_get(info, "snapshot");
    /* After a reset the counters go down: no interval figures then. */
    bool delta = prev && now->examples >= prev->examples && now->mistakes >= prev->mistakes &&
                 now->t > prev->t;
    uint64_t dex = delta ? now->examples - prev->examples : 0;
    uint64_t dmk = delta ? now->mistakes - prev->mistakes : 0;
    uint64_t dup = delta && now->updates >= prev->updates ? now->updates - prev->updates : 0;
    double dt = delta ? now->t - prev->t : NAN;
    double rate = now->examples ? (double)now->mistakes / (double)now->examples : NAN;
    double irate = dex ? (double)dmk / (double)dex : NAN;
    double speed = delta ? (double)dex / dt : NAN;
    char b1[64], b2[64], b3[64], clock[32];
    time_t wall = time(NULL);
    strftime(clock, sizeof clock, "%H:%M:%S", localtime(&wall));
    if (tty)
        fputs("\033[H\033[2J", stdout);
    printf("perceptronctl watch %s   every %gs   %s%s\n\n", ctx->args[0], interval, clock,
           tty ? "   (Ctrl-C to stop)" : "");
    printf("%-14s %12llu", "examples", (unsigned long long)now->examples);
    if (delta)
        printf("   +%llu", (unsigned long long)dex);
    printf("\n%-14s %12llu", "mistakes", (unsigned long long)now->mistakes);
    if (delta)
        printf("   +%llu", (unsigned long long)dmk);
    printf("\n%-14s %12llu", "updates", (unsigned long long)now->updates);
    if (delta)
        printf("   +%llu", (unsigned long long)dup);
    printf("\n%-14s %12s overall   %s recent (last %llu)   %s last interval\n", "mistake rate",
           ctl_fmt_rate(rate, b1, sizeof b1),
           ctl_fmt_rate(pcc_number(pcc_map_get(recent, "mistake_rate")), b2, sizeof b2),
           (unsigned long long)ctl_u64(recent, "examples"), ctl_fmt_rate(irate, b3, sizeof b3));
    if (delta)
        printf("%-14s %12.1f examples/s\n", "throughput", speed);
    else
        printf("%-14s %12s examples/s\n", "throughput", "-");
    double age = pcc_number(pcc_map_get(snap, "age_seconds"));
    printf("%-14s %12s%s\n", "snapshot",
           isnan(age) ? "never" : ctl_fmt_duration(age, b1, sizeof b1),
           isnan(age) ? "" : ctl_bool(snap, "dirty") ? " ago, changed since" : " ago, up to date");
    if (!tty)
        putchar('\n');
}

static void frame_json(const msgpack_object *info, const sample *now, const sample *prev)
{
    bool delta = prev && now->examples >= prev->examples && now->mistakes >= prev->mistakes &&
                 now->t > prev->t;
    uint64_t dex = delta ? now->examples - prev->examples : 0;
    uint64_t dmk = delta ? now->mistakes - prev->mistakes : 0;
    ctl_doc d;
    ctl_doc_init(&d);
    msgpack_pack_map(&d.pk, 11);
    ctl_doc_kv_double(&d, "time", (double)time(NULL));
    ctl_doc_kv_u64(&d, "examples", now->examples);
    ctl_doc_kv_u64(&d, "mistakes", now->mistakes);
    ctl_doc_kv_u64(&d, "updates", now->updates);
    ctl_doc_kv_double(&d, "mistake_rate", pcc_number(pcc_map_get(info, "mistake_rate")));
    ctl_doc_kv_double(&d, "recent_mistake_rate",
                      pcc_number(pcc_map_get(pcc_map_get(info, "recent"), "mistake_rate")));
    ctl_doc_kv_double(&d, "interval_seconds", delta ? now->t - prev->t : NAN);
    ctl_pack_str(&d.pk, "interval_examples");
    delta ? msgpack_pack_uint64(&d.pk, dex) : msgpack_pack_nil(&d.pk);
    ctl_pack_str(&d.pk, "interval_mistakes");
    delta ? msgpack_pack_uint64(&d.pk, dmk) : msgpack_pack_nil(&d.pk);
    ctl_doc_kv_double(&d, "interval_mistake_rate", dex ? (double)dmk / (double)dex : NAN);
    ctl_doc_kv_double(&d, "examples_per_second",
                      delta ? (double)dex / (now->t - prev->t) : NAN);
    ctl_doc_print(&d);
}

int ctl_cmd_watch(ctl_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {{"interval", required_argument, NULL, 'i'},
                                              {"count", required_argument, NULL, 'c'},
                                              CTL_COMMON_LONGOPTS,
                                              {NULL, 0, NULL, 0}};
    opts o = {.interval = 2, .count = 0};
    int rc = ctl_parse(ctx, argc, argv, "i:c:", longopts, on_opt, &o);
    if (rc != CTL_CONTINUE || (rc = ctl_connect(ctx)))
        return rc;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the sleep must end at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    bool tty = !ctx->json && isatty(STDOUT_FILENO);
    bool json = ctx->json;
    sample prev = {0}, now;
    for (uint64_t n = 0; !stop && (o.count == 0 || n < o.count); n++) {
        if (n)
            pause_for(o.interval);
        if (stop)
            break;
        const msgpack_object *info;
        /* After the first frame a failure must not add a second JSON
         * document: report it on stderr only, then close the array. */
        ctx->json = json && n == 0;
        rc = ctl_call_simple(ctx, "info", ctx->args[0], &info);
        ctx->json = json;
        if (rc)
            break;
        now = (sample){pcc_monotonic(), ctl_u64(info, "examples"), ctl_u64(info, "mistakes"),
                       ctl_u64(info, "updates")};
        if (json) {
            fputs(n ? ",\n" : "[\n", stdout);
            frame_json(info, &now, n ? &prev : NULL);
        } else {
            draw(ctx, info, &now, n ? &prev : NULL, o.interval, tty);
        }
        fflush(stdout);
        prev = now;
    }
    if (json && (rc == CTL_EXIT_OK || prev.t > 0))
        fputs(prev.t > 0 ? "]\n" : "[]\n", stdout);
    return rc;
}
