/* config.c - perceptrond's configuration: defaults, the YAML loader, validation, printing.
 *
 * The scalar settings are one table (Redis's static_configs[] idea): section, key, field, range
 * and default on one line, so defaults, reading, range checks and --check-config's output come
 * from the same place.  Listeners need more than a range check (config/listen.c); model
 * definitions are in config/model.c, the typed YAML readers in config/yaml.c.
 */
#include "daemon/config/internal.h"
#include "proto/proto.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KiB (1024.0)
#define MiB (1024.0 * 1024)
#define PCD_STATE_DIR_MAX 3968 /* leaves room under PATH_MAX for "/<model name>.<generation>..." */

typedef enum kind { S_STRING, S_CHOICE, S_BOOL, S_UINT, S_U32, S_SIZE, S_SECONDS } kind;

typedef struct setting {
    const char *section;   /* "" for the top level */
    const char *name;
    kind kind;
    size_t off;            /* of the field in pcd_config */
    double min, max;       /* inclusive; strings: max is the length limit */
    bool zero_ok;          /* 0 is accepted besides [min, max] ("never", "none") */
    double def;
    const char *sdef;      /* S_STRING / S_CHOICE default */
    const char *const *choices; /* S_CHOICE: the accepted words, NULL-terminated */
} setting;

static const char *const log_levels[] = {"debug", "info", "warning", "error", NULL};
static const char *const corrupt_actions[] = {"stop", "truncate", NULL};
static const char *const log_backends[] = {"none", "redis", NULL};
/* In the order of pcd_fsync_mode (daemon/journal/journal.h). */
const char *const pcd_fsync_names[] = {"no", "everysec", "always", NULL};

#define F(field) offsetof(pcd_config, field)
static const setting settings[] = {
    {"", "state_dir", S_STRING, F(state_dir), 1, PCD_STATE_DIR_MAX, false, 0, "state", NULL},
    {"snapshot", "interval", S_SECONDS, F(snapshot_interval), 1, 604800, true, 30, NULL, NULL},
    {"snapshot", "keep", S_UINT, F(snapshot_keep), 1, 100, false, 3, NULL, NULL},
    {"limits", "max_connections", S_UINT, F(max_connections), 1, 1048576, false, 1024, NULL, NULL},
    {"limits", "max_message_bytes", S_SIZE, F(max_message_bytes), 1 * KiB, 256 * MiB, false, 1 * MiB, NULL, NULL},
    {"limits", "max_features", S_U32, F(max_features), 1, 16777216, false, 100000, NULL, NULL},
    {"limits", "max_depth", S_U32, F(max_depth), PCP_MIN_DEPTH, PCP_MAX_DEPTH_CEILING, false, PCP_DEFAULT_MAX_DEPTH, NULL, NULL},
    {"limits", "max_batch", S_U32, F(max_batch), 1, 16777216, false, 100000, NULL, NULL},
    {"limits", "idle_timeout", S_SECONDS, F(idle_timeout), 1, 604800, true, 300, NULL, NULL},
    {"limits", "max_output_bytes", S_SIZE, F(max_output_bytes), 64 * KiB, 1024 * MiB, false, 8 * MiB, NULL, NULL},
    /* past 2^20 only worth it with models at rest (resident_max) */
    {"limits", "max_models", S_UINT, F(max_models), 1, 1u << 30, false, 1000, NULL, NULL},
    /* default: half the machine's memory, pcd_config_default (0: no bound) */
    {"limits", "max_memory", S_SIZE, F(max_memory), 0, 1048576 * MiB, false, 0, NULL, NULL},
    /* models in memory at once, the rest on disk (core/rest.c); 0: all in memory */
    {"limits", "resident_max", S_UINT, F(resident_max), 0, 1048576, false, 0, NULL, NULL},
    {"limits", "max_input_bytes", S_SIZE, F(max_input_bytes), 1 * MiB, 1048576 * MiB, false, 256 * MiB, NULL, NULL},
    {"limits", "message_timeout", S_SECONDS, F(message_timeout), 1, 3600, true, 10, NULL, NULL},
    {"limits", "turn_us", S_UINT, F(turn_us), 10, 1000000, false, 200, NULL, NULL},
    {"limits", "after_wait_ms", S_UINT, F(after_wait_ms), 0, 600000, false, 5000, NULL, NULL},
    {"journal", "enabled", S_BOOL, F(journal_enabled), 0, 1, false, 1, NULL, NULL},
    {"journal", "fsync", S_CHOICE, F(journal_fsync), 0, 0, false, 0, "everysec", pcd_fsync_names},
    {"journal", "dir", S_STRING, F(journal_dir), 1, PCD_STATE_DIR_MAX, false, 0, "journal", NULL},
    {"journal", "segment_bytes", S_SIZE, F(journal_segment_bytes), 64 * KiB, 1024 * MiB, false, 64 * MiB, NULL, NULL},
    {"journal", "on_corrupt", S_CHOICE, F(journal_on_corrupt), 0, 0, false, 0, "stop", corrupt_actions},
    {"log", "backend", S_CHOICE, F(log_backend), 0, 0, false, 0, "none", log_backends},
    {"log", "address", S_STRING, F(log_address), 0, 200, false, 0, "", NULL},
    {"log", "prefix", S_STRING, F(log_prefix), 1, 100, false, 0, "pcd:", NULL},
    {"log", "replica", S_STRING, F(log_replica), 0, 200, false, 0, "", NULL},
    {"log", "password_file", S_STRING, F(log_password_file), 1, PCD_STATE_DIR_MAX, false, 0, "", NULL},
    {"log", "password_credential", S_STRING, F(log_password_credential), 1, 200, false, 0, "", NULL},
    {"log", "wait_replicas", S_UINT, F(log_wait_replicas), 0, 100, false, 0, NULL, NULL},
    {"log", "wait_timeout_ms", S_UINT, F(log_wait_timeout_ms), 1, 3600000, false, 1000, NULL, NULL},
    {"log", "cluster", S_BOOL, F(log_cluster), 0, 1, false, 0, NULL, NULL},
    {"auth", "tokens_file", S_STRING, F(tokens_file), 1, PCD_STATE_DIR_MAX, false, 0, "", NULL},
    {"auth", "tokens_credential", S_STRING, F(tokens_credential), 1, 200, false, 0, "", NULL},
    {"metrics", "listen", S_STRING, F(metrics_listen), 1, 300, false, 0, "", NULL},
    {"", "log_level", S_CHOICE, F(log_level), 0, 0, false, 0, "info", log_levels},
    {"", "auto_create", S_BOOL, F(auto_create), 0, 1, false, 1, NULL, NULL},
    {"", "busy_poll_us", S_UINT, F(busy_poll_us), 0, 10000, false, 50, NULL, NULL},
};
#define NSETTINGS (sizeof settings / sizeof *settings)
#undef F

#define DEFAULT_TCP "127.0.0.1:7411"
#define DEFAULT_UNIX "perceptrond.sock"
#define DEFAULT_UNIX_MODE 0660u

/* ---- defaults and freeing ---------------------------------------------- */

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort(); /* pcd_config_default is documented to abort on out-of-memory */
    return d;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p)
        abort();
    return p;
}

#define FIELD(c, s, type) ((type *)(void *)((char *)(c) + (s)->off))

/* A cgroup's memory limit from the file at path (v2 memory.max, v1
 * memory.limit_in_bytes); 0 when there is none. */
static uint64_t cgroup_limit(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (f && fscanf(f, "%llu", &v) != 1) /* "max": none */
        v = 0;
    if (f)
        fclose(f);
    return v;
}

/* The memory this daemon may use: the machine's, or its cgroup's limit
 * when lower (systemd's MemoryMax=, a container's limit). */
static uint64_t machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    uint64_t mem = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char path[1200];
        uint64_t lim = 0;
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", line + 3);
            lim = cgroup_limit(path);
        } else if (strstr(line, ":memory:")) {
            snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes",
                     strstr(line, ":memory:") + 8);
            lim = cgroup_limit(path);
        }
        if (lim && lim < mem)
            mem = lim;
    }
    if (f)
        fclose(f);
    return mem;
}

size_t pcd_config_memory_default(void)
{
    /* Half: the other half for what is not counted (allocator overhead,
     * the snapshot child's copy-on-write pages, the page cache). */
    const uint64_t mib = 1u << 20;
    uint64_t half = machine_memory() / 2 / mib * mib;
    return half > (uint64_t)1 << 40 ? (size_t)1 << 40 : (size_t)half; /* the key's ceiling, 1 TiB */
}

void pcd_config_default(pcd_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NSETTINGS; i++) {
        const setting *s = &settings[i];
        switch (s->kind) {
        case S_STRING:
        case S_CHOICE: *FIELD(c, s, char *) = xstrdup(s->sdef); break;
        case S_BOOL: *FIELD(c, s, bool) = s->def != 0; break;
        case S_UINT: *FIELD(c, s, unsigned) = (unsigned)s->def; break;
        case S_U32: *FIELD(c, s, uint32_t) = (uint32_t)s->def; break;
        case S_SIZE: *FIELD(c, s, size_t) = (size_t)s->def; break;
        case S_SECONDS: *FIELD(c, s, double) = s->def; break;
        }
    }
    /* Loopback TCP reads and learns without a token; the administrative
     * methods need one there, or the Unix socket, which its file mode guards
     * (docs/security.md). */
    c->tcp_rights_default = PCP_R_LEARN;
    c->unix_rights_default = PCP_R_ADMIN;
    c->tcp = xcalloc(1, sizeof *c->tcp);
    c->tcp_access = xcalloc(1, sizeof *c->tcp_access);
    c->tcp[c->ntcp] = xstrdup(DEFAULT_TCP);
    c->tcp_access[c->ntcp++].rights = c->tcp_rights_default;
    c->unix_paths = xcalloc(1, sizeof *c->unix_paths);
    c->unix_modes = xcalloc(1, sizeof *c->unix_modes);
    c->unix_rights = xcalloc(1, sizeof *c->unix_rights);
    c->unix_paths[0] = xstrdup(DEFAULT_UNIX);
    c->unix_modes[0] = DEFAULT_UNIX_MODE;
    c->unix_rights[0] = c->unix_rights_default;
    c->nunix = 1;
    c->unix_mode = DEFAULT_UNIX_MODE;
    c->max_memory = pcd_config_memory_default();
    pcd_template_def_default(&c->template_model);
}

void pcd_config_free(pcd_config *c)
{
    if (!c)
        return;
    pcd_free_tcp(c);
    pcd_free_unix(c);
    for (size_t i = 0; i < NSETTINGS; i++)
        if (settings[i].kind == S_STRING || settings[i].kind == S_CHOICE)
            free(*FIELD(c, &settings[i], char *));
    pcd_model_def_free(&c->template_model);
    pcd_free_strings(c->log_models, c->nlog_models);
    for (size_t i = 0; i < c->nmodels; i++)
        pcd_model_def_free(&c->models[i]);
    free(c->models);
    memset(c, 0, sizeof *c);
}

/* ---- scalar settings ---------------------------------------------------- */

static int read_setting(pcd_yctx *y, const setting *s, const yaml_node_t *n, pcd_config *c)
{
    char key[PCD_YKEY_MAX];
    pcd_ykey(key, s->section, s->name);
    uint64_t u;
    size_t idx;
    char *str;
    switch (s->kind) {
    case S_STRING:
        if (pcd_yget_string(y, n, key, (size_t)s->max, &str))
            return -1;
        free(*FIELD(c, s, char *));
        *FIELD(c, s, char *) = str;
        return 0;
    case S_CHOICE:
        if (pcd_yget_choice(y, n, key, s->choices, &idx))
            return -1;
        if (!(str = strdup(s->choices[idx])))
            return pcd_yfail(y, n, key, "out of memory");
        free(*FIELD(c, s, char *));
        *FIELD(c, s, char *) = str;
        return 0;
    case S_BOOL:
        return pcd_yget_bool(y, n, key, FIELD(c, s, bool));
    case S_UINT:
    case S_U32:
        if (pcd_yget_uint(y, n, key, (uint64_t)s->min, (uint64_t)s->max, &u))
            return -1;
        if (s->kind == S_UINT)
            *FIELD(c, s, unsigned) = (unsigned)u;
        else
            *FIELD(c, s, uint32_t) = (uint32_t)u;
        return 0;
    case S_SIZE:
        if (pcd_yget_size(y, n, key, (uint64_t)s->min, (uint64_t)s->max, &u))
            return -1;
        *FIELD(c, s, size_t) = (size_t)u;
        return 0;
    case S_SECONDS:
        return pcd_yget_real(y, n, key, s->min, s->max, s->zero_ok, FIELD(c, s, double));
    }
    return -1;
}

/* log.models: the name patterns (fnmatch) of the models this daemon serves. */
static int read_log_models(pcd_yctx *y, const yaml_node_t *n, pcd_config *c)
{
    const yaml_node_item_t *items;
    size_t count;
    if (pcd_yget_seq(y, n, "log.models", PCD_LOG_PATTERNS_MAX, &items, &count))
        return -1;
    char **v = calloc(count ? count : 1, sizeof *v);
    if (!v)
        return pcd_yfail(y, n, "log.models", "out of memory");
    pcd_free_strings(c->log_models, c->nlog_models);
    c->log_models = v;
    c->nlog_models = 0;
    for (size_t i = 0; i < count; i++) {
        if (pcd_yget_string(y, pcd_ynode(y, items[i]), "log.models", 200, &v[i]))
            return -1;
        c->nlog_models++;
        if (!v[i][0])
            return pcd_yfail(y, pcd_ynode(y, items[i]), "log.models", "an empty pattern matches no model");
    }
    return 0;
}

/* log: a redis backend needs an address it can parse, and a prefix that
 * cannot break the {hash tag} of the stream keys. */
static int check_log(pcd_yctx *y, const yaml_node_t *map, const pcd_config *c)
{
    if (strpbrk(c->log_prefix, "{}"))
        return pcd_yfail(y, map, "log.prefix", "must not contain { or } (the stream keys' hash tag is {model})");
    if (strcmp(c->log_backend, "redis"))
        return 0;
    const char *a = c->log_address;
    const char *colon = strncmp(a, "tcp:", 4) ? NULL : strrchr(a, ':');
    if (!strncmp(a, "unix:", 5) ? a[5] != 0 : colon && colon > a + 4 && atoi(colon + 1) > 0 &&
                                                  atoi(colon + 1) < 65536)
        return 0;
    return pcd_yfail(y, map, "log.address", "'%s' is not \"unix:/path\" or \"tcp:host:port\"", a);
}

/* A section ("snapshot", "limits") whose keys are all table settings (log
 * also has its list of model patterns). */
static int read_section(pcd_yctx *y, const yaml_node_t *map, const char *section, pcd_config *c)
{
    const char *keys[NSETTINGS + 1];
    const setting *which[NSETTINGS + 1];
    yaml_node_t *vals[NSETTINGS + 1];
    size_t n = 0;
    for (size_t i = 0; i < NSETTINGS; i++)
        if (!strcmp(settings[i].section, section)) {
            which[n] = &settings[i];
            keys[n++] = settings[i].name;
        }
    bool log = !strcmp(section, "log");
    if (log) {
        which[n] = NULL;
        keys[n++] = "models";
    }
    if (pcd_ybind(y, map, section, keys, n, vals, NULL))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (vals[i] && (which[i] ? read_setting(y, which[i], vals[i], c) : read_log_models(y, vals[i], c)))
            return -1;
    if (!strcmp(section, "metrics") && *c->metrics_listen) {
        const char *why = pcd_tcp_problem(c->metrics_listen);
        if (why)
            return pcd_yfail(y, map, "metrics.listen", "'%.80s' is not host:port: %s (example: "
                             "127.0.0.1:9411)", c->metrics_listen, why);
    }
    return log ? check_log(y, map, c) : 0;
}

/* ---- the whole file ---------------------------------------------------------- */

enum { T_LISTEN, T_TEMPLATE, T_MODELS, T_FIXED };
static const char *const fixed_top[T_FIXED] = {"listen", "template", "models"};

static int apply(pcd_yctx *y, const yaml_node_t *root, pcd_config *c)
{
    if (!root || pcd_yis_null(root))
        return 0; /* an empty file: the defaults */
    if (root->type != YAML_MAPPING_NODE)
        return pcd_yfail(y, root, NULL, "the file must be a mapping of settings (key: value), not %s",
                         pcd_ytype(root));
    /* Top-level keys: the three above, each table section once, each top-level setting. */
    const char *keys[T_FIXED + NSETTINGS];
    const setting *which[T_FIXED + NSETTINGS] = {0};
    yaml_node_t *vals[T_FIXED + NSETTINGS], *knodes[T_FIXED + NSETTINGS];
    size_t n = 0;
    for (; n < T_FIXED; n++)
        keys[n] = fixed_top[n];
    for (size_t i = 0; i < NSETTINGS; i++) {
        const char *name = *settings[i].section ? settings[i].section : settings[i].name;
        size_t k = 0;
        while (k < n && strcmp(keys[k], name))
            k++;
        if (k == n) {
            which[n] = *settings[i].section ? NULL : &settings[i];
            keys[n++] = name;
        }
    }
    if (pcd_ybind(y, root, "", keys, n, vals, knodes))
        return -1;
    for (size_t k = T_FIXED; k < n; k++) {
        if (!vals[k])
            continue;
        if (which[k] ? read_setting(y, which[k], vals[k], c) : read_section(y, vals[k], keys[k], c))
            return -1;
    }
    if (vals[T_LISTEN] && pcd_listen_parse(y, knodes[T_LISTEN], vals[T_LISTEN], c))
        return -1;
    if (vals[T_TEMPLATE] &&
        pcd_template_parse(y, knodes[T_TEMPLATE], vals[T_TEMPLATE], &c->template_model))
        return -1;
    if (vals[T_MODELS] && pcd_models_parse(y, vals[T_MODELS], c))
        return -1;
    return 0;
}

static int syntax_error(pcd_yctx *y, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        snprintf(y->err, y->errlen, "%s: out of memory reading the file", y->path);
    else if (p->error == YAML_READER_ERROR)
        snprintf(y->err, y->errlen, "%s: byte %zu: %s (the file must be UTF-8 or UTF-16 text)",
                 y->path, p->problem_offset, p->problem ? p->problem : "unreadable");
    else if (p->context)
        snprintf(y->err, y->errlen, "%s:%zu:%zu: YAML syntax error: %s (%s on line %zu)", y->path,
                 p->problem_mark.line + 1, p->problem_mark.column + 1,
                 p->problem ? p->problem : "unknown", p->context, p->context_mark.line + 1);
    else
        snprintf(y->err, y->errlen, "%s:%zu:%zu: YAML syntax error: %s", y->path,
                 p->problem_mark.line + 1, p->problem_mark.column + 1,
                 p->problem ? p->problem : "unknown");
    return -1;
}

int pcd_config_load(const char *path, pcd_config *out, char *err, size_t errlen)
{
    char dummy[1];
    pcd_yctx y = {.path = path, .err = errlen ? err : dummy, .errlen = errlen ? errlen : sizeof dummy};
    y.err[0] = 0;
    pcd_config c;
    pcd_config_default(&c);
    int rc = -1;
    bool parser_ok = false, doc_ok = false;
    yaml_parser_t parser;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f) {
        snprintf(y.err, y.errlen, "%s: cannot open the configuration: %s", path, strerror(errno));
        goto done;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(y.err, y.errlen, "%s: is a directory, not a configuration file", path);
        goto done;
    }
    if (!(parser_ok = yaml_parser_initialize(&parser))) {
        snprintf(y.err, y.errlen, "%s: out of memory", path);
        goto done;
    }
    yaml_parser_set_input_file(&parser, f);
    if (!(doc_ok = yaml_parser_load(&parser, &y.doc))) {
        syntax_error(&y, &parser);
        goto done;
    }
    /* A second document would be silently ignored by a reader that stops at the first. */
    yaml_document_t extra;
    if (!yaml_parser_load(&parser, &extra)) {
        syntax_error(&y, &parser);
        goto done;
    }
    yaml_node_t *second = yaml_document_get_root_node(&extra);
    size_t line = second ? second->start_mark.line + 1 : 0;
    yaml_document_delete(&extra);
    if (second) {
        snprintf(y.err, y.errlen, "%s:%zu: a second YAML document (after ---): the configuration "
                 "is one document", path, line);
        goto done;
    }
    if (pcd_ycheck_tree(&y))
        goto done;
    rc = apply(&y, yaml_document_get_root_node(&y.doc), &c);
done:
    if (doc_ok)
        yaml_document_delete(&y.doc);
    if (parser_ok)
        yaml_parser_delete(&parser);
    if (f)
        fclose(f);
    if (rc) {
        pcd_config_free(&c);
        memset(out, 0, sizeof *out);
        return -1;
    }
    *out = c;
    return 0;
}

/* ---- printing ------------------------------------------------------------------ */

static void dump_setting(const pcd_config *c, const setting *s, FILE *out)
{
    char buf[32];
    fprintf(out, "%s%s: ", *s->section ? "  " : "", s->name);
    switch (s->kind) {
    case S_STRING: pcd_ydump_str(out, *FIELD(c, s, char *const)); break;
    case S_CHOICE: fputs(*FIELD(c, s, char *const), out); break;
    case S_BOOL: fputs(*FIELD(c, s, const bool) ? "true" : "false", out); break;
    case S_UINT: fprintf(out, "%u", *FIELD(c, s, const unsigned)); break;
    case S_U32: fprintf(out, "%lu", (unsigned long)*FIELD(c, s, const uint32_t)); break;
    case S_SIZE: {
        size_t v = *FIELD(c, s, const size_t);
        const char *unit = "";
        if (v && v % (1u << 20) == 0)
            v >>= 20, unit = "MiB";
        else if (v && v % 1024 == 0)
            v >>= 10, unit = "KiB";
        snprintf(buf, sizeof buf, "%zu%s", v, unit);
        fputs(buf, out);
        break;
    }
    case S_SECONDS: pcd_ydump_real(out, *FIELD(c, s, const double)); break;
    }
    fputc('\n', out);
}

void pcd_config_dump(const pcd_config *c, FILE *out)
{
    pcd_listen_dump(c, out);
    const char *section = "";
    for (size_t i = 0; i < NSETTINGS; i++) {
        const setting *s = &settings[i];
        if (strcmp(s->section, section) && *s->section)
            fprintf(out, "%s:\n", s->section);
        section = s->section;
        if (s->kind == S_STRING && !**FIELD(c, s, char *const))
            continue; /* log.address when not set: "" would not read back */
        dump_setting(c, s, out);
        if (!strcmp(s->section, "log") && !strcmp(s->name, "prefix")) {
            fputs("  models: [", out);
            for (size_t k = 0; k < c->nlog_models; k++) {
                fputs(k ? ", " : "", out);
                pcd_ydump_str(out, c->log_models[k]);
            }
            fputs("]\n", out);
        }
    }
    fputs("template:\n", out);
    pcd_model_dump(&c->template_model, out, 2);
    fprintf(out, "models:%s\n", c->nmodels ? "" : " {}");
    for (size_t i = 0; i < c->nmodels; i++) {
        fputs("  ", out);
        pcd_ydump_str(out, c->models[i].name);
        fputs(":\n", out);
        pcd_model_dump(&c->models[i], out, 4);
    }
}
