/* lifecycle.c - snapshots, rollback, export, import, copy (handlers.h).
 *
 * A model travels as the bytes of a snapshot file (snapshot.h): header,
 * CRC-32, and the payload whose "model" is pcd_model_serialize's bytes, so an
 * exported file can be imported anywhere, and a generation on disk is what
 * `rollback` installs.  Every write here installs a model from such bytes
 * (models.c, pcd_model_install), within max_models and max_memory.
 *
 * The journal records each write's request and replays it.  An import
 * carries its bytes, so replaying it needs nothing else; a rollback (which
 * reads a file that later saves may prune) and a copy (which reads another
 * model) are journaled as the import of the bytes they installed
 * (r->rewritten), so a replay installs exactly the same model.  Under the
 * shared log (redislog.h) the request itself is what every daemon applies:
 * a rollback, whose file is each daemon's own, is refused there. */
#include "daemon/exec/handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/models.h"
#include "daemon/exec/position.h"
#include "daemon/store/snapshot.h"

/* The model called name, or NULL having failed r: "unknown model". */
static pcd_model *known(pcd_req *r, const char *name)
{
    pcd_model *e = pcd_registry_find(&r->srv->models, name, strlen(name));
    if (!e)
        pcd_req_fail(r, PCP_E_MODEL, "unknown model '%s'", name);
    return e;
}

static uint64_t examples_of(const pc_model *m)
{
    pc_stats st;
    pc_model_stats(m, &st);
    return st.examples;
}

static void pack_kv_str(msgpack_packer *pk, const char *k, const char *v)
{
    pcp_pack_str(pk, k);
    pcp_pack_str(pk, v);
}

static void pack_kv_u64(msgpack_packer *pk, const char *k, uint64_t v)
{
    pcp_pack_str(pk, k);
    msgpack_pack_uint64(pk, v);
}

/* The model in the snapshot bytes buf[0..len) into *into (all its parts). */
static int decode_file(pcd_req *r, uint8_t *buf, size_t len, pcd_model *into, pcd_snap_info *info)
{
    const uint8_t *m;
    size_t mlen;
    char why[300];
    if (pcd_snapshot_parse(buf, len, &m, &mlen, info, why, sizeof why) != 0)
        return pcd_req_fail(r, PCP_E_PARAMS, "not a model file: %s", why);
    if (pcd_model_deserialize(into, m, mlen, why, sizeof why) != 0) {
        pcd_snap_info_free(info);
        return pcd_req_fail(r, PCP_E_PARAMS, "the file's model does not decode: %s", why);
    }
    return PCP_OK;
}

/* r->rewritten: [0, msgid, "import", [name, file, true]] holding the bytes
 * of the model e now is, for the journal to replay. */
static int journal_as_import(pcd_req *r, const pcd_model *e)
{
    uint8_t *payload = NULL, *file = NULL;
    size_t plen, flen;
    char why[300];
    if (pcd_model_serialize(e, &payload, &plen, why, sizeof why) != 0 ||
        pcd_snapshot_encode(e->name, e->generation + 1, pcd_now(), payload, plen, &file, &flen,
                            why, sizeof why) != 0) {
        free(payload);
        pcd_error("%s of %s: applied but not journaled: %s", r->method->name, e->name, why);
        return -1;
    }
    free(payload);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pcp_pack_request(&pk, r->msgid, "import", 3);
    pcp_pack_str(&pk, e->name);
    msgpack_pack_bin(&pk, flen);
    msgpack_pack_bin_body(&pk, file, flen);
    msgpack_pack_true(&pk);
    free(file);
    if (!sb.data) {
        pcd_error("%s of %s: applied but not journaled: out of memory", r->method->name, e->name);
        return -1;
    }
    r->rewritten = (uint8_t *)sb.data; /* run() frees it */
    r->raw = r->rewritten;
    r->len = sb.size;
    return 0;
}

/* snapshots(model): every generation on disk, newest first, as its file says. */
int pcd_h_snapshots(pcd_req *r)
{
    const char *name = r->name;
    const char *dir = r->srv->cfg.state_dir;
    uint64_t *gens;
    size_t n;
    char why[300];
    if (pcd_snapshot_generations(dir, name, &gens, &n, why, sizeof why) != 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "%s", why);
    pcp_pack_response_ok(r->pk, r->msgid);
    msgpack_pack_array(r->pk, n);
    for (size_t i = 0; i < n; i++) {
        uint8_t *buf;
        size_t len;
        pcd_snap_info info = {0};
        pcd_model tmp = {0};
        bool intact = pcd_snapshot_read_generation(dir, name, gens[i], &buf, &len, &info, why,
                                                   sizeof why) == 0;
        if (intact) {
            intact = pcd_model_deserialize(&tmp, buf, len, why, sizeof why) == 0;
            free(buf);
        }
        msgpack_pack_map(r->pk, intact ? 5 : 2);
        pack_kv_u64(r->pk, "generation", gens[i]);
        if (intact) {
            pcp_pack_str(r->pk, "written_at");
            msgpack_pack_int64(r->pk, info.written_at);
            pack_kv_u64(r->pk, "examples", examples_of(tmp.model));
            pack_kv_u64(r->pk, "bytes", len);
            pack_kv_u64(r->pk, "journal_lsn", info.journal_lsn);
            pcd_model_parts_free(&tmp);
        } else {
            pack_kv_str(r->pk, "error", why);
        }
        pcd_snap_info_free(&info);
    }
    free(gens);
    return PCP_OK;
}

/* rollback(model, generation): the model becomes what that generation holds. */
int pcd_h_rollback(pcd_req *r)
{
    const char *name = r->name;
    const msgpack_object *g = &r->msg->params[1];
    if (g->type != MSGPACK_OBJECT_POSITIVE_INTEGER || g->via.u64 == 0)
        return pcd_req_fail(r, PCP_E_PARAMS, "rollback takes (model, generation >= 1)");
    if (r->srv->rlog)
        return pcd_req_fail(r, PCP_E_REQUEST, "rollback reads this daemon's own snapshot files, "
                            "which replicas of the shared log do not share: export the generation "
                            "from one daemon and import it instead");
    if (!(r->model = known(r, name)))
        return r->err.code;
    uint8_t *buf;
    size_t len;
    char why[300];
    if (pcd_snapshot_read_generation(r->srv->cfg.state_dir, name, g->via.u64, &buf, &len, NULL,
                                     why, sizeof why) != 0)
        return pcd_req_fail(r, PCP_E_PARAMS, "%s (list them with `snapshots`)", why);
    pcd_model tmp = {0};
    int rc = pcd_model_deserialize(&tmp, buf, len, why, sizeof why);
    free(buf);
    if (rc != 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "generation %llu of '%s' does not decode: %s",
                            (unsigned long long)g->via.u64, name, why);
    if (!(r->model = pcd_model_install(r->srv, name, &tmp, true, &r->err)))
        return r->err.code;
    pcd_info("model %s rolled back to generation %llu", name, (unsigned long long)g->via.u64);
    journal_as_import(r, r->model);
    pcp_pack_response_ok(r->pk, r->msgid);
    msgpack_pack_map(r->pk, 4);
    pack_kv_str(r->pk, "rolled_back", name);
    pack_kv_u64(r->pk, "generation", g->via.u64);
    pack_kv_u64(r->pk, "examples", examples_of(r->model->model));
    pcd_pack_position(r);
    return PCP_OK;
}

/* export(model): the model as it is now, as the bytes of a snapshot file. */
int pcd_h_export(pcd_req *r)
{
    const char *name = r->name;
    pcd_model *e = known(r, name);
    if (!e)
        return r->err.code;
    uint8_t *payload, *file;
    size_t plen, flen;
    char why[300];
    if (pcd_model_serialize(e, &payload, &plen, why, sizeof why) != 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "%s", why);
    int rc = pcd_snapshot_encode(name, e->generation ? e->generation : 1, pcd_now(), payload,
                                 plen, &file, &flen, why, sizeof why);
    free(payload);
    if (rc != 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "%s", why);
    pcp_pack_response_ok(r->pk, r->msgid);
    msgpack_pack_bin(r->pk, flen);
    msgpack_pack_bin_body(r->pk, file, flen);
    free(file);
    return PCP_OK;
}

/* import(model, bytes[, replace]): a model from an exported (or snapshot) file. */
int pcd_h_import(pcd_req *r)
{
    const char *name = r->name;
    const msgpack_object *b = &r->msg->params[1];
    bool replace = r->msg->nparams > 2 && r->msg->params[2].type == MSGPACK_OBJECT_BOOLEAN &&
                   r->msg->params[2].via.boolean;
    if (b->type != MSGPACK_OBJECT_BIN ||
        (r->msg->nparams > 2 && r->msg->params[2].type != MSGPACK_OBJECT_BOOLEAN))
        return pcd_req_fail(r, PCP_E_PARAMS, "import takes (model, bytes of a model file, "
                            "replace: true or false)");
    /* parse moves bytes about: a copy, not the request's own (the journal's) */
    uint8_t *buf = malloc(b->via.bin.size ? b->via.bin.size : 1);
    if (!buf)
        return pcd_req_fail(r, PCP_E_INTERNAL, "out of memory for a %u-byte file", b->via.bin.size);
    memcpy(buf, b->via.bin.ptr, b->via.bin.size);
    pcd_model tmp = {0};
    pcd_snap_info info = {0};
    int rc = decode_file(r, buf, b->via.bin.size, &tmp, &info);
    free(buf);
    if (rc)
        return rc;
    if (!(r->model = pcd_model_install(r->srv, name, &tmp, replace, &r->err))) {
        pcd_snap_info_free(&info);
        return r->err.code;
    }
    pcd_info("model %s imported (exported from %s, generation %llu)", name, info.name,
             (unsigned long long)info.generation);
    pcd_snap_info_free(&info);
    pcp_pack_response_ok(r->pk, r->msgid);
    msgpack_pack_map(r->pk, 3);
    pack_kv_str(r->pk, "imported", name);
    pack_kv_u64(r->pk, "examples", examples_of(r->model->model));
    pcd_pack_position(r);
    return PCP_OK;
}

/* copy(model, source): a new model `model`, the same as `source` now. */
int pcd_h_copy(pcd_req *r)
{
    char name[PCP_MODEL_NAME_MAX + 1], source[PCP_MODEL_NAME_MAX + 1];
    int rc = pcd_req_name_at(r, 0, "the new model", name);
    if (rc || (rc = pcd_req_name_at(r, 1, "the source", source)))
        return rc;
    pcd_model *s = known(r, source);
    if (!s)
        return r->err.code;
    if (pcd_registry_find(&r->srv->models, name, strlen(name)))
        return pcd_req_fail(r, PCP_E_EXISTS, "model '%s' exists (drop it first)", name);
    /* through its bytes: the copy is exactly what an export and import give */
    uint8_t *payload;
    size_t plen;
    char why[300];
    if (pcd_model_serialize(s, &payload, &plen, why, sizeof why) != 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "%s", why);
    pcd_model tmp = {0};
    rc = pcd_model_deserialize(&tmp, payload, plen, why, sizeof why);
    free(payload);
    if (rc != 0)
        return pcd_req_fail(r, PCP_E_INTERNAL, "copying '%s': %s", source, why);
    if (!(r->model = pcd_model_install(r->srv, name, &tmp, false, &r->err)))
        return r->err.code;
    pcd_info("model %s copied from %s", name, source);
    if (!r->srv->rlog) /* the shared log applies the copy itself, in order */
        journal_as_import(r, r->model);
    pcp_pack_response_ok(r->pk, r->msgid);
    msgpack_pack_map(r->pk, 4);
    pack_kv_str(r->pk, "copied", name);
    pack_kv_str(r->pk, "source", source);
    pack_kv_u64(r->pk, "examples", examples_of(r->model->model));
    pcd_pack_position(r);
    return PCP_OK;
}
