/* cmd_call.c - `perceptronctl call METHOD [ARG...]`: any method of the
 * protocol with its parameters written as JSON, one per argument:
 *   perceptronctl call predict spam '{"cheap": 1, "pills": 1}'
 *   perceptronctl call weights spam null 5
 * An argument that is not JSON is sent as a string (so model names need no
 * quotes; write '"1"' for the string 1).  JSON is read by jansson, then
 * packed as MessagePack: objects as maps, integers as integers, reals as
 * float64.  The result is printed as JSON; errors as every command's. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "clients/ctl/ctl.h"

static void pack_json(msgpack_packer *pk, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        msgpack_pack_map(pk, json_object_size(v));
        const char *k;
        size_t klen;
        json_t *x;
        json_object_keylen_foreach((json_t *)v, k, klen, x) {
            msgpack_pack_str(pk, klen);
            msgpack_pack_str_body(pk, k, klen);
            pack_json(pk, x);
        }
        break;
    }
    case JSON_ARRAY: {
        msgpack_pack_array(pk, json_array_size(v));
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) pack_json(pk, x);
        break;
    }
    case JSON_STRING:
        msgpack_pack_str(pk, json_string_length(v));
        msgpack_pack_str_body(pk, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER: msgpack_pack_int64(pk, json_integer_value(v)); break;
    case JSON_REAL: msgpack_pack_double(pk, json_real_value(v)); break;
    case JSON_TRUE: msgpack_pack_true(pk); break;
    case JSON_FALSE: msgpack_pack_false(pk); break;
    case JSON_NULL: msgpack_pack_nil(pk); break;
    }
}

int ctl_cmd_call(ctl_ctx *ctx, int argc, char **argv)
{
    int rc = ctl_parse(ctx, argc, argv, "", NULL, NULL, NULL);
    if (rc != CTL_CONTINUE)
        return rc;
    int n = ctx->nargs - 1;
    json_t **params = calloc((size_t)(n > 0 ? n : 1), sizeof *params);
    if (!params)
        return ctl_io_error(ctx, "out of memory");
    for (int i = 0; i < n; i++) {
        const char *a = ctx->args[i + 1];
        json_error_t je;
        params[i] = json_loads(a, JSON_DECODE_ANY, &je);
        if (!params[i]) {
            /* something that starts like JSON but is not: say where, rather
             * than send a string the user did not mean */
            if (strchr("{[\"", a[0])) {
                ctl_errorf(ctx, "argument %d is not valid JSON: %s (column %d)", i + 1, je.text,
                           je.column);
                rc = CTL_EXIT_USAGE;
                break;
            }
            params[i] = json_string(a);
            if (!params[i]) { /* not UTF-8 */
                ctl_errorf(ctx, "argument %d is neither JSON nor a UTF-8 string", i + 1);
                rc = CTL_EXIT_USAGE;
                break;
            }
        }
    }
    if (rc == CTL_CONTINUE && (rc = ctl_connect(ctx)) == 0) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(ctx->client, ctx->args[0], (uint32_t)n, &id);
        for (int i = 0; i < n; i++)
            pack_json(pk, params[i]);
        const msgpack_object *res;
        if ((rc = ctl_call(ctx, id, &res)) == 0)
            ctl_json_print(res);
    }
    for (int i = 0; i < n; i++)
        json_decref(params[i]);
    free(params);
    return rc == CTL_CONTINUE ? CTL_EXIT_OK : rc;
}
