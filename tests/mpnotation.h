/* mpnotation.h - msgpack bytes from a small JSON-like text, for the tests
 * (test_proto.c, test_direct.c, test_e2e_after.c):
 *   [..] arrays, {k: v} maps, 'str', b'bin', 1, -1, 1.5, 1.5f (float32),
 *   true, false, nil, nan, inf, -inf.
 * Integers take msgpack-c's smallest encoding.  Test code: malformed text
 * fails the calling Check test. */
#ifndef PERCEPTROND_TESTS_MPNOTATION_H
#define PERCEPTROND_TESTS_MPNOTATION_H

#include <check.h>
#include <math.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline void skip_ws(const char **s)
{
    while (**s == ' ' || **s == '\n')
        (*s)++;
}

/* Items of the array or map whose body starts at s (after the bracket). */
static inline uint32_t count_items(const char *s)
{
    int depth = 0;
    uint32_t commas = 0;
    bool any = false;
    for (; *s; s++) {
        char c = *s;
        if (c == '\'') {
            for (s++; *s && *s != '\''; s++)
                ;
            any = true;
        } else if (c == '[' || c == '{') {
            depth++;
            any = true;
        } else if (c == ']' || c == '}') {
            if (depth-- == 0)
                break;
        } else if (c == ',' && depth == 0) {
            commas++;
        } else if (c != ' ' && c != '\n') {
            any = true;
        }
    }
    return any ? commas + 1 : 0;
}

static inline const char *mp_value(msgpack_packer *pk, const char *s);

static inline const char *mp_items(msgpack_packer *pk, const char *s, bool map)
{
    char close = map ? '}' : ']';
    uint32_t n = count_items(s + 1);
    if (map)
        msgpack_pack_map(pk, n);
    else
        msgpack_pack_array(pk, n);
    s++;
    for (uint32_t i = 0; i < n; i++) {
        s = mp_value(pk, s);
        skip_ws(&s);
        if (map) {
            ck_assert_msg(*s == ':', "mp: ':' expected at %s", s);
            s = mp_value(pk, s + 1);
            skip_ws(&s);
        }
        if (*s == ',')
            s++;
    }
    skip_ws(&s);
    ck_assert_msg(*s == close, "mp: '%c' expected at %s", close, s);
    return s + 1;
}

static inline const char *mp_value(msgpack_packer *pk, const char *s)
{
    skip_ws(&s);
    if (*s == '[' || *s == '{')
        return mp_items(pk, s, *s == '{');
    if (*s == '\'' || (s[0] == 'b' && s[1] == '\'')) {
        bool bin = *s == 'b';
        s += bin ? 2 : 1;
        const char *e = strchr(s, '\'');
        ck_assert_msg(e != NULL, "mp: unterminated string");
        if (bin)
            msgpack_pack_bin_with_body(pk, s, (size_t)(e - s));
        else
            msgpack_pack_str_with_body(pk, s, (size_t)(e - s));
        return e + 1;
    }
    static const struct { const char *w; int kind; } words[] = {
        {"true", 0}, {"false", 1}, {"nil", 2}, {"nan", 3}, {"inf", 4}, {"-inf", 5},
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t n = strlen(words[i].w);
        if (strncmp(s, words[i].w, n) == 0) {
            switch (words[i].kind) {
            case 0: msgpack_pack_true(pk); break;
            case 1: msgpack_pack_false(pk); break;
            case 2: msgpack_pack_nil(pk); break;
            case 3: msgpack_pack_double(pk, NAN); break;
            case 4: msgpack_pack_double(pk, INFINITY); break;
            case 5: msgpack_pack_double(pk, -INFINITY); break;
            }
            return s + n;
        }
    }
    const char *e = s;
    bool real = false;
    while (*e == '-' || *e == '+' || *e == '.' || *e == 'e' || (*e >= '0' && *e <= '9')) {
        real |= *e == '.' || *e == 'e';
        e++;
    }
    ck_assert_msg(e > s, "mp: cannot read %s", s);
    if (real) {
        double d = strtod(s, NULL);
        if (*e == 'f') {
            msgpack_pack_float(pk, (float)d);
            return e + 1;
        }
        msgpack_pack_double(pk, d);
    } else if (*s == '-') {
        msgpack_pack_int64(pk, strtoll(s, NULL, 10));
    } else {
        msgpack_pack_uint64(pk, strtoull(s, NULL, 10));
    }
    return e;
}

/* Bytes of a message. */
typedef struct bytes {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} bytes;

static inline void bytes_init(bytes *b)
{
    msgpack_sbuffer_init(&b->sb);
    msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
}

static inline void bytes_text(bytes *b, const char *text)
{
    const char *end = mp_value(&b->pk, text);
    skip_ws(&end);
    ck_assert_msg(*end == 0, "mp: trailing text %s", end);
}

#endif
