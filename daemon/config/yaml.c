/* yaml.c - typed readers over a libyaml document, for the config loader.
 *
 * libyaml's loader gives a tree of nodes with their line and column but resolves no types: every
 * scalar is a string.  This file decides what a scalar means (numbers and booleans must be plain,
 * i.e. unquoted, scalars, as YAML itself says), and turns every mismatch into one message that
 * names the file, line, column and dotted key, what was found and what is accepted.
 */
#include "daemon/config/internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int pcd_yfail(pcd_yctx *y, const yaml_node_t *at, const char *key, const char *fmt, ...)
{
    if (!y->err || y->errlen == 0)
        return -1;
    int len;
    if (at)
        len = snprintf(y->err, y->errlen, "%s:%zu:%zu: ", y->path, at->start_mark.line + 1,
                       at->start_mark.column + 1);
    else
        len = snprintf(y->err, y->errlen, "%s: ", y->path);
    if (len >= 0 && (size_t)len < y->errlen && key && *key)
        len += snprintf(y->err + len, y->errlen - (size_t)len, "key '%s': ", key);
    if (len >= 0 && (size_t)len < y->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(y->err + len, y->errlen - (size_t)len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *pcd_ykey(char buf[PCD_YKEY_MAX], const char *where, const char *name)
{
    if (where && *where)
        snprintf(buf, PCD_YKEY_MAX, "%s.%s", where, name);
    else
        snprintf(buf, PCD_YKEY_MAX, "%s", name);
    return buf;
}

yaml_node_t *pcd_ynode(pcd_yctx *y, int index)
{
    return yaml_document_get_node(&y->doc, index);
}

const char *pcd_yscalar(const yaml_node_t *n, size_t *len)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        return NULL;
    if (len)
        *len = n->data.scalar.length;
    return (const char *)n->data.scalar.value;
}

static bool plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

bool pcd_yis_null(const yaml_node_t *n)
{
    if (!n || !plain(n))
        return false;
    const char *s = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || !strcmp(s, "~") || !strcmp(s, "null") ||
           !strcmp(s, "Null") || !strcmp(s, "NULL");
}

const char *pcd_ytype(const yaml_node_t *n)
{
    if (!n)
        return "nothing";
    switch (n->type) {
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SCALAR_NODE:
        if (pcd_yis_null(n))
            return "null";
        return plain(n) ? "a plain scalar" : "a quoted string";
    default: return "nothing";
    }
}

/* "got ..." text: the value itself for scalars (cut at 40 bytes), else its kind. */
static const char *got(const yaml_node_t *n, char buf[80])
{
    if (!n || n->type != YAML_SCALAR_NODE || pcd_yis_null(n)) {
        snprintf(buf, 80, "%s", pcd_ytype(n));
        return buf;
    }
    int len = n->data.scalar.length > 40 ? 40 : (int)n->data.scalar.length;
    const char *dots = n->data.scalar.length > 40 ? "..." : "";
    if (plain(n))
        snprintf(buf, 80, "'%.*s%s'", len, (const char *)n->data.scalar.value, dots);
    else
        snprintf(buf, 80, "the quoted string \"%.*s%s\"", len, (const char *)n->data.scalar.value, dots);
    return buf;
}

/* Appended where a number or boolean was expected and a quoted string was found. */
static const char *quote_hint(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE && !plain(n) ? " (write numbers and booleans without quotes)"
                                                         : "";
}

/* ---- numbers ----------------------------------------------------------- */

/* [+]digits, no overflow; returns the bytes consumed (0 when none or on overflow). */
static size_t scan_u64(const char *s, size_t len, uint64_t *out)
{
    size_t i = 0;
    if (i < len && s[i] == '+')
        i++;
    size_t start = i;
    uint64_t v = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (i == start)
        return 0;
    *out = v;
    return i;
}

/* Decimal numbers only ([+-]digits[.digits][e[+-]digits]): no hex, inf or nan, which strtod would
 * also take. */
static bool parse_real(const char *s, size_t len, double *out)
{
    size_t i = 0, digits = 0;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        i++;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        digits++;
    if (i < len && s[i] == '.')
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            digits++;
    if (!digits)
        return false;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t e = i;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == e)
            return false;
    }
    if (i != len)
        return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end != s + len || !isfinite(v))
        return false;
    *out = v;
    return true;
}

int pcd_yget_uint(pcd_yctx *y, const yaml_node_t *n, const char *key, uint64_t min, uint64_t max,
                  uint64_t *out)
{
    char g[80];
    size_t len;
    const char *s = pcd_yscalar(n, &len);
    uint64_t v = 0;
    if (!s || !plain(n) || pcd_yis_null(n) || scan_u64(s, len, &v) != len) {
        if (s && plain(n) && len && s[0] == '-')
            return pcd_yfail(y, n, key, "%.40s is out of range: it must be an integer in [%llu, %llu]",
                             s, (unsigned long long)min, (unsigned long long)max);
        return pcd_yfail(y, n, key, "expected an integer in [%llu, %llu], got %s%s",
                         (unsigned long long)min, (unsigned long long)max, got(n, g), quote_hint(n));
    }
    if (v < min || v > max)
        return pcd_yfail(y, n, key, "%llu is out of range: it must be an integer in [%llu, %llu]",
                         (unsigned long long)v, (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return 0;
}

static const char *fmt_size(char buf[32], uint64_t v)
{
    static const char *const units[] = {"GiB", "MiB", "KiB"};
    for (int i = 0; i < 3; i++) {
        uint64_t u = 1ull << (10 * (3 - i));
        if (v >= u && v % u == 0) {
            snprintf(buf, 32, "%llu %s", (unsigned long long)(v / u), units[i]);
            return buf;
        }
    }
    snprintf(buf, 32, "%llu", (unsigned long long)v);
    return buf;
}

int pcd_yget_size(pcd_yctx *y, const yaml_node_t *n, const char *key, uint64_t min, uint64_t max,
                  uint64_t *out)
{
    char g[80], a[32], b[32];
    size_t len;
    const char *s = pcd_yscalar(n, &len);
    uint64_t v = 0, mul = 1;
    size_t used = s && plain(n) ? scan_u64(s, len, &v) : 0;
    bool ok = used > 0;
    if (ok && used < len) {
        const char *u = s + used;
        if (*u == ' ')
            u++;
        if (!strcmp(u, "KiB"))
            mul = 1ull << 10;
        else if (!strcmp(u, "MiB"))
            mul = 1ull << 20;
        else if (!strcmp(u, "GiB"))
            mul = 1ull << 30;
        else
            ok = false;
    }
    if (!ok)
        return pcd_yfail(y, n, key,
                         "expected a size in bytes in [%s, %s] (an integer, optionally followed by "
                         "KiB, MiB or GiB), got %s%s", fmt_size(a, min), fmt_size(b, max), got(n, g),
                         quote_hint(n));
    if (v > UINT64_MAX / mul || v * mul < min || v * mul > max)
        return pcd_yfail(y, n, key, "%.40s is out of range: it must be in [%s, %s]", s,
                         fmt_size(a, min), fmt_size(b, max));
    *out = v * mul;
    return 0;
}

int pcd_yget_real(pcd_yctx *y, const yaml_node_t *n, const char *key, double min, double max,
                  bool zero_ok, double *out)
{
    char g[80];
    size_t len;
    const char *s = pcd_yscalar(n, &len);
    double v;
    if (!s || !plain(n) || !parse_real(s, len, &v)) {
        if (!isfinite(min))
            return pcd_yfail(y, n, key, "expected a finite decimal number, got %s%s", got(n, g),
                             quote_hint(n));
        return pcd_yfail(y, n, key, "expected %sa number in [%g, %g], got %s%s", zero_ok ? "0 or " : "",
                         min, max, got(n, g), quote_hint(n));
    }
    if (!(zero_ok && v == 0) && (v < min || v > max))
        return pcd_yfail(y, n, key, "%g is out of range: it must be %sa number in [%g, %g]", v,
                         zero_ok ? "0 or " : "", min, max);
    *out = v;
    return 0;
}

int pcd_yget_bool(pcd_yctx *y, const yaml_node_t *n, const char *key, bool *out)
{
    /* YAML 1.2 core forms plus 1.1's yes/no/on/off, which libyaml's users write. */
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    const char *s = pcd_yscalar(n, NULL);
    if (s && plain(n))
        for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
            if (!strcmp(s, yes[i])) {
                *out = true;
                return 0;
            }
            if (!strcmp(s, no[i])) {
                *out = false;
                return 0;
            }
        }
    char g[80];
    return pcd_yfail(y, n, key, "expected true or false, got %s%s", got(n, g), quote_hint(n));
}

int pcd_yget_string(pcd_yctx *y, const yaml_node_t *n, const char *key, size_t maxlen, char **out)
{
    char g[80];
    size_t len;
    const char *s = pcd_yscalar(n, &len);
    if (!s || pcd_yis_null(n))
        return pcd_yfail(y, n, key, "expected a string, got %s", got(n, g));
    if (len == 0)
        return pcd_yfail(y, n, key, "must not be empty");
    if (len > maxlen)
        return pcd_yfail(y, n, key, "is %zu bytes long; at most %zu are accepted", len, maxlen);
    if (memchr(s, 0, len))
        return pcd_yfail(y, n, key, "contains a NUL byte");
    char *copy = strdup(s);
    if (!copy)
        return pcd_yfail(y, n, key, "out of memory");
    *out = copy;
    return 0;
}

int pcd_yget_choice(pcd_yctx *y, const yaml_node_t *n, const char *key, const char *const *choices,
                    size_t *out)
{
    const char *s = pcd_yscalar(n, NULL);
    if (s && !pcd_yis_null(n))
        for (size_t i = 0; choices[i]; i++)
            if (!strcmp(s, choices[i])) {
                *out = i;
                return 0;
            }
    char g[80], list[160];
    int len = 0;
    for (size_t i = 0; choices[i] && len >= 0 && (size_t)len < sizeof list; i++)
        len += snprintf(list + len, sizeof list - (size_t)len, "%s%s", i ? ", " : "", choices[i]);
    return pcd_yfail(y, n, key, "expected one of %s, got %s", list, got(n, g));
}

/* Whether n is a collection of the type t (what, in an error): 1 when it
 * is, 0 when it is null (read as empty: *count is set to 0), -1 when it is
 * something else (y failed). */
static int collection(pcd_yctx *y, const yaml_node_t *n, const char *key, yaml_node_type_t t,
                      const char *what, size_t *count)
{
    *count = 0;
    if (pcd_yis_null(n))
        return 0;
    char g[80];
    if (!n || n->type != t)
        return pcd_yfail(y, n, key, "expected %s, got %s", what, got(n, g));
    return 1;
}

int pcd_yget_seq(pcd_yctx *y, const yaml_node_t *n, const char *key, size_t max,
                 const yaml_node_item_t **items, size_t *count)
{
    *items = NULL;
    int is = collection(y, n, key, YAML_SEQUENCE_NODE, "a list", count);
    if (is <= 0)
        return is;
    size_t k = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (k > max)
        return pcd_yfail(y, n, key, "has %zu items; at most %zu are accepted", k, max);
    *items = n->data.sequence.items.start;
    *count = k;
    return 0;
}

int pcd_yget_map(pcd_yctx *y, const yaml_node_t *n, const char *key,
                 const yaml_node_pair_t **pairs, size_t *count)
{
    *pairs = NULL;
    int is = collection(y, n, key, YAML_MAPPING_NODE, "a mapping (key: value)", count);
    if (is <= 0)
        return is;
    const yaml_node_pair_t *p = n->data.mapping.pairs.start;
    size_t k = (size_t)(n->data.mapping.pairs.top - p);
    char g[80];
    for (size_t i = 0; i < k; i++) {
        const yaml_node_t *kn = pcd_ynode(y, p[i].key);
        size_t len;
        const char *s = pcd_yscalar(kn, &len);
        if (!s || pcd_yis_null(kn) || len == 0 || memchr(s, 0, len))
            return pcd_yfail(y, kn, key, "keys must be non-empty strings, got %s", got(kn, g));
    }
    *pairs = p;
    *count = k;
    return 0;
}

/* Edit distance counting a swap of neighbours as one edit (optimal string alignment): enough to
 * suggest 'max_connections' for 'max_conections' and 'tcp' for 'tpc'. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return SIZE_MAX;
    size_t rows[3][64], *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

int pcd_ybind(pcd_yctx *y, const yaml_node_t *map, const char *where, const char *const *keys,
              size_t nkeys, yaml_node_t **vals, yaml_node_t **knodes)
{
    yaml_node_t *kbuf[32];
    if (!knodes) {
        if (nkeys > sizeof kbuf / sizeof *kbuf)
            abort(); /* a table in config*.c outgrew this; a programming error */
        knodes = kbuf;
    }
    for (size_t i = 0; i < nkeys; i++)
        vals[i] = knodes[i] = NULL;
    const yaml_node_pair_t *pairs;
    size_t n;
    if (pcd_yget_map(y, map, where, &pairs, &n))
        return -1;
    for (size_t p = 0; p < n; p++) {
        yaml_node_t *kn = pcd_ynode(y, pairs[p].key);
        const char *name = pcd_yscalar(kn, NULL);
        char kb[PCD_YKEY_MAX];
        size_t i = 0;
        while (i < nkeys && strcmp(keys[i], name))
            i++;
        if (i < nkeys && knodes[i])
            return pcd_yfail(y, kn, pcd_ykey(kb, where, name), "duplicate key (first given on line %zu)",
                             knodes[i]->start_mark.line + 1);
        if (i < nkeys) {
            knodes[i] = kn;
            vals[i] = pcd_ynode(y, pairs[p].value);
            continue;
        }
        /* Unknown: suggest the closest key when it is close, then list them all. */
        size_t best = SIZE_MAX, bi = 0;
        for (size_t k = 0; k < nkeys; k++) {
            size_t d = distance(name, keys[k]);
            if (d < best) {
                best = d;
                bi = k;
            }
        }
        size_t nl = strlen(name);
        char hint[96] = "";
        if (best <= (nl < 5 ? 1 : nl < 9 ? 2 : 3))
            snprintf(hint, sizeof hint, "; did you mean '%s'?", keys[bi]);
        char list[400];
        int len = 0;
        for (size_t k = 0; k < nkeys && len >= 0 && (size_t)len < sizeof list; k++)
            len += snprintf(list + len, sizeof list - (size_t)len, "%s%s", k ? ", " : "", keys[k]);
        return pcd_yfail(y, kn, pcd_ykey(kb, where, name), "unknown key%s (%s%s%s takes: %s)", hint,
                         *where ? "'" : "", *where ? where : "the top level", *where ? "'" : "", list);
    }
    return 0;
}

void pcd_ydump_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void pcd_ydump_real(FILE *out, double v)
{
    char buf[40];
    if (v == floor(v) && fabs(v) < 9007199254740992.0) { /* integers as such: 30, not 3e+01 */
        fprintf(out, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, out);
}

/* Counts one more reference to node index; fails on the second. */
static int reference(pcd_yctx *y, unsigned char *seen, int index)
{
    if (!seen[index - 1]++)
        return 0;
    return pcd_yfail(y, pcd_ynode(y, index), NULL,
                     "this value is used again through a YAML alias (*name); aliases are not "
                     "supported in the configuration: write the value out");
}

int pcd_ycheck_tree(pcd_yctx *y)
{
    const yaml_node_t *start = y->doc.nodes.start;
    size_t n = (size_t)(y->doc.nodes.top - start);
    if (n == 0)
        return 0;
    unsigned char *seen = calloc(n, 1);
    if (!seen)
        return pcd_yfail(y, NULL, NULL, "out of memory");
    int rc = reference(y, seen, 1); /* the root, referenced by the document */
    for (size_t i = 0; i < n && rc == 0; i++) {
        const yaml_node_t *node = &start[i];
        if (node->type == YAML_SEQUENCE_NODE) {
            for (const yaml_node_item_t *it = node->data.sequence.items.start;
                 it < node->data.sequence.items.top && rc == 0; it++)
                rc = reference(y, seen, *it);
        } else if (node->type == YAML_MAPPING_NODE) {
            for (const yaml_node_pair_t *p = node->data.mapping.pairs.start;
                 p < node->data.mapping.pairs.top && rc == 0; p++)
                if ((rc = reference(y, seen, p->key)) == 0)
                    rc = reference(y, seen, p->value);
        }
    }
    free(seen);
    return rc;
}

void pcd_free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}
