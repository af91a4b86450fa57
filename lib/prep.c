/* prep.c - the name step of feature preparation: transforms chosen by a
 * glob over feature names, and crosses of two name prefixes (perceptron.h,
 * "feature preparation"; docs/config.md).
 *
 * It runs where a request's names are hashed (proto/features.c and
 * proto/direct.c call pc_namer_add for every named feature), so the journal,
 * which keeps requests as received, replays it by running it again: it must
 * be a function of the config, the request and the model as it stands before
 * the request (rangebins reads the model's scale statistics), and it is.  A derived
 * feature is hashed as the string it is named by ("age#b3", "age#lb12",
 * "education=Masters*sex=Male"), so a client can compute its index, and the
 * names of derived features stay readable in docs and tests.
 */
#include "lib/perceptron.h"
#include "lib/scaler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pc_scale_names[] = {"none", "max", "std", "rms", "rms-sent", NULL};
_Static_assert(PC_SCALE_NONE == 0 && PC_SCALE_MAX == 1 && PC_SCALE_STD == 2 && PC_SCALE_RMS == 3 &&
                   PC_SCALE_RMS_SENT == 4,
               "pc_scale_names follows pc_scale");
const char *const pc_scale_help[] = {
    "the values as sent",
    "each feature divided by the largest |value| it has had: every value in [-1, 1]",
    "each feature divided by its standard deviation where present (its rms when it does not "
    "vary)",
    "each feature divided by its root mean square over every example learned, absent counting "
    "0: a rare feature (a rare category) weighs more",
    "rms for the features sent (and their crosses); the bins that transforms add stay at 1 "
    "(hashed apart from the features: twice the weights)",
};
const char *const pc_transform_names[] = {"log", "bins", "logbins", "rangebins", NULL};
const char *const pc_transform_help[] = {
    "PATTERN:log: v -> sign(v) ln(1 + |v|), the same feature",
    "PATTERN:bins=E1,E2,...: adds NAME#bK = 1, K how many edges are <= v (1 to 16 edges)",
    "PATTERN:logbins: adds NAME#lbK = 1, K = floor(2 log2(1 + |v|)), NAME#lb-K below 0",
    "PATTERN:rangebins=N: adds NAME#rbK = 1, K = floor(N |v| / the largest |v| learned) "
    "(bins learned online; needs scale: max)",
};
_Static_assert(PC_TRANSFORM_LOG == 0 && PC_TRANSFORM_BINS == 1 && PC_TRANSFORM_LOGBINS == 2 &&
                   PC_TRANSFORM_RANGEBINS == 3,
               "pc_transform_names follows pc_transform_kind");

bool pc_prep_names(const pc_prep *p)
{
    return p && (p->ntransforms > 0 || p->ncrosses > 0);
}

/* rms-sent's bins go apart only when a transform makes bins: without one the
 * space, and the model, are rms's. */
static bool bins_apart(const pc_prep *p)
{
    if (!p || p->scale != PC_SCALE_RMS_SENT)
        return false;
    for (uint32_t i = 0; i < p->ntransforms; i++)
        if (p->transforms[i].kind != PC_TRANSFORM_LOG)
            return true;
    return false;
}

uint32_t pc_prep_space(const pc_prep *p, uint32_t dim)
{
    return bins_apart(p) ? 2 * dim : dim;
}

/* ---- the text form of transforms and crosses ------------------------------ */

static pc_status bad_text(pc_error *err, const char *s, size_t len, const char *why)
{
    snprintf(err->msg, sizeof err->msg, "'%.*s': %s", (int)(len < 80 ? len : 80), s, why);
    return PC_EINVAL;
}

static bool copy_text(char *dst, const char *s, size_t len)
{
    if (len == 0 || len > PC_PATTERN_MAX || memchr(s, 0, len))
        return false;
    memcpy(dst, s, len);
    dst[len] = 0;
    return true;
}

/* Edges "E1,E2,...": finite, strictly increasing, at most PC_EDGES_MAX. */
static pc_status parse_edges(const char *s, size_t len, pc_transform *t, const char *all,
                             size_t all_len, pc_error *err)
{
    char buf[PC_PREP_TEXT_MAX];
    if (len == 0 || len >= sizeof buf)
        return bad_text(err, all, all_len, "bins needs its edges: PATTERN:bins=E1,E2,... "
                                           "(increasing numbers)");
    memcpy(buf, s, len);
    buf[len] = 0;
    char *p = buf;
    t->nedges = 0;
    for (;;) {
        char *end;
        double e = strtod(p, &end);
        if (end == p || (*end && *end != ',') || !isfinite(e) || fabs(e) > PC_VALUE_MAX)
            return bad_text(err, all, all_len, "a bin edge is not a finite number");
        if (t->nedges == PC_EDGES_MAX)
            return bad_text(err, all, all_len, "more than 16 bin edges");
        if (t->nedges > 0 && e <= t->edges[t->nedges - 1])
            return bad_text(err, all, all_len, "bin edges must be strictly increasing");
        t->edges[t->nedges++] = e;
        if (!*end)
            return PC_OK;
        p = end + 1;
    }
}

pc_status pc_transform_parse(const char *s, size_t len, pc_transform *t, pc_error *err)
{
    memset(t, 0, sizeof *t);
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ':')
            colon = s + i;
    if (!colon)
        return bad_text(err, s, len, "a transform is PATTERN:log, PATTERN:logbins, "
                                     "PATTERN:bins=E1,E2,... or PATTERN:rangebins=N");
    size_t plen = (size_t)(colon - s);
    if (!copy_text(t->pattern, s, plen))
        return bad_text(err, s, len, "the pattern must be 1 to 47 bytes without NUL");
    const char *k = colon + 1;
    size_t klen = len - plen - 1;
    if (klen == 3 && memcmp(k, "log", 3) == 0) {
        t->kind = PC_TRANSFORM_LOG;
        return PC_OK;
    }
    if (klen == 7 && memcmp(k, "logbins", 7) == 0) {
        t->kind = PC_TRANSFORM_LOGBINS;
        return PC_OK;
    }
    if (klen >= 5 && memcmp(k, "bins=", 5) == 0) {
        t->kind = PC_TRANSFORM_BINS;
        return parse_edges(k + 5, klen - 5, t, s, len, err);
    }
    if (klen >= 10 && memcmp(k, "rangebins=", 10) == 0) {
        char num[8] = "";
        size_t nl = klen - 10;
        if (nl == 0 || nl >= sizeof num)
            return bad_text(err, s, len, "rangebins needs its number of bins, 2 to 64");
        memcpy(num, k + 10, nl);
        char *end;
        long n = strtol(num, &end, 10);
        if (*end || n < 2 || n > PC_RANGEBINS_MAX)
            return bad_text(err, s, len, "rangebins needs its number of bins, 2 to 64");
        t->kind = PC_TRANSFORM_RANGEBINS;
        t->nbins = (uint8_t)n;
        return PC_OK;
    }
    return bad_text(err, s, len,
                    "unknown transform: use log, logbins, bins=E1,E2,... or rangebins=N");
}

pc_status pc_cross_parse(const char *s, size_t len, pc_cross *c, pc_error *err)
{
    memset(c, 0, sizeof *c);
    const char *comma = memchr(s, ',', len);
    if (!comma)
        return bad_text(err, s, len, "a cross is two name prefixes: PREFIX_A,PREFIX_B");
    size_t alen = (size_t)(comma - s), blen = len - alen - 1;
    if (memchr(comma + 1, ',', blen))
        return bad_text(err, s, len, "a cross pairs two name prefixes, not more (give each "
                                     "pair as its own cross)");
    if (!copy_text(c->a, s, alen) || !copy_text(c->b, comma + 1, blen))
        return bad_text(err, s, len, "each prefix must be 1 to 47 bytes without NUL");
    return PC_OK;
}

void pc_transform_format(const pc_transform *t, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s:%s", t->pattern, pc_transform_names[t->kind]);
    if (t->kind == PC_TRANSFORM_RANGEBINS && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "=%u", t->nbins);
    for (uint32_t i = 0; i < t->nedges && n > 0 && (size_t)n < cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%.17g", i ? "," : "=", t->edges[i]);
}

void pc_cross_format(const pc_cross *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s,%s", c->a, c->b);
}

/* ---- the name step ----------------------------------------------------- */

/* A glob over (s, n), not NUL-terminated: '*' matches any run, '?' one byte.
 * Iterative with one backtrack point, so linear in practice and never
 * recursive whatever a pattern holds. */
static bool glob_match(const char *p, const char *s, size_t n)
{
    const char *star = NULL;
    size_t i = 0, mark = 0;
    while (i < n) {
        if (*p == '*') {
            star = ++p;
            mark = i;
        } else if (*p && (*p == '?' || *p == s[i])) {
            p++;
            i++;
        } else if (star) {
            p = star;
            i = ++mark;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == 0;
}

static bool has_prefix(const char *prefix, const char *s, size_t n)
{
    size_t k = strlen(prefix);
    return k <= n && memcmp(prefix, s, k) == 0;
}

/* The index of the feature named by the concatenation of parts, as
 * pc_hash_feature hashes that name, offset by space_at (dim for a bin kept
 * apart, else 0): the name is built on the stack (on the heap past
 * PC_DERIVED_NAME_MAX bytes) and hashed in one call, and a namer that wants
 * to be told (on_derived) gets it. */
static pc_status derived_index(const pc_namer *nm, const char *const *part, const size_t *len,
                               int n, uint32_t space_at, uint32_t *idx)
{
    char stack[PC_DERIVED_NAME_MAX], *name = stack;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += len[i];
    if (total > sizeof stack && !(name = malloc(total)))
        return PC_ENOMEM;
    for (int i = 0, at = 0; i < n; at += (int)len[i], i++)
        memcpy(name + at, part[i], len[i]);
    *idx = space_at + pc_hash_feature(name, total, nm->dim);
    if (nm->on_derived)
        nm->on_derived(nm->ud, *idx, name, total);
    if (name != stack)
        free(name);
    return PC_OK;
}

/* The half-octave of 1 + |v|: floor(2 log2(1 + |v|)), from the exponent and
 * one comparison, so that it is the same on every machine (no libm). */
static int half_octave(double v)
{
    int e;
    double m = frexp(1 + fabs(v), &e); /* 1 + |v| = m 2^e, m in [0.5, 1) */
    return 2 * (e - 1) + (m >= 0.70710678118654752440 ? 1 : 0);
}

/* Appends the decimal digits of k (>= 0) at p; returns the end. */
static char *put_digits(char *p, long k)
{
    char rev[24];
    int n = 0;
    do
        rev[n++] = (char)('0' + k % 10);
    while ((k /= 10) > 0);
    while (n > 0)
        *p++ = rev[--n];
    return p;
}

/* Adds the feature NAME TAG K with value 1 ("age#b2", "age#lb-3"). */
static pc_status add_bin(pc_namer *nm, pc_svec *x, const char *name, size_t len, const char *tag,
                         long k)
{
    char suffix[32];
    size_t tl = strlen(tag);
    memcpy(suffix, tag, tl);
    const char *part[] = {name, suffix};
    size_t plen[] = {len, (size_t)(put_digits(suffix + tl, k) - suffix)};
    uint32_t idx;
    pc_status st = derived_index(nm, part, plen, 2, nm->bins_at, &idx);
    return st == PC_OK ? pc_svec_push(x, idx, 1.0) : st;
}

static pc_status add_bin_feature(pc_namer *nm, pc_svec *x, const pc_transform *t,
                                 const char *name, size_t len, uint32_t idx, double v)
{
    if (t->kind == PC_TRANSFORM_BINS) {
        long k = 0;
        while (k < t->nedges && t->edges[k] <= v)
            k++;
        return add_bin(nm, x, name, len, "#b", k);
    }
    if (t->kind == PC_TRANSFORM_RANGEBINS) {
        /* the range as the model has learned it; a value past it (or a
         * feature not learned yet) is in the top bin */
        double m = !nm->scales ? 0 : idx < nm->dim ? pc_scaler_divisor(nm->scales, idx) : 1;
        double a = fabs(v);
        long k = a < m ? (long)(t->nbins * (a / m)) : t->nbins - 1;
        if (k > t->nbins - 1)
            k = t->nbins - 1;
        return add_bin(nm, x, name, len, v < 0 ? "#rb-" : "#rb", k);
    }
    int k = half_octave(v);
    return add_bin(nm, x, name, len, v < 0 ? "#lb-" : "#lb", k);
}

pc_status pc_namer_add_prepared(pc_namer *nm, pc_svec *x, const char *name, size_t len, double v)
{
    const pc_prep *p = nm->prep;
    const pc_transform *t = NULL;
    for (uint32_t i = 0; p && i < p->ntransforms && !t; i++)
        if (glob_match(p->transforms[i].pattern, name, len))
            t = &p->transforms[i];
    if (t && t->kind == PC_TRANSFORM_LOG)
        v = copysign(log1p(fabs(v)), v);
    uint32_t idx = pc_hash_feature(name, len, nm->dim);
    if (nm->on_name)
        nm->on_name(nm->ud, idx, name, len);
    pc_status st = pc_svec_push(x, idx, v);
    if (!p) /* plain hashing, for a namer that keeps the names (on_name) */
        return st;
    if (st == PC_OK && t && t->kind != PC_TRANSFORM_LOG)
        st = add_bin_feature(nm, x, t, name, len, idx, v);
    if (st != PC_OK || p->ncrosses == 0)
        return st;
    uint32_t sides = 0;
    for (uint32_t k = 0; k < p->ncrosses; k++)
        sides |= (has_prefix(p->crosses[k].a, name, len) ? 1u : 0u) << (2 * k) |
                 (has_prefix(p->crosses[k].b, name, len) ? 2u : 0u) << (2 * k);
    if (!sides)
        return PC_OK;
    if (nm->n == nm->cap) {
        uint32_t cap = nm->cap ? 2 * nm->cap : 16;
        pc_named_ref *r = realloc(nm->refs, cap * sizeof *r);
        if (!r)
            return PC_ENOMEM;
        nm->refs = r;
        nm->cap = cap;
    }
    nm->refs[nm->n++] = (pc_named_ref){name, (uint32_t)len, sides, v};
    return PC_OK;
}

pc_status pc_namer_end(pc_namer *nm, pc_svec *x)
{
    const pc_prep *p = nm->prep;
    if (!p || nm->n == 0)
        return PC_OK;
    uint32_t made = 0;
    for (uint32_t k = 0; k < p->ncrosses; k++) {
        /* With the same prefix on both sides each pair is crossed once. */
        bool same = strcmp(p->crosses[k].a, p->crosses[k].b) == 0;
        for (uint32_t i = 0; i < nm->n; i++) {
            if (!(nm->refs[i].sides >> (2 * k) & 1))
                continue;
            for (uint32_t j = same ? i + 1 : 0; j < nm->n; j++) {
                if (j == i || !(nm->refs[j].sides >> (2 * k) & 2))
                    continue;
                if (made == p->max_crossed)
                    goto done;
                const pc_named_ref *a = &nm->refs[i], *b = &nm->refs[j];
                const char *part[] = {a->name, "*", b->name};
                size_t plen[] = {a->len, 1, b->len};
                double v = a->v * b->v;
                v = v > PC_VALUE_MAX ? PC_VALUE_MAX : v < -PC_VALUE_MAX ? -PC_VALUE_MAX : v;
                uint32_t idx;
                if (derived_index(nm, part, plen, 3, 0, &idx) != PC_OK ||
                    pc_svec_push(x, idx, v) != PC_OK)
                    return PC_ENOMEM;
                made++;
            }
        }
    }
done:
    nm->n = 0;
    return PC_OK;
}

void pc_namer_set(pc_namer *nm, uint32_t dim, const pc_prep *prep)
{
    nm->n = 0;
    nm->scales = NULL;
    nm->on_derived = NULL;
    nm->on_name = NULL;
    nm->dim = dim;
    nm->bins_at = bins_apart(prep) ? dim : 0;
    nm->prep = pc_prep_names(prep) ? prep : NULL;
}

void pc_namer_free(pc_namer *nm)
{
    free(nm->refs);
    nm->refs = NULL;
    nm->n = nm->cap = 0;
}
