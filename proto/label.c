/* label.c - the label of an example: +1/-1 for binary models, a class name for
 * multiclass ones.
 *
 * Lenient where it costs nothing and cannot be misread (true/false, 1.0), strict
 * elsewhere: a binary label 0 or 2 is a client bug (0/1 labels from another
 * tool), not something to guess about, so it is refused with the fix named.
 */
#include "proto/proto.h"

#include <string.h>

static pcp_code binary(const msgpack_object *o, pc_label *l, pcp_error *err)
{
    int y = 0;
    switch (o->type) {
    case MSGPACK_OBJECT_BOOLEAN:
        y = o->via.boolean ? 1 : -1;
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 == 1)
            y = 1;
        else
            return pcp_error_set(err, PCP_E_LABEL,
                                 "a binary model's label is 1 or -1 (or true/false), not %llu%s",
                                 (unsigned long long)o->via.u64,
                                 o->via.u64 == 0 ? ": map 0/1 labels to -1/1" : "");
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        if (o->via.i64 == -1)
            y = -1;
        else
            return pcp_error_set(err, PCP_E_LABEL,
                                 "a binary model's label is 1 or -1 (or true/false), not %lld",
                                 (long long)o->via.i64);
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (o->via.f64 == 1.0 || o->via.f64 == -1.0)
            y = o->via.f64 > 0 ? 1 : -1;
        else
            return pcp_error_set(err, PCP_E_LABEL,
                                 "a binary model's label is 1 or -1 (or true/false), not %g",
                                 o->via.f64);
        break;
    case MSGPACK_OBJECT_STR:
        return pcp_error_set(err, PCP_E_LABEL,
                             "this model is binary: label with 1/-1 or true/false, not a class "
                             "name (create the model with classes for multiclass)");
    default:
        return pcp_error_set(err, PCP_E_LABEL,
                             "a binary model's label is 1 or -1 (or true/false), not %s",
                             pcp_type_name(o));
    }
    l->y = y;
    l->cls = NULL;
    l->cls_len = 0;
    return PCP_OK;
}

static pcp_code multiclass(const msgpack_object *o, pc_label *l, pcp_error *err)
{
    if (o->type != MSGPACK_OBJECT_STR)
        return pcp_error_set(err, PCP_E_LABEL,
                             "a multiclass model's label is a class name (a string), not %s%s",
                             pcp_type_name(o),
                             o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
                                     o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER
                                 ? ": send numbered classes as strings (\"3\")"
                                 : "");
    size_t n = o->via.str.size;
    if (n == 0 || n > PC_CLASS_NAME_MAX || memchr(o->via.str.ptr, 0, n))
        return pcp_error_set(err, PCP_E_LABEL,
                             "a class name is 1 to %d bytes without NUL (got %zu bytes)",
                             PC_CLASS_NAME_MAX, n);
    l->y = 0;
    l->cls = o->via.str.ptr;
    l->cls_len = n;
    return PCP_OK;
}

pcp_code pcp_label(const msgpack_object *o, bool is_multiclass, pc_label *l, pcp_error *err)
{
    return is_multiclass ? multiclass(o, l, err) : binary(o, l, err);
}
