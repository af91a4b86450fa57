/* test_e2e_persist.c - the real daemon's snapshots: restart restores every
 * model bit-identically, a corrupt newest snapshot falls back to the previous
 * generation, a daemon never starts silently empty, the interval timer
 * writes, SIGHUP reloads the config without dropping connections, a model
 * re-created during a save wins over the old one, the snapshot child dies
 * with the daemon; sparse and auto models learn, report and restore as
 * dense ones do, in less memory. */
#include "tests/e2e.h"
#include "tests/testutil.h"

#include <dirent.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include "lib/perceptron.h"

static const double probes[4][3] = {{1, 0, 0}, {0.5, -2, 1}, {-1, 1, 3}, {0.1, 0.2, -0.3}};

static void train(pcc_client *c, const char *model, int n, int seed)
{
    for (int i = 0; i < n; i++) {
        double x[3] = {(double)((i * 7 + seed) % 11) - 5, (double)((i * 3 + seed) % 7) - 3,
                       (double)((i * 5) % 13) / 4.0};
        e2e_label(c, model, 3, x, x[0] + 0.5 * x[1] - 0.25 * x[2] > 0 ? 1 : -1);
    }
}

START_TEST(restart_restores_every_model_bit_identically)
{
    e2e d;
    pcc_client *c = e2e_up(&d);
    int n = 0;
    while (pc_rules()[n])
        n++;
    double before[64][4];
    char names[64][80];
    for (int r = 0; r < n && r < 64; r++) {
        const pc_rule *rule = pc_rules()[r];
        snprintf(names[r], sizeof names[r], "r-%s", pc_rule_name(rule));
        e2e_create(c, names[r], pc_rule_name(rule), 3, !pc_rule_has_own_bias(rule));
        train(c, names[r], 60, r);
        for (int p = 0; p < 4; p++)
            before[r][p] = e2e_score(c, names[r], 3, probes[p]);
    }
    uint64_t examples = e2e_info_u64(c, names[0], "examples");
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0); /* the final snapshot is written on SIGTERM */
    e2e_start(&d);
    c = e2e_connect(d.tcp);
    for (int r = 0; r < n && r < 64; r++)
        for (int p = 0; p < 4; p++) {
            double s = e2e_score(c, names[r], 3, probes[p]);
            ck_assert_msg(memcmp(&s, &before[r][p], sizeof s) == 0, "%s probe %d: %.17g != %.17g",
                          names[r], p, s, before[r][p]);
        }
    ck_assert_uint_eq(e2e_info_u64(c, names[0], "examples"), examples);
    /* and it keeps learning identically: same stream, same scores as a model never restarted */
    pcc_close(c);
    ck_assert(e2e_log_has(&d, "restored model r-perceptron"));
    e2e_cleanup(&d);
}
END_TEST

/* create(name, {hash_bits: 20, storage: storage[, weights: weights]});
 * want_code as e2e_call, whose answer it returns. */
static const msgpack_object *create_stored(pcc_client *c, const char *name, const char *storage,
                                           const char *weights, int64_t want_code)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, weights ? 3 : 2);
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint32(pk, 20);
    e2e_str(pk, "storage");
    e2e_str(pk, storage);
    if (weights) {
        e2e_str(pk, "weights");
        e2e_str(pk, weights);
    }
    return e2e_call(c, id, want_code);
}

/* label or predict (y == 0) with 8 named features of example t drawn from a
 * vocabulary of 500 names; returns the score. */
static double named(pcc_client *c, const char *model, int t, int y)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, y ? "label" : "predict", y ? 3 : 2, &id);
    e2e_str(pk, model);
    msgpack_pack_map(pk, 8);
    uint64_t s = (uint64_t)t * 0x9E3779B97F4A7C15ull + 1;
    for (int k = 0; k < 8; k++) {
        char name[16];
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        snprintf(name, sizeof name, "w%d", (int)(s % 500) * 8 + k); /* distinct within one example */
        e2e_str(pk, name);
        msgpack_pack_double(pk, (double)(s >> 40 & 0xff) / 64.0 - 1.5);
    }
    if (y)
        msgpack_pack_int(pk, y);
    return pcc_number(pcc_map_get(e2e_call(c, id, -1), "score"));
}

static const char *info_str(pcc_client *c, const char *model, const char *key, char *buf,
                            size_t len)
{
    const msgpack_object *o = pcc_map_get(e2e_admin(c, "info", model, -1), key);
    ck_assert_msg(o && o->type == MSGPACK_OBJECT_STR, "info has no string '%s'", key);
    snprintf(buf, len, "%.*s", (int)o->via.str.size, o->via.str.ptr);
    return buf;
}

START_TEST(sparse_models_learn_report_and_restore_like_dense_ones)
{
    static const char *const models[] = {"d", "s", "a"};
    e2e d;
    e2e_init(&d, "models:\n  a: {storage: auto, hash_bits: 20}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    create_stored(c, "d", "dense", NULL, -1);
    create_stored(c, "s", "sparse", NULL, -1);
    create_stored(c, "x", "compact", NULL, 10); /* spec error, names the choices */
    for (int t = 0; t < 400; t++) {
        int y = t % 3 ? 1 : -1;
        double sc[3];
        for (int m = 0; m < 3; m++)
            sc[m] = named(c, models[m], t, y);
        ck_assert_msg(memcmp(&sc[0], &sc[1], sizeof *sc) == 0 &&
                          memcmp(&sc[0], &sc[2], sizeof *sc) == 0,
                      "example %d: dense %.17g, sparse %.17g, auto %.17g", t, sc[0], sc[1], sc[2]);
    }
    char buf[32];
    ck_assert_str_eq(info_str(c, "d", "storage", buf, sizeof buf), "dense");
    ck_assert_str_eq(info_str(c, "s", "storage", buf, sizeof buf), "sparse");
    ck_assert_str_eq(info_str(c, "a", "storage", buf, sizeof buf), "auto");
    uint64_t bd = e2e_info_u64(c, "d", "bytes"), bs = e2e_info_u64(c, "s", "bytes");
    ck_assert_uint_ge(bd, 8u << 20);   /* 2^20 + 1 doubles */
    ck_assert_uint_le(bs, 128u << 10); /* < 3,300 touched weights: a table of 4096 slots */
    ck_assert_uint_eq(e2e_info_u64(c, "a", "bytes"), bs);
    const msgpack_object *st = e2e_admin(c, "stats", NULL, -1);
    ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(st, "models_bytes")), bd + 2 * bs);
    double probe[3];
    for (int m = 0; m < 3; m++)
        probe[m] = named(c, models[m], 1000, 0);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    for (int m = 0; m < 3; m++) {
        double s = named(c, models[m], 1000, 0);
        ck_assert_msg(memcmp(&s, &probe[m], sizeof s) == 0, "%s after restart: %.17g != %.17g",
                      models[m], s, probe[m]);
    }
    ck_assert_str_eq(info_str(c, "s", "storage", buf, sizeof buf), "sparse");
    ck_assert_uint_le(e2e_info_u64(c, "s", "bytes"), 128u << 10);
    /* and they go on learning in step */
    for (int t = 400; t < 450; t++) {
        double sc[3];
        for (int m = 0; m < 3; m++)
            sc[m] = named(c, models[m], t, t % 2 ? 1 : -1);
        ck_assert(memcmp(&sc[0], &sc[1], sizeof *sc) == 0 && memcmp(&sc[0], &sc[2], sizeof *sc) == 0);
    }
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0); /* clean exit: no leak or memory error under valgrind */
    e2e_cleanup(&d);
}
END_TEST

/* weights: float32 through the daemon: a config model and a created one.
 * The named examples' values are multiples of 1/64 below 4, and a
 * perceptron's weights are sums of them: floats, so the float32 model
 * scores every example with the float64 one's bits.  info reports the
 * width and 4 bytes a weight; a restart restores it as it was; a create
 * that asks for it with sparse storage is refused with what to do. */
START_TEST(float32_models_learn_report_and_restore)
{
    e2e d;
    e2e_init(&d, "models:\n  f: {weights: float32, hash_bits: 20}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    create_stored(c, "d", "dense", NULL, -1);
    char msg[256];
    pcc_error_message(create_stored(c, "x", "sparse", "float32", 10), msg, sizeof msg);
    ck_assert_msg(strstr(msg, "storage dense or auto"), "%s", msg);
    for (int t = 0; t < 400; t++) {
        int y = t % 3 ? 1 : -1;
        double sd = named(c, "d", t, y), sf = named(c, "f", t, y);
        ck_assert_msg(memcmp(&sd, &sf, sizeof sd) == 0, "example %d: float64 %.17g, float32 %.17g",
                      t, sd, sf);
    }
    char buf[32];
    ck_assert_str_eq(info_str(c, "f", "weights", buf, sizeof buf), "float32");
    ck_assert_str_eq(info_str(c, "d", "weights", buf, sizeof buf), "float64");
    ck_assert_uint_eq(e2e_info_u64(c, "d", "bytes") - e2e_info_u64(c, "f", "bytes"),
                      ((1u << 20) + 1) * 4);
    double probe = named(c, "f", 1000, 0);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    double again = named(c, "f", 1000, 0);
    ck_assert_msg(memcmp(&again, &probe, sizeof again) == 0, "after restart: %.17g != %.17g", again,
                  probe);
    ck_assert_str_eq(info_str(c, "f", "weights", buf, sizeof buf), "float32");
    e2e_down(&d, c);
}
END_TEST

START_TEST(corrupt_snapshot_falls_back_to_the_previous_generation)
{
    e2e d;
    /* The snapshots alone: with the journal, the fallback is replayed forward
     * to every acknowledged label (test_e2e_journal.c). */
    e2e_init(&d, "journal: {enabled: false}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "m", "perceptron", 3, true);
    train(c, "m", 10, 1);
    e2e_admin(c, "save", NULL, -1);          /* generation with 10 examples */
    double s10 = e2e_score(c, "m", 3, probes[1]);
    train(c, "m", 10, 2);
    e2e_admin(c, "save", NULL, -1);          /* generation with 20 examples */
    pcc_close(c);
    /* stop with SIGKILL: no final save, the 20-example generation is newest */
    kill(d.pid, SIGKILL);
    waitpid(d.pid, NULL, 0);
    d.pid = 0;
    char state[300];
    snprintf(state, sizeof state, "%s/state", d.dir);
    e2e_corrupt_newest(state, "m");
    e2e_start(&d);
    c = e2e_connect(d.sock);
    ck_assert_uint_eq(e2e_info_u64(c, "m", "examples"), 10);
    double s = e2e_score(c, "m", 3, probes[1]);
    ck_assert(memcmp(&s, &s10, sizeof s) == 0);
    pcc_close(c);
    ck_assert_msg(e2e_log_has(&d, "CRC") || e2e_log_has(&d, "corrupt"),
                  "the fallback was not reported in the log");
    e2e_cleanup(&d);
}
END_TEST

/* zlib's CRC-32, bit by bit (the test does not link zlib). */
static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return ~c;
}

/* In generation gen of model, replaces the first occurrence of the n bytes
 * from with to, then recomputes the CRC: a file intact as a snapshot whose
 * model bytes are not. */
static void patch_snapshot(const char *dir, const char *model, unsigned gen, const void *from,
                           const void *to, size_t n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s.%u.snap", dir, model, gen);
    FILE *f = fopen(path, "r+b");
    ck_assert_msg(f != NULL, "%s", path);
    uint8_t buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    ck_assert(len > 24 && len < sizeof buf);
    size_t at = 0;
    while (at + n <= len && memcmp(buf + at, from, n) != 0)
        at++;
    ck_assert_msg(at + n <= len, "%s: bytes to patch not found", path);
    memcpy(buf + at, to, n);
    uint32_t crc = crc32_of(buf + 24, len - 24);
    for (int i = 0; i < 4; i++)
        buf[20 + i] = (uint8_t)(crc >> (8 * i));
    rewind(f);
    ck_assert(fwrite(buf, 1, len, f) == len);
    fclose(f);
}

/* The newest generation passes its CRC but its model cannot be used: one
 * does not decode, the other holds a NaN weight.  Both fall back to the
 * previous generation, with a warning naming the file. */
START_TEST(checksum_valid_but_undecodable_snapshot_falls_back)
{
    e2e d;
    e2e_init(&d, "journal: {enabled: false}\n"); /* the snapshots alone */
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "u", "perceptron", 3, true);
    e2e_create(c, "nan", "perceptron", 4, true);
    train(c, "u", 10, 1);
    train(c, "nan", 10, 1);
    e2e_admin(c, "save", NULL, -1);          /* generation 1: 10 examples */
    train(c, "u", 10, 2);
    /* a mistake on a fresh feature sets its weight to exactly +-mark */
    const double mark = 1234.5678, x[4] = {0, 0, 0, mark};
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
    e2e_str(pk, "nan");
    e2e_dense(pk, 4, x);
    double s = pcc_number(pcc_map_get(e2e_call(c, id, -1), "score"));
    int y = s > 0 ? -1 : 1;
    e2e_label(c, "nan", 4, x, y);
    e2e_admin(c, "save", NULL, -1);          /* generation 2 */
    pcc_close(c);
    kill(d.pid, SIGKILL);                    /* no final save: generation 2 stays newest */
    waitpid(d.pid, NULL, 0);
    d.pid = 0;
    char state[300];
    snprintf(state, sizeof state, "%s/state", d.dir);
    patch_snapshot(state, "u", 2, "PCMODEL", "XCMODEL", 7);
    const double w = y * mark, nan = NAN;
    patch_snapshot(state, "nan", 2, &w, &nan, 8);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    ck_assert_uint_eq(e2e_info_u64(c, "u", "examples"), 10);
    ck_assert_uint_eq(e2e_info_u64(c, "nan", "examples"), 10);
    pcc_close(c);
    ck_assert_msg(e2e_log_has(&d, "u.2.snap"), "the skipped file u.2.snap is not in the log");
    ck_assert_msg(e2e_log_has(&d, "nan.2.snap"), "the skipped file nan.2.snap is not in the log");
    e2e_cleanup(&d);
}
END_TEST

START_TEST(all_generations_corrupt_refuses_to_start)
{
    e2e d;
    e2e_init(&d, "snapshot: {keep: 1}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "only", "perceptron", 3, true);
    train(c, "only", 5, 1);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    char state[300];
    snprintf(state, sizeof state, "%s/state", d.dir);
    e2e_corrupt_newest(state, "only");
    const char *bin = getenv("PERCEPTROND");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s --config %s 2>>%s", bin, d.config, d.log);
    int status = system(cmd);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0,
                  "the daemon started without model 'only'");
    ck_assert(e2e_log_has(&d, "refusing to start"));
    e2e_cleanup(&d);
}
END_TEST

/* The interval timer keeps firing: over three periods, each batch of new
 * labels reaches a snapshot of its own (a one-shot timer wrote only the first). */
START_TEST(interval_snapshots_are_written_while_serving)
{
    e2e d;
    e2e_init(&d, "snapshot: {interval: 1, keep: 2}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "tick", "perceptron", 3, true);
    double last = 0;
    for (int period = 1; period <= 3; period++) {
        train(c, "tick", 5, period);
        const msgpack_object *snap = NULL;
        double gen = 0;
        bool dirty = true;
        for (int waited = 0; waited < 3000 && (dirty || gen <= last); waited += 50) {
            e2e_sleep_ms(50);
            snap = pcc_map_get(e2e_admin(c, "info", "tick", -1), "snapshot");
            gen = pcc_number(pcc_map_get(snap, "generation"));
            dirty = pcc_map_get(snap, "dirty")->via.boolean;
        }
        ck_assert_msg(!dirty && gen > last,
                      "period %d: no periodic snapshot within 3 s (generation %g, last %g)", period,
                      gen, last);
        last = gen;
    }
    e2e_down(&d, c);
}
END_TEST

START_TEST(sighup_reloads_without_dropping_connections)
{
    e2e d;
    pcc_client *c = e2e_up(&d);
    e2e_create(c, "kept", "perceptron", 3, true);
    train(c, "kept", 5, 1);
    e2e_write_config(&d, "models:\n  added: {rule: pa, dim: 3}\nlimits: {max_features: 2}\n");
    kill(d.pid, SIGHUP);
    for (int i = 0; i < 200 && !e2e_log_has(&d, "reloaded"); i++)
        e2e_sleep_ms(10);
    ck_assert(e2e_log_has(&d, "reloaded"));
    /* same connection still works; the new model exists; the new limit applies */
    const msgpack_object *r = e2e_admin(c, "info", "added", -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "rule"), "pa"));
    ck_assert_uint_eq(e2e_info_u64(c, "kept", "examples"), 5);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, "kept");
    e2e_dense(pk, 3, (double[]){1, 2, 3});
    msgpack_pack_int(pk, 1);
    e2e_call(c, id, 8); /* too many features now */
    /* a broken config changes nothing */
    e2e_write_config(&d, "limits: {max_features: -3}\n");
    kill(d.pid, SIGHUP);
    for (int i = 0; i < 200 && !e2e_log_has(&d, "not reloaded"); i++)
        e2e_sleep_ms(10);
    ck_assert(e2e_log_has(&d, "not reloaded"));
    e2e_call(c, (pcc_request(c, "ping", 0, &id), id), -1);
    e2e_down(&d, c);
}
END_TEST

/* The pid of a child of parent (the snapshot child: the daemon forks nothing
 * else), 0 if none.  Read from /proc/<pid>/stat: "pid (comm) state ppid". */
static pid_t child_of(pid_t parent)
{
    DIR *dd = opendir("/proc");
    ck_assert(dd != NULL);
    pid_t found = 0;
    struct dirent *de;
    while (!found && (de = readdir(dd))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *rp = strrchr(buf, ')');
        char state;
        int ppid;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == parent && state != 'Z')
            found = (pid_t)atoi(de->d_name);
    }
    closedir(dd);
    return found;
}

/* Alive and not a zombie (a zombie has exited; init reaps it when it can). */
static bool running(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* Waits up to 10 s for the daemon's snapshot child. */
static pid_t wait_snapshot_child(e2e *d)
{
    for (int i = 0; i < 1000; i++) {
        pid_t p = child_of(d->pid);
        if (p)
            return p;
        e2e_sleep_ms(10);
    }
    ck_abort_msg("no snapshot child appeared");
    return 0;
}

/* Starts the daemon with every snapshot child sleeping ms before it writes. */
static void start_slow(e2e *d, int ms)
{
    char v[32];
    snprintf(v, sizeof v, "%d", ms);
    setenv("PCD_TEST_SNAPSHOT_DELAY_MS", v, 1);
    e2e_start(d);
    unsetenv("PCD_TEST_SNAPSHOT_DELAY_MS");
}

/* Starts a save without waiting for it: a notification gets no answer. */
static void save_async(pcc_client *c)
{
    char err[256];
    pcc_notify(c, "save", 0);
    ck_assert_msg(pcc_flush(c, err, sizeof err) == 0, "%s", err);
}

/* A model dropped and re-created (by `create` and by auto_create) while a
 * snapshot child still writes the old one: after a restart the new model is
 * the one that comes back, not the old child's generation. */
START_TEST(recreated_model_wins_over_the_dropped_one_being_written)
{
    e2e d;
    e2e_init(&d, "auto_create: true\ntemplate: {dim: 3, rule: perceptron, " E2E_PLAIN "}\n");
    start_slow(&d, 1500);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "m", "perceptron", 3, true);
    train(c, "m", 20, 1);
    train(c, "n", 20, 2);                 /* auto-created */
    e2e_admin(c, "save", NULL, -1);       /* generation 1 of both */
    train(c, "m", 5, 3);
    train(c, "n", 5, 4);
    save_async(c);                        /* the child sleeps, then writes generation 2 */
    pid_t child = wait_snapshot_child(&d);
    pcc_client *c2 = e2e_connect(d.sock);
    e2e_admin(c2, "drop", "m", -1);
    e2e_admin(c2, "drop", "n", -1);
    e2e_create(c2, "m", "pa", 3, true);   /* a different model under the old name */
    train(c2, "m", 3, 5);
    train(c2, "n", 2, 6);                 /* auto-created anew */
    ck_assert_msg(running(child), "the snapshot child finished too early for this test");
    e2e_admin(c2, "save", NULL, -1);      /* waits for the old child, then writes the new models */
    pcc_close(c2);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    const msgpack_object *r = e2e_admin(c, "info", "m", -1);
    ck_assert_msg(pcc_str_eq(pcc_map_get(r, "rule"), "pa"), "the dropped model m came back");
    ck_assert_uint_eq(e2e_info_u64(c, "m", "examples"), 3);
    ck_assert_uint_eq(e2e_info_u64(c, "n", "examples"), 2);
    pcc_close(c);
    e2e_cleanup(&d);
}
END_TEST

/* kill -9 of the daemon while its child writes: the child goes too, so two
 * writers never share the state directory. */
START_TEST(snapshot_child_dies_with_the_daemon)
{
    e2e d;
    e2e_init(&d, NULL);
    start_slow(&d, 5000);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "m", "perceptron", 3, true);
    train(c, "m", 5, 1);
    save_async(c);
    pid_t child = wait_snapshot_child(&d);
    kill(d.pid, SIGKILL);
    waitpid(d.pid, NULL, 0);
    d.pid = 0;
    pcc_close(c);
    for (int i = 0; i < 200 && running(child); i++)
        e2e_sleep_ms(10);
    bool alive = running(child);
    if (alive)
        kill(child, SIGKILL);             /* do not leave it behind */
    ck_assert_msg(!alive, "snapshot child %d outlived its daemon by 2 s", (int)child);
    e2e_cleanup(&d);
}
END_TEST

static bool snapshot_dirty(pcc_client *c, const char *model)
{
    const msgpack_object *snap = pcc_map_get(e2e_admin(c, "info", model, -1), "snapshot");
    return pcc_map_get(snap, "dirty")->via.boolean;
}

/* Counts the generations of model in dir. */
static int generations(const char *dir, const char *model)
{
    DIR *dd = opendir(dir);
    ck_assert(dd != NULL);
    int n = 0;
    size_t ml = strlen(model);
    struct dirent *de;
    while ((de = readdir(dd)))
        n += strncmp(de->d_name, model, ml) == 0 && de->d_name[ml] == '.' &&
             strstr(de->d_name, ".snap") && !strstr(de->d_name, ".tmp");
    closedir(dd);
    return n;
}

/* `save` that must fail; returns its message in msg. */
static void save_fails(pcc_client *c, char *msg, size_t len)
{
    uint32_t id;
    pcc_request(c, "save", 0, &id);
    pcc_error_message(e2e_call(c, id, 11 /* PCP_E_INTERNAL */), msg, len);
}

/* One model cannot be written (an injected ENOSPC), the other can: the answer
 * names the one that failed, and the other is saved. */
/* The one "client gone" path (daemon/core/blocked.c): clients that ask for
 * a save (a job running, or queued behind one) or a sliced `weights` scan
 * of a large model and close before the answer are forgotten by every
 * module they waited on.  A module not told would answer freed memory when
 * the job or the scan ends (ASan: heap-use-after-free; checked by taking
 * the registrations out of server.c). */
START_TEST(clients_gone_while_waiting_are_forgotten)
{
    e2e d;
    e2e_init(&d, NULL);
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "big", "perceptron", 1u << 21, true);
    char err[256];
    for (int round = 0; round < 20; round++) {
        train(c, "big", 2, round); /* dirty again: the save has a job to wait for */
        pcc_client *gone = e2e_connect(d.sock);
        uint32_t id;
        pcc_request(gone, "save", 0, &id);
        msgpack_packer *pk = pcc_request(gone, "weights", 2, &id);
        e2e_str(pk, "big");
        msgpack_pack_uint32(pk, 10);
        ck_assert_msg(pcc_flush(gone, err, sizeof err) == 0, "%s", err);
        pcc_close(gone); /* before either answer */
    }
    e2e_sleep_ms(300); /* the jobs and scans end with nobody to answer */
    ck_assert(e2e_alive(&d));
    const msgpack_object *saved = e2e_admin(c, "save", NULL, -1);
    ck_assert(saved != NULL);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "weights", 2, &id);
    e2e_str(pk, "big");
    msgpack_pack_uint32(pk, 3);
    const msgpack_object *w = e2e_call(c, id, -1);
    ck_assert(w->type == MSGPACK_OBJECT_ARRAY && w->via.array.size == 3);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}
END_TEST

START_TEST(save_answers_per_model_when_one_fails)
{
    e2e d;
    e2e_init(&d, NULL);
    setenv("PCD_TEST_ENOSPC", "full", 1);
    e2e_start(&d);
    unsetenv("PCD_TEST_ENOSPC");
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "full", "perceptron", 3, true);
    e2e_create(c, "fine", "perceptron", 3, true);
    train(c, "full", 5, 1);
    train(c, "fine", 5, 2);
    char msg[300];
    save_fails(c, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "full") && strstr(msg, "No space left on device"),
                  "the answer does not say which model failed and why: %s", msg);
    ck_assert_msg(!strstr(msg, "fine"), "the answer names a model that was written: %s", msg);
    ck_assert_msg(!snapshot_dirty(c, "fine"), "model fine was written but is not marked saved");
    ck_assert(snapshot_dirty(c, "full"));
    pcc_close(c);
    e2e_stop(&d);                         /* the final save fails for `full` as well */
    ck_assert(e2e_log_has(&d, "snapshot of model full failed"));
    e2e_cleanup(&d);
}
END_TEST

/* Every first write of a save hits a full disk (injected): the save makes
 * room by deleting the generations older than the newest intact one and
 * succeeds on its second attempt. */
START_TEST(full_disk_save_prunes_old_generations_and_retries)
{
    e2e d;
    e2e_init(&d, "snapshot: {keep: 3}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "m", "perceptron", 3, true);
    for (int i = 1; i <= 3; i++) {        /* generations 1, 2, 3 */
        train(c, "m", 5, i);
        e2e_admin(c, "save", NULL, -1);
    }
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    setenv("PCD_TEST_ENOSPC", "m:1", 1);  /* each child's first attempt fails */
    e2e_start(&d);
    unsetenv("PCD_TEST_ENOSPC");
    c = e2e_connect(d.sock);
    train(c, "m", 5, 4);
    e2e_admin(c, "save", NULL, -1);       /* generation 4 */
    ck_assert(!snapshot_dirty(c, "m"));
    uint64_t examples = e2e_info_u64(c, "m", "examples");
    pcc_close(c);
    char state[300];
    snprintf(state, sizeof state, "%s/state", d.dir);
    ck_assert_int_eq(generations(state, "m"), 2);   /* 3 (newest intact) and 4 */
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    ck_assert_uint_eq(e2e_info_u64(c, "m", "examples"), examples);
    pcc_close(c);
    e2e_cleanup(&d);
}
END_TEST

/* A real full disk: a tmpfs with room for three and a half snapshots and
 * keep: 3.  The fourth save needs room for four; it prunes and retries.  Then
 * a filler takes the room left: a new model's saves fail (saying so) until it
 * is removed. */
START_TEST(full_tmpfs_saves_again_after_pruning)
{
    e2e d;
    e2e_init(&d, "snapshot: {keep: 3}\njournal: {enabled: false}\n"); /* the snapshots alone on the tmpfs */
    char state[300];
    snprintf(state, sizeof state, "%s/state", d.dir);
    ck_assert(mkdir(state, 0750) == 0);
    if (mount("tmpfs", state, "tmpfs", 0, "size=4m") != 0) {
        fprintf(stderr, "full_tmpfs_saves_again_after_pruning: SKIPPED, cannot mount a tmpfs "
                        "(%s); the injected-ENOSPC tests still run\n", strerror(errno));
        e2e_cleanup(&d);
        return;
    }
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "big", "perceptron", 4096, true);
    static double x[4096];
    for (int k = 0; k < 4; k++) {         /* dense weights: the snapshot is ~32 KiB */
        for (int i = 0; i < 4096; i++)
            x[i] = (double)((i * 7 + k * 13) % 17) - 8.5;
        e2e_label(c, "big", 4096, x, k % 2 ? 1 : -1);
    }
    e2e_admin(c, "save", NULL, -1);       /* generation 1 */
    struct stat st;
    char path[400];
    snprintf(path, sizeof path, "%s/big.1.snap", state);
    ck_assert(stat(path, &st) == 0);
    long page = sysconf(_SC_PAGESIZE);
    long snap = (st.st_size + page - 1) / page * page;
    struct statvfs vfs;
    ck_assert(statvfs(state, &vfs) == 0);
    long used = (long)((vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize);
    char opt[64];
    snprintf(opt, sizeof opt, "size=%ld", used + 2 * snap + snap / 2);
    ck_assert_msg(mount("tmpfs", state, "tmpfs", MS_REMOUNT, opt) == 0, "remount: %s",
                  strerror(errno));
    for (int g = 2; g <= 6; g++) {        /* 4 and 6 find the disk full */
        x[g] = -x[g];
        e2e_label(c, "big", 4096, x, 1);
        e2e_label(c, "big", 4096, x, -1);
        e2e_admin(c, "save", NULL, -1);
        ck_assert(!snapshot_dirty(c, "big"));
    }
    /* the rest of the disk taken: a new model has no old generation to make
     * room from, so its save fails, saying so, until space is freed */
    e2e_create(c, "other", "perceptron", 4096, true);
    e2e_label(c, "other", 4096, x, 1);
    snprintf(path, sizeof path, "%s/filler", state);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    static char blk[4096];
    while (fwrite(blk, 1, sizeof blk, f) == sizeof blk && fflush(f) == 0)
        ;
    fclose(f);
    char msg[300];
    save_fails(c, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "other") && strstr(msg, "No space left on device"), "%s", msg);
    ck_assert(snapshot_dirty(c, "other"));
    save_fails(c, msg, sizeof msg);       /* and again: nothing changed */
    unlink(path);                         /* space freed: the next save works */
    e2e_admin(c, "save", NULL, -1);
    ck_assert(!snapshot_dirty(c, "other"));
    uint64_t examples = e2e_info_u64(c, "big", "examples");
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    ck_assert_uint_eq(e2e_info_u64(c, "big", "examples"), examples);
    ck_assert_uint_eq(e2e_info_u64(c, "other", "examples"), 1);
    pcc_close(c);
    e2e_stop(&d);
    umount2(state, MNT_DETACH);
    e2e_cleanup(&d);
}
END_TEST

/* The snapshot child holds no copy of the daemon's sockets: a connection the
 * daemon closes while a slow snapshot is being written reaches the client at
 * once (it waited for the child before), and once the daemon is killed no
 * connection is accepted on a listener the child still held. */
START_TEST(the_snapshot_child_holds_no_socket)
{
    e2e d;
    e2e_init(&d, NULL);
    start_slow(&d, 3000);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "m", "perceptron", 3, true);
    train(c, "m", 5, 1);
    pcc_client *bad = e2e_connect(d.sock); /* open before the fork */
    e2e_admin(bad, "ping", NULL, -1);
    save_async(c);
    e2e_sleep_ms(200); /* the child is sleeping with the daemon's descriptors */
    pcc_raw(bad, "\xc1", 1); /* never valid MessagePack: the daemon closes the connection */
    char err[256];
    ck_assert_int_eq(pcc_flush(bad, err, sizeof err), 0);
    uint32_t id;
    const msgpack_object *e, *r;
    ck_assert_msg(pcc_read(bad, &id, &e, &r, 1000, err, sizeof err) != 0, "an answer to garbage");
    ck_assert_msg(strstr(err, "no response within") == NULL,
                  "the close did not reach the client within 1 s: %s", err);
    pcc_close(bad);
    e2e_kill9(&d);
    pcc_client *late;
    ck_assert_msg(pcc_connect(d.sock, &late, err, sizeof err) != 0,
                  "a connection was accepted after the daemon died");
    pcc_close(c);
    e2e_cleanup(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_persist");
    TU_TCASE(s, "persist", 120, restart_restores_every_model_bit_identically,
        sparse_models_learn_report_and_restore_like_dense_ones,
        float32_models_learn_report_and_restore,
        corrupt_snapshot_falls_back_to_the_previous_generation,
        checksum_valid_but_undecodable_snapshot_falls_back,
        all_generations_corrupt_refuses_to_start, interval_snapshots_are_written_while_serving,
        sighup_reloads_without_dropping_connections,
        recreated_model_wins_over_the_dropped_one_being_written,
        snapshot_child_dies_with_the_daemon, clients_gone_while_waiting_are_forgotten,
        save_answers_per_model_when_one_fails,
        full_disk_save_prunes_old_generations_and_retries, full_tmpfs_saves_again_after_pruning,
        the_snapshot_child_holds_no_socket);
    return tu_run(s);
}
