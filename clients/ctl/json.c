/* json.c - msgpack_object -> JSON, for `perceptronctl --json`.
 *
 * The daemon speaks MessagePack, scripts want JSON.  The mapping is total, so
 * whatever the daemon sends becomes one valid JSON document (RFC 8259):
 *   nil -> null, booleans, integers as written (64-bit, signed or not),
 *   floats in the shortest form that reads back exactly, NaN and +-Inf -> null
 *   (JSON has no spelling for them),
 *   str -> a string with ", \ and control characters escaped and every byte
 *   sequence that is not valid UTF-8 replaced by U+FFFD (JSON text must be
 *   Unicode; the daemon's strings are UTF-8, but a feature name need not be),
 *   bin -> a base64 string, ext -> {"ext": type, "base64": data},
 *   map keys that are not strings -> their JSON text as a string ("3", "null").
 * Output goes to a FILE; write errors are left to the caller's ferror().
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/ctl/ctl.h"

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void ctl_json_string(FILE *f, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            case '\b': fputs("\\b", f); break;
            case '\f': fputs("\\f", f); break;
            default: fprintf(f, "\\u%04x", c); break;
            }
            i++;
        } else {
            size_t len = utf8_len(s + i, n - i);
            if (len == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(s + i, 1, len, f);
                i += len;
            }
        }
    }
    fputc('"', f);
}

void ctl_json_number(FILE *f, double v)
{
    if (!isfinite(v)) {
        fputs("null", f);
        return;
    }
    /* The shortest of %.15g..%.17g that reads back to the same double. */
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

static void base64(FILE *f, const unsigned char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fputc('"', f);
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        fputc(tab[(v >> 18) & 63], f);
        fputc(tab[(v >> 12) & 63], f);
        fputc(i + 1 < n ? tab[(v >> 6) & 63] : '=', f);
        fputc(i + 2 < n ? tab[v & 63] : '=', f);
    }
    fputc('"', f);
}

static void newline(FILE *f, int indent, int depth)
{
    if (indent < 0)
        return;
    fputc('\n', f);
    for (int i = 0; i < indent * depth; i++)
        fputc(' ', f);
}

/* A key that is not a string: its compact JSON text, as a string. */
static void key_text(FILE *f, const msgpack_object *k)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        fputs("\"?\"", f);
        return;
    }
    ctl_json_write(mem, k, -1);
    fclose(mem);
    /* A string key's JSON text would be quoted; others are bare and safe. */
    ctl_json_string(f, buf, len);
    free(buf);
}

static void write_at(FILE *f, const msgpack_object *o, int indent, int depth)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: fputs("null", f); break;
    case MSGPACK_OBJECT_BOOLEAN: fputs(o->via.boolean ? "true" : "false", f); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: fprintf(f, "%llu", (unsigned long long)o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: fprintf(f, "%lld", (long long)o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: ctl_json_number(f, o->via.f64); break;
    case MSGPACK_OBJECT_STR: ctl_json_string(f, o->via.str.ptr, o->via.str.size); break;
    case MSGPACK_OBJECT_BIN:
        base64(f, (const unsigned char *)o->via.bin.ptr, o->via.bin.size);
        break;
    case MSGPACK_OBJECT_EXT:
        fprintf(f, "{\"ext\": %d, \"base64\": ", (int)o->via.ext.type);
        base64(f, (const unsigned char *)o->via.ext.ptr, o->via.ext.size);
        fputc('}', f);
        break;
    case MSGPACK_OBJECT_ARRAY:
        if (o->via.array.size == 0) {
            fputs("[]", f);
            break;
        }
        fputc('[', f);
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (i)
                fputs(indent < 0 ? ", " : ",", f);
            newline(f, indent, depth + 1);
            write_at(f, &o->via.array.ptr[i], indent, depth + 1);
        }
        newline(f, indent, depth);
        fputc(']', f);
        break;
    case MSGPACK_OBJECT_MAP:
        if (o->via.map.size == 0) {
            fputs("{}", f);
            break;
        }
        fputc('{', f);
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            if (i)
                fputs(indent < 0 ? ", " : ",", f);
            newline(f, indent, depth + 1);
            if (kv->key.type == MSGPACK_OBJECT_STR)
                ctl_json_string(f, kv->key.via.str.ptr, kv->key.via.str.size);
            else
                key_text(f, &kv->key);
            fputs(": ", f);
            write_at(f, &kv->val, indent, depth + 1);
        }
        newline(f, indent, depth);
        fputc('}', f);
        break;
    default: fputs("null", f); break; /* no other types exist in msgpack-c 4 */
    }
}

void ctl_json_write(FILE *f, const msgpack_object *o, int indent)
{
    write_at(f, o, indent, 0);
}
