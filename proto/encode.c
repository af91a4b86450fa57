/* encode.c - responses (and the head of a request), and the common results,
 * packed with msgpack-c.
 *
 * Responses are [1, msgid, error, result] (msgpack-rpc).  Result maps use the
 * same key names as docs/protocol.md; a binary label is the integer 1/-1, a
 * multiclass label the class name, so a client can send a prediction back as
 * a label unchanged.
 */
#include "proto/proto.h"

#include <string.h>

void pcp_pack_request(msgpack_packer *pk, uint32_t msgid, const char *method, uint32_t nparams)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, 0);
    msgpack_pack_uint32(pk, msgid);
    pcp_pack_str(pk, method);
    msgpack_pack_array(pk, nparams);
}

void pcp_pack_response_ok(msgpack_packer *pk, uint32_t msgid)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, 1);
    msgpack_pack_uint32(pk, msgid);
    msgpack_pack_nil(pk);
}

void pcp_pack_response_error(msgpack_packer *pk, uint32_t msgid, const pcp_error *err)
{
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint8(pk, 1);
    msgpack_pack_uint32(pk, msgid);
    msgpack_pack_map(pk, 2);
    pcp_pack_str(pk, "code");
    msgpack_pack_int(pk, err->code);
    pcp_pack_str(pk, "message");
    /* msg is always NUL-terminated by pcp_error_set; strnlen guards a caller's
     * hand-made pcp_error. */
    size_t n = strnlen(err->msg, sizeof err->msg);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, err->msg, n);
    msgpack_pack_nil(pk);
}

/* The label of a prediction: 1/-1, a class name, or nil (no class yet). */
static void pack_label(msgpack_packer *pk, const pc_model *m, const pc_prediction *p)
{
    if (!pc_model_config_of(m)->multiclass) {
        msgpack_pack_int(pk, p->y);
        return;
    }
    const char *name = p->cls >= 0 ? pc_model_class_name(m, (size_t)p->cls) : NULL;
    if (name)
        pcp_pack_str(pk, name);
    else
        msgpack_pack_nil(pk);
}

void pcp_pack_label(msgpack_packer *pk, const pc_model *m, const pc_prediction *p)
{
    pack_label(pk, m, p);
}

void pcp_pack_prediction(msgpack_packer *pk, const pc_model *m, const pc_prediction *p,
                         const double *scores, uint32_t extra)
{
    const pc_model_config *c = pc_model_config_of(m);
    /* a model created with calibrate: false has no probabilities: the fields are left out */
    bool mc = c->multiclass, multi = mc && scores, cal = c->calibrate;
    msgpack_pack_map(pk, 2 + (multi ? 1 + cal : !mc && cal) + extra);
    pcp_pack_str(pk, "label");
    pack_label(pk, m, p);
    pcp_pack_str(pk, "score");
    msgpack_pack_double(pk, p->score);
    if (!mc && cal) { /* calibrated on the model's own stream (lib/calib.h) */
        pcp_pack_str(pk, "probability");
        msgpack_pack_double(pk, pc_model_probability(m, 0, p->score));
    }
    if (multi) {
        size_t n = pc_model_class_count(m);
        pcp_pack_str(pk, "scores");
        msgpack_pack_map(pk, n);
        for (size_t i = 0; i < n; i++) {
            pcp_pack_str(pk, pc_model_class_name(m, i));
            msgpack_pack_double(pk, scores[i]);
        }
        if (!cal)
            return;
        double probs[PC_CLASSES_MAX]; /* 32 KiB of stack at most; n are written */
        pc_model_probabilities(m, scores, probs);
        pcp_pack_str(pk, "probabilities");
        msgpack_pack_map(pk, n);
        for (size_t i = 0; i < n; i++) {
            pcp_pack_str(pk, pc_model_class_name(m, i));
            msgpack_pack_double(pk, probs[i]);
        }
    }
}

void pcp_pack_outcome(msgpack_packer *pk, const pc_model *m, const pc_outcome *o, uint32_t extra)
{
    msgpack_pack_map(pk, 4 + extra);
    pcp_pack_str(pk, "predicted");
    pack_label(pk, m, &o->pred);
    pcp_pack_str(pk, "score");
    msgpack_pack_double(pk, o->pred.score);
    pcp_pack_str(pk, "mistake");
    if (o->mistake)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    pcp_pack_str(pk, "updated");
    if (o->updated)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
}
