/* test_e2e_bounds.c - the daemon's resource bounds against the real daemon
 * (issue 14): memory (the daemon's address space capped with prlimit),
 * max_models, max_memory, the input-buffer budget, the fairness budget,
 * weights' cost, accept back-off on EMFILE.
 *
 * One daemon per test, with a sentinel model trained first: after every
 * attack the daemon still answers a well-behaved client and the sentinel
 * scores exactly as before. */
#define _GNU_SOURCE /* prlimit */
#include "tests/e2e.h"

#include <sys/resource.h>

static e2e d;
static const double probe[3] = {0.3, -1.2, 2.5};
static double sentinel_score;

static void start(const char *extra)
{
    e2e_init(&d, extra);
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "sentinel", "perceptron", 3, true);
    for (int i = 0; i < 20; i++)
        e2e_label(c, "sentinel", 3, (double[]){i % 3 - 1.0, i % 5 - 2.0, 1}, i % 2 ? 1 : -1);
    sentinel_score = e2e_score(c, "sentinel", 3, probe);
    pcc_close(c);
}

/* Still serving, the sentinel untouched; stops the daemon (status 0). */
static void finish(void)
{
    pcc_client *c = e2e_connect(d.tcp);
    double s = e2e_score(c, "sentinel", 3, probe);
    ck_assert(memcmp(&s, &sentinel_score, sizeof s) == 0);
    ck_assert_uint_eq(e2e_info_u64(c, "sentinel", "examples"), 20);
    pcc_close(c);
    ck_assert(e2e_alive(&d));
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}

/* The daemon runs plain (not under valgrind or a sanitizer), so that an
 * address-space cap means what it says. */
static bool daemon_plain(void)
{
    const char *w = getenv("PCD_TEST_WRAPPER");
#if defined(__SANITIZE_ADDRESS__)
    return false;
#else
    return !(w && *w);
#endif
}

static unsigned long daemon_vm_kib(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert(f != NULL);
    unsigned long v = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            v = strtoul(line + strlen(key) + 1, NULL, 10);
    fclose(f);
    return v;
}

/* Caps the daemon's address space at what it uses now plus slack bytes
 * (slack 0: no cap). */
static void cap_memory(size_t slack)
{
    struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
    if (slack)
        rl.rlim_cur = daemon_vm_kib(d.pid, "VmSize:") * 1024 + slack;
    ck_assert(prlimit(d.pid, RLIMIT_AS, &rl, NULL) == 0);
}

/* Out of memory reaches the client as code 11 with a message that says so
 * (it came with an empty message), and msgpack-c's out-of-memory is logged as
 * that, not as "malformed MessagePack". */
START_TEST(out_of_memory_is_said_as_such)
{
    start(NULL);
    if (!daemon_plain()) {
        finish();
        return;
    }
    cap_memory(16u << 20);
    pcc_client *c = e2e_connect(d.sock);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "huge");
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint32(pk, 26); /* 512 MiB of weights */
    const msgpack_object *e = e2e_call(c, id, 11);
    char msg[256];
    pcc_error_message(e, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "out of memory"), "message: '%s'", msg);

    /* [0, 1, "predict", ["sentinel", [nil x 1000000]]]: a 1 MB message msgpack-c
     * needs 24 MB to unpack (the direct path declines nil features). */
    pk = pcc_request(c, "predict", 2, &id);
    e2e_str(pk, "sentinel");
    msgpack_pack_array(pk, 1000000);
    for (int i = 0; i < 1000000; i++)
        msgpack_pack_nil(pk);
    char err[256];
    const msgpack_object *error, *result;
    ck_assert(pcc_call(c, id, &error, &result, err, sizeof err) != 0); /* closed */
    pcc_close(c);
    ck_assert_msg(e2e_log_has(&d, "out of memory unpacking a"), "see %s", d.log);
    ck_assert(!e2e_log_has(&d, "malformed"));
    cap_memory(0);
    finish();
}
END_TEST

/* `predict m {}` as a model's first example (no features at all) was a
 * memcpy from NULL (UBSan stopped the daemon: this test runs under the
 * sanitizers in scripts/test); the same for label and the batches. */
START_TEST(empty_example_first)
{
    start("auto_create: true\n");
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "fresh", "perceptron", 4, true);
    e2e_create(c, "fresh_sorted", "alma", 4, true);
    const char *models[] = {"fresh", "fresh_sorted", "auto"};
    for (int k = 0; k < 3; k++) {
        uint32_t id;
        msgpack_packer *pk;
        if (k < 2) {
            pk = pcc_request(c, "predict", 2, &id);
            e2e_str(pk, models[k]);
            msgpack_pack_map(pk, 0);
            const msgpack_object *r = e2e_call(c, id, -1);
            ck_assert(pcc_number(pcc_map_get(r, "score")) == 0);
        }
        pk = pcc_request(c, "label", 3, &id);
        e2e_str(pk, models[k]);
        msgpack_pack_map(pk, 0);
        msgpack_pack_int(pk, -1);
        e2e_call(c, id, -1);
        pk = pcc_request(c, "predict_batch", 2, &id);
        e2e_str(pk, models[k]);
        msgpack_pack_array(pk, 2);
        msgpack_pack_map(pk, 0);
        msgpack_pack_array(pk, 0);
        e2e_call(c, id, -1);
    }
    ck_assert_uint_eq(e2e_info_u64(c, "auto", "examples"), 1);
    pcc_close(c);
    finish();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_bounds");
    TCase *tc = tcase_create("bounds");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, out_of_memory_is_said_as_such);
    tcase_add_test(tc, empty_example_first);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
