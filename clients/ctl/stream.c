/* stream.c - the pipelined example loop of replay and predict (stream.h).
 *
 * Pipelining is what makes a replay fast: one request per example, but up to
 * `window` of them in flight, written in chunks so the kernel and the daemon
 * see batches.  The daemon answers in order, so the in-flight examples sit in
 * a ring indexed by msgid; each response is matched to its line and label.
 *
 * Deadlock avoidance: the socket is blocking, and a daemon that has too much
 * unread output stops reading (back-pressure).  So before every flush we read
 * whatever responses have already arrived, and the window bounds the unread
 * answers to `window` small responses.
 */
#include "clients/ctl/stream.h"

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/ctl/example.h"
#include "lib/perceptron.h"

#define FLUSH_EVERY 64     /* requests packed between writes */
#define PROGRESS_EVERY 0.1 /* seconds between progress bar redraws */

enum {
    OPT_FORMAT = 0x2001,
    OPT_LABEL_COLUMN,
    OPT_HEADER,
    OPT_DELIMITER,
    OPT_MULTICLASS,
    OPT_PROGRESS,
    OPT_NO_PROGRESS,
    OPT_IGNORE,
    OPT_POSITIVE,
    OPT_CATEGORICAL,
    OPT_NAMES,
};

void ctl_stream_defaults(ctl_stream_opts *o)
{
    memset(o, 0, sizeof *o);
    o->ds.format = PCC_DS_LIBSVM;
    o->window = 1024;
    o->progress = -1;
}

int ctl_stream_opt(ctl_ctx *ctx, int opt, const char *arg, void *ud)
{
    ctl_stream_opts *o = ud;
    switch (opt) {
    case OPT_FORMAT:
        if (strcmp(arg, "libsvm") == 0 || strcmp(arg, "svmlight") == 0)
            o->ds.format = PCC_DS_LIBSVM;
        else if (strcmp(arg, "csv") == 0)
            o->ds.format = PCC_DS_CSV;
        else if (strcmp(arg, "jsonl") == 0 || strcmp(arg, "json") == 0)
            o->ds.format = PCC_DS_JSONL;
        else
            return ctl_usage_error(ctx, "--format is libsvm, csv or jsonl, not '%s'", arg);
        o->format_set = true;
        return 0;
    case OPT_IGNORE:
        if (!*arg)
            return ctl_usage_error(ctx, "--ignore wants column names or numbers, comma-separated");
        o->ds.ignore = arg;
        return 0;
    case OPT_NAMES: o->names = arg; return 0;
    case OPT_CATEGORICAL:
        if (!*arg)
            return ctl_usage_error(ctx, "--categorical wants column names or numbers");
        o->ds.categorical = arg;
        return 0;
    case OPT_POSITIVE:
        if (!*arg || strlen(arg) > PC_CLASS_NAME_MAX)
            return ctl_usage_error(ctx, "--positive wants the label of the positive class");
        o->positive = arg;
        return 0;
    case OPT_LABEL_COLUMN:
        if (!*arg)
            return ctl_usage_error(ctx,
                                   "--label-column wants a name, a number from 1, last or none");
        o->ds.label_column = arg;
        return 0;
    case OPT_HEADER: o->ds.header = true; return 0;
    case OPT_DELIMITER:
        if (strcmp(arg, "\\t") == 0 || strcmp(arg, "tab") == 0)
            o->ds.delimiter = '\t';
        else if (strlen(arg) == 1 && arg[0] != '"' && arg[0] != '\n' && arg[0] != '\r')
            o->ds.delimiter = arg[0];
        else
            return ctl_usage_error(ctx, "--delimiter wants one character (or tab), not '%s'", arg);
        return 0;
    case OPT_MULTICLASS: o->multiclass = true; return 0;
    case OPT_PROGRESS: o->progress = 1; return 0;
    case OPT_NO_PROGRESS: o->progress = 0; return 0;
    case 'w':
        if (!ctl_parse_u64(arg, 1, 65536, &o->window))
            return ctl_usage_error(ctx, "--window wants a count in 1..65536, not '%s'", arg);
        return 0;
    default: return ctl_usage_error(ctx, "unknown option");
    }
}

int ctl_stream_parse(ctl_ctx *ctx, int argc, char **argv, ctl_stream_opts *o)
{
    static const struct option longopts[] = {CTL_STREAM_LONGOPTS, CTL_COMMON_LONGOPTS,
                                              {NULL, 0, NULL, 0}};
    ctl_stream_defaults(o);
    return ctl_parse(ctx, argc, argv, CTL_STREAM_SHORTOPTS, longopts, ctl_stream_opt, o);
}

int ctl_model_probe(ctl_ctx *ctx, const char *model, bool must_exist, ctl_model_kind *k)
{
    int rc = ctx->client ? 0 : ctl_connect(ctx);
    if (rc)
        return rc;
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, "info", 1, &id);
    ctl_pack_str(pk, model);
    const msgpack_object *error, *result;
    char err[512];
    if (pcc_call(ctx->client, id, &error, &result, err, sizeof err) != 0)
        return ctl_io_error(ctx, err);
    if (error && must_exist)
        return ctl_daemon_error(ctx, NULL, error);
    memset(k, 0, sizeof *k);
    k->exists = error == NULL;
    k->multiclass = !error && ctl_bool(result, "multiclass");
    k->open_classes = !error && ctl_bool(result, "open_classes");
    /* a daemon before the key has no "calibrate": its models are calibrated */
    const msgpack_object *cal = error ? NULL : pcc_map_get(result, "calibrate");
    k->uncalibrated = cal && cal->type == MSGPACK_OBJECT_BOOLEAN && !cal->via.boolean;
    const msgpack_object *cls = pcc_map_get(result, "classes");
    for (uint32_t i = 0;
         !error && cls && cls->type == MSGPACK_OBJECT_ARRAY && i < cls->via.array.size; i++) {
        const msgpack_object *nm = pcc_map_get(&cls->via.array.ptr[i], "name");
        size_t len = nm && nm->type == MSGPACK_OBJECT_STR ? nm->via.str.size : PC_CLASS_NAME_MAX;
        if (len > k->longest_class)
            k->longest_class = len;
        k->scores_bytes += len + 2 + 9; /* str header, float64 */
    }
    return 0;
}

/* The daemon stops reading a client whose unread answers pass
 * limits.max_output_bytes (64 KiB at the least).  If that happened while we
 * block writing a chunk of large requests, neither side would move: so the
 * answers in flight are kept within 56 KiB, by an upper estimate of each
 * (a binary `label` answer packs to 53 bytes: the default window fits). */
static uint64_t safe_window(const ctl_stream_opts *o, const ctl_model_kind *k, bool labelled)
{
    size_t name = k->open_classes && labelled ? PC_CLASS_NAME_MAX : k->longest_class;
    size_t reply = 56 + name + (!labelled && k->multiclass ? k->scores_bytes : 0);
    uint64_t w = (56 * 1024) / reply;
    if (w < 1)
        w = 1;
    return w < o->window ? w : o->window;
}

/* One example in flight. */
typedef struct slot {
    uint32_t id;
    uint64_t line;
    int y;
    bool has_label;
    char label[PC_CLASS_NAME_MAX + 1];
} slot;

typedef struct loop {
    ctl_ctx *ctx;
    const ctl_stream_opts *o;
    char **names; /* --names: index -> name, nnames entries (NULL where unnamed) */
    size_t nnames;
    uint64_t window;
    pcc_dataset *ds;
    const char *path;
    ctl_stream_fn fn;
    void *ud;
    ctl_stream_result *res;
    slot *ring;
    uint64_t head, tail; /* sent, answered */
    bool bar;
    double t0, last_bar;
} loop;

static void set_error(loop *l, int status, int64_t code, const char *msg)
{
    if (l->res->status != 0)
        return; /* keep the first */
    l->res->status = status;
    l->res->error_code = code;
    snprintf(l->res->error, sizeof l->res->error, "%s", msg);
}

static void progress(loop *l, bool force)
{
    if (!l->bar)
        return;
    double t = pcc_monotonic();
    if (!force && t - l->last_bar < PROGRESS_EVERY)
        return;
    l->last_bar = t;
    uint64_t done, total;
    pcc_ds_progress(l->ds, &done, &total);
    double rate = t > l->t0 ? (double)l->tail / (t - l->t0) : 0;
    char b[32];
    if (total) {
        double f = (double)done / (double)total;
        int w = 30, k = (int)(f * w);
        fprintf(stderr, "\r[%.*s%*s] %3.0f%%  %llu examples  %.0f/s ", k,
                "##############################", w - k, "", f * 100, (unsigned long long)l->tail,
                rate);
    } else {
        fprintf(stderr, "\r%llu examples  %s  %.0f/s ", (unsigned long long)l->tail,
                ctl_fmt_bytes((double)done, b, sizeof b), rate);
    }
    fflush(stderr);
}

/* Reads one response (blocking) and hands it to the callback. */
static int read_one(loop *l)
{
    const msgpack_object *error, *result;
    uint32_t id;
    char err[512];
    if (pcc_read(l->ctx->client, &id, &error, &result, -1, err, sizeof err) != 0) {
        set_error(l, CTL_EXIT_IO, -1, err);
        return CTL_EXIT_IO;
    }
    slot *s = &l->ring[l->tail % l->window];
    if (id != s->id) {
        set_error(l, CTL_EXIT_IO, -1, "the daemon answered out of order");
        return CTL_EXIT_IO;
    }
    l->tail++;
    if (error) {
        char msg[800], full[1024];
        pcc_error_message(error, msg, sizeof msg);
        snprintf(full, sizeof full, "%s:%llu: %s", l->path, (unsigned long long)s->line,
                 msg[0] ? msg : "error without a message");
        set_error(l, CTL_EXIT_DAEMON, pcc_error_code(error), full);
        return CTL_EXIT_DAEMON;
    }
    l->res->answered++;
    ctl_stream_item it = {s->line, s->has_label ? s->label : NULL, s->y, result,
                          l->res->status != 0};
    int rc = l->fn ? l->fn(l->ud, &it) : 0;
    if (rc)
        set_error(l, rc, -1, "stopped by the output");
    return rc;
}

/* Reads the responses that have arrived, without waiting. */
static int drain_ready(loop *l)
{
    struct pollfd p = {.fd = pcc_fd(l->ctx->client), .events = POLLIN};
    while (l->tail < l->head && poll(&p, 1, 0) > 0) {
        int rc = read_one(l);
        if (rc)
            return rc;
    }
    return 0;
}

static int flush(loop *l)
{
    char err[512];
    if (pcc_flush(l->ctx->client, err, sizeof err) != 0) {
        set_error(l, CTL_EXIT_IO, -1, err);
        return CTL_EXIT_IO;
    }
    return 0;
}

static void pack_features(const loop *l, msgpack_packer *pk, const pcc_ds_example *ex)
{
    if (ex->dense) {
        msgpack_pack_array(pk, ex->n);
        for (size_t i = 0; i < ex->n; i++)
            msgpack_pack_double(pk, ex->f[i].value);
        return;
    }
    if (!l->names) {
        ctl_example_pack(pk, ex);
        return;
    }
    /* --names: an index with a name goes as that name (the daemon hashes it
     * and remembers it for `top`); one without stays an index */
    msgpack_pack_map(pk, ex->n);
    for (size_t i = 0; i < ex->n; i++) {
        const pcc_ds_feature *f = &ex->f[i];
        const char *nm = f->name ? NULL : f->index < l->nnames ? l->names[f->index] : NULL;
        if (f->name) {
            msgpack_pack_str(pk, f->name_len);
            msgpack_pack_str_body(pk, f->name, f->name_len);
        } else if (nm) {
            ctl_pack_str(pk, nm);
        } else {
            msgpack_pack_uint32(pk, f->index);
        }
        msgpack_pack_double(pk, f->value);
    }
}

int ctl_stream_y(const ctl_stream_opts *o, const pcc_ds_example *ex)
{
    if (!o->positive || !ex->label)
        return ex->y;
    return strlen(o->positive) == ex->label_len &&
                   memcmp(o->positive, ex->label, ex->label_len) == 0
               ? 1
               : -1;
}

void ctl_stream_pack_error(msgpack_packer *pk, const ctl_stream_result *r)
{
    msgpack_pack_map(pk, 2);
    ctl_pack_str(pk, "code");
    if (r->error_code >= 0)
        msgpack_pack_int64(pk, r->error_code);
    else
        msgpack_pack_nil(pk);
    ctl_pack_str(pk, "message");
    ctl_pack_str(pk, r->error);
}

/* Ctrl-C: the loop stops sending and reads what is in flight. */
static volatile sig_atomic_t interrupted;
static void on_interrupt(int sig)
{
    interrupted = 1;
    signal(sig, SIG_DFL); /* a second one quits at once */
}

int ctl_stream_prepare(ctl_ctx *ctx, const char *model, const char *path,
                       const ctl_stream_opts *o, ctl_model_kind *k)
{
    if (k->exists)
        return 0;
    bool multi = o->multiclass;
    if (!multi && !o->positive && strcmp(path, "-") != 0) {
        ctl_stream_opts lo = *o;
        if (!lo.format_set)
            lo.ds.format = pcc_ds_format_of(path, lo.ds.delimiter ? NULL : &lo.ds.delimiter);
        pcc_dataset *ds;
        char err[1024];
        if (pcc_ds_open(path, &lo.ds, &ds, err, sizeof err) == 0) {
            pcc_ds_example ex;
            /* a parse error is left for the replay itself to report */
            for (int i = 0; i < 1000 && !multi && pcc_ds_next(ds, &ex, err, sizeof err) == 1; i++)
                multi = ex.label && ex.y == 0;
            pcc_ds_close(ds);
        }
    }
    if (!multi)
        return 0;
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, "create", 2, &id);
    ctl_pack_str(pk, model);
    msgpack_pack_map(pk, 1);
    ctl_pack_str(pk, "open_classes");
    msgpack_pack_true(pk);
    const msgpack_object *res;
    int rc = ctl_call(ctx, id, &res);
    if (rc)
        return rc;
    if (!ctx->json)
        fprintf(stderr, "created %s: multiclass, classes added as they come (labels are not "
                        "+1/-1)\n", model);
    k->exists = k->multiclass = k->open_classes = true;
    return 0;
}

/* label into the first distinct names of a list of four (for messages). */
static void remember(char names[4][64], size_t *n, const char *label, size_t len)
{
    len = len < 63 ? len : 63;
    for (size_t i = 0; i < *n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], label, len) == 0)
            return;
    if (*n < 4) {
        memcpy(names[*n], label, len);
        names[(*n)++][len] = 0;
    }
}

void ctl_stream_note_class(ctl_stream_result *r, const msgpack_object *answer, const char *label)
{
    const msgpack_object *scores = pcc_map_get(answer, "scores");
    if (!label || !scores || scores->type != MSGPACK_OBJECT_MAP || pcc_map_get(scores, label))
        return;
    r->unknown++;
    remember(r->unknown_names, &r->nunknown, label, strlen(label));
}

static void list(const char names[4][64], size_t n, bool more)
{
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s'%s'", i ? ", " : "", names[i]);
    fprintf(stderr, "%s", more ? ", ..." : "");
}

void ctl_stream_warn(const ctl_stream_opts *o, const ctl_stream_result *r, const char *what)
{
    if (o->positive && r->labels > 0 && r->positives == 0) {
        fprintf(stderr, "warning: --positive '%s' matched none of the %llu labels, so %s sent "
                        "every example as -1; the labels were ",
                o->positive, (unsigned long long)r->labels, what);
        list(r->others, r->nothers, r->nothers == 4);
        fprintf(stderr, " (a label must match exactly, dots and spaces too)\n");
    }
    if (r->unknown > 0) {
        fprintf(stderr, "warning: %llu of the labels are classes the model never learned (",
                (unsigned long long)r->unknown);
        list(r->unknown_names, r->nunknown, r->nunknown == 4);
        fprintf(stderr, "): it cannot predict them; check the file's labels against the "
                        "training data's\n");
    }
}

/* Checks the example's label and packs one request; 0 or an exit status. */
static int send_one(loop *l, const char *method, const char *model, const pcc_ds_example *ex,
                    bool multiclass)
{
    bool labelled = strcmp(method, "label") == 0;
    char why[600];
    if (labelled && !ex->label) {
        set_error(l, CTL_EXIT_DATA, -1, "replay needs labels, but --label-column is none");
        return CTL_EXIT_DATA;
    }
    if (labelled && ex->label_len > PC_CLASS_NAME_MAX) {
        snprintf(why, sizeof why, "%s:%llu:%zu: the label is longer than %d bytes", l->path,
                 (unsigned long long)ex->line, ex->label_col, PC_CLASS_NAME_MAX);
        set_error(l, CTL_EXIT_DATA, -1, why);
        return CTL_EXIT_DATA;
    }
    int y = ctl_stream_y(l->o, ex);
    if (l->o->positive && ex->label) {
        l->res->labels++;
        if (y == 1)
            l->res->positives++;
        else
            remember(l->res->others, &l->res->nothers, ex->label, ex->label_len);
    }
    if (labelled && !multiclass && y == 0) {
        snprintf(why, sizeof why,
                 "%s:%llu:%zu: label '%.*s' is not binary (+1, 1, -1 or 0); use --multiclass for "
                 "class names",
                 l->path, (unsigned long long)ex->line, ex->label_col, (int)ex->label_len,
                 ex->label);
        set_error(l, CTL_EXIT_DATA, -1, why);
        return CTL_EXIT_DATA;
    }
    slot *s = &l->ring[l->head % l->window];
    msgpack_packer *pk = pcc_request(l->ctx->client, method, labelled ? 3 : 2, &s->id);
    ctl_pack_str(pk, model);
    pack_features(l, pk, ex);
    if (labelled) {
        if (multiclass) {
            msgpack_pack_str(pk, ex->label_len);
            msgpack_pack_str_body(pk, ex->label, ex->label_len);
        } else {
            msgpack_pack_int(pk, y);
        }
    }
    s->line = ex->line;
    s->y = y;
    s->has_label = ex->label != NULL && ex->label_len <= PC_CLASS_NAME_MAX;
    if (s->has_label) {
        memcpy(s->label, ex->label, ex->label_len);
        s->label[ex->label_len] = 0;
    }
    l->head++;
    l->res->sent++;
    return 0;
}

void ctl_stream_run(ctl_ctx *ctx, const char *method, const char *model, const char *path,
                    const ctl_stream_opts *o, const ctl_model_kind *k, bool multiclass,
                    ctl_stream_fn fn, void *ud, ctl_stream_result *res)
{
    memset(res, 0, sizeof *res);
    res->error_code = -1;
    ctl_stream_opts lo = *o;
    if (!lo.format_set)
        lo.ds.format = pcc_ds_format_of(path, lo.ds.delimiter ? NULL : &lo.ds.delimiter);
    o = &lo;
    loop l = {.ctx = ctx,
              .o = o,
              .window = safe_window(o, k, strcmp(method, "label") == 0),
              .path = strcmp(path, "-") == 0 ? "(stdin)" : path,
              .fn = fn,
              .ud = ud,
              .res = res};
    char err[1024];
    if (pcc_ds_open(path, &o->ds, &l.ds, err, sizeof err) != 0) {
        set_error(&l, CTL_EXIT_DATA, -1, err);
        ctl_errorf(ctx, "%s", err);
        return;
    }
    if (o->names && pcc_ds_names_load(o->names, &l.names, &l.nnames, err, sizeof err) != 0) {
        pcc_ds_close(l.ds);
        set_error(&l, CTL_EXIT_DATA, -1, err);
        ctl_errorf(ctx, "%s", err);
        return;
    }
    l.ring = calloc(l.window, sizeof *l.ring);
    if (!l.ring) {
        pcc_ds_names_free(l.names, l.nnames);
        pcc_ds_close(l.ds);
        set_error(&l, CTL_EXIT_IO, -1, "out of memory for the window");
        ctl_errorf(ctx, "%s", res->error);
        return;
    }
    l.bar = o->progress > 0 || (o->progress < 0 && isatty(STDERR_FILENO));
    l.t0 = pcc_monotonic();
    interrupted = 0;
    struct sigaction sa = {.sa_handler = on_interrupt}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    pcc_ds_example ex;
    int r;
    for (;;) {
        /* Input that would wait (a pipe with nothing more yet): what is packed
         * goes out first, or its last examples would wait for the next line. */
        if (res->status || interrupted || (pcc_ds_would_wait(l.ds) && flush(&l)) ||
            (r = pcc_ds_next(l.ds, &ex, err, sizeof err)) == 0)
            break;
        if (r < 0) {
            if (!interrupted) /* else a read cut short by Ctrl-C (EINTR): no data error */
                set_error(&l, CTL_EXIT_DATA, -1, err);
            break;
        }
        if (send_one(&l, method, model, &ex, multiclass))
            break;
        /* A full window: write, then wait for the oldest answer. */
        if (l.head - l.tail >= l.window) {
            if (drain_ready(&l) || flush(&l))
                break;
            while (res->status == 0 && l.head - l.tail >= l.window)
                read_one(&l);
        } else if (l.head % FLUSH_EVERY == 0) {
            if (drain_ready(&l) || flush(&l))
                break;
        }
        progress(&l, false);
    }
    /* The end, or an error: every request sent gets its answer read, so the
     * counts match what the daemon did. */
    bool io = res->status == CTL_EXIT_IO;
    if (!io && flush(&l) == 0)
        while (l.tail < l.head && read_one(&l) != CTL_EXIT_IO)
            ;
    res->seconds = pcc_monotonic() - l.t0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    progress(&l, true);
    if (l.bar)
        fputs("\r\033[K", stderr);
    if (interrupted && res->status == 0) {
        res->interrupted = true;
        set_error(&l, 130, -1, "interrupted");
    }
    if (res->status)
        ctl_errorf(ctx, "%s", res->error);
    free(l.ring);
    pcc_ds_names_free(l.names, l.nnames);
    pcc_ds_close(l.ds);
}
