/* ctl.c - perceptronctl's shared helpers: option parsing, the connection,
 * calls and their error reporting, result readers, formatting, tables.
 * See ctl.h. */
#include "clients/ctl/ctl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PROG "perceptronctl"

void ctl_help(const ctl_command *cmd, FILE *out)
{
    fprintf(out, "Usage: " PROG " %s%s%s\n\n%s\n", cmd->name, *cmd->usage ? " " : "", cmd->usage,
            cmd->summary);
    if (*cmd->details)
        fprintf(out, "\n%s", cmd->details);
    fprintf(out, "\nOptions:\n%s", cmd->options);
    fprintf(out, CTL_HELP_ADDRESS
            "      --json           print one JSON document on stdout instead of a table\n"
            "  -h, --help           this text\n" CTL_HELP_EXIT);
}

int ctl_usage_error(const ctl_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG " %s: ", ctx->cmd->name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nUsage: " PROG " %s%s%s\nTry '" PROG " %s --help'.\n", ctx->cmd->name,
            *ctx->cmd->usage ? " " : "", ctx->cmd->usage, ctx->cmd->name);
    return CTL_EXIT_USAGE;
}

void ctl_errorf(const ctl_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG " %s: ", ctx->cmd->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Does the word w, an option as getopt_long reads it, take the next word as
 * its value?  Asked of the options themselves (all, shorts), not guessed
 * from the word's look: "--json -1" is a flag and a number. */
static bool wants_next(const char *w, const char *shorts, const struct option *all)
{
    if (w[0] != '-' || !w[1])
        return false;
    if (w[1] == '-') { /* --name, or an abbreviation getopt_long accepts */
        if (!w[2] || strchr(w, '='))
            return false;
        const struct option *hit = NULL;
        for (const struct option *o = all; o->name && !hit; o++)
            if (strcmp(o->name, w + 2) == 0)
                hit = o;
        for (const struct option *o = all; o->name && !hit; o++)
            if (strncmp(o->name, w + 2, strlen(w + 2)) == 0)
                hit = o;
        return hit && hit->has_arg == required_argument;
    }
    /* -abc: the first letter that wants a value takes the rest, or the next word */
    for (const char *p = w + 1; *p; p++) {
        const char *s = *p == ':' ? NULL : strchr(shorts, *p);
        if (s && s[1] == ':')
            return p[1] == 0;
    }
    return false;
}

int ctl_opt_flag(ctl_ctx *ctx, int opt, const char *arg, void *ud)
{
    (void)ctx;
    (void)opt;
    (void)arg;
    *(bool *)ud = true;
    return 0;
}

int ctl_parse(ctl_ctx *ctx, int argc, char **argv, const char *shortopts,
              const struct option *longopts, ctl_opt_fn fn, void *ud)
{
    static const struct option common[] = {CTL_COMMON_LONGOPTS, {NULL, 0, NULL, 0}};
    size_t nown = 0;
    while (longopts && longopts[nown].name)
        nown++;
    struct option all[64];
    if (nown + 4 > sizeof all / sizeof all[0])
        abort(); /* a programming error: a command with 60 options */
    if (nown)
        memcpy(all, longopts, nown * sizeof *all);
    memcpy(all + nown, common, sizeof common);
    char shorts[64];
    /* ':' first: a missing argument is reported as ':' so the message can
     * say so; "a:h" are the common short options. */
    snprintf(shorts, sizeof shorts, ":a:h%s", shortopts ? shortopts : "");

    /* A negative number ("label spam -1 cheap") is a positional argument, not
     * options '-1': getopt is shown it behind a \x01 marker, removed below.
     * Not after an option that takes it as its value. */
    static char marked[16][64];
    int nmarked = 0;
    for (int i = 1; i < argc && nmarked < 16; i++) {
        char *a = argv[i], *end;
        const char *prev = argv[i - 1];
        if (strcmp(prev, "--") == 0)
            break;
        if (a[0] == '-' && a[1] >= '0' && a[1] <= '9' && strlen(a) < 62 &&
            !(i > 1 && wants_next(prev, shorts, all)) &&
            (strtod(a, &end), *end == 0)) {
            snprintf(marked[nmarked], sizeof marked[0], "\x01%s", a);
            argv[i] = marked[nmarked++];
        }
    }
    opterr = 0;
    optind = 0; /* glibc: a full re-initialisation (main already ran getopt) */
    int opt;
    while ((opt = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
        switch (opt) {
        case 'a': ctx->address = optarg; break;
        case CTL_OPT_JSON: ctx->json = true; break;
        case 'h': ctl_help(ctx->cmd, stdout); return CTL_EXIT_OK;
        case ':': return ctl_usage_error(ctx, "option '%s' needs a value", argv[optind - 1]);
        case '?': {
            /* optopt names a short option; a long one is in argv (up to '='). */
            const char *bad = argv[optind - 1];
            if (strncmp(bad, "--", 2) != 0 && optopt > ' ' && optopt < 127)
                return ctl_usage_error(ctx, "unknown option '-%c'", optopt);
            return ctl_usage_error(ctx, "unknown option or unexpected value '%.*s'",
                                   (int)strcspn(bad, "="), bad);
        }
        default: {
            int rc = fn ? fn(ctx, opt, optarg, ud) : CTL_EXIT_USAGE;
            if (rc != 0)
                return rc;
        }
        }
    }
    ctx->args = argv + optind;
    ctx->nargs = argc - optind;
    for (int i = 0; i < ctx->nargs; i++)
        if (ctx->args[i][0] == '\x01')
            ctx->args[i]++;
    const ctl_command *c = ctx->cmd;
    if (ctx->nargs < c->min_args)
        return ctl_usage_error(ctx, "missing argument%s", c->min_args - ctx->nargs > 1 ? "s" : "");
    if (ctx->nargs > c->max_args)
        return ctl_usage_error(ctx, "unexpected argument '%s'", ctx->args[c->max_args]);
    return CTL_CONTINUE;
}

bool ctl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

bool ctl_parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || !isfinite(v) || errno == ERANGE)
        return false;
    *out = v;
    return true;
}

/* ---- talking to the daemon ---------------------------------------------- */

int ctl_connect(ctl_ctx *ctx)
{
    char err[512], token[600];
    pcc_options o;
    if (pcc_options_from_env(&o, token, sizeof token, err, sizeof err) != 0 ||
        pcc_connect_with(ctx->address, &o, &ctx->client, err, sizeof err) != 0) {
        ctl_errorf(ctx, "%s", err);
        if (ctx->json) { /* a script reading stdout learns why too (code: not the daemon's) */
            ctl_doc d;
            ctl_doc_init(&d);
            msgpack_pack_map(&d.pk, 1);
            ctl_pack_str(&d.pk, "error");
            msgpack_pack_map(&d.pk, 3);
            ctl_pack_str(&d.pk, "code");
            msgpack_pack_nil(&d.pk);
            ctl_doc_kv_str(&d, "message", err);
            ctl_doc_kv_str(&d, "address", ctx->address);
            ctl_doc_print(&d);
        }
        return CTL_EXIT_IO;
    }
    return 0;
}

int ctl_io_error(const ctl_ctx *ctx, const char *msg)
{
    ctl_errorf(ctx, "%s (daemon at %s)", msg, ctx->address);
    return CTL_EXIT_IO;
}

int ctl_daemon_error(const ctl_ctx *ctx, const char *where, const msgpack_object *error)
{
    char msg[1024];
    pcc_error_message(error, msg, sizeof msg);
    ctl_errorf(ctx, "%s%s%s (error %" PRId64 ")", where ? where : "", where ? ": " : "",
               msg[0] ? msg : "the daemon answered an error without a message",
               pcc_error_code(error));
    if (ctx->json) {
        ctl_doc d;
        ctl_doc_init(&d);
        msgpack_pack_map(&d.pk, 1);
        ctl_pack_str(&d.pk, "error");
        msgpack_pack_object(&d.pk, *error);
        ctl_doc_print(&d);
    }
    return CTL_EXIT_DAEMON;
}

int ctl_call(ctl_ctx *ctx, uint32_t msgid, const msgpack_object **result)
{
    const msgpack_object *error;
    char err[512];
    if (pcc_call(ctx->client, msgid, &error, result, err, sizeof err) != 0)
        return ctl_io_error(ctx, err);
    if (error)
        return ctl_daemon_error(ctx, NULL, error);
    return 0;
}

void ctl_pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

int ctl_call_simple(ctl_ctx *ctx, const char *method, const char *model,
                    const msgpack_object **result)
{
    int rc = ctx->client ? 0 : ctl_connect(ctx);
    if (rc)
        return rc;
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, method, model ? 1 : 0, &id);
    if (model)
        ctl_pack_str(pk, model);
    return ctl_call(ctx, id, result);
}

int ctl_call_model_u64(ctl_ctx *ctx, const char *method, const char *model, uint64_t n,
                       const msgpack_object **result)
{
    int rc = ctx->client ? 0 : ctl_connect(ctx);
    if (rc)
        return rc;
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, method, 2, &id);
    ctl_pack_str(pk, model);
    msgpack_pack_uint64(pk, n);
    return ctl_call(ctx, id, result);
}

/* With --json: the result printed as is, CTL_EXIT_OK; else CTL_CONTINUE. */
static int json_as_is(const ctl_ctx *ctx, const msgpack_object *result)
{
    if (!ctx->json)
        return CTL_CONTINUE;
    ctl_json_print(result);
    return CTL_EXIT_OK;
}

int ctl_answer(ctl_ctx *ctx, uint32_t msgid, const msgpack_object **result)
{
    int rc = ctl_call(ctx, msgid, result);
    return rc ? rc : json_as_is(ctx, *result);
}

int ctl_simple_command(ctl_ctx *ctx, int argc, char **argv, const char *method, bool with_model,
                       const msgpack_object **result)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    rc = ctl_call_simple(ctx, method, with_model ? ctx->args[0] : NULL, result);
    return rc ? rc : json_as_is(ctx, *result);
}

/* ---- JSON documents ------------------------------------------------------- */

void ctl_json_print(const msgpack_object *o)
{
    ctl_json_write(stdout, o, 2);
    fputc('\n', stdout);
}

void ctl_doc_init(ctl_doc *d)
{
    msgpack_sbuffer_init(&d->buf);
    msgpack_packer_init(&d->pk, &d->buf, msgpack_sbuffer_write);
}

void ctl_doc_write(ctl_doc *d, FILE *f, int indent)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    if (msgpack_unpack_next(&u, d->buf.data, d->buf.size, &off) == MSGPACK_UNPACK_SUCCESS)
        ctl_json_write(f, &u.data, indent);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&d->buf);
}

void ctl_doc_print(ctl_doc *d)
{
    ctl_doc_write(d, stdout, 2);
    fputc('\n', stdout);
}

void ctl_doc_kv_str(ctl_doc *d, const char *k, const char *v)
{
    ctl_pack_str(&d->pk, k);
    if (v)
        ctl_pack_str(&d->pk, v);
    else
        msgpack_pack_nil(&d->pk);
}

void ctl_doc_kv_u64(ctl_doc *d, const char *k, uint64_t v)
{
    ctl_pack_str(&d->pk, k);
    msgpack_pack_uint64(&d->pk, v);
}

void ctl_doc_kv_double(ctl_doc *d, const char *k, double v)
{
    ctl_pack_str(&d->pk, k);
    if (isfinite(v))
        msgpack_pack_double(&d->pk, v);
    else
        msgpack_pack_nil(&d->pk);
}

/* ---- reading results ------------------------------------------------------ */

const char *ctl_text(const msgpack_object *o, char *buf, size_t len)
{
    if (!o)
        return "-";
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: snprintf(buf, len, "%" PRIu64, o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: snprintf(buf, len, "%" PRId64, o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (o->via.f64 == floor(o->via.f64) && fabs(o->via.f64) < 1e15)
            snprintf(buf, len, "%.0f", o->via.f64);
        else
            ctl_fmt_real(o->via.f64, buf, len);
        break;
    case MSGPACK_OBJECT_BOOLEAN: snprintf(buf, len, "%s", o->via.boolean ? "yes" : "no"); break;
    case MSGPACK_OBJECT_STR:
        snprintf(buf, len, "%.*s", (int)o->via.str.size, o->via.str.ptr);
        break;
    default: return "-";
    }
    return buf;
}

const char *ctl_cell(const msgpack_object *map, const char *key, char *buf, size_t len)
{
    return ctl_text(pcc_map_get(map, key), buf, len);
}

uint64_t ctl_u64(const msgpack_object *map, const char *key)
{
    double v = pcc_number(pcc_map_get(map, key));
    return isnan(v) || v < 0 ? 0 : (uint64_t)v;
}

bool ctl_bool(const msgpack_object *map, const char *key)
{
    const msgpack_object *o = pcc_map_get(map, key);
    return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

/* ---- formatting -------------------------------------------------------------- */

const char *ctl_fmt_rate(double rate, char *buf, size_t len)
{
    if (!isfinite(rate))
        return "-";
    snprintf(buf, len, "%.2f%%", rate * 100);
    return buf;
}

const char *ctl_fmt_duration(double secs, char *buf, size_t len)
{
    if (!isfinite(secs) || secs < 0)
        return "-";
    uint64_t s = (uint64_t)(secs + 0.5);
    if (secs < 10 && secs != floor(secs))
        snprintf(buf, len, "%.1fs", secs);
    else if (s < 60)
        snprintf(buf, len, "%" PRIu64 "s", s);
    else if (s < 3600)
        snprintf(buf, len, "%" PRIu64 "m %02" PRIu64 "s", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, len, "%" PRIu64 "h %02" PRIu64 "m", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, len, "%" PRIu64 "d %02" PRIu64 "h", s / 86400, s % 86400 / 3600);
    return buf;
}

const char *ctl_fmt_bytes(double bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    size_t u = 0;
    while (bytes >= 1024 && u + 1 < sizeof unit / sizeof unit[0]) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f B", bytes);
    else
        snprintf(buf, len, "%.1f %s", bytes, unit[u]);
    return buf;
}

const char *ctl_fmt_real(double v, char *buf, size_t len)
{
    if (isnan(v))
        return "-";
    snprintf(buf, len, "%.6g", v);
    return buf;
}

/* ---- tables ------------------------------------------------------------------- */

void ctl_table_init(ctl_table *t, size_t ncols, const char *const *head, const char *align)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->head = head;
    t->align = align;
}

void ctl_table_add(ctl_table *t, const char *const *row)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        char **cells = realloc(t->cells, cap * t->ncols * sizeof *cells);
        if (!cells) {
            fprintf(stderr, PROG ": out of memory\n");
            exit(CTL_EXIT_IO);
        }
        t->cells = cells;
        t->cap = cap;
    }
    for (size_t j = 0; j < t->ncols; j++) {
        char *s = strdup(row[j] ? row[j] : "-");
        if (!s) {
            fprintf(stderr, PROG ": out of memory\n");
            exit(CTL_EXIT_IO);
        }
        t->cells[t->nrows * t->ncols + j] = s;
    }
    t->nrows++;
}

void ctl_table_print(const ctl_table *t, FILE *out)
{
    size_t width[32] = {0};
    size_t nc = t->ncols < 32 ? t->ncols : 32;
    for (size_t j = 0; j < nc; j++) {
        width[j] = strlen(t->head[j]);
        for (size_t i = 0; i < t->nrows; i++) {
            size_t w = strlen(t->cells[i * t->ncols + j]);
            if (w > width[j])
                width[j] = w;
        }
    }
    for (size_t i = 0; i <= t->nrows; i++) {
        for (size_t j = 0; j < nc; j++) {
            const char *s = i == 0 ? t->head[j] : t->cells[(i - 1) * t->ncols + j];
            bool last = j + 1 == nc;
            if (t->align[j] == 'r')
                fprintf(out, "%*s", (int)width[j], s);
            else if (last)
                fputs(s, out); /* no trailing blanks */
            else
                fprintf(out, "%-*s", (int)width[j], s);
            fputs(last ? "\n" : "  ", out);
        }
    }
}

void ctl_table_free(ctl_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
