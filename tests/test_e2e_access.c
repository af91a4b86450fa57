/* test_e2e_access.c - rights per listener and tokens, against the real daemon.
 *
 * Each test writes its own listeners (a read-only TCP, a TCP with no rights,
 * the Unix socket with admin) and a tokens file, then checks what every
 * right may and may not do, on both dispatch paths (a label to an existing
 * model takes the direct path), and that no token ever reaches the log. */
#include "tests/e2e.h"
#include "tests/testutil.h"

static e2e d;
static int port2; /* a second TCP listener */

#define TOK_OPS "ops-7f3a9c1e5b2d4f6a8c0e"
#define TOK_APP "app-0a1b2c3d4e5f6a7b8c9d"
#define TOK_RO "ro-99887766554433221100"
#define TOK_WRONG "wrong-1234567890abcdefgh"

static void write_tokens(const char *path, unsigned mode)
{
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fprintf(f, "# name rights token\n"
               "ops admin " TOK_OPS "\n"
               "  app   learn\t" TOK_APP "\n"
               "\n"
               "ro read " TOK_RO "\n");
    fclose(f);
    ck_assert(chmod(path, mode) == 0);
}

/* Listeners: d.port read-only, port2 no rights at all, the Unix socket
 * admin (the default); extra: more YAML. */
static void write_config(const char *extra)
{
    FILE *f = fopen(d.config, "w");
    ck_assert(f != NULL);
    fprintf(f,
            "listen:\n"
            "  tcp:\n"
            "    - {address: \"127.0.0.1:%d\", rights: read}\n"
            "    - {address: \"127.0.0.1:%d\", rights: none}\n"
            "  unix: [\"%s\"]\n"
            "state_dir: %s/state\n"
            "%s\n",
            d.port, port2, d.sock, d.dir, extra ? extra : "");
    fclose(f);
}

static char tokens[256];

static void setup(void)
{
    e2e_init(&d, NULL);
    port2 = e2e_free_port();
    snprintf(tokens, sizeof tokens, "%s/tokens", d.dir);
    write_tokens(tokens, 0600);
    char extra[400];
    snprintf(extra, sizeof extra, "auth: {tokens_file: \"%s\"}\n", tokens);
    write_config(extra);
}

static void teardown(void)
{
    if (d.pid > 0) /* a clean exit: valgrind's 99 would be a leak or a memory error */
        ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}

static pcc_client *tcp2(void)
{
    char a[64];
    snprintf(a, sizeof a, "tcp:127.0.0.1:%d", port2);
    return e2e_connect(a);
}

/* label with a params count the direct path reads: m exists, so it is taken. */
static void label_code(pcc_client *c, const char *model, int64_t want)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, model);
    e2e_dense(pk, 2, (double[]){1, -1});
    msgpack_pack_int(pk, 1);
    e2e_call(c, id, want);
}

static void predict_code(pcc_client *c, const char *model, int64_t want)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
    e2e_str(pk, model);
    e2e_dense(pk, 2, (double[]){1, -1});
    e2e_call(c, id, want);
}

static const msgpack_object *auth(pcc_client *c, const char *token, int64_t want)
{
    return e2e_admin(c, "auth", token, want);
}

static bool log_has_any_token(void)
{
    return e2e_log_has(&d, TOK_OPS) || e2e_log_has(&d, TOK_APP) || e2e_log_has(&d, TOK_RO) ||
           e2e_log_has(&d, TOK_WRONG);
}

START_TEST(a_read_only_listener_refuses_every_change)
{
    e2e_start(&d);
    pcc_client *u = e2e_connect(d.sock), *r = e2e_connect(d.tcp);
    e2e_create(u, "m", "perceptron", 2, true);
    e2e_label(u, "m", 2, (double[]){1, 1}, 1);
    /* reads work */
    predict_code(r, "m", -1);
    e2e_admin(r, "models", NULL, -1);
    e2e_admin(r, "info", "m", -1);
    e2e_admin(r, "stats", NULL, -1);
    /* learning and administration are refused with code 13, on the direct
     * path (label of an existing model) and the general one */
    label_code(r, "m", 13);
    label_code(r, "new-model", 13);
    const msgpack_object *err = e2e_admin(r, "drop", "m", 13);
    char msg[256];
    pcc_error_message(err, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "drop needs the admin right") && strstr(msg, "has read"), "%s", msg);
    e2e_admin(r, "reset", "m", 13);
    e2e_admin(r, "save", NULL, 13);
    e2e_admin(r, "create", "other", 13);
    /* a notification is refused too, silently */
    msgpack_packer *pk = pcc_notify(r, "label", 3);
    e2e_str(pk, "m");
    e2e_dense(pk, 2, (double[]){1, -1});
    msgpack_pack_int(pk, 1);
    e2e_admin(r, "ping", NULL, -1);
    /* nothing changed: one example, the model and no other */
    ck_assert_uint_eq(e2e_info_u64(u, "m", "examples"), 1);
    const msgpack_object *models = e2e_admin(u, "models", NULL, -1);
    ck_assert_uint_eq(models->via.array.size, 1);
    const msgpack_object *st = e2e_admin(u, "stats", NULL, -1);
    const msgpack_object *by = pcc_map_get(st, "errors_by_code");
    ck_assert(pcc_number(pcc_map_get(by, "denied")) == 7);
    pcc_close(r);
    pcc_close(u);
}
END_TEST

START_TEST(tokens_grant_their_rights_and_no_more)
{
    e2e_start(&d);
    pcc_client *u = e2e_connect(d.sock), *n = tcp2();
    e2e_create(u, "m", "perceptron", 2, true);
    /* no rights: only ping and auth */
    e2e_admin(n, "ping", NULL, -1);
    predict_code(n, "m", 13);
    e2e_admin(n, "models", NULL, 13);
    /* read */
    const msgpack_object *r = auth(n, TOK_RO, -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "name"), "ro"));
    ck_assert(pcc_str_eq(pcc_map_get(r, "rights"), "read"));
    predict_code(n, "m", -1);
    label_code(n, "m", 13);
    /* learn */
    r = auth(n, TOK_APP, -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "rights"), "learn"));
    label_code(n, "m", -1);
    e2e_admin(n, "drop", "m", 13);
    /* admin */
    r = auth(n, TOK_OPS, -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "rights"), "admin"));
    e2e_admin(n, "reset", "m", -1);
    e2e_admin(n, "save", NULL, -1);
    e2e_admin(n, "drop", "m", -1);
    /* a token on a read listener: its own rights, never fewer than the listener's */
    pcc_client *ro = e2e_connect(d.tcp);
    r = auth(ro, TOK_APP, -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "rights"), "learn"));
    /* auto_create needs the admin right: the learn right cannot make models */
    label_code(ro, "fresh", 5);
    e2e_admin(u, "info", "fresh", 5);
    auth(ro, TOK_OPS, -1);
    label_code(ro, "fresh", -1);
    e2e_admin(u, "info", "fresh", -1);
    pcc_close(ro);
    /* the Unix socket's peer is named by uid and pid */
    auth(u, TOK_RO, -1);
    char line[128];
    snprintf(line, sizeof line, "unix uid=%u pid=%d authenticated as ro (rights: admin)",
             (unsigned)getuid(), (int)getpid());
    ck_assert_msg(e2e_log_has(&d, line), "no '%s' in %s", line, d.log);
    ck_assert(e2e_log_has(&d, "authenticated as ops (rights: admin)"));
    ck_assert(!log_has_any_token());
    pcc_close(n);
    pcc_close(u);
}
END_TEST

START_TEST(a_wrong_token_is_refused_and_logged_without_it)
{
    e2e_start(&d);
    pcc_client *u = e2e_connect(d.sock), *n = tcp2();
    e2e_create(u, "m", "perceptron", 2, true);
    auth(n, TOK_APP, -1);
    label_code(n, "m", -1);
    /* a wrong token takes back what the right one gave */
    const msgpack_object *err = auth(n, TOK_WRONG, 14);
    char msg[256];
    pcc_error_message(err, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "not valid") && !strstr(msg, TOK_WRONG), "%s", msg);
    label_code(n, "m", 13);
    predict_code(n, "m", 13);
    /* a prefix, an extension, the empty string, a non-string */
    auth(n, "app-0a1b2c3d4e5f6a7b8c9", 14);
    auth(n, TOK_APP "x", 14);
    auth(n, "", 14);
    uint32_t id;
    msgpack_packer *pk = pcc_request(n, "auth", 1, &id);
    msgpack_pack_int(pk, 42);
    e2e_call(n, id, 4);
    e2e_admin(n, "ping", NULL, -1);
    ck_assert(e2e_log_has(&d, "refused: the token matches none of the 3 configured"));
    ck_assert(!log_has_any_token());
    const msgpack_object *st = e2e_admin(u, "stats", NULL, -1);
    ck_assert(pcc_number(pcc_map_get(pcc_map_get(st, "errors_by_code"), "auth")) == 4);
    ck_assert_uint_eq(e2e_info_u64(u, "m", "examples"), 1);
    pcc_close(n);
    pcc_close(u);
}
END_TEST

/* Counts the log lines that contain needle. */
static int log_count(const char *needle)
{
    FILE *f = fopen(d.log, "r");
    char line[2048];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

/* 5000 wrong tokens pipelined: every one refused and counted, one log line a
 * second at most, and the next line says how many were not logged. */
START_TEST(a_token_flood_does_not_flood_the_log)
{
    e2e_start(&d);
    pcc_client *n = tcp2();
    for (int i = 0; i < 5000; i++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(n, "auth", 1, &id);
        e2e_str(pk, TOK_WRONG);
    }
    char err[256];
    ck_assert(pcc_flush(n, err, sizeof err) == 0);
    for (int i = 0; i < 5000; i++) {
        uint32_t id;
        const msgpack_object *e, *r;
        ck_assert(pcc_read(n, &id, &e, &r, 10000, err, sizeof err) == 0);
        ck_assert_int_eq(pcc_error_code(e), 14);
    }
    int lines = log_count("refused: the token matches none");
    ck_assert_msg(lines >= 1 && lines <= 3, "%d lines", lines);
    e2e_sleep_ms(1100);
    auth(n, TOK_WRONG, 14);
    ck_assert(e2e_log_has(&d, "more refused since the last such line)"));
    char want[80];
    int later = log_count("refused: the token matches none");
    ck_assert_int_eq(later, lines + 1);
    snprintf(want, sizeof want, "(%d more refused", 5000 - lines);
    ck_assert_msg(e2e_log_has(&d, want) || lines > 1, "no '%s' in %s", want, d.log);
    pcc_client *u = e2e_connect(d.sock);
    const msgpack_object *st = e2e_admin(u, "stats", NULL, -1);
    ck_assert(pcc_number(pcc_map_get(pcc_map_get(st, "errors_by_code"), "auth")) == 5001);
    pcc_close(u);
    pcc_close(n);
    ck_assert(!log_has_any_token());
}
END_TEST

START_TEST(without_a_config_tcp_learns_and_the_socket_administers)
{
    /* the built-in default rights: TCP learn, Unix admin, no tokens */
    e2e_write_config(&d, NULL);
    e2e_start(&d);
    pcc_client *t = e2e_connect(d.tcp), *u = e2e_connect(d.sock);
    /* a label to a new name makes a model over the socket, not over TCP
     * (issue 29: any local user could fill memory with models) */
    label_code(t, "auto", 5);
    label_code(u, "auto", -1);
    label_code(t, "auto", -1);
    predict_code(t, "auto", -1);
    e2e_admin(t, "drop", "auto", 13);
    e2e_admin(t, "create", "x", 13);
    const msgpack_object *err = auth(t, TOK_OPS, 14);
    char msg[256];
    pcc_error_message(err, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "no tokens"), "%s", msg);
    e2e_admin(u, "drop", "auto", -1);
    pcc_close(t);
    pcc_close(u);
}
END_TEST

/* The tokens of a systemd credential, read from $CREDENTIALS_DIRECTORY. */
START_TEST(tokens_from_a_systemd_credential)
{
    char dir[256], extra[200];
    snprintf(dir, sizeof dir, "%s/creds", d.dir);
    ck_assert(mkdir(dir, 0700) == 0);
    char path[300];
    snprintf(path, sizeof path, "%s/pcd-tokens", dir);
    write_tokens(path, 0400);
    snprintf(extra, sizeof extra, "auth: {tokens_credential: pcd-tokens}\n");
    write_config(extra);
    setenv("CREDENTIALS_DIRECTORY", dir, 1);
    e2e_start(&d);
    unsetenv("CREDENTIALS_DIRECTORY");
    pcc_client *n = tcp2();
    auth(n, TOK_OPS, -1);
    e2e_admin(n, "models", NULL, -1);
    pcc_close(n);
    ck_assert(e2e_log_has(&d, "3 tokens loaded"));
}
END_TEST

/* With the shared log serving some models only (log.models), a token that
 * looks like a model name is still a token: auth is not a model's request
 * (it was refused as "model ... is not served", echoing the token). */
START_TEST(auth_with_the_shared_log)
{
    char extra[600];
    snprintf(extra, sizeof extra,
             "auth: {tokens_file: \"%s\"}\n"
             "log: {backend: redis, address: \"unix:%s/no-redis.sock\", models: [\"m*\"]}\n",
             tokens, d.dir);
    write_config(extra);
    e2e_start(&d);
    pcc_client *n = tcp2();
    const msgpack_object *r = auth(n, TOK_APP, -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "rights"), "learn"));
    const msgpack_object *err = auth(n, TOK_WRONG, 14);
    char msg[256];
    pcc_error_message(err, msg, sizeof msg);
    ck_assert_msg(!strstr(msg, TOK_WRONG), "%s", msg);
    e2e_admin(n, "ping", NULL, -1);
    pcc_close(n);
}
END_TEST

/* Starts the daemon and expects it to refuse, with msg in the log. */
static void refuses_to_start(const char *msg)
{
    const char *bin = getenv("PERCEPTROND");
    char cmd[800];
    /* --check-config says it first (ExecStartPre), then the start itself */
    for (int check = 1; check >= 0; check--) {
        truncate(d.log, 0);
        snprintf(cmd, sizeof cmd, "'%s' --config '%s' %s >>'%s' 2>&1", bin, d.config,
                 check ? "--check-config" : "", d.log);
        int st = system(cmd);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 0, "the daemon started");
        ck_assert_msg(e2e_log_has(&d, msg), "no '%s' in %s", msg, d.log);
        ck_assert(!log_has_any_token());
    }
}

START_TEST(bad_token_files_stop_the_start)
{
    chmod(tokens, 0604);
    refuses_to_start("are open to other users (mode 0604): chmod o-rwx it");
    FILE *f = fopen(tokens, "w");
    fprintf(f, "ops admin " TOK_OPS "\nops read " TOK_RO "\n");
    fclose(f);
    chmod(tokens, 0600);
    refuses_to_start(":2: the name ops is used twice");
    f = fopen(tokens, "w");
    fprintf(f, "ops admin " TOK_OPS "\nro read " TOK_OPS "\n");
    fclose(f);
    refuses_to_start(":2: ro has the same token as ops");
    f = fopen(tokens, "w");
    fprintf(f, "ops admin short\n");
    fclose(f);
    refuses_to_start(":1: the token of ops is 5 bytes; tokens are 16 to 512 bytes");
    f = fopen(tokens, "w");
    fprintf(f, "ops root " TOK_OPS "\n");
    fclose(f);
    refuses_to_start(":1: rights must be read, learn or admin, not 'root'");
    /* The columns in the wrong order: the token is where the rights go, and
     * the reason must not quote it (it quoted its first 20 bytes). */
    f = fopen(tokens, "w");
    fprintf(f, "ops " TOK_OPS " admin\n");
    fclose(f);
    refuses_to_start(":1: rights must be read, learn or admin, not a word of 24 bytes");
    ck_assert(!e2e_log_has(&d, "ops-7f3a9c1e"));
    f = fopen(tokens, "w");
    fprintf(f, "# nothing\n");
    fclose(f);
    refuses_to_start("has no tokens");
    write_config("auth: {tokens_credential: pcd-tokens}\n");
    unsetenv("CREDENTIALS_DIRECTORY");
    refuses_to_start("but $CREDENTIALS_DIRECTORY is not set");
}
END_TEST

/* SIGHUP reads the tokens again; a broken file keeps the old ones. */
START_TEST(sighup_rereads_the_tokens)
{
    e2e_start(&d);
    FILE *f = fopen(tokens, "w");
    fprintf(f, "new admin new-token-0123456789abcdef\n");
    fclose(f);
    kill(d.pid, SIGHUP);
    for (int i = 0; i < 200 && !e2e_log_has(&d, "reloaded"); i++)
        e2e_sleep_ms(10);
    pcc_client *n = tcp2();
    auth(n, TOK_OPS, 14);
    auth(n, "new-token-0123456789abcdef", -1);
    chmod(tokens, 0644);
    kill(d.pid, SIGHUP);
    for (int i = 0; i < 200 && !e2e_log_has(&d, "config not reloaded"); i++)
        e2e_sleep_ms(10);
    ck_assert(e2e_log_has(&d, "config not reloaded"));
    auth(n, "new-token-0123456789abcdef", -1);
    pcc_close(n);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_access");
    TCase *tc = TU_TCASE(s, "access", 120, a_read_only_listener_refuses_every_change,
        tokens_grant_their_rights_and_no_more, a_wrong_token_is_refused_and_logged_without_it,
        a_token_flood_does_not_flood_the_log,
        without_a_config_tcp_learns_and_the_socket_administers, tokens_from_a_systemd_credential,
        auth_with_the_shared_log, bad_token_files_stop_the_start, sighup_rereads_the_tokens);
    tcase_add_checked_fixture(tc, setup, teardown);
    return tu_run(s);
}
