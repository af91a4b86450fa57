/* test_e2e_tls.c - TLS listeners, with certificates the test makes itself.
 *
 * The openssl command makes a CA, a server certificate for 127.0.0.1 and a
 * client certificate, in the test's directory.  The daemon serves one TLS
 * listener (client certificates optional or required) next to its Unix
 * socket; clients speak TLS through pcclient ("tls:" addresses). */
#include "tests/e2e.h"
#include "tests/testutil.h"

static e2e d;
static char ca[256], other_ca[256], cert[256], key[256], ccert[256], ckey[256], tls_addr[64];

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* A CA (name), and a certificate it signs (leaf) for the extensions ext. */
static void make_ca(const char *name)
{
    sh("cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
       "-keyout %s.key -out %s.pem -days 2 -subj /CN=%s >/dev/null 2>&1", d.dir, name, name, name);
}

static void make_leaf(const char *ca_name, const char *leaf, const char *cn, const char *ext)
{
    sh("cd '%s' && printf '%s\\n' > %s.ext && "
       "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout %s.key "
       "-out %s.csr -subj /CN=%s >/dev/null 2>&1 && "
       "openssl x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -CAcreateserial -out %s.pem "
       "-days 2 -extfile %s.ext >/dev/null 2>&1",
       d.dir, ext, leaf, leaf, leaf, cn, leaf, ca_name, ca_name, leaf, leaf);
}

static void write_config(const char *client)
{
    char extra[600] = "";
    if (client)
        snprintf(extra, sizeof extra, ", client_ca: \"%s\", client_cert: %s", ca, client);
    FILE *f = fopen(d.config, "w");
    ck_assert(f != NULL);
    fprintf(f,
            "listen:\n"
            "  tcp:\n"
            "    - address: \"127.0.0.1:%d\"\n"
            "      rights: admin\n"
            "      tls: {cert: \"%s\", key: \"%s\"%s}\n"
            "  unix: [\"%s\"]\n"
            "state_dir: %s/state\n",
            d.port, cert, key, extra, d.sock, d.dir);
    fclose(f);
}

static void setup(void)
{
    e2e_init(&d, NULL);
    make_ca("ca");
    make_ca("other");
    make_leaf("ca", "server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost");
    make_leaf("ca", "client", "app-client", "extendedKeyUsage=clientAuth");
    snprintf(ca, sizeof ca, "%s/ca.pem", d.dir);
    snprintf(other_ca, sizeof other_ca, "%s/other.pem", d.dir);
    snprintf(cert, sizeof cert, "%s/server.pem", d.dir);
    snprintf(key, sizeof key, "%s/server.key", d.dir);
    snprintf(ccert, sizeof ccert, "%s/client.pem", d.dir);
    snprintf(ckey, sizeof ckey, "%s/client.key", d.dir);
    snprintf(tls_addr, sizeof tls_addr, "tls:127.0.0.1:%d", d.port);
    write_config(NULL);
}

static void teardown(void)
{
    if (d.pid > 0) /* a clean exit: valgrind's 99 would be a leak or a memory error */
        ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}

static pcc_client *tls_connect(const pcc_options *o)
{
    pcc_client *c;
    char err[512];
    ck_assert_msg(pcc_connect_with(tls_addr, o, &c, err, sizeof err) == 0, "%s", err);
    return c;
}

static void tls_refused(const pcc_options *o, const char *why)
{
    pcc_client *c = NULL;
    char err[512] = "";
    int rc = pcc_connect_with(tls_addr, o, &c, err, sizeof err);
    if (rc == 0) { /* TLS 1.3: a refused client certificate shows on the first read */
        const msgpack_object *e, *r;
        uint32_t id;
        pcc_request(c, "ping", 0, &id);
        rc = pcc_call(c, id, &e, &r, err, sizeof err);
        pcc_close(c);
    }
    ck_assert_msg(rc != 0, "connected (%s expected)", why);
    ck_assert_msg(strstr(err, why), "'%s' has no '%s'", err, why);
}

START_TEST(a_tls_listener_serves_pipelined_requests)
{
    e2e_start(&d);
    pcc_options o = {.tls_ca = ca};
    pcc_client *c = tls_connect(&o);
    e2e_create(c, "m", "perceptron", 2, true);
    for (int i = 0; i < 50; i++)
        e2e_label(c, "m", 2, (double[]){i % 2 ? 1 : -1, 0.5}, i % 2 ? 1 : -1);
    /* 3000 pipelined predictions: answers larger than one TLS record, all in order */
    uint32_t first = 0;
    for (int i = 0; i < 3000; i++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
        if (!i)
            first = id;
        e2e_str(pk, "m");
        e2e_dense(pk, 2, (double[]){i % 2 ? 1 : -1, 0.5});
    }
    char err[256];
    ck_assert(pcc_flush(c, err, sizeof err) == 0);
    for (int i = 0; i < 3000; i++) {
        uint32_t id;
        const msgpack_object *e, *r;
        ck_assert_msg(pcc_read(c, &id, &e, &r, 10000, err, sizeof err) == 0, "%s", err);
        ck_assert(e == NULL && id == first + (uint32_t)i);
        ck_assert(pcc_number(pcc_map_get(r, "label")) == (i % 2 ? 1 : -1));
    }
    /* the same model over the Unix socket */
    pcc_client *u = e2e_connect(d.sock);
    ck_assert_uint_eq(e2e_info_u64(u, "m", "examples"), 50);
    pcc_close(u);
    pcc_close(c);
}
END_TEST

START_TEST(untrusted_and_plain_clients_are_refused)
{
    /* idle_timeout 1: the handshake has 1 s, not 10 */
    FILE *f = fopen(d.config, "a");
    fputs("limits: {idle_timeout: 1}\n", f);
    fclose(f);
    e2e_start(&d);
    /* a client that trusts another CA refuses the daemon */
    pcc_options o = {.tls_ca = other_ca};
    tls_refused(&o, "not trusted");
    /* plain MessagePack to the TLS port: OpenSSL waits for the rest of what
     * it takes for an SSLv2 hello until the handshake's time is up; nothing
     * is served */
    pcc_client *p;
    char err[256], a[64];
    snprintf(a, sizeof a, "tcp:127.0.0.1:%d", d.port);
    ck_assert(pcc_connect(a, &p, err, sizeof err) == 0);
    uint32_t id;
    pcc_request(p, "ping", 0, &id);
    const msgpack_object *e, *r;
    ck_assert(pcc_call(p, id, &e, &r, err, sizeof err) != 0);
    pcc_close(p);
    ck_assert(e2e_log_has(&d, "its TLS handshake did not finish in time"));
    /* garbage that is not even a hello is refused at once */
    ck_assert(pcc_connect(a, &p, err, sizeof err) == 0);
    pcc_raw(p, "\x16\x03\x01\x00\x05hello", 10);
    ck_assert(pcc_flush(p, err, sizeof err) == 0);
    ck_assert(pcc_read(p, &id, &e, &r, 5000, err, sizeof err) != 0); /* an alert, then EOF */
    pcc_close(p);
    for (int i = 0; i < 100 && !e2e_log_has(&d, "TLS error"); i++)
        e2e_sleep_ms(10);
    ck_assert(e2e_log_has(&d, "TLS error"));
    /* and the daemon goes on */
    o.tls_ca = ca;
    pcc_client *c = tls_connect(&o);
    e2e_admin(c, "ping", NULL, -1);
    /* a client writing to a TLS connection the daemon closed (idle) gets an
     * error, not SIGPIPE (which would end this test with a signal) */
    e2e_sleep_ms(1500);
    for (int i = 0; i < 20000; i++)
        pcc_request(c, "ping", 0, &id);
    int rc = 0;
    for (int k = 0; k < 20 && rc == 0; k++) {
        for (int i = 0; i < 2000; i++)
            pcc_request(c, "ping", 0, &id);
        rc = pcc_flush(c, err, sizeof err);
        e2e_sleep_ms(10);
    }
    ck_assert_int_eq(rc, -1);
    pcc_close(c);
}
END_TEST

START_TEST(client_certificates_when_required)
{
    write_config("require");
    e2e_start(&d);
    pcc_options o = {.tls_ca = ca};
    tls_refused(&o, "");
    o.tls_cert = ccert;
    o.tls_key = ckey;
    pcc_client *c = tls_connect(&o);
    e2e_admin(c, "models", NULL, -1);
    pcc_close(c);
    ck_assert(e2e_log_has(&d, "with client certificate /CN=app-client"));
}
END_TEST

START_TEST(client_certificates_when_optional)
{
    write_config("optional");
    e2e_start(&d);
    pcc_options o = {.tls_ca = ca};
    pcc_client *c = tls_connect(&o);
    e2e_admin(c, "models", NULL, -1);
    pcc_close(c);
    /* a certificate from another CA is refused even when optional */
    make_leaf("other", "stranger", "stranger", "extendedKeyUsage=clientAuth");
    char sc[300], sk[300];
    snprintf(sc, sizeof sc, "%s/stranger.pem", d.dir);
    snprintf(sk, sizeof sk, "%s/stranger.key", d.dir);
    o.tls_cert = sc;
    o.tls_key = sk;
    tls_refused(&o, "");
}
END_TEST

START_TEST(a_missing_key_stops_the_start)
{
    snprintf(key, sizeof key, "%s/nothing.key", d.dir);
    write_config(NULL);
    const char *bin = getenv("PERCEPTROND");
    char cmd[800];
    snprintf(cmd, sizeof cmd, "'%s' --config '%s' >>'%s' 2>&1", bin, d.config, d.log);
    int st = system(cmd);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    ck_assert(e2e_log_has(&d, "TLS: cannot use the key"));
    truncate(d.log, 0);
    snprintf(cmd, sizeof cmd, "'%s' --config '%s' --check-config >>'%s' 2>&1", bin, d.config, d.log);
    st = system(cmd);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    ck_assert(e2e_log_has(&d, "TLS: cannot use the key"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_tls");
    TCase *tc = TU_TCASE(s, "tls", 120, a_tls_listener_serves_pipelined_requests,
        untrusted_and_plain_clients_are_refused, client_certificates_when_required,
        client_certificates_when_optional, a_missing_key_stops_the_start);
    tcase_add_checked_fixture(tc, setup, teardown);
    return tu_run(s);
}
