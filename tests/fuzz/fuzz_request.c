/* fuzz_request.c - a client's byte stream, processed as daemon/net/serve.c's
 * process() does: at each message, the direct path (proto/direct.c,
 * pcd_dispatch_direct) first, else proto's resumable scanner, msgpack-c and
 * pcd_dispatch with the method handlers, on a pcd_server set up in memory.
 *
 * Asserted on every message of the stream:
 *  - proto: whatever the direct path accepts, the general path decodes to
 *    the same message (tests/direct_check.c, the check test_direct runs),
 *    under the default limits and under tight ones;
 *  - the scanner: fed the message in two pieces it frames what it frames in
 *    one call, reading O(n) bytes;
 *  - the daemon: a second server that never takes the direct path gets the
 *    same messages, and wherever the first server's direct path took one,
 *    both answer with the same bytes (so both paths leave the models in the
 *    same state, which the following messages then see);
 *  - every answer is one whole MessagePack object;
 *  - after the stream, every model it left saves a snapshot payload that
 *    loads (whatever a client sends: values, parameters, bias values, the
 *    order of labels; a NaN or an infinity in a model's state would make
 *    the daemon write a snapshot it refuses at restart).
 * `save` is skipped (it forks a child to write snapshots).  Allocations are
 * under the memory limit of fuzz.h, so `create` with a 2^28-weight spec
 * meets the out-of-memory path. */
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/exec/dispatch.h"
#include "tests/direct_check.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/server.h"

/* The general path of process() for the framed message raw[0..len):
 * false when msgpack-c refuses it (process() closes the connection). */
static bool general(pcd_server *srv, pcd_client *cl, const uint8_t *raw, size_t len,
                    msgpack_packer *pk)
{
    msgpack_object obj;
    size_t pos = 0;
    msgpack_unpack_return ur = msgpack_unpack((const char *)raw, len, &pos, &srv->loop.zone, &obj);
    bool ok = ur == MSGPACK_UNPACK_SUCCESS && pos == len;
    if (ok) {
        pcp_message m;
        pcp_error err;
        bool save = pcp_message_parse(&obj, &m, &err) == PCP_OK && m.method->id == PCP_M_SAVE;
        if (!save)
            pcd_dispatch(srv, cl, raw, len, &obj, pk);
    }
    msgpack_zone_clear(&srv->loop.zone);
    return ok;
}

/* pcp_scan fed buf[0..n) in one call and in two (split bytes first) agree. */
static int scan_checked(const uint8_t *buf, size_t n, const pcp_limits *lim, size_t *len)
{
    pcp_scan_state st = {0};
    pcp_error err;
    int r = pcp_scan(&st, buf, n, lim, len, &err);
    FZ_ASSERT(r != 1 || (*len >= 1 && *len <= n), "framed %zu of %zu bytes", *len, n);
    if (n < 2)
        return r;
    size_t split = 1 + buf[0] % (n - 1), len2 = 0;
    pcp_scan_state st2 = {0};
    pcp_error err2;
    int r2 = pcp_scan(&st2, buf, split, lim, &len2, &err2);
    if (r2 == 0)
        r2 = pcp_scan(&st2, buf, n, lim, &len2, &err2);
    FZ_ASSERT(r2 == r && (r != 1 || len2 == *len),
              "one call: %d (%zu bytes); split at %zu: %d (%zu bytes)", r, *len, split, r2, len2);
    FZ_ASSERT(st2.examined <= n + 10, "examined %llu bytes of %zu", (unsigned long long)st2.examined, n);
    return r;
}

/* Every answer is one whole object. */
static void check_answers(const msgpack_sbuffer *sb)
{
    size_t off = 0;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    while (off < sb->size) {
        msgpack_unpack_return r = msgpack_unpack_next(&u, sb->data, sb->size, &off);
        FZ_ASSERT(r == MSGPACK_UNPACK_SUCCESS, "answer at %zu does not unpack (%d)", off, (int)r);
        FZ_ASSERT(u.data.type == MSGPACK_OBJECT_ARRAY && u.data.via.array.size == 4,
                  "answer at %zu is not a response", off);
    }
    msgpack_unpacked_destroy(&u);
}

/* a: as process() does; b: the general path only.  Set up once, models
 * made and freed at every input (server.h). */
static pcd_server a, b;
/* The connection of each, as serve.c's: a listener granting admin, so that
 * no seed loses what it reaches, and `auth` checks the server's tokens
 * (a token that matches none takes the rights back to the listener's). */
static pcd_client cl_a, cl_b;

static void connect_client(pcd_client *cl)
{
    memset(cl, 0, sizeof *cl);
    cl->name = "fuzz";
    cl->rights = cl->listener_rights = PCP_R_ADMIN;
}

/* Every model of srv serialises to a payload that deserialises. */
static void models_save_and_load(pcd_server *srv)
{
    size_t n;
    pcd_model **list = pcd_registry_list(&srv->models, &n);
    if (!list) {
        FZ_ASSERT(fz_refused(), "listing the models");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t *buf;
        size_t len;
        char err[400];
        if (pcd_model_serialize(list[i], &buf, &len, err, sizeof err) != 0) {
            FZ_ASSERT(fz_refused(), "model '%s' does not serialise: %s", list[i]->name, err);
            continue;
        }
        pcd_model back = {0};
        if (pcd_model_deserialize(&back, buf, len, err, sizeof err) == 0)
            pcd_model_parts_free(&back);
        else
            FZ_ASSERT(fz_refused(), "model '%s' (%s) saves a snapshot that does not load: %s",
                      list[i]->name, pc_rule_name(pc_model_config_of(list[i]->model)->rule), err);
        free(buf);
    }
    free(list);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pcd_log_set_level("error");
    fz_tmpdir();
    fz_server_setup(&a);
    fz_server_setup(&b);
    return 0;
}

/* proto alone, without the memory limit (an allocation refused there would
 * make one path decline what the other read): agreement and framing at
 * every message of the stream. */
static void check_proto(const uint8_t *data, size_t size)
{
    pcp_limits lim, tight, dflt;
    pcp_limits_default(&dflt);
    lim = dflt;
    lim.max_batch = DC_ITEMS;
    tight = lim;
    tight.max_features = 6;
    tight.max_depth = 5;
    tight.max_message = 300;
    size_t off = 0, len;
    while (off < size) {
        dc_compare(data + off, size - off, &lim, "the stream at a message");
        dc_compare(data + off, size - off, &tight, "the stream at a message, tight limits");
        if (scan_checked(data + off, size - off, &dflt, &len) != 1)
            break;
        off += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_proto(data, size);

    fz_begin(FZ_MEM_LIMIT);
    fz_server_begin(&a);
    fz_server_begin(&b);
    connect_client(&cl_a);
    connect_client(&cl_b);
    msgpack_sbuffer out_a, out_b;
    msgpack_sbuffer_init(&out_a);
    msgpack_sbuffer_init(&out_b);
    msgpack_packer pk_a, pk_b;
    msgpack_packer_init(&pk_a, &out_a, msgpack_sbuffer_write);
    msgpack_packer_init(&pk_b, &out_b, msgpack_sbuffer_write);

    /* The clock (clock.c) starts at the same time at every input and moves
     * a second before each message, never between the two servers. */
    fz_clock_ms = FZ_CLOCK_START_MS;
    size_t off = 0;
    while (off < size) {
        fz_clock_ms += 1000;
        const uint8_t *p = data + off;
        size_t n = size - off, len, at_a = out_a.size, at_b = out_b.size;
        pcp_scan_state st = {0};
        pcp_error err;
        int r = pcp_scan(&st, p, n, &a.limits, &len, &err);
        pcp_direct d;
        size_t taken;
        if (pcp_direct_message(p, n, &a.limits, &d) && pcd_dispatch_direct(&a, &cl_a, &d, &pk_a, &taken)) {
            FZ_ASSERT(r == 1 && taken == len, "the direct path took %zu bytes, the scanner %d, %zu",
                      taken, r, len);
            FZ_ASSERT(general(&b, &cl_b, p, len, &pk_b), "the direct path took what msgpack-c refuses");
            /* Out of memory, one server may have answered with an error. */
            size_t na = out_a.size - at_a, nb = out_b.size - at_b;
            FZ_ASSERT(fz_refused() || (na == nb && (!na || !memcmp(out_a.data + at_a, out_b.data + at_b, na))),
                      "the answers of the two paths differ at offset %zu", off);
            off += len;
            continue;
        }
        if (r != 1)
            break; /* more bytes needed, or process() closes the connection */
        bool ok_a = general(&a, &cl_a, p, len, &pk_a), ok_b = general(&b, &cl_b, p, len, &pk_b);
        FZ_ASSERT(ok_a == ok_b, "msgpack-c changed its mind");
        if (!ok_a)
            break;
        off += len;
    }
    if (!fz_refused()) { /* else an answer may have been cut short, as in the daemon */
        check_answers(&out_a);
        check_answers(&out_b);
    }
    models_save_and_load(&a);
    msgpack_sbuffer_destroy(&out_a);
    msgpack_sbuffer_destroy(&out_b);
    fz_server_end(&a);
    fz_server_end(&b);
    fz_end();
    return 0;
}
