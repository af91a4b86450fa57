/* fuzz_journal.c - journal records and replay: proto/journal.c's reader
 * over arbitrary bytes, and daemon/journal/journal.c opening a directory that holds
 * one segment made of them, each record replayed through the daemon's
 * dispatch as daemon/exec/durability.c replays it.
 *
 * The first byte: bit 0 chooses how the rest becomes a segment (0: the rest
 * is the segment file as it is; 1: the rest is a list of records, u32 LE
 * length then the message, written as a valid segment from LSN 1, so that
 * mutations reach replay past the checksums), bit 1 sets on_corrupt:
 * truncate.  The file is named after its header's first LSN.
 *
 * Asserted: every record the reader accepts re-encodes to the bytes it was
 * read from (length, LSN and checksum verify), and a refusal leaves the
 * reader where the record starts; every record the daemon's journal applies
 * is one of those, in increasing LSN order; a journal that opens takes an
 * append which a reopen replays with the next LSN. */
#define _GNU_SOURCE /* memmem */
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/base/statedir.h"
#include "daemon/exec/replay.h"
#include "daemon/journal/journal.h"
#include "proto/journal.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/server.h"

static struct event_base *base;
static pcd_server server; /* set up once, models made and freed at every input */

typedef struct replay_ctx {
    pcd_server *srv;
    const uint8_t *seg;  /* the segment's bytes */
    size_t size;
    uint64_t last_lsn;
    uint64_t applied;
} replay_ctx;

/* Whether p[at..n) meets an all-zero aligned 512-byte sector (clipped to
 * n), or starts with zeros to the end of its sector: the reader's signs of
 * a write a crash left undone. */
static bool unwritten_sector(const uint8_t *p, size_t n, size_t at)
{
    size_t end = (at / 512 + 1) * 512 < n ? (at / 512 + 1) * 512 : n, z = at;
    while (z < end && !p[z])
        z++;
    if (at < end && z == end)
        return true;
    for (size_t s = at / 512 * 512; s < n; s += 512) {
        size_t e = s + 512 < n ? s + 512 : n, i = s;
        while (i < e && !p[i])
            i++;
        if (i == e)
            return true;
    }
    return false;
}

/* The record lsn/msg/len as the writer lays it out. */
static void encode_record(pc_writer *w, uint64_t lsn, const uint8_t *msg, size_t len)
{
    memset(w, 0, sizeof *w);
    pcp_journal_put_record(w, lsn, msg, (uint32_t)len);
}

/* durability.c's apply: through pcd_replay (framed by proto's scanner,
 * decoded, dispatched), `save` left out; plus the checks above. */
static int apply(void *ud, uint64_t lsn, const uint8_t *msg, size_t len)
{
    replay_ctx *c = ud;
    FZ_ASSERT(lsn > c->last_lsn, "LSN %llu replayed after %llu", (unsigned long long)lsn,
              (unsigned long long)c->last_lsn);
    c->last_lsn = lsn;
    c->applied++;
    /* (a segment of format 1 holds its records in the older layout) */
    if (c->seg && c->size >= 12 && pc_get_u32(c->seg + 8) == PCP_JOURNAL_VERSION) {
        pc_writer w;
        encode_record(&w, lsn, msg, len);
        FZ_ASSERT(w.failed || memmem(c->seg, c->size, w.buf, w.len),
                  "replayed record %llu is not in the segment", (unsigned long long)lsn);
        free(w.buf);
    }
    return pcd_replay(c->srv, msg, len, NULL, fz_is_save, NULL) < 0 ? -1 : 0;
}

/* proto's reader alone over the segment's bytes; returns the records read. */
static uint64_t check_reader(const uint8_t *p, size_t n)
{
    pcp_journal_reader r;
    char why[200];
    int head = pcp_journal_reader_init(&r, p, n, why, sizeof why);
    if (head > 0) { /* a header that never reached the disk: torn at 0 */
        uint64_t lsn;
        const uint8_t *msg;
        uint32_t len;
        FZ_ASSERT(pcp_journal_next(&r, &lsn, &msg, &len) == PCP_JREC_TORN && r.at == 0,
                  "a headless segment read as something other than torn at 0");
        return 0;
    }
    if (head < 0) {
        FZ_ASSERT(why[0], "a header refused without a reason");
        return 0;
    }
    uint64_t ok = 0;
    for (;;) {
        size_t at = r.at;
        uint64_t next = r.next_lsn;
        uint64_t lsn;
        const uint8_t *msg;
        uint32_t len;
        pcp_jrec k = pcp_journal_next(&r, &lsn, &msg, &len);
        if (k != PCP_JREC_OK) {
            FZ_ASSERT(r.at == at && r.next_lsn == next, "a refused record moved the reader");
            FZ_ASSERT(k != PCP_JREC_END || at == n, "END with %zu bytes left", n - at);
            /* A torn tail is never followed by a record that verifies in a
             * version 2 segment (only zeros or the cut record itself). */
            FZ_ASSERT(k != PCP_JREC_TORN || r.version == 1 ||
                      pcp_journal_intact_after(&r, NULL, NULL) == 0 || unwritten_sector(p, n, at),
                      "a torn tail at %zu with intact records after it", at);
            return ok;
        }
        FZ_ASSERT(lsn == next, "record %llu read where %llu was due", (unsigned long long)lsn,
                  (unsigned long long)next);
        if (r.version == PCP_JOURNAL_VERSION) {
            pc_writer w;
            encode_record(&w, lsn, msg, len);
            FZ_ASSERT(w.failed || (w.len == r.at - at && !memcmp(w.buf, p + at, w.len)),
                      "record %llu does not re-encode to its bytes", (unsigned long long)lsn);
            free(w.buf);
        }
        ok++;
    }
}

/* A segment from LSN 1 holding the records listed in p (u32 length, bytes). */
static uint8_t *make_segment(const uint8_t *p, size_t n, size_t *size)
{
    pc_writer w = {0};
    pcp_journal_put_header(&w, 1);
    uint64_t lsn = 1;
    while (n >= 4) {
        uint32_t len = pc_get_u32(p);
        p += 4, n -= 4;
        if (len > n)
            len = (uint32_t)n;
        if (len == 0)
            continue;
        pcp_journal_put_record(&w, lsn++, p, len);
        p += len, n -= len;
    }
    if (w.failed) {
        free(w.buf);
        return NULL;
    }
    *size = w.len;
    return w.buf;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pcd_log_set_level("error");
    fz_tmpdir();
    base = event_base_new();
    FZ_ASSERT(base, "event_base_new");
    fz_server_setup(&server);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++, size--;
    fz_begin(FZ_MEM_LIMIT);
    uint8_t *made = NULL;
    const uint8_t *seg = data;
    if (mode & 1) {
        if (!(made = make_segment(data, size, &size))) {
            fz_end();
            return 0;
        }
        seg = made;
    }
    uint64_t readable = check_reader(seg, size);

    /* The daemon's journal over a directory holding this one segment. */
    char dir[600], name[40];
    snprintf(dir, sizeof dir, "%s/journal", fz_tmpdir());
    fz_clear_dir(dir);
    fz_clear_dir(fz_tmpdir());
    pcp_journal_reader hr;
    char why[200];
    uint64_t first = pcp_journal_reader_init(&hr, seg, size, why, sizeof why) == 0 ? hr.first_lsn : 1;
    if (first == 0)
        first = 1;
    FZ_ASSERT(pcd_state_dir_prepare(dir, why, sizeof why) == 0, "%s", why);
    snprintf(name, sizeof name, "%020llu.pcj", (unsigned long long)first);
    fz_write_file(dir, name, seg, size);

    fz_server_begin(&server);
    replay_ctx ctx = {.srv = &server, .seg = seg, .size = size};
    pcd_journal_options o = {
        .dir = dir,
        .fsync = PCD_FSYNC_NO,
        .segment_bytes = 1 << 20,
        .truncate_corrupt = mode & 2,
        .min_next_lsn = 1,
        .apply = apply,
        .ud = &ctx,
    };
    pcd_journal *j;
    char err[600];
    if (pcd_journal_open(&o, base, &j, err, sizeof err) == 0) {
        FZ_ASSERT(ctx.applied <= readable || fz_refused(), "%llu applied, %llu readable",
                  (unsigned long long)ctx.applied, (unsigned long long)readable);
        /* It takes an append, which a reopen replays last. */
        static const uint8_t ping[] = {0x93, 0x02, 0xa4, 'p', 'i', 'n', 'g', 0x90};
        uint64_t lsn = pcd_journal_append(j, ping, sizeof ping);
        bool written = lsn && pcd_journal_flush(j) == 0;
        FZ_ASSERT(written || fz_refused(), "a journal that opened refuses an append");
        FZ_ASSERT(pcd_journal_close(j) == 0 || fz_refused(), "close failed");
        if (written) {
            replay_ctx again = {.srv = &server};
            o.ud = &again;
            o.truncate_corrupt = true;
            if (pcd_journal_open(&o, base, &j, err, sizeof err) == 0) {
                FZ_ASSERT(again.last_lsn == lsn || fz_refused(), "reopened: last LSN %llu, appended %llu",
                          (unsigned long long)again.last_lsn, (unsigned long long)lsn);
                pcd_journal_close(j);
            } else {
                FZ_ASSERT(fz_refused(), "a journal that was appended to does not reopen: %s", err);
            }
        }
    } else {
        FZ_ASSERT(err[0], "a refusal without a reason");
    }
    fz_server_end(&server);
    free(made);
    fz_end();
    return 0;
}
