/* fuzz_snapshot.c - loading a model from disk: daemon/store/snapshot.c's reader,
 * the registry's payload (pcd_model_deserialize) and lib's pc_model_decode.
 *
 * The first byte says at which layer the rest starts, so that mutations
 * reach every layer (a file's CRC would otherwise stop almost every
 * mutation of the model bytes at the first check):
 *   0  a whole snapshot file, read as restore does (pcd_snapshot_read_accepted
 *      with pcd_model_deserialize as the acceptor), and its head alone as a
 *      start with models at rest reads it (pcd_snapshot_peek: never a crash,
 *      and it agrees with the whole file when both read);
 *   1  the file's payload (the msgpack map): the harness writes the header
 *      and its CRC, then as 0;
 *   2  the registry payload (u64 length, model bytes, feature names);
 *   3  the model bytes alone (pc_model_decode).
 * The file is named after the name and generation its payload claims, so a
 * real snapshot as a seed is read as restore reads it.
 *
 * Asserted for every model that loads: its encoding loads and encodes to
 * the same bytes (a fixed point; the bytes it came from when they were
 * written by the encoder, as every seed was); its payload re-serialises to a fixed point (the names table
 * has no order of its own); it predicts, learns one example, and the learned
 * model encodes and decodes back to the same bytes.  Then the decode is run
 * again with one of its allocations failing: an out-of-memory error, never a
 * crash or a leak.  Allocations are under fuzz.h's limit (a 2^28-weight
 * model described in a few bytes is refused as out of memory). */
#include <msgpack.h>
#include <string.h>
#include <zlib.h>

#include "daemon/base/log.h"
#include "daemon/model/registry.h"
#include "daemon/store/snapshot.h"
#include "lib/bytes.h"
#include "lib/rule.h"
#include "tests/fuzz/fuzz.h"

#define LIMIT ((size_t)32 << 20) /* bytes live: no legitimate snapshot of a few KiB needs more */

/* The name and generation a payload claims, when it claims usable ones. */
static void claimed(const uint8_t *p, size_t n, char *name, uint64_t *gen)
{
    snprintf(name, PCD_SNAP_NAME_MAX + 1, "m");
    *gen = 1;
    pcp_limits lim;
    pcp_limits_default(&lim);
    lim.max_message = n < PCP_MIN_MESSAGE ? PCP_MIN_MESSAGE : n;
    pcp_scan_state st = {0};
    pcp_error err;
    size_t len;
    if (pcp_scan(&st, p, n, &lim, &len, &err) != 1) /* bounds what msgpack-c allocates */
        return;
    msgpack_zone z;
    if (!msgpack_zone_init(&z, 1024))
        return;
    msgpack_object o;
    if (pcp_unpack(p, len, &z, &o, &err) == PCP_OK && o.type == MSGPACK_OBJECT_MAP) {
        for (uint32_t i = 0; i < o.via.map.size; i++) {
            const msgpack_object *k = &o.via.map.ptr[i].key, *v = &o.via.map.ptr[i].val;
            if (k->type != MSGPACK_OBJECT_STR)
                continue;
            if (k->via.str.size == 4 && !memcmp(k->via.str.ptr, "name", 4) &&
                v->type == MSGPACK_OBJECT_STR && v->via.str.size <= PCD_SNAP_NAME_MAX) {
                memcpy(name, v->via.str.ptr, v->via.str.size);
                name[v->via.str.size] = 0;
                if (!pcd_snap_name_ok(name))
                    snprintf(name, PCD_SNAP_NAME_MAX + 1, "m");
            } else if (k->via.str.size == 10 && !memcmp(k->via.str.ptr, "generation", 10) &&
                       v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 >= 1) {
                *gen = v->via.u64;
            }
        }
    }
    msgpack_zone_destroy(&z);
}

static int accept_model(void *ud, const uint8_t *buf, size_t len, uint64_t generation, char *why,
                        size_t whylen)
{
    (void)generation;
    return pcd_model_deserialize(ud, buf, len, why, whylen);
}

/* Layers 0 and 1: a file in the scratch directory, read as restore does.
 * Returns the registry payload (malloc'd) or NULL. */
static uint8_t *read_file(const uint8_t *data, size_t size, bool add_header, size_t *len,
                          pcd_model *e)
{
    const char *dir = fz_tmpdir();
    fz_clear_dir(dir);
    uint8_t *file = malloc(size + PCD_SNAP_HEADER_LEN);
    if (!file)
        return NULL;
    size_t n = size;
    if (add_header) {
        memcpy(file, PCD_SNAP_MAGIC, PCD_SNAP_MAGIC_LEN);
        pc_put_u32(file + 8, PCD_SNAP_VERSION);
        pc_put_u64(file + 12, size);
        pc_put_u32(file + 20, (uint32_t)crc32(0, data, (uInt)size));
        memcpy(file + PCD_SNAP_HEADER_LEN, data, size);
        n += PCD_SNAP_HEADER_LEN;
    } else {
        memcpy(file, data, size);
    }
    char name[PCD_SNAP_NAME_MAX + 1], fname[PCD_SNAP_NAME_MAX + 40];
    uint64_t gen;
    claimed(file + (n > PCD_SNAP_HEADER_LEN ? PCD_SNAP_HEADER_LEN : n),
            n > PCD_SNAP_HEADER_LEN ? n - PCD_SNAP_HEADER_LEN : 0, name, &gen);
    snprintf(fname, sizeof fname, "%s.%llu.snap", name, (unsigned long long)gen);
    fz_write_file(dir, fname, file, n);
    free(file);
    uint8_t *payload = NULL;
    pcd_snap_info info = {0}, head = {0};
    char err[400];
    /* the head alone, as a start with models at rest reads it: never a
     * crash, and what it says is what the whole file says when both read */
    bool peeked = pcd_snapshot_peek(dir, name, gen, &head, err, sizeof err) == 0;
    if (peeked)
        FZ_ASSERT(head.name && !strcmp(head.name, name) && head.generation == gen &&
                      head.file_bytes == n, "peeked '%s' generation %llu from %s", head.name,
                  (unsigned long long)head.generation, fname);
    if (pcd_snapshot_read_accepted(dir, name, accept_model, e, &payload, len, &info, NULL, NULL, err,
                                   sizeof err) != 0) {
        pcd_snap_info_free(&head);
        return NULL;
    }
    FZ_ASSERT(e->model, "read, but no model");
    FZ_ASSERT(info.name && !strcmp(info.name, name) && info.generation == gen,
              "read '%s' generation %llu from %s", info.name, (unsigned long long)info.generation, fname);
    FZ_ASSERT(!peeked || (head.journal_lsn == info.journal_lsn &&
                          head.written_at == info.written_at && head.file_bytes == info.file_bytes &&
                          head.stream_ms == info.stream_ms && head.stream_seq == info.stream_seq &&
                          !strcmp(head.daemon_version, info.daemon_version)),
              "the head of %s says otherwise than the whole file", fname);
    pcd_snap_info_free(&head);
    pcd_snap_info_free(&info);
    return payload;
}

/* The model bytes inside a registry payload. */
static void model_span(const uint8_t *payload, size_t len, const uint8_t **m, size_t *mlen)
{
    FZ_ASSERT(len >= 8 && pc_get_u64(payload) <= len - 8, "a payload that loaded is malformed");
    *m = payload + 8;
    *mlen = (size_t)pc_get_u64(payload);
}

static void assert_encodes_to(const pc_model *m, const uint8_t *bytes, size_t len, const char *when)
{
    uint8_t *again;
    size_t alen;
    pc_error err;
    pc_status st = pc_model_encode(m, &again, &alen, &err);
    if (st == PC_ENOMEM && fz_refused())
        return;
    FZ_ASSERT(st == PC_OK, "%s: encode: %s", when, err.msg);
    FZ_ASSERT(alen == len && !memcmp(again, bytes, len), "%s: encodes to other bytes (%zu, %zu)",
              when, alen, len);
    free(again);
}

/* Predicts, learns one example, and the result survives encode/decode. */
static void use(pc_model *m)
{
    const pc_model_config *c = pc_model_config_of(m);
    pc_svec x;
    pc_svec_init(&x);
    pc_error err;
    if (pc_svec_push(&x, 0, 1.0) != PC_OK || pc_svec_push(&x, c->dim - 1, -0.5) != PC_OK ||
        pc_svec_normalize(&x, c->dim, &err) != PC_OK) {
        FZ_ASSERT(fz_refused(), "an example of dimension %u", c->dim);
        pc_svec_free(&x);
        return;
    }
    size_t k = pc_model_class_count(m);
    double *scores = malloc((k ? k : 1) * sizeof *scores);
    if (scores) {
        pc_prediction p;
        pc_model_predict(m, &x, &p, scores);
        free(scores);
    }
    pc_label y = {.y = 1};
    if (c->multiclass) {
        y.cls = k ? pc_model_class_name(m, 0) : "new";
        y.cls_len = strlen(y.cls);
    }
    pc_outcome o;
    pc_status st = pc_model_label(m, &x, &y, &o, &err);
    pc_svec_free(&x);
    bool closed_and_empty = c->multiclass && !k && !c->open_classes;
    FZ_ASSERT(st == PC_OK || closed_and_empty || (st == PC_ENOMEM && fz_refused()),
              "a loaded model cannot learn: %s", err.msg);
    uint8_t *bytes;
    size_t len;
    if (pc_model_encode(m, &bytes, &len, &err) != PC_OK) {
        FZ_ASSERT(fz_refused(), "a model that learned does not encode: %s", err.msg);
        return;
    }
    pc_model *back;
    st = pc_model_decode(bytes, len, &back, &err);
    /* A rule whose decoder checks its invariants (PC_RULE_CHECKED_DECODE)
     * refuses a state no update could have left, such as a sum of squares
     * that is not its vector's (regressions/snapshot/aromma-...): a model
     * of it that loaded and learned saves a snapshot that loads.  Left open
     * for the other rules (docs/fuzzing.md): learning one example can take
     * a state their decoders accepted (a running norm that is not the
     * vector's, extreme parameters) to NaN or infinity, which the decoder
     * then refuses as not finite. */
    bool checked = c->rule->flags & PC_RULE_CHECKED_DECODE;
    FZ_ASSERT(st == PC_OK || (st == PC_ENOMEM && fz_refused()) ||
                  (!checked && st == PC_EFORMAT && strstr(err.msg, "not finite")),
              "a %s model that learned does not decode: %s", pc_rule_name(c->rule), err.msg);
    if (st == PC_OK) {
        assert_encodes_to(back, bytes, len, "after learning");
        pc_model_free(back);
    }
    free(bytes);
}

/* The decode again, counting its allocations, then once more with one of
 * them (chosen by the bytes) failing. */
static void decode_out_of_memory(const uint8_t *bytes, size_t len)
{
    pc_model *m;
    pc_error err;
    unsigned long before = fz_allocations();
    if (pc_model_decode(bytes, len, &m, &err) != PC_OK)
        return; /* refused by the limit this time */
    pc_model_free(m);
    unsigned long n = fz_allocations() - before;
    if (!n)
        return;
    unsigned long k = 1 + crc32(0, bytes, (uInt)len) % n;
    fz_fail_at(k);
    pc_status st = pc_model_decode(bytes, len, &m, &err);
    fz_fail_at(0);
    FZ_ASSERT(st == PC_OK || st == PC_ENOMEM, "allocation %lu failing: status %d (%s)", k, st, err.msg);
    if (st == PC_OK)
        pc_model_free(m);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pcd_log_set_level("error");
    fz_tmpdir();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned layer = data[0] % 4;
    data++, size--;
    fz_begin(LIMIT);
    pcd_model e = {0};
    uint8_t *payload = NULL;
    size_t plen = 0;
    const uint8_t *mbytes = NULL;
    size_t mlen = 0;
    char err[400];
    if (layer <= 1) {
        payload = read_file(data, size, layer == 1, &plen, &e);
    } else if (layer == 2) {
        if (pcd_model_deserialize(&e, data, size, err, sizeof err) == 0) {
            if ((payload = malloc(size ? size : 1))) {
                memcpy(payload, data, size);
                plen = size;
            } else { /* out of memory: nothing to compare with */
                pcd_model_parts_free(&e);
            }
        }
    } else {
        pc_error perr;
        if (pc_model_decode(data, size, &e.model, &perr) != PC_OK)
            e.model = NULL;
        mbytes = data;
        mlen = size;
        pcd_names_init(&e.names);
    }
    if (e.model) {
        if (payload) {
            model_span(payload, plen, &mbytes, &mlen);
            /* the names table: serialise, load, serialise again gives the same */
            uint8_t *s1, *s2;
            size_t n1, n2;
            if (pcd_model_serialize(&e, &s1, &n1, err, sizeof err) == 0) {
                pcd_model f = {0};
                if (pcd_model_deserialize(&f, s1, n1, err, sizeof err) == 0) {
                    if (pcd_model_serialize(&f, &s2, &n2, err, sizeof err) == 0) {
                        FZ_ASSERT(n1 == n2 && !memcmp(s1, s2, n1), "the payload is no fixed point");
                        free(s2);
                    }
                    pcd_model_parts_free(&f);
                } else {
                    FZ_ASSERT(fz_refused(), "a serialised payload does not load: %s", err);
                }
                free(s1);
            } else {
                FZ_ASSERT(fz_refused(), "a loaded model does not serialise: %s", err);
            }
        }
        /* The bytes a model loads from, encoded again, are a fixed point: they
         * load and encode to themselves.  (Not always the bytes it came from:
         * omm-naive rebuilds state it derives from its parameters, so bytes
         * whose stored state disagrees with a changed parameter come back
         * rebuilt; tests/fuzz/regressions/snapshot/omm-naive-derived-state.) */
        uint8_t *canon;
        size_t clen;
        pc_error perr;
        if (pc_model_encode(e.model, &canon, &clen, &perr) == PC_OK) {
            pc_model *again;
            pc_status st = pc_model_decode(canon, clen, &again, &perr);
            FZ_ASSERT(st == PC_OK || (st == PC_ENOMEM && fz_refused()),
                      "a loaded model's encoding does not load: %s", perr.msg);
            if (st == PC_OK) {
                assert_encodes_to(again, canon, clen, "encoded, loaded, encoded");
                pc_model_free(again);
            }
            free(canon);
        } else {
            FZ_ASSERT(fz_refused(), "a loaded model does not encode: %s", perr.msg);
        }
        use(e.model);
        decode_out_of_memory(mbytes, mlen);
        pcd_model_parts_free(&e);
    }
    free(payload);
    fz_end();
    return 0;
}
