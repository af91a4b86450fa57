/* test_e2e_fsync.c - the real daemon on a failing disk (issue 29): with
 * tests/crash/fault.c preloaded, the journal's fdatasync fails with EIO (and
 * the bytes it did not sync are lost, as after the kernel dropped the pages),
 * a journal write fails with ENOSPC, a snapshot's rename and fsync fail with
 * EIO.  Under fsync: always the daemon must never acknowledge a write whose
 * sync failed (the client sees code 11 or its connection closed), keep
 * serving reads, write again once the disk does, and after a restart (the
 * shim off) hold every write it acknowledged.  $PCD_FAULT_SHIM is the shim. */
#include "tests/e2e.h"
#include "tests/testutil.h"

#define DIM E2E_DIM
#define WINDOW 16

typedef struct tally {
    uint64_t sent, acked, refused, closed;
    uint64_t resumed; /* acknowledged after the first refusal */
    bool read_while_failed; /* a predict and an info answered while writes were refused */
} tally;

/* Starts d with the fault rules (NULL: none) preloaded. */
static void start_with(e2e *d, const char *rules)
{
    const char *shim = getenv("PCD_FAULT_SHIM");
    ck_assert_msg(shim != NULL, "PCD_FAULT_SHIM is not set");
    /* under ASan the shim comes before its runtime: tell it that is fine,
     * beside whatever options the caller set (scripts/test sets some) */
    const char *was = getenv("ASAN_OPTIONS");
    char saved[512] = "", asan[600];
    snprintf(saved, sizeof saved, "%s", was ? was : "");
    if (rules) {
        setenv("LD_PRELOAD", shim, 1);
        setenv("PCD_FAULT", rules, 1);
        snprintf(asan, sizeof asan, "%s%sverify_asan_link_order=0", saved, saved[0] ? ":" : "");
        setenv("ASAN_OPTIONS", asan, 1);
    }
    e2e_start(d);
    unsetenv("LD_PRELOAD");
    unsetenv("PCD_FAULT");
    if (was)
        setenv("ASAN_OPTIONS", saved, 1);
    else
        unsetenv("ASAN_OPTIONS");
}

static uint32_t pack_label(pcc_client *c, uint64_t i)
{
    double x[DIM];
    int y;
    e2e_example(i, 7, false, x, &y);
    uint32_t id;
    msgpack_pack_int(e2e_request_x(c, "label", 3, "m", x, &id), y);
    return id;
}

/* Streams windows of pipelined labels for `seconds`, counting what was
 * acknowledged, refused (code 11 only) and lost with a closed connection. */
static void stream(e2e *d, double seconds, tally *t)
{
    pcc_client *c = e2e_connect(d->sock);
    char err[256];
    double end = e2e_now() + seconds;
    while (e2e_now() < end) {
        for (int k = 0; k < WINDOW; k++)
            pack_label(c, t->sent + (uint64_t)k);
        t->sent += WINDOW;
        bool closed = pcc_flush(c, err, sizeof err) != 0;
        for (int k = 0; k < WINDOW && !closed; k++) {
            uint32_t id;
            const msgpack_object *e, *r;
            if (pcc_read(c, &id, &e, &r, -1, err, sizeof err) != 0) {
                closed = true;
                break;
            }
            if (!e) {
                t->acked++;
                t->resumed += t->refused + t->closed > 0;
                continue;
            }
            ck_assert_msg(pcc_error_code(e) == 11, "a label refused with code %lld",
                          (long long)pcc_error_code(e));
            t->refused++;
        }
        if (closed) { /* the daemon closes a connection whose writes it could not keep */
            t->closed++;
            pcc_close(c);
            c = e2e_connect(d->sock);
            continue;
        }
        if (t->refused && !t->read_while_failed) {
            double probe[DIM] = {1, 0, 0, 0, 0, 0};
            ck_assert(isfinite(e2e_score(c, "m", DIM, probe)));
            e2e_info_u64(c, "m", "examples");
            t->read_while_failed = true;
        }
    }
    pcc_close(c);
}

/* The common run: a create, labels streamed under the fault, kill -9, a
 * restart without it: every acknowledged label is there. */
static tally run(const char *extra, const char *rules, double seconds)
{
    e2e d;
    e2e_init(&d, extra);
    start_with(&d, rules);
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "m", "pa", DIM, true);
    pcc_close(c);
    tally t = {0};
    stream(&d, seconds, &t);
    ck_assert_msg(e2e_log_has(&d, "pcd-fault:"), "the fault was never injected");
    e2e_kill9(&d);
    start_with(&d, NULL);
    c = e2e_connect(d.sock);
    uint64_t have = e2e_info_u64(c, "m", "examples");
    pcc_close(c);
    fprintf(stderr, "%s: %llu labels sent, %llu acknowledged, %llu refused (code 11), %llu lost "
                    "with a closed connection; %llu after the restart\n",
            rules, (unsigned long long)t.sent, (unsigned long long)t.acked,
            (unsigned long long)t.refused, (unsigned long long)t.closed, (unsigned long long)have);
    ck_assert_msg(have >= t.acked, "%llu labels acknowledged, %llu after the restart",
                  (unsigned long long)t.acked, (unsigned long long)have);
    ck_assert(have <= t.sent);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
    return t;
}

/* The 20th to 22nd fdatasync of a segment fail, and lose what they did not
 * sync: a journal that acknowledged on them would come back without those
 * labels.  Writes are refused until the retry (once a second) has written
 * the unsynced records into a fresh segment and synced it. */
START_TEST(a_failed_fdatasync_is_never_acknowledged)
{
    tally t = run("journal: {fsync: always}\nsnapshot: {interval: 0}\n",
                  "op=fdatasync,match=.pcj,nth=20,count=3,lose=1", 4.0);
    ck_assert_msg(t.refused + t.closed > 0, "no write was refused after the failed fdatasync");
    ck_assert_msg(t.read_while_failed, "no read was tried while writes were refused");
    ck_assert_msg(t.resumed > 0, "writes did not resume after the failures");
}
END_TEST

/* everysec: the answers do not wait for the sync, but a failed one still
 * fails the journal until the retry.  The pages are kept here: under
 * everysec a failed sync that loses them loses the last second's writes, as
 * docs/persistence.md says. */
START_TEST(a_failed_fdatasync_under_everysec_loses_nothing_acknowledged)
{
    tally t = run("journal: {fsync: everysec}\nsnapshot: {interval: 0}\n",
                  "op=fdatasync,match=.pcj,nth=2,count=2", 4.0);
    ck_assert(t.refused + t.closed > 0);
    ck_assert(t.resumed > 0);
}
END_TEST

START_TEST(a_full_disk_at_a_journal_write_is_refused_and_recovered)
{
    tally t = run("journal: {fsync: always}\nsnapshot: {interval: 0}\n",
                  "op=write,errno=ENOSPC,match=.pcj,nth=200,count=2", 4.0);
    ck_assert(t.refused + t.closed > 0);
    ck_assert_msg(t.resumed > 0, "writes did not resume after the failures");
}
END_TEST

/* Snapshots that cannot be renamed (then, from 1.5 s, not even synced: the
 * counters are per process, and each snapshot is a new child, so every call
 * fails): the daemon goes on, nothing
 * acknowledged depends on them, and the journal they would have let it
 * prune stays (small segments: several would go). */
START_TEST(failed_snapshots_keep_the_journal)
{
    tally t = run("journal: {fsync: always, segment_bytes: 64KiB}\nsnapshot: {interval: 1}\n",
                  "op=rename,match=.snap,count=0;op=fsync,match=.snap.tmp,count=0,after_ms=1500",
                  3.0);
    ck_assert_uint_eq(t.refused + t.closed, 0); /* the journal never failed */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_fsync");
    TU_TCASE(s, "fsync", 120, a_failed_fdatasync_is_never_acknowledged,
        a_failed_fdatasync_under_everysec_loses_nothing_acknowledged,
        a_full_disk_at_a_journal_write_is_refused_and_recovered, failed_snapshots_keep_the_journal);
    return tu_run(s);
}
