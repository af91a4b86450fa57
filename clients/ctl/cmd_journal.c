/* cmd_journal.c - `perceptronctl journal FILE`: the records of one journal
 * segment (docs/persistence.md), read with proto's reader, the daemon's own:
 * LSN, offset, size and the request as JSON.  Reads the file only: no daemon
 * is contacted, so it works on a stopped daemon's state directory.  A damaged
 * record ends the listing with its offset and the bytes after it (exit 4).
 * --json: {"file", "first_lsn", "records": [{"lsn", "offset", "bytes",
 * "message"}...], "damaged_at": offset or null}. */
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
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
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
    uint64_t first;
    char why[200];
    if (pcp_journal_get_header(p, size, &first, why, sizeof why) != 0) {
        ctl_errorf(ctx, "%s: %s", path, why);
        if (p)
            munmap((void *)p, size);
        return CTL_EXIT_DATA;
    }
    if (ctx->json)
        printf("{\"file\": ");
    if (ctx->json) {
        ctl_json_string(stdout, path, strlen(path));
        printf(", \"first_lsn\": %llu, \"records\": [", (unsigned long long)first);
    } else {
        printf("%s: journal segment from LSN %llu\n%-12s %-12s %-8s %s\n", path,
               (unsigned long long)first, "LSN", "OFFSET", "BYTES", "MESSAGE");
    }
    pc_reader r = {.p = p + PCP_JOURNAL_HEADER_LEN, .left = size - PCP_JOURNAL_HEADER_LEN};
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    uint64_t n = 0;
    pcp_jrec k;
    for (;;) {
        size_t off = size - r.left;
        uint64_t lsn;
        const uint8_t *msg;
        uint32_t len;
        if ((k = pcp_journal_get_record(&r, &lsn, &msg, &len)) != PCP_JREC_OK)
            break;
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
        n++;
    }
    msgpack_zone_destroy(&zone);
    size_t at = size - r.left;
    if (ctx->json) {
        printf("%s], \"damaged_at\": ", n ? "\n" : "");
        if (k == PCP_JREC_END)
            printf("null}\n");
        else
            printf("%zu}\n", at);
    } else if (k == PCP_JREC_END) {
        printf("%llu records, the segment ends cleanly\n", (unsigned long long)n);
    } else {
        printf("%llu records, then a %s record at offset %zu (%zu bytes not shown)\n",
               (unsigned long long)n, k == PCP_JREC_TORN ? "torn (cut short)" : "corrupt", at,
               size - at);
    }
    if (p)
        munmap((void *)p, size);
    return k == PCP_JREC_END ? CTL_EXIT_OK : CTL_EXIT_DATA;
}
