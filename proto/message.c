/* message.c - the MessagePack-RPC envelope, typed access to params, and the
 * error helpers every proto/ file uses.
 *
 * A request is [0, msgid, method, params], a notification [2, method, params]
 * (the msgpack-rpc spec).  The msgid is extracted before anything else can go
 * wrong, so that a request that is wrong in any other way still gets an error
 * response the client can match to its call.
 */
#include "proto/proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

pcp_code pcp_error_set(pcp_error *err, pcp_code code, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *pcp_quote(char *out, size_t cap, const char *s, size_t len)
{
    enum { SHOWN = 40 };
    size_t o = 0;
    if (cap < 9) {
        if (cap)
            out[0] = 0;
        return out;
    }
    out[o++] = '\'';
    size_t i = 0;
    /* Room kept for the worst tail: "\xNN" + "...'" + NUL. */
    for (; i < len && i < SHOWN && o + 4 + 5 <= cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    }
    if (i < len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '\'';
    out[o] = 0;
    return out;
}

const char *pcp_type_name(const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: return "nil";
    case MSGPACK_OBJECT_BOOLEAN: return "a boolean";
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return "an integer";
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "a negative integer";
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return "a float";
    case MSGPACK_OBJECT_STR: return "a string";
    case MSGPACK_OBJECT_ARRAY: return "an array";
    case MSGPACK_OBJECT_MAP: return "a map";
    case MSGPACK_OBJECT_BIN: return "binary data";
    case MSGPACK_OBJECT_EXT: return "an extension type";
    }
    return "an unknown type";
}

pcp_code pcp_unpack(const uint8_t *buf, size_t len, msgpack_zone *z, msgpack_object *o,
                    pcp_error *err)
{
    size_t off = 0;
    msgpack_unpack_return r = msgpack_unpack((const char *)buf, len, &off, z, o);
    switch (r) {
    case MSGPACK_UNPACK_SUCCESS:
        return PCP_OK;
    case MSGPACK_UNPACK_NOMEM_ERROR:
        return pcp_error_set(err, PCP_E_INTERNAL, "out of memory unpacking a %zu-byte message", len);
    case MSGPACK_UNPACK_EXTRA_BYTES:
        return pcp_error_set(err, PCP_E_PARSE, "%zu bytes follow the object: pass one object only",
                             len - off);
    default:
        return pcp_error_set(err, PCP_E_PARSE, "malformed or incomplete MessagePack (%zu bytes)", len);
    }
}

/* ---- the envelope ---- */

static pcp_code bad_request(pcp_error *err, const char *what)
{
    return pcp_error_set(err, PCP_E_REQUEST,
                         "%s: a request is [0, msgid, method, params], a notification "
                         "[2, method, params]", what);
}

pcp_code pcp_message_parse(const msgpack_object *o, pcp_message *m, pcp_error *err)
{
    memset(m, 0, sizeof *m);
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return bad_request(err, "the message is not an array");
    const msgpack_object *e = o->via.array.ptr;
    uint32_t n = o->via.array.size;
    if (n == 0 || e[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return bad_request(err, "the message has no integer type tag");
    uint64_t tag = e[0].via.u64;
    if (tag == 1)
        return bad_request(err, "the server does not accept responses (type 1)");
    if (tag != 0 && tag != 2)
        return bad_request(err, "unknown message type tag");

    uint32_t first = 1;   /* index of the method */
    if (tag == 0) {
        if (n < 2)
            return bad_request(err, "the request has no msgid");
        if (e[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER || e[1].via.u64 > UINT32_MAX)
            return pcp_error_set(err, PCP_E_REQUEST,
                                 "the msgid must be an integer in [0, 4294967295], not %s%s",
                                 pcp_type_name(&e[1]),
                                 e[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER ? " that large" : "");
        m->has_msgid = true;
        m->msgid = (uint32_t)e[1].via.u64;
        first = 2;
        if (n != 4)
            return pcp_error_set(err, PCP_E_REQUEST,
                                 "a request has 4 elements [0, msgid, method, params], not %u", n);
    } else {
        m->notification = true;
        if (n != 3)
            return pcp_error_set(err, PCP_E_REQUEST,
                                 "a notification has 3 elements [2, method, params], not %u", n);
    }
    const msgpack_object *meth = &e[first], *params = &e[first + 1];
    if (meth->type != MSGPACK_OBJECT_STR)
        return pcp_error_set(err, PCP_E_REQUEST, "the method must be a string, not %s",
                             pcp_type_name(meth));
    if (params->type != MSGPACK_OBJECT_ARRAY)
        return pcp_error_set(err, PCP_E_REQUEST, "the params must be an array, not %s",
                             pcp_type_name(params));
    const pcp_method *md = pcp_method_find(meth->via.str.ptr, meth->via.str.size);
    if (!md) {
        char q[64];
        return pcp_error_set(err, PCP_E_METHOD, "unknown method %s; see docs/protocol.md",
                             pcp_quote(q, sizeof q, meth->via.str.ptr, meth->via.str.size));
    }
    m->method = md;
    uint32_t np = params->via.array.size;
    if (np < md->min_params || np > md->max_params) {
        if (md->min_params == md->max_params)
            return pcp_error_set(err, PCP_E_PARAMS, "%s takes %u params (%s), not %u", md->name,
                                 md->min_params, md->params_doc, np);
        return pcp_error_set(err, PCP_E_PARAMS, "%s takes %u to %u params (%s), not %u", md->name,
                             md->min_params, md->max_params, md->params_doc, np);
    }
    m->params = params->via.array.ptr;
    m->nparams = np;
    return PCP_OK;
}

/* ---- params ---- */

static const msgpack_object *param(const pcp_message *m, uint32_t i, const char *what,
                                   pcp_error *err)
{
    if (i >= m->nparams) {
        pcp_error_set(err, PCP_E_PARAMS, "%s: param %u (%s) is missing",
                      m->method ? m->method->name : "request", i + 1, what);
        return NULL;
    }
    return &m->params[i];
}

pcp_code pcp_param_str(const pcp_message *m, uint32_t i, const char *what, const char **s,
                       size_t *len, pcp_error *err)
{
    const msgpack_object *o = param(m, i, what, err);
    if (!o)
        return PCP_E_PARAMS;
    if (o->type != MSGPACK_OBJECT_STR)
        return pcp_error_set(err, PCP_E_PARAMS, "%s: param %u (%s) must be a string, not %s",
                             m->method ? m->method->name : "request", i + 1, what,
                             pcp_type_name(o));
    *s = o->via.str.ptr;
    *len = o->via.str.size;
    return PCP_OK;
}

pcp_code pcp_param_uint(const pcp_message *m, uint32_t i, const char *what, uint64_t max,
                        uint64_t *v, pcp_error *err)
{
    const msgpack_object *o = param(m, i, what, err);
    if (!o)
        return PCP_E_PARAMS;
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > max)
        return pcp_error_set(err, PCP_E_PARAMS,
                             "%s: param %u (%s) must be an integer in [0, %llu], not %s",
                             m->method ? m->method->name : "request", i + 1, what,
                             (unsigned long long)max,
                             o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? "a larger one"
                                                                        : pcp_type_name(o));
    *v = o->via.u64;
    return PCP_OK;
}

bool pcp_model_name_valid(const char *name, size_t len)
{
    if (!name || len < 1 || len > PCP_MODEL_NAME_MAX || name[0] == '.')
        return false;
    /* Names become file names in the state directory: no '/', no NUL, no
     * spaces, nothing a shell or a file system would treat specially. */
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

pcp_code pcp_model_name(const msgpack_object *o, const char **name, size_t *len, pcp_error *err)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return pcp_error_set(err, PCP_E_PARAMS, "the model name must be a string, not %s",
                             pcp_type_name(o));
    const char *s = o->via.str.ptr;
    size_t n = o->via.str.size;
    if (!pcp_model_name_valid(s, n)) { /* say which part of the rule it breaks */
        char q[64];
        pcp_quote(q, sizeof q, s, n);
        if (n == 0 || n > PCP_MODEL_NAME_MAX)
            return pcp_error_set(err, PCP_E_MODEL, "model name %s must be 1 to %d bytes long", q,
                                 PCP_MODEL_NAME_MAX);
        if (s[0] == '.')
            return pcp_error_set(err, PCP_E_MODEL, "model name %s must not start with '.'", q);
        return pcp_error_set(err, PCP_E_MODEL,
                             "model name %s may only use letters, digits, '_', '-' and '.'", q);
    }
    *name = s;
    *len = n;
    return PCP_OK;
}

