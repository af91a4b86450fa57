/* cmd_journal.c - `perceptronctl journal FILE [--check]`: the records of
 * one journal segment (docs/persistence.md), read with proto's reader, the
 * daemon's own: LSN, offset, size and the request as JSON.  Reads the file
 * only: no daemon is contacted, so it works on a stopped daemon's state
 * directory.  A damaged record ends the listing with the reader's verdict,
 * the daemon's own: a torn tail (what a crash leaves) or corruption, its
 * offset and LSN, and the intact records after it (exit 4).  --check prints
 * the verdict alone.  --json: {"file", "first_lsn", "version", "records":
 * [{"lsn", "offset", "bytes", "message"}...] (omitted with --check),
 * "damage": null, "torn" or "corrupt", "damaged_at": offset or null,
 * "damaged_lsn", "intact_after"}. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clients/ctl/ctl.h"
#include "proto/journal.h"
#include "proto/proto.h"

/* The record's message as a msgpack object, bounded by proto's scanner
 * before msgpack-c allocates from its headers. */
static bool decode(const uint8_t *p, size_t n, msgpack_zone *zone, msgpack_object *obj)
{
    pcp_limits lim = {.max_message = n, .max_features = UINT32_MAX, .max_depth = 32,
                      .max_batch = UINT32_MAX};
    pcp_scan_state st = {0};
    pcp_error err;
    size_t len, pos = 0;
    return pcp_scan(&st, p, n, &lim, &len, &err) == 1 && len == n &&
           msgpack_unpack((const char *)p, n, &pos, zone, obj) == MSGPACK_UNPACK_SUCCESS;
}

int ctl_cmd_journal(ctl_ctx *ctx, int argc, char **argv)
{
    bool check = false;
    static const struct option longopts[] = {
        {"check", no_argument, NULL, 'c'}, CTL_COMMON_LONGOPTS, {0}};
    int rc = ctl_parse(ctx, argc, argv, "c", longopts, ctl_opt_flag, &check);
    if (rc != CTL_CONTINUE)
        return rc;
    const char *path = ctx->args[0];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        ctl_errorf(ctx, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return CTL_EXIT_DATA;
    }
    size_t size = (size_t)sb.st_size;
    const uint8_t *p = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (p == MAP_FAILED) {
        ctl_errorf(ctx, "%s: %s", path, strerror(errno));
        return CTL_EXIT_DATA;
    }
    pcp_journal_reader r;
    char why[200];
    int head = pcp_journal_reader_init(&r, p, size, why, sizeof why);
    if (head < 0) {
        ctl_errorf(ctx, "%s: %s", path, why);
        if (p)
            munmap((void *)p, size);
        return CTL_EXIT_DATA;
    }
    if (ctx->json)
        printf("{\"file\": ");
    if (ctx->json) {
        ctl_json_string(stdout, path, strlen(path));
        if (head > 0)
            printf(", \"first_lsn\": null, \"version\": null%s", check ? "" : ", \"records\": [");
        else
            printf(", \"first_lsn\": %llu, \"version\": %u%s", (unsigned long long)r.first_lsn,
                   r.version, check ? "" : ", \"records\": [");
    } else if (head > 0) {
        printf("%s: a journal segment whose header never reached the disk (a crash while it was "
               "created)\n", path);
    } else {
        printf("%s: journal segment from LSN %llu (format %u)\n", path,
               (unsigned long long)r.first_lsn, r.version);
        if (!check)
            printf("%-12s %-12s %-8s %s\n", "LSN", "OFFSET", "BYTES", "MESSAGE");
    }
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    uint64_t n = 0;
    pcp_jrec k;
    for (;;) {
        size_t off = r.at;
        uint64_t lsn;
        const uint8_t *msg;
        uint32_t len;
        if ((k = pcp_journal_next(&r, &lsn, &msg, &len)) != PCP_JREC_OK)
            break;
        n++;
        if (check)
            continue;
        msgpack_object obj;
        bool ok = decode(msg, len, &zone, &obj);
        if (ctx->json) {
            printf("%s\n  {\"lsn\": %llu, \"offset\": %zu, \"bytes\": %u, \"message\": ",
                   n ? "," : "", (unsigned long long)lsn, off, len);
            if (ok)
                ctl_json_write(stdout, &obj, -1);
            else
                printf("null");
            printf("}");
        } else {
            printf("%-12llu %-12zu %-8u ", (unsigned long long)lsn, off, len);
            if (ok)
                ctl_json_write(stdout, &obj, -1);
            else
                printf("(not a MessagePack message)");
            printf("\n");
        }
        msgpack_zone_clear(&zone);
    }
    msgpack_zone_destroy(&zone);
    size_t at = r.at;
    size_t intact = k == PCP_JREC_END ? 0 : pcp_journal_intact_after(&r, NULL, NULL);
    const char *kind = k == PCP_JREC_END ? NULL : k == PCP_JREC_TORN ? "torn" : "corrupt";
    if (ctx->json) {
        if (!check)
            printf("%s]", n ? "\n" : "");
        printf(", \"damage\": ");
        if (kind && head > 0) /* no header: the LSN is unknown */
            printf("\"%s\", \"damaged_at\": 0, \"damaged_lsn\": null, \"intact_after\": %zu}\n",
                   kind, intact);
        else if (kind)
            printf("\"%s\", \"damaged_at\": %zu, \"damaged_lsn\": %llu, \"intact_after\": %zu}\n",
                   kind, at, (unsigned long long)r.next_lsn, intact);
        else
            printf("null, \"damaged_at\": null, \"damaged_lsn\": null, \"intact_after\": 0}\n");
    } else if (!kind) {
        printf("%llu records, the segment ends cleanly\n", (unsigned long long)n);
    } else {
        char lsn[40] = "";
        if (head == 0)
            snprintf(lsn, sizeof lsn, ", LSN %llu", (unsigned long long)r.next_lsn);
        printf("%llu records, then %s at offset %zu%s: %zu bytes, %zu intact records "
               "in them\n%s\n",
               (unsigned long long)n,
               k == PCP_JREC_TORN ? "a torn tail (what a crash mid-append leaves)" : "corruption",
               at, lsn, size - at, intact,
               k == PCP_JREC_TORN
                   ? "The daemon cuts a torn tail of the last segment at start, keeping the bytes "
                     "in FILE.cut-OFFSET."
                   : "The daemon refuses to start on it; with journal.on_corrupt: truncate it "
                     "cuts the journal there, keeping the bytes in FILE.cut-OFFSET.");
    }
    if (p)
        munmap((void *)p, size);
    return k == PCP_JREC_END ? CTL_EXIT_OK : CTL_EXIT_DATA;
}
