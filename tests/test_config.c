/* test_config.c - the daemon's YAML configuration: defaults, the example file, every key, and
 * every kind of error with its line, column and key in the message.
 *
 * Error tests fill the output struct with garbage first and check it comes back zeroed; run with
 * CK_FORK=no under valgrind or ASan to check that no error path leaks. */
#include "daemon/config/config.h"
#include "proto/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"

#ifndef PCD_SRCDIR
#error "PCD_SRCDIR must name the source tree"
#endif

static const char example_path[] = PCD_SRCDIR "/conf/perceptrond.yaml";

/* Writes text to a fresh temporary file; the caller unlinks path. */
static void write_temp(char path[64], const char *text, size_t len)
{
    strcpy(path, "/tmp/pcd_test_config_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static int load_len(const char *text, size_t len, pcd_config *c, char *err, size_t errlen)
{
    char path[64];
    write_temp(path, text, len);
    int rc = pcd_config_load(path, c, err, errlen);
    size_t plen = strlen(path) < errlen ? strlen(path) : errlen ? errlen - 1 : 0;
    if (rc != 0 && err) /* every message starts with the file name */
        ck_assert_msg(strncmp(err, path, plen) == 0, "message without the path: %s", err);
    unlink(path);
    return rc;
}

static int load_text(const char *text, pcd_config *c, char *err, size_t errlen)
{
    return load_len(text, strlen(text), c, err, errlen);
}

/* Loads text that must be valid. */
static void load_ok(const char *text, pcd_config *c)
{
    char err[1024] = "";
    int rc = load_text(text, c, err, sizeof err);
    ck_assert_msg(rc == 0, "expected to load, got: %s\n--- text:\n%s", err, text);
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* Loads text that must fail with every needle in the message. */
static void check_err(int line, const char *text, size_t len, const char *const *needles)
{
    pcd_config c;
    memset(&c, 0xA5, sizeof c); /* load must neither read nor free what was there */
    char err[1024] = "";
    int rc = load_len(text, len, &c, err, sizeof err);
    ck_assert_msg(rc == -1, "test line %d: expected an error, loaded:\n%s", line, text);
    ck_assert_msg(all_zero(&c, sizeof c), "test line %d: config not zeroed after an error", line);
    for (const char *const *n = needles; *n; n++)
        ck_assert_msg(strstr(err, *n) != NULL, "test line %d: '%s' not in the message: %s", line, *n,
                      err);
}

#define EXPECT_ERR(text, ...) check_err(__LINE__, (text), strlen(text), (const char *const[]){__VA_ARGS__, NULL})

/* ---- defaults ----------------------------------------------------------- */

static void assert_defaults(const pcd_config *c)
{
    ck_assert_uint_eq(c->ntcp, 1);
    ck_assert_str_eq(c->tcp[0], "127.0.0.1:7411");
    ck_assert_uint_eq(c->nunix, 1);
    ck_assert_str_eq(c->unix_paths[0], "perceptrond.sock");
    ck_assert_uint_eq(c->unix_modes[0], 0660);
    ck_assert_uint_eq(c->unix_mode, 0660);
    ck_assert_str_eq(c->state_dir, "state");
    ck_assert_double_eq(c->snapshot_interval, 30);
    ck_assert_uint_eq(c->snapshot_keep, 3);
    ck_assert_uint_eq(c->max_connections, 1024);
    ck_assert_uint_eq(c->max_message_bytes, 1u << 20);
    ck_assert_uint_eq(c->max_features, 100000);
    ck_assert_uint_eq(c->max_depth, 16);
    ck_assert_uint_eq(c->max_batch, 100000);
    ck_assert_double_eq(c->idle_timeout, 300);
    ck_assert_uint_eq(c->max_output_bytes, 8u << 20);
    ck_assert_str_eq(c->log_level, "info");
    ck_assert(c->auto_create);
    ck_assert_uint_eq(c->busy_poll_us, 50);
    ck_assert(c->journal_enabled);
    ck_assert_str_eq(c->journal_fsync, "everysec");
    ck_assert_str_eq(c->journal_dir, "journal");
    ck_assert_uint_eq(c->journal_segment_bytes, 64u << 20);
    ck_assert_str_eq(c->journal_on_corrupt, "stop");
    ck_assert_str_eq(c->log_backend, "none");
    ck_assert_str_eq(c->log_prefix, "pcd:");
    ck_assert_uint_eq(c->nlog_models, 0);
    const pcd_model_def *t = &c->template_model;
    ck_assert_ptr_null(t->name);
    /* the default template: pa, averaged, scale rms-sent, every named number
     * in half-octave bins, 2^19 (docs/config.md, "The default template") */
    ck_assert_str_eq(pc_rule_name(t->cfg.rule), "pa");
    ck_assert_uint_eq(t->cfg.dim, 1u << 19);
    ck_assert_uint_eq(t->hash_bits, 19);
    ck_assert(t->cfg.bias);
    ck_assert_double_eq(t->cfg.bias_value, 1);
    ck_assert(t->cfg.averaged && !t->cfg.batch && !t->cfg.multiclass && !t->cfg.open_classes);
    ck_assert_int_eq(t->cfg.prep.scale, PC_SCALE_RMS_SENT);
    ck_assert_uint_eq(t->cfg.prep.ntransforms, 1);
    ck_assert_str_eq(t->cfg.prep.transforms[0].pattern, "*");
    ck_assert_int_eq(t->cfg.prep.transforms[0].kind, PC_TRANSFORM_LOGBINS);
    ck_assert_uint_eq(t->cfg.prep.ncrosses, 0);
    ck_assert_uint_eq(t->nclasses, 0);
    ck_assert_uint_eq(c->nmodels, 0);
}

START_TEST(test_default)
{
    pcd_config c;
    pcd_config_default(&c);
    assert_defaults(&c);
    pcd_config_free(&c);
    ck_assert(all_zero(&c, sizeof c));
    pcd_config_free(&c); /* twice is harmless */
    pcd_config_free(NULL);
}
END_TEST

START_TEST(test_empty_is_default)
{
    static const char *const texts[] = {"", "\n\n", "# only a comment\n", "---\n", "~\n", "null\n",
                                        "---\n...\n", "{}\n"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        pcd_config c;
        memset(&c, 0x5A, sizeof c);
        load_ok(texts[i], &c);
        assert_defaults(&c);
        pcd_config_free(&c);
    }
    /* Null and empty sections are empty: the defaults stay. */
    pcd_config c;
    load_ok("listen:\nsnapshot:\nlimits: {}\ntemplate:\nmodels:\n", &c);
    assert_defaults(&c);
    pcd_config_free(&c);
}
END_TEST

/* ---- the example file --------------------------------------------------- */

static void assert_example(const pcd_config *c)
{
    /* Everything but the models is the default, as the file says. */
    pcd_config d = *c;
    d.nmodels = 0;
    assert_defaults(&d);
    ck_assert_uint_eq(c->nmodels, 5);

    const pcd_model_def *m = &c->models[0];
    ck_assert_str_eq(m->name, "spam");
    ck_assert_str_eq(pc_rule_name(m->cfg.rule), "perceptron");
    ck_assert_double_eq(m->cfg.params.val[0].v[0], 0.5);
    ck_assert_uint_eq(m->cfg.dim, 1u << 22);
    ck_assert_uint_eq(m->hash_bits, 22);
    ck_assert(m->cfg.bias && m->cfg.averaged && !m->cfg.batch && !m->cfg.multiclass);
    ck_assert_double_eq(m->cfg.bias_value, 1);

    m = &c->models[1];
    ck_assert_str_eq(m->name, "digits");
    ck_assert_uint_eq(m->cfg.dim, 784);
    ck_assert_uint_eq(m->hash_bits, 0);
    ck_assert(m->cfg.multiclass && !m->cfg.open_classes && !m->cfg.averaged);
    ck_assert_uint_eq(m->nclasses, 10);
    ck_assert_uint_eq(m->cfg.nclasses, 10);
    ck_assert_ptr_eq(m->cfg.classes, (const char *const *)m->classes);
    for (size_t i = 0; i < 10; i++) {
        char want[2] = {(char)('0' + i), 0};
        ck_assert_str_eq(m->classes[i], want);
    }

    m = &c->models[2];
    ck_assert_str_eq(m->name, "topics");
    ck_assert(m->cfg.multiclass && m->cfg.open_classes);
    ck_assert_uint_eq(m->nclasses, 0);
    ck_assert_uint_eq(m->cfg.dim, 1u << 20);

    m = &c->models[3];
    ck_assert_str_eq(m->name, "clicks");
    ck_assert(m->cfg.batch && !m->cfg.multiclass);
    ck_assert_double_eq(m->cfg.params.val[0].v[0], 0.25);
    ck_assert_uint_eq(m->cfg.dim, 1u << 18);
    ck_assert_uint_eq(m->join.ttl, 3600); /* the join defaults */
    ck_assert(!m->join.has_default && m->nchallengers == 0);

    m = &c->models[4];
    ck_assert_str_eq(m->name, "ads");
    ck_assert_uint_eq(m->join.ttl, 1800);
    ck_assert(m->join.has_default);
    ck_assert_str_eq(m->join.default_label, "-1");
    ck_assert_uint_eq(m->join.max_pending, 1000000);
    ck_assert_uint_eq(m->join.max_bytes, 268435456);
    ck_assert_uint_eq(m->nchallengers, 2);
    ck_assert_str_eq(pc_rule_name(m->challengers[0].c.rule), "perceptron");
    ck_assert(m->challengers[0].c.averaged && m->challengers[0].given[PCP_SPEC_AVERAGED]);
    ck_assert_str_eq(pc_rule_name(m->challengers[1].c.rule), "pa1");
    ck_assert_double_eq(m->challengers[1].c.params.val[0].v[0], 0.5);
}

START_TEST(test_example_file)
{
    pcd_config c;
    char err[1024] = "";
    int rc = pcd_config_load(example_path, &c, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    assert_example(&c);
    pcd_config_free(&c);
}
END_TEST

/* What dump prints loads back to the same values, and prints the same again. */
static char *dump_text(const pcd_config *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    pcd_config_dump(c, f);
    fclose(f);
    return buf;
}

START_TEST(test_dump_round_trip)
{
    pcd_config c, back;
    char err[1024] = "";
    ck_assert_msg(pcd_config_load(example_path, &c, err, sizeof err) == 0, "%s", err);
    char *text = dump_text(&c);
    load_ok(text, &back);
    assert_example(&back);
    char *again = dump_text(&back);
    ck_assert_str_eq(text, again);
    free(text);
    free(again);
    pcd_config_free(&back);
    pcd_config_free(&c);

    /* Non-default values of every kind survive too, including strings that need escaping. */
    load_ok("listen: {tcp: [], unix: [\"a \\\"b\\\"\\\\c.sock\", {path: x.sock, mode: '0600'}], "
            "unix_mode: 0640}\n"
            "state_dir: \"/var/lib/p d\"\n"
            "snapshot: {interval: 0.5e1, keep: 7}\n"
            "limits: {max_message_bytes: 2000, max_output_bytes: 65KiB, idle_timeout: 0}\n"
            "log_level: debug\nauto_create: no\n"
            "template: {rule: perceptron, dim: 1000, bias: false, bias_value: -2.5, params: {eta: 0.1}, "
            "scale: std, transforms: ['a*:bins=1,2.5', 'b:log'], crosses: ['x,y'], max_crossed: 9}\n"
            "models: {x: {classes: [\"a\\tb\", \"é\"], open_classes: true}}\n",
            &c);
    text = dump_text(&c);
    load_ok(text, &back);
    again = dump_text(&back);
    ck_assert_str_eq(text, again);
    ck_assert_str_eq(back.unix_paths[0], "a \"b\"\\c.sock");
    ck_assert_uint_eq(back.unix_modes[0], 0640);
    ck_assert_uint_eq(back.unix_modes[1], 0600);
    ck_assert_str_eq(back.state_dir, "/var/lib/p d");
    ck_assert_double_eq(back.snapshot_interval, 5);
    ck_assert_uint_eq(back.max_message_bytes, 2000);
    ck_assert_uint_eq(back.max_output_bytes, 65 * 1024);
    ck_assert_double_eq(back.template_model.cfg.bias_value, -2.5);
    ck_assert_double_eq(back.template_model.cfg.params.val[0].v[0], 0.1);
    ck_assert_uint_eq(back.template_model.cfg.dim, 1000);
    ck_assert_str_eq(back.models[0].classes[0], "a\tb");
    ck_assert_str_eq(back.models[0].classes[1], "é");
    free(text);
    free(again);
    pcd_config_free(&back);
    pcd_config_free(&c);
}
END_TEST

/* Every key is documented and shown in the example. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int ch;
    while ((ch = fgetc(f)) != EOF)
        fputc(ch, m);
    fclose(m);
    fclose(f);
    return buf;
}

START_TEST(test_every_key_documented)
{
    static const char *const keys[] = {
        "listen", "tcp", "unix", "unix_mode", "path", "mode", "state_dir", "snapshot", "interval",
        "keep", "limits", "max_connections", "max_message_bytes", "max_features", "max_depth",
        "max_batch", "idle_timeout", "max_output_bytes", "max_models", "max_memory",
        "max_input_bytes", "message_timeout", "turn_us", "log_level", "auto_create", "busy_poll_us",
        "journal", "enabled", "fsync", "segment_bytes", "on_corrupt", "template",
        "log", "backend", "address", "prefix",
        "models", "rule", "params", "dim", "hash_bits", "bias", "bias_value", "averaged",
        "classes", "open_classes", "tcp_rights", "unix_rights", "rights", "tls", "cert", "key",
        "client_ca", "client_cert", "auth", "tokens_file", "tokens_credential", "metrics", "storage",
        "calibrate", "join.ttl", "join.default_label", "join.max_pending", "join.max_bytes",
        "challengers",
    };
    char *doc = slurp(PCD_SRCDIR "/docs/config.md");
    char *conf = slurp(example_path);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char want[64];
        char dotted[64]; /* `limits.max_depth` describes max_depth */
        snprintf(want, sizeof want, "`%s`", keys[i]);
        snprintf(dotted, sizeof dotted, ".%s`", keys[i]);
        ck_assert_msg(strstr(doc, want) != NULL || strstr(doc, dotted) != NULL,
                      "docs/config.md does not describe %s", want);
        snprintf(want, sizeof want, "%s:", keys[i]);
        ck_assert_msg(strstr(conf, want) != NULL, "conf/perceptrond.yaml does not show %s", want);
    }
    free(doc);
    free(conf);
}
END_TEST

/* ---- every key, set ---------------------------------------------------- */

START_TEST(test_every_setting)
{
    pcd_config c;
    load_ok("listen:\n"
            "  tcp: [\"0.0.0.0:1\", \"[::1]:65535\", \"host-name.example_1:80\"]\n"
            "  unix: [/run/p.sock, {path: b.sock}, {path: c.sock, mode: 0o600}]\n"
            "  unix_mode: 666\n"
            "state_dir: /var/lib/perceptrond\n"
            "snapshot:\n  interval: 0\n  keep: 100\n"
            "journal: {enabled: false, fsync: always, dir: /j, segment_bytes: 1GiB, on_corrupt: truncate}\n"
            "log: {backend: redis, address: \"unix:/run/r.sock\", prefix: \"x:\", models: [\"a*\", b]}\n"
            "limits:\n"
            "  max_connections: 1\n"
            "  max_message_bytes: 256 MiB\n"
            "  max_features: 16777216\n"
            "  max_depth: 4\n"
            "  max_batch: 1\n"
            "  idle_timeout: 604800\n"
            "  max_output_bytes: 1GiB\n"
            "log_level: error\n"
            "auto_create: FALSE\n"
            "busy_poll_us: 0\n",
            &c);
    ck_assert_uint_eq(c.ntcp, 3);
    ck_assert_str_eq(c.tcp[0], "0.0.0.0:1");
    ck_assert_str_eq(c.tcp[1], "[::1]:65535");
    ck_assert_str_eq(c.tcp[2], "host-name.example_1:80");
    ck_assert_uint_eq(c.nunix, 3);
    ck_assert_str_eq(c.unix_paths[0], "/run/p.sock");
    ck_assert_str_eq(c.unix_paths[1], "b.sock");
    ck_assert_str_eq(c.unix_paths[2], "c.sock");
    ck_assert_uint_eq(c.unix_mode, 0666); /* read before the entries, whatever the order */
    ck_assert_uint_eq(c.unix_modes[0], 0666);
    ck_assert_uint_eq(c.unix_modes[1], 0666);
    ck_assert_uint_eq(c.unix_modes[2], 0600);
    ck_assert_str_eq(c.state_dir, "/var/lib/perceptrond");
    ck_assert_double_eq(c.snapshot_interval, 0);
    ck_assert_uint_eq(c.snapshot_keep, 100);
    ck_assert_uint_eq(c.max_connections, 1);
    ck_assert_uint_eq(c.max_message_bytes, 256u << 20);
    ck_assert_uint_eq(c.max_features, 16777216);
    ck_assert_uint_eq(c.max_depth, 4);
    ck_assert_uint_eq(c.max_batch, 1);
    ck_assert_double_eq(c.idle_timeout, 604800);
    ck_assert_uint_eq(c.max_output_bytes, 1u << 30);
    ck_assert_str_eq(c.log_level, "error");
    ck_assert(!c.auto_create);
    ck_assert_uint_eq(c.busy_poll_us, 0);
    ck_assert(!c.journal_enabled);
    ck_assert_str_eq(c.journal_fsync, "always");
    ck_assert_str_eq(c.journal_dir, "/j");
    ck_assert_uint_eq(c.journal_segment_bytes, 1u << 30);
    ck_assert_str_eq(c.journal_on_corrupt, "truncate");
    ck_assert_str_eq(c.log_backend, "redis");
    ck_assert_str_eq(c.log_address, "unix:/run/r.sock");
    ck_assert_str_eq(c.log_prefix, "x:");
    ck_assert_uint_eq(c.nlog_models, 2);
    ck_assert_str_eq(c.log_models[0], "a*");
    ck_assert_str_eq(c.log_models[1], "b");
    pcd_config_free(&c);

    /* Sections given in part keep the other defaults; unix_mode alone applies to the default
     * socket; turning TCP off keeps the socket. */
    load_ok("limits: {max_depth: 32}\nlisten: {unix_mode: '0600', tcp: []}\nlog_level: warning\n", &c);
    ck_assert_uint_eq(c.max_depth, 32); /* proto's ceiling (msgpack-c's stack) */
    ck_assert_uint_eq(c.max_connections, 1024);
    ck_assert_uint_eq(c.ntcp, 0);
    ck_assert_uint_eq(c.nunix, 1);
    ck_assert_uint_eq(c.unix_modes[0], 0600);
    ck_assert_str_eq(c.log_level, "warning");
    pcd_config_free(&c);

    /* many more models than fit in memory, with models at rest */
    load_ok("limits: {max_models: 5000000, resident_max: 1000}\n", &c);
    ck_assert_uint_eq(c.max_models, 5000000);
    pcd_config_free(&c);

    load_ok("listen: {unix: []}\nsnapshot: {interval: 1.5}\nlimits: {max_message_bytes: 1024}\n", &c);
    ck_assert_uint_eq(c.nunix, 0);
    ck_assert_uint_eq(c.ntcp, 1);
    ck_assert_double_eq(c.snapshot_interval, 1.5);
    ck_assert_uint_eq(c.max_message_bytes, 1024);
    pcd_config_free(&c);

    /* Booleans: YAML 1.2 and 1.1 spellings. */
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "on", "ON"};
    static const char *const no[] = {"false", "False", "no", "No", "off", "OFF"};
    for (size_t i = 0; i < 6; i++) {
        char text[64];
        snprintf(text, sizeof text, "auto_create: %s\n", yes[i]);
        load_ok(text, &c);
        ck_assert(c.auto_create);
        pcd_config_free(&c);
        snprintf(text, sizeof text, "auto_create: %s\n", no[i]);
        load_ok(text, &c);
        ck_assert(!c.auto_create);
        pcd_config_free(&c);
    }
}
END_TEST

START_TEST(test_every_model_key)
{
    pcd_config c;
    load_ok("models:\n"
            "  a:\n"
            "    params: {eta: 2}\n" /* before rule: read after it whatever the order */
            "    rule: perceptron\n"
            "    dim: 100000\n" /* (2^28 is accepted too, but building it costs 2 GiB under MALLOC_PERTURB_) */
            "    bias: false\n"
            "    bias_value: 0.25\n"
            "    averaged: true\n"
            "    mode: batch\n"
            "    storage: sparse\n"
            "  b: {hash_bits: 1, classes: [x, 2, 'y z', true], open_classes: true, storage: auto,\n"
            "      weights: float32}\n"
            "  c:\n"
            "  A-b_c.9: {open_classes: false, mode: online}\n"
            "template: {rule: perceptron, classes: [p, q], hash_bits: 12, averaged: yes}\n",
            &c);
    ck_assert_uint_eq(c.nmodels, 4);
    const pcd_model_def *m = &c.models[0];
    ck_assert_str_eq(m->name, "a");
    ck_assert_double_eq(m->cfg.params.val[0].v[0], 2);
    ck_assert_uint_eq(m->cfg.dim, 100000);
    ck_assert_uint_eq(m->hash_bits, 0);
    ck_assert(!m->cfg.bias && m->cfg.averaged && m->cfg.batch && !m->cfg.multiclass);
    ck_assert_double_eq(m->cfg.bias_value, 0.25);
    ck_assert_int_eq(m->cfg.storage, PC_STORAGE_SPARSE);
    ck_assert_int_eq(c.models[1].cfg.storage, PC_STORAGE_AUTO);
    ck_assert_int_eq(c.models[2].cfg.storage, PC_STORAGE_DENSE);
    ck_assert_int_eq(c.models[1].cfg.weights, PC_WEIGHTS_FLOAT32);
    ck_assert_int_eq(c.models[0].cfg.weights, PC_WEIGHTS_FLOAT64);

    m = &c.models[1];
    ck_assert_uint_eq(m->cfg.dim, 2);
    ck_assert_uint_eq(m->hash_bits, 1);
    ck_assert(m->cfg.multiclass && m->cfg.open_classes);
    ck_assert_uint_eq(m->nclasses, 4);
    ck_assert_str_eq(m->classes[1], "2");
    ck_assert_str_eq(m->classes[2], "y z");
    ck_assert_str_eq(m->classes[3], "true");

    m = &c.models[2]; /* a null definition: every default */
    ck_assert_str_eq(m->name, "c");
    ck_assert_uint_eq(m->cfg.dim, 1u << 20);
    ck_assert(m->cfg.bias && !m->cfg.multiclass);

    m = &c.models[3];
    ck_assert_str_eq(m->name, "A-b_c.9");
    ck_assert(!m->cfg.multiclass && !m->cfg.batch); /* open_classes: false alone stays binary */

    m = &c.template_model;
    ck_assert_ptr_null(m->name);
    ck_assert(m->cfg.multiclass && m->cfg.averaged);
    ck_assert_uint_eq(m->cfg.dim, 1u << 12);
    ck_assert_uint_eq(m->nclasses, 2);
    pcd_config_free(&c);
}
END_TEST

START_TEST(test_model_def_copy)
{
    pcd_config c;
    load_ok("models: {m: {classes: [a, b], dim: 5}}\n", &c);
    pcd_model_def d;
    memset(&d, 0x33, sizeof d);
    ck_assert_int_eq(pcd_model_def_copy(&d, &c.models[0], NULL), 0);
    ck_assert_str_eq(d.name, "m");
    ck_assert_ptr_ne(d.name, c.models[0].name);
    ck_assert_uint_eq(d.nclasses, 2);
    ck_assert_ptr_ne(d.classes, c.models[0].classes);
    ck_assert_ptr_eq(d.cfg.classes, (const char *const *)d.classes);
    ck_assert_str_eq(d.classes[1], "b");
    ck_assert_uint_eq(d.cfg.dim, 5);
    pcd_model_def_free(&d);
    ck_assert(all_zero(&d, sizeof d));

    /* The template, named: what auto_create does. */
    ck_assert_int_eq(pcd_model_def_copy(&d, &c.template_model, "new.model"), 0);
    ck_assert_str_eq(d.name, "new.model");
    ck_assert_ptr_null(d.classes);
    pc_model *pm = NULL;
    pc_error e = {{0}};
    ck_assert_int_eq(pc_model_new(&d.cfg, &pm, &e), PC_OK);
    pc_model_free(pm);
    pcd_model_def_free(&d);
    pcd_model_def_free(NULL);

    pcd_model_def_default(&d);
    ck_assert_ptr_null(d.name);
    ck_assert_uint_eq(d.cfg.dim, 1u << 20);
    pcd_model_def_free(&d);
    pcd_config_free(&c);
}
END_TEST

START_TEST(test_model_name_valid)
{
    static const char *const good[] = {"a", "A", "0", "spam", "a.b", "a-b_c", "x.", "-x", "_"};
    static const char *const bad[] = {"", ".", ".hidden", "..", "a/b", "a b", "a\\b", "é", "a:b",
                                      "a\nb"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(pcp_model_name_valid(good[i], strlen(good[i])), "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!pcp_model_name_valid(bad[i], strlen(bad[i])), "%s", bad[i]);
    char name[66];
    memset(name, 'n', sizeof name);
    ck_assert(pcp_model_name_valid(name, 64));
    ck_assert(!pcp_model_name_valid(name, 65));
    ck_assert(!pcp_model_name_valid("a\0b", 3));
    ck_assert(!pcp_model_name_valid(NULL, 0));
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

/* The split that binds what the config checked: brackets off, the port's text. */
START_TEST(test_tcp_split)
{
    char host[16];
    const char *port = pcd_tcp_split("127.0.0.1:7411", host, sizeof host);
    ck_assert_ptr_nonnull(port);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_str_eq(port, "7411");
    ck_assert_str_eq(pcd_tcp_split("[::1]:9", host, sizeof host), "9");
    ck_assert_str_eq(host, "::1");
    ck_assert_str_eq(pcd_tcp_split("localhost:80", host, sizeof host), "80");
    ck_assert_str_eq(host, "localhost");
    ck_assert_ptr_null(pcd_tcp_split("7411", host, sizeof host));      /* no ':' */
    ck_assert_ptr_null(pcd_tcp_split(":7411", host, sizeof host));     /* no host */
    ck_assert_ptr_null(pcd_tcp_split("0123456789abcdef:1", host, sizeof host)); /* 16 bytes */
    ck_assert_str_eq(pcd_tcp_split("0123456789abcde:1", host, sizeof host), "1");
    ck_assert_str_eq(host, "0123456789abcde");
}
END_TEST

START_TEST(test_err_unknown_keys)
{
    EXPECT_ERR("limit:\n  max_depth: 8\n", ":1:1: key 'limit': unknown key; did you mean 'limits'?",
               "the top level takes: listen, template, models, state_dir, snapshot, limits");
    EXPECT_ERR("limits:\n  max_conections: 8\n",
               ":2:3: key 'limits.max_conections': unknown key; did you mean 'max_connections'?",
               "'limits' takes: max_connections, max_message_bytes");
    EXPECT_ERR("snapshot: {interval: 1, zzz: 2}\n", ":1:25: key 'snapshot.zzz': unknown key (",
               "takes: interval, keep)");
    EXPECT_ERR("listen: {tpc: []}\n", ":1:10: key 'listen.tpc': unknown key; did you mean 'tcp'?");
    EXPECT_ERR("listen: {unix: [{path: a, mod: '0600'}]}\n",
               ":1:27: key 'listen.unix.mod': unknown key; did you mean 'mode'?");
    EXPECT_ERR("models:\n  m:\n    hashbits: 3\n",
               ":3:5: key 'models.m.hashbits': unknown key; did you mean 'hash_bits'?");
    EXPECT_ERR("template: {classs: [a]}\n", ":1:12: key 'template.classs': unknown key; did you mean 'classes'?");
    EXPECT_ERR("models: {m: {params: {etta: 1}}}\n", ":1:23: key 'models.m.params.etta': ",
               "perceptron has no parameter 'etta'; it takes: eta");
}
END_TEST

START_TEST(test_err_duplicates)
{
    EXPECT_ERR("log_level: info\nstate_dir: a\nlog_level: debug\n",
               ":3:1: key 'log_level': duplicate key (first given on line 1)");
    EXPECT_ERR("limits:\n  max_depth: 8\n  max_depth: 9\n",
               ":3:3: key 'limits.max_depth': duplicate key (first given on line 2)");
    EXPECT_ERR("models:\n  a: {}\n  b: {}\n  a: {rule: perceptron}\n",
               ":4:3: key 'models.a': duplicate model name (first defined on line 2)");
    EXPECT_ERR("models: {a: {params: {eta: 1, eta: 2}}}\n",
               ":1:31: key 'models.a.params.eta': duplicate key (first given on line 1)");
    EXPECT_ERR("listen: {tcp: ['127.0.0.1:1', '127.0.0.1:1']}\n",
               ":1:31: key 'listen.tcp': '127.0.0.1:1' is listed twice");
    EXPECT_ERR("listen:\n  unix:\n    - a.sock\n    - {path: a.sock}\n",
               ":4:14: key 'listen.unix.path': 'a.sock' is listed twice");
    EXPECT_ERR("models: {m: {classes: [a, b, a]}}\n",
               ":1:30: key 'models.m.classes': class 'a' is listed twice");
    EXPECT_ERR("models: {m: {dim: 3, hash_bits: 4}}\n",
               ":1:22: key 'models.m.hash_bits': give either dim or hash_bits, not both");
    EXPECT_ERR("template: {hash_bits: 4, dim: 3}\n",
               ":1:26: key 'template.dim': give either dim or hash_bits, not both");
}
END_TEST

START_TEST(test_err_types)
{
    EXPECT_ERR("limits: 5\n", ":1:9: key 'limits': expected a mapping (key: value), got '5'");
    EXPECT_ERR("limits: [1]\n", ":1:9: key 'limits': expected a mapping (key: value), got a list");
    EXPECT_ERR("limits:\n  max_depth: [8]\n",
               ":2:14: key 'limits.max_depth': expected an integer in [3, 32], got a list");
    EXPECT_ERR("limits:\n  max_depth: \"8\"\n",
               ":2:14: key 'limits.max_depth': expected an integer in [3, 32], got the quoted string "
               "\"8\" (write numbers and booleans without quotes)");
    EXPECT_ERR("limits:\n  max_depth: 8.5\n", ":2:14: key 'limits.max_depth': expected an integer",
               "got '8.5'");
    EXPECT_ERR("limits:\n  max_depth:\n", ":2:13: key 'limits.max_depth': expected an integer in [3, 32], got null");
    EXPECT_ERR("limits: {max_depth: 0x10}\n", "key 'limits.max_depth': expected an integer", "got '0x10'");
    EXPECT_ERR("snapshot: {interval: soon}\n",
               ":1:22: key 'snapshot.interval': expected 0 or a number in [1, 604800], got 'soon'");
    EXPECT_ERR("snapshot: {interval: .inf}\n", "key 'snapshot.interval': expected 0 or a number");
    EXPECT_ERR("snapshot: {interval: nan}\n", "key 'snapshot.interval': expected 0 or a number");
    EXPECT_ERR("state_dir: {a: b}\n", ":1:12: key 'state_dir': expected a string, got a mapping");
    EXPECT_ERR("state_dir:\n", ":1:11: key 'state_dir': expected a string, got null");
    EXPECT_ERR("state_dir: ''\n", ":1:12: key 'state_dir': must not be empty");
    EXPECT_ERR("state_dir: \"a\\0b\"\n", ":1:12: key 'state_dir': contains a NUL byte");
    EXPECT_ERR("auto_create: 1\n", ":1:14: key 'auto_create': expected true or false, got '1'");
    EXPECT_ERR("auto_create: 'true'\n", ":1:14: key 'auto_create': expected true or false, got the quoted string");
    EXPECT_ERR("log_level: verbose\n",
               ":1:12: key 'log_level': expected one of debug, info, warning, error, got 'verbose'");
    EXPECT_ERR("log_level: [info]\n", ":1:12: key 'log_level': expected one of debug, info, warning, error, got a list");
    EXPECT_ERR("listen: {tcp: '127.0.0.1:1'}\n", ":1:15: key 'listen.tcp': expected a list, got the quoted string \"127.0.0.1:1\"");
    EXPECT_ERR("listen: {tcp: [[a]]}\n", ":1:16: key 'listen.tcp': expected a string, got a list");
    EXPECT_ERR("listen: {unix: [{mode: '0600'}]}\n",
               ":1:17: key 'listen.unix': an entry given as a mapping needs a path");
    EXPECT_ERR("listen: {unix: [[a]]}\n", ":1:17: key 'listen.unix': expected a string, got a list");
    EXPECT_ERR("models: [a, b]\n", ":1:9: key 'models': expected a mapping (key: value), got a list");
    EXPECT_ERR("models: {m: 5}\n", ":1:13: key 'models.m': expected a mapping (key: value), got '5'");
    EXPECT_ERR("template: on\n", ":1:11: key 'template': expected a mapping");
    EXPECT_ERR("models: {m: {rule: [perceptron]}}\n", ":1:20: key 'models.m.rule': expected a rule name (perceptron, ");
    EXPECT_ERR("models: {m: {params: [1]}}\n", ":1:22: key 'models.m.params': expected a mapping");
    EXPECT_ERR("models: {m: {params: {eta: fast}}}\n",
               ":1:28: key 'models.m.params.eta': expected a finite decimal number, got 'fast'");
    EXPECT_ERR("models: {m: {params: {eta: {a: 1}}}}\n",
               ":1:28: key 'models.m.params.eta': expected a finite decimal number, got a mapping");
    EXPECT_ERR("models: {m: {bias: 1}}\n", ":1:20: key 'models.m.bias': expected true or false, got '1'");
    EXPECT_ERR("models: {m: {bias_value: one}}\n", ":1:26: key 'models.m.bias_value': expected a finite decimal number");
    EXPECT_ERR("models: {m: {averaged: maybe}}\n", ":1:24: key 'models.m.averaged': expected true or false");
    EXPECT_ERR("models: {m: {mode: offline}}\n",
               ":1:20: key 'models.m.mode': expected one of online, batch, got 'offline'");
    EXPECT_ERR("models: {m: {storage: compact}}\n",
               ":1:23: key 'models.m.storage': expected one of dense, sparse, auto, got 'compact'");
    EXPECT_ERR("models: {m: {weights: float16}}\n",
               ":1:23: key 'models.m.weights': expected one of float64, float32, got 'float16'");
    EXPECT_ERR("models: {m: {classes: a}}\n", ":1:23: key 'models.m.classes': expected a list, got 'a'");
    EXPECT_ERR("models: {m: {classes: [a, [b]]}}\n", ":1:27: key 'models.m.classes': expected a string, got a list");
    EXPECT_ERR("models: {m: {classes: [a, ~]}}\n", ":1:27: key 'models.m.classes': expected a string, got null");
    EXPECT_ERR("models: {m: {classes: [a, '']}}\n", ":1:27: key 'models.m.classes': must not be empty");
    EXPECT_ERR("models: {m: {open_classes: 2}}\n", ":1:28: key 'models.m.open_classes': expected true or false");
    EXPECT_ERR("models: {m: {dim: -1}}\n", ":1:19: key 'models.m.dim': -1 is out of range: it must be an integer in [1, 268435456]");
    EXPECT_ERR("models: {m: {join.ttl: 0}}\n", "key 'models.m.join.ttl': 0 is out of range");
    EXPECT_ERR("models: {m: {join.default_label: cat}}\n",
               "key 'models.m.join.default_label': the default label of a binary model must be 1 or -1");
    EXPECT_ERR("models: {m: {challengers: {rule: pa}}}\n", "key 'models.m.challengers': expected a list");
    EXPECT_ERR("models: {m: {challengers: [{dim: 4, rule: pa}]}}\n",
               "'dim' is the champion's");
    EXPECT_ERR("models: {m: {challengers: [{averaged: true}]}}\n", "give the challenger's rule");
    EXPECT_ERR("models: {m: {challengers: [{rule: winnow, averaged: true}]}}\n", "challenger 0 (winnow)");
}
END_TEST

START_TEST(test_err_ranges)
{
    EXPECT_ERR("limits: {max_depth: 2}\n",
               ":1:21: key 'limits.max_depth': 2 is out of range: it must be an integer in [3, 32]");
    EXPECT_ERR("limits: {max_depth: 65}\n", "key 'limits.max_depth': 65 is out of range");
    EXPECT_ERR("limits: {max_depth: 99999999999999999999999}\n", "key 'limits.max_depth': expected an integer in [3, 32]");
    EXPECT_ERR("limits: {max_depth: -5}\n", "key 'limits.max_depth': -5 is out of range: it must be an integer in [3, 32]");
    EXPECT_ERR("snapshot: {keep: 0}\n", ":1:18: key 'snapshot.keep': 0 is out of range: it must be an integer in [1, 100]");
    EXPECT_ERR("snapshot: {keep: 101}\n", "key 'snapshot.keep': 101 is out of range");
    EXPECT_ERR("snapshot: {interval: 0.5}\n",
               ":1:22: key 'snapshot.interval': 0.5 is out of range: it must be 0 or a number in [1, 604800]");
    EXPECT_ERR("snapshot: {interval: -1}\n", "key 'snapshot.interval': -1 is out of range");
    EXPECT_ERR("snapshot: {interval: 604801}\n", "key 'snapshot.interval': 604801 is out of range");
    EXPECT_ERR("busy_poll_us: 10001\n", "key 'busy_poll_us'");
    EXPECT_ERR("busy_poll_us: -1\n", "key 'busy_poll_us'");
    EXPECT_ERR("limits: {max_depth: 33}\n", "key 'limits.max_depth'"); /* proto could not honour it */
    /* issue 14: 64 was accepted and silently clamped to 32 (fixed in 7789d62) */
    EXPECT_ERR("limits: {max_depth: 64}\n", "key 'limits.max_depth': 64 is out of range: it must be an integer in [3, 32]");
    EXPECT_ERR("limits: {max_depth: 2}\n", "key 'limits.max_depth'");
    EXPECT_ERR("journal: {fsync: sometimes}\n", "key 'journal.fsync'");
    EXPECT_ERR("journal: {segment_bytes: 1KiB}\n", "key 'journal.segment_bytes'");
    EXPECT_ERR("journal: {on_corrupt: ignore}\n", "key 'journal.on_corrupt'");
    EXPECT_ERR("journal: {enabled: maybe}\n", "key 'journal.enabled'");
    EXPECT_ERR("journal: {dir: \"\"}\n", "key 'journal.dir'");
    EXPECT_ERR("journal: {fsnyc: always}\n", "key 'journal.fsnyc'");
    EXPECT_ERR("log: {backend: kafka}\n", "key 'log.backend'");
    EXPECT_ERR("log: {backend: redis}\n", "key 'log.address'");
    EXPECT_ERR("log: {backend: redis, address: \"tcp:host\"}\n", "key 'log.address'");
    EXPECT_ERR("log: {prefix: \"a{b\"}\n", "key 'log.prefix'");
    EXPECT_ERR("log: {models: [\"\"]}\n", "key 'log.models'");
    EXPECT_ERR("log: {model: [a]}\n", "key 'log.model'");
    EXPECT_ERR("limits: {idle_timeout: 1e9}\n", "key 'limits.idle_timeout': 1e+09 is out of range: it must be 0 or a number in [1, 604800]");
    EXPECT_ERR("limits: {max_connections: 0}\n", "key 'limits.max_connections': 0 is out of range: it must be an integer in [1, 1048576]");
    EXPECT_ERR("limits: {max_connections: 1048577}\n", "key 'limits.max_connections': 1048577 is out of range");
    EXPECT_ERR("limits: {max_models: 1073741825}\n", "key 'limits.max_models': 1073741825 is out of range: it must be an integer in [1, 1073741824]");
    EXPECT_ERR("limits: {max_message_bytes: 1023}\n",
               ":1:29: key 'limits.max_message_bytes': 1023 is out of range: it must be in [1 KiB, 256 MiB]");
    EXPECT_ERR("limits: {max_message_bytes: 257MiB}\n", "key 'limits.max_message_bytes': 257MiB is out of range");
    EXPECT_ERR("limits: {max_message_bytes: 1GiB}\n", "key 'limits.max_message_bytes': 1GiB is out of range");
    EXPECT_ERR("limits: {max_message_bytes: 99999999999999999GiB}\n", "key 'limits.max_message_bytes': 99999999999999999GiB is out of range");
    EXPECT_ERR("limits: {max_message_bytes: 1.5MiB}\n",
               "key 'limits.max_message_bytes': expected a size in bytes in [1 KiB, 256 MiB] (an integer, "
               "optionally followed by KiB, MiB or GiB), got '1.5MiB'");
    EXPECT_ERR("limits: {max_message_bytes: 2MB}\n", "key 'limits.max_message_bytes': expected a size in bytes", "got '2MB'");
    EXPECT_ERR("limits: {max_message_bytes: MiB}\n", "key 'limits.max_message_bytes': expected a size in bytes");
    EXPECT_ERR("limits: {max_message_bytes: '2MiB'}\n", "key 'limits.max_message_bytes': expected a size in bytes", "quoted string");
    EXPECT_ERR("limits: {max_output_bytes: 1KiB}\n", "key 'limits.max_output_bytes': 1KiB is out of range: it must be in [64 KiB, 1 GiB]");
    EXPECT_ERR("limits: {max_features: 0}\n", "key 'limits.max_features': 0 is out of range: it must be an integer in [1, 16777216]");
    EXPECT_ERR("limits: {max_batch: 16777217}\n", "key 'limits.max_batch': 16777217 is out of range");
    EXPECT_ERR("models: {m: {dim: 0}}\n", ":1:19: key 'models.m.dim': 0 is out of range: it must be an integer in [1, 268435456]");
    EXPECT_ERR("models: {m: {dim: 268435457}}\n", "key 'models.m.dim': 268435457 is out of range");
    EXPECT_ERR("models: {m: {hash_bits: 29}}\n",
               ":1:25: key 'models.m.hash_bits': 29 is out of range: it must be an integer in [1, 28]");
    EXPECT_ERR("models: {m: {hash_bits: 0}}\n", "key 'models.m.hash_bits': 0 is out of range");
    EXPECT_ERR("models: {m: {bias_value: 0}}\n", ":1:26: key 'models.m.bias_value': must be a non-zero number of magnitude at most 2^64 (1.8e19)");
    EXPECT_ERR("models: {m: {bias_value: 2e19}}\n", ":1:26: key 'models.m.bias_value': must be a non-zero number of magnitude at most 2^64 (1.8e19)");
    EXPECT_ERR("models: {m: {params: {eta: 0}}}\n",
               ":1:28: key 'models.m.params.eta': perceptron: parameter 'eta' = 0 is out of range: it must be a number in (0, 1e+06]");
    EXPECT_ERR("models: {m: {params: {eta: [0.5]}}}\n",
               ":1:28: key 'models.m.params.eta': perceptron: parameter 'eta' takes one number, not a list");
    EXPECT_ERR("models: {m: {params: {eta: []}}}\n", "key 'models.m.params.eta': perceptron: parameter 'eta' takes one number, not a list");
    EXPECT_ERR("models: {m: {params: {eta: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}}}\n",
               ":1:28: key 'models.m.params.eta': perceptron: parameter 'eta' takes one number, not a list");
    EXPECT_ERR("listen: {unix_mode: '1777'}\n",
               ":1:21: key 'listen.unix_mode': expected an octal permission mode from 0 to 0777 such as \"0660\", got '1777'");
    EXPECT_ERR("listen: {unix_mode: '0690'}\n", "key 'listen.unix_mode': expected an octal permission mode", "got '0690'");
    EXPECT_ERR("listen: {unix_mode: rw}\n", "key 'listen.unix_mode': expected an octal permission mode");
    EXPECT_ERR("listen: {unix_mode: [1]}\n", "key 'listen.unix_mode': expected an octal permission mode", "got a list");
    EXPECT_ERR("listen: {unix: [{path: a, mode: 8}]}\n", ":1:33: key 'listen.unix.mode': expected an octal permission mode");
}
END_TEST

START_TEST(test_err_sizes_of_lists_and_strings)
{
    /* 65 listeners, a 108-byte socket path, a 256-byte class name, 4097 classes. */
    static char text[200000];
    int len = sprintf(text, "listen:\n  tcp:\n");
    for (int i = 0; i < 65; i++)
        len += sprintf(text + len, "    - 127.0.0.1:%d\n", 1000 + i);
    EXPECT_ERR(text, ":3:5: key 'listen.tcp': has 65 items; at most 64 are accepted");

    len = sprintf(text, "listen: {unix: [");
    memset(text + len, 'p', 108);
    strcpy(text + len + 108, "]}\n");
    EXPECT_ERR(text, ":1:17: key 'listen.unix': is 108 bytes long; at most 107 are accepted");
    strcpy(text + len + 107, "]}\n"); /* 107 is fine */
    pcd_config c;
    load_ok(text, &c);
    ck_assert_uint_eq(strlen(c.unix_paths[0]), 107);
    pcd_config_free(&c);

    len = sprintf(text, "models: {m: {classes: [a, ");
    memset(text + len, 'c', 256);
    strcpy(text + len + 256, "]}}\n");
    EXPECT_ERR(text, ":1:27: key 'models.m.classes': is 256 bytes long; at most 255 are accepted");

    len = sprintf(text, "models: {m: {classes: [");
    for (int i = 0; i < 4097; i++)
        len += sprintf(text + len, "%sc%d", i ? "," : "", i);
    strcpy(text + len, "]}}\n");
    EXPECT_ERR(text, ":1:23: key 'models.m.classes': has 4097 items; at most 4096 are accepted");

    char big[4100];
    memcpy(big, "state_dir: ", 11);
    memset(big + 11, 'd', 3969);
    strcpy(big + 11 + 3969, "\n");
    EXPECT_ERR(big, ":1:12: key 'state_dir': is 3969 bytes long; at most 3968 are accepted");
}
END_TEST

START_TEST(test_err_listeners)
{
    EXPECT_ERR("listen: {tcp: [localhost]}\n",
               ":1:16: key 'listen.tcp': 'localhost' is not host:port: it has no ':port' (examples: "
               "127.0.0.1:7411, [::1]:7411, localhost:7411)");
    EXPECT_ERR("listen: {tcp: [':80']}\n", "'listen.tcp': ':80' is not host:port: the host is empty");
    EXPECT_ERR("listen: {tcp: ['::1:80']}\n", "'::1:80' is not host:port: IPv6 addresses go in brackets");
    EXPECT_ERR("listen: {tcp: ['[zz]:80']}\n", "'[zz]:80' is not host:port: the part in brackets is not an IPv6 address");
    EXPECT_ERR("listen: {tcp: ['[::1:80']}\n", "'[::1:80' is not host:port: a bracketed IPv6 address must be followed by ]:port");
    EXPECT_ERR("listen: {tcp: ['a b:80']}\n", "'a b:80' is not host:port: the host has a character");
    EXPECT_ERR("listen: {tcp: ['host:0']}\n", "'host:0' is not host:port: the port must be in [1, 65535]");
    EXPECT_ERR("listen: {tcp: ['host:65536']}\n", "the port must be in [1, 65535]");
    EXPECT_ERR("listen: {tcp: ['host:http']}\n", "'host:http' is not host:port: the port is not a number");
    EXPECT_ERR("listen: {tcp: ['host:']}\n", "the port is not a number");
    EXPECT_ERR("listen: {tcp: ['host:123456']}\n", "the port is not a number");
    EXPECT_ERR("listen:\n  tcp: []\n  unix: []\n",
               ":1:1: key 'listen': no listener is left: give at least one tcp address or unix path");
    EXPECT_ERR("listen: {tcp: ~, unix: ~}\n", "key 'listen': no listener is left");
}
END_TEST

START_TEST(test_err_models)
{
    EXPECT_ERR("models: {m: {rule: perceptronn}}\n",
               ":1:20: key 'models.m.rule': unknown rule 'perceptronn'; the rules are: perceptron");
    EXPECT_ERR("template: {rule: ~}\n", ":1:18: key 'template.rule': expected a rule name (perceptron, ");
    EXPECT_ERR("models: {m: {classes: []}}\n",
               ":1:23: key 'models.m.classes': a multiclass model needs classes, or open_classes: true");
    EXPECT_ERR("models:\n  a/b: {}\n", ":2:3: key 'models.a/b': invalid model name: use 1 to 64 of A-Z a-z 0-9 _ . -, not starting with '.' (model names become file names)");
    EXPECT_ERR("models:\n  .hidden: {}\n", ":2:3: key 'models..hidden': invalid model name");
    EXPECT_ERR("models:\n  '': {}\n", ":2:3: key 'models': keys must be non-empty strings");
    EXPECT_ERR("models:\n  ~: {}\n", ":2:3: key 'models': keys must be non-empty strings, got null");
    EXPECT_ERR("models:\n  [a]: {}\n", ":2:3: key 'models': keys must be non-empty strings, got a list");
    EXPECT_ERR("models:\n  m0123456789012345678901234567890123456789012345678901234567890123: {}\n",
               ":2:3: key 'models.m0123456789012345678901234567890123456789012345678901234567890123': invalid model name");
    EXPECT_ERR("{[a]: 1}\n", ":1:2: keys must be non-empty strings, got a list");
    EXPECT_ERR("models: {m: {rule: perceptron, params: {eta: 2000000}}}\n",
               "key 'models.m.params.eta': perceptron: parameter 'eta' = 2e+06 is out of range");
}
END_TEST

START_TEST(test_err_syntax)
{
    EXPECT_ERR("limits:\n  max_depth: [8, 9\nlog_level: info\n", ":3:10: YAML syntax error: did not find expected ',' or ']'",
               "(while parsing a flow sequence on line 2)");
    EXPECT_ERR("limits:\n  max_depth: 8\n max_batch: 5\n", ":3:2: YAML syntax error:");
    EXPECT_ERR("a: b: c\n", ":1:5: YAML syntax error: mapping values are not allowed in this context");
    EXPECT_ERR("limits:\n\tmax_depth: 8\n", ":2:1: YAML syntax error: found character that cannot start any token");
    EXPECT_ERR("state_dir: \"abc\n", "YAML syntax error: found unexpected end of stream");
    EXPECT_ERR("models: {m: *nothing}\n", ":1:13: YAML syntax error: found undefined alias");
    EXPECT_ERR("log_level: info\n---\nlog_level: debug\n",
               ":3: a second YAML document (after ---): the configuration is one document");
    EXPECT_ERR("- a\n- b\n", ":1:1: the file must be a mapping of settings (key: value), not a list");
    EXPECT_ERR("just text\n", ":1:1: the file must be a mapping of settings (key: value), not a plain scalar");
    /* Aliases: refused, so neither a loop nor an exponential expansion can happen. */
    EXPECT_ERR("template: &t {rule: perceptron}\nmodels: {a: *t}\n",
               ":1:11: this value is used again through a YAML alias (*name); aliases are not supported");
    EXPECT_ERR("&a [*a]\n", "aliases are not supported");
    EXPECT_ERR("models: &m {a: *m}\n", "aliases are not supported");
    EXPECT_ERR("a: &x [*x, *x]\n", "aliases are not supported");
    /* Not UTF-8: the reader's byte offset. */
    static const char bad_utf8[] = "log_level: \xff\xfe\xfd\n";
    check_err(__LINE__, bad_utf8 + 0, sizeof bad_utf8 - 1,
              (const char *const[]){": byte ", "(the file must be UTF-8 or UTF-16 text)", NULL});
    static const char nul[] = "log_level: in\0fo\n";
    check_err(__LINE__, nul, sizeof nul - 1, (const char *const[]){": byte 13: control characters are not allowed", NULL});
}
END_TEST

START_TEST(test_err_files)
{
    pcd_config c;
    char err[512];
    memset(&c, 0x11, sizeof c);
    ck_assert_int_eq(pcd_config_load("/nonexistent/perceptrond.yaml", &c, err, sizeof err), -1);
    ck_assert_str_eq(err, "/nonexistent/perceptrond.yaml: cannot open the configuration: No such file or directory");
    ck_assert(all_zero(&c, sizeof c));
    ck_assert_int_eq(pcd_config_load("/tmp", &c, err, sizeof err), -1);
    ck_assert_str_eq(err, "/tmp: is a directory, not a configuration file");

    /* A short buffer is truncated but terminated; no buffer at all is fine too. */
    char small[16];
    memset(small, 'x', sizeof small);
    ck_assert_int_eq(load_text("limits: {max_depth: 2}\n", &c, small, sizeof small), -1);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert_int_eq(load_text("limits: {max_depth: 2}\n", &c, NULL, 0), -1);
    ck_assert_int_eq(load_text("limits: [\n", &c, NULL, 0), -1);
    ck_assert_int_eq(pcd_config_load("/nonexistent", &c, NULL, 0), -1);
    ck_assert(all_zero(&c, sizeof c));
}
END_TEST

/* Late errors (after models and listeners were allocated) free everything: run under valgrind. */
START_TEST(test_err_late)
{
    EXPECT_ERR("listen: {tcp: ['a:1', 'b:2'], unix: [x, y, {path: z, mode: '0600'}]}\n"
               "template: {classes: [a, b, c]}\n"
               "models:\n"
               "  a: {classes: [x, y]}\n"
               "  b: {hash_bits: 3}\n"
               "  c: {classes: [p, q], mode: fast}\n",
               ":6:30: key 'models.c.mode': expected one of online, batch");
    EXPECT_ERR("models:\n  a: {classes: [x, y]}\n  b: {classes: [x, y, x]}\n", "class 'x' is listed twice");
    EXPECT_ERR("listen: {tcp: ['a:1', 'b']}\n", "'b' is not host:port");
    EXPECT_ERR("listen: {unix: [x, y, [z]]}\n", "expected a string, got a list");
    EXPECT_ERR("state_dir: x\nlog_level: debug\nlimits: {max_depth: 1}\n", "'limits.max_depth': 1 is out of range");
}
END_TEST

/* Rights per listener, TLS, tokens and the metrics endpoint: read, dumped
 * and read back the same; every mistake named. */
START_TEST(test_access_keys)
{
    pcd_config c, back;
    load_ok("listen:\n"
            "  tcp_rights: read\n"
            "  unix_rights: learn\n"
            "  tcp:\n"
            "    - 127.0.0.1:1\n"
            "    - {address: \"[::1]:2\", rights: none}\n"
            "    - {address: \"0.0.0.0:3\", rights: admin, tls: {cert: c.pem, key: k.pem}}\n"
            "    - {address: \"0.0.0.0:4\", tls: {cert: c.pem, key: k.pem, client_ca: ca.pem,"
            " client_cert: require}}\n"
            "  unix: [a.sock, {path: b.sock, rights: admin}]\n"
            "auth: {tokens_file: /etc/t}\n"
            "metrics: {listen: \"127.0.0.1:9411\"}\n", &c);
    ck_assert_uint_eq(c.tcp_rights_default, PCP_R_READ);
    ck_assert_uint_eq(c.tcp_access[0].rights, PCP_R_READ);
    ck_assert_uint_eq(c.tcp_access[1].rights, PCP_R_NONE);
    ck_assert_uint_eq(c.tcp_access[2].rights, PCP_R_ADMIN);
    ck_assert_str_eq(c.tcp_access[2].tls_cert, "c.pem");
    ck_assert_ptr_null(c.tcp_access[2].tls_client_ca);
    ck_assert_uint_eq(c.tcp_access[3].rights, PCP_R_READ);
    ck_assert_str_eq(c.tcp_access[3].tls_client_ca, "ca.pem");
    ck_assert(c.tcp_access[3].tls_client_required);
    ck_assert_ptr_null(c.tcp_access[0].tls_cert);
    ck_assert_uint_eq(c.unix_rights[0], PCP_R_LEARN);
    ck_assert_uint_eq(c.unix_rights[1], PCP_R_ADMIN);
    ck_assert_str_eq(c.tokens_file, "/etc/t");
    ck_assert_str_eq(c.metrics_listen, "127.0.0.1:9411");
    char *text = dump_text(&c);
    load_ok(text, &back);
    char *again = dump_text(&back);
    ck_assert_str_eq(text, again);
    ck_assert(back.tcp_access[3].tls_client_required);
    free(text);
    free(again);
    pcd_config_free(&back);
    pcd_config_free(&c);
    /* the defaults: loopback TCP learns, the socket administers */
    load_ok("log_level: info\n", &c);
    ck_assert_uint_eq(c.tcp_access[0].rights, PCP_R_LEARN);
    ck_assert_uint_eq(c.unix_rights[0], PCP_R_ADMIN);
    ck_assert_str_eq(c.tokens_file, "");
    ck_assert_str_eq(c.metrics_listen, "");
    pcd_config_free(&c);
    /* tcp_rights alone applies to the default listener */
    load_ok("listen: {tcp_rights: none, unix_rights: read}\n", &c);
    ck_assert_uint_eq(c.tcp_access[0].rights, PCP_R_NONE);
    ck_assert_uint_eq(c.unix_rights[0], PCP_R_READ);
    pcd_config_free(&c);

    EXPECT_ERR("listen: {tcp_rights: root}\n", "key 'listen.tcp_rights'", "none, read, learn, admin");
    EXPECT_ERR("listen: {tcp: [{address: '1.2.3.4:5', rights: all}]}\n", "key 'listen.tcp.rights'");
    EXPECT_ERR("listen: {tcp: [{rights: read}]}\n",
               "key 'listen.tcp': an entry given as a mapping needs an address");
    EXPECT_ERR("listen: {tcp: [{address: 'x'}]}\n", "'x' is not host:port");
    EXPECT_ERR("listen: {tcp: [{address: '1.2.3.4:5', tls: {cert: a}}]}\n",
               "key 'listen.tcp.tls': needs both cert and key (PEM files)");
    EXPECT_ERR("listen: {tcp: [{address: '1.2.3.4:5', tls: {cert: a, key: b, client_cert: require}}]}\n",
               "key 'listen.tcp.tls.client_cert': needs client_ca");
    EXPECT_ERR("listen: {tcp: [{address: '1.2.3.4:5', tls: {cert: a, key: b, client_ca: c, "
               "client_cert: maybe}}]}\n", "key 'listen.tcp.tls.client_cert'");
    EXPECT_ERR("listen: {tcp: [{address: '1.2.3.4:5', tls: {cert: a, key: b, ca: c}}]}\n",
               "key 'listen.tcp.tls.ca': unknown key ('listen.tcp.tls' takes: cert, key, client_ca, client_cert)");
    EXPECT_ERR("listen: {unix: [{path: a, rights: write}]}\n", "key 'listen.unix.rights'");
    EXPECT_ERR("metrics: {listen: localhost}\n",
               "key 'metrics.listen': 'localhost' is not host:port: it has no ':port'");
    EXPECT_ERR("auth: {tokens: x}\n", "key 'auth.tokens': unknown key");
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TU_TCASE(s, "load", 0, test_default, test_empty_is_default, test_example_file,
        test_dump_round_trip, test_every_key_documented, test_every_setting, test_every_model_key,
        test_model_def_copy, test_model_name_valid, test_access_keys, test_tcp_split);
    TU_TCASE(s, "errors", 0, test_err_unknown_keys, test_err_duplicates, test_err_types,
        test_err_ranges, test_err_sizes_of_lists_and_strings, test_err_listeners, test_err_models,
        test_err_syntax, test_err_files, test_err_late);
    return s;
}

int main(void)
{
    return tu_run(config_suite());
}
