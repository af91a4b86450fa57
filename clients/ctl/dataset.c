/* dataset.c - libsvm and CSV example parsers (see dataset.h).
 *
 * One line at a time with getline(), parsed in place: a CSV field's quotes
 * are removed by shifting its bytes left inside the line buffer, and the
 * example's label and names point into that buffer (or into the header's
 * copies).  Nothing is kept from a line once the next is read, so any file
 * size streams in the memory of its longest line.
 */
#include "clients/ctl/dataset.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "lib/grow.h"

typedef struct field {
    char *s;    /* NUL-terminated, unquoted, trimmed */
    size_t len;
    size_t col; /* 1-based byte column where the field starts */
} field;

struct pcc_dataset {
    FILE *f;
    bool own;
    bool may_wait; /* not a regular file: a read may wait for a writer */
    char *name;
    pcc_ds_options opt;
    char *line;
    size_t cap;
    uint64_t lineno, done, total;
    bool failed;
    pcc_ds_feature *feat;
    size_t nfeat, featcap;
    /* CSV */
    field *fields;
    size_t nfields, fieldcap;
    bool started;     /* the first line was seen */
    size_t ncols;
    long label;       /* column index, -1 when the file has no labels */
    char **names;     /* header names (owned), or NULL */
    size_t nnames, names_len; /* names_len: their bytes, for sizing cat */
    bool *skip;       /* --ignore: the columns left out (ncols entries), or NULL */
    bool *catcol;     /* --categorical: columns whose numbers are categories too, or NULL */
    /* categorical values' names, "column=value" (CSV) or "key=value" (JSON),
     * grown once per line to the most that line can need */
    char *cat;
    size_t catlen, catcap;
    /* JSON lines */
    json_t *json;     /* the current line's document (names point into it) */
    char label_buf[64]; /* a numeric JSON label as text */
};

static int fail(pcc_dataset *ds, char *err, size_t errlen, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(pcc_dataset *ds, char *err, size_t errlen, size_t col, const char *fmt, ...)
{
    int n =
        col ? snprintf(err, errlen, "%s:%llu:%zu: ", ds->name, (unsigned long long)ds->lineno, col)
            : snprintf(err, errlen, "%s:%llu: ", ds->name, (unsigned long long)ds->lineno);
    if (n >= 0 && (size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    ds->failed = true;
    return -1;
}

int pcc_ds_binary_label(const char *s, size_t len)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    double v = strtod(buf, &end);
    if (*end || end == buf)
        return 0;
    return v == 1 ? 1 : v == -1 || v == 0 ? -1 : 0;
}

int pcc_ds_open_file(FILE *f, const char *name, const pcc_ds_options *opt, pcc_dataset **out,
                     char *err, size_t errlen)
{
    pcc_dataset *ds = calloc(1, sizeof *ds);
    if (!ds || !(ds->name = strdup(name))) {
        free(ds);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ds->f = f;
    ds->opt = *opt;
    if (!ds->opt.delimiter)
        ds->opt.delimiter = ',';
    ds->label = -1;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
        ds->total = (uint64_t)st.st_size;
    else
        ds->may_wait = true;
    *out = ds;
    return 0;
}

int pcc_ds_open(const char *path, const pcc_ds_options *opt, pcc_dataset **out, char *err,
                size_t errlen)
{
    bool std = strcmp(path, "-") == 0;
    FILE *f = std ? stdin : fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (pcc_ds_open_file(f, std ? "(stdin)" : path, opt, out, err, errlen) != 0) {
        if (!std)
            fclose(f);
        return -1;
    }
    (*out)->own = !std;
    return 0;
}

bool pcc_ds_would_wait(const pcc_dataset *ds)
{
    /* Bytes stdio already holds are not seen here: then this says true while
     * lines are still buffered, which costs an early write, never a wait. */
    struct pollfd p = {.fd = fileno(ds->f), .events = POLLIN};
    return ds->may_wait && poll(&p, 1, 0) == 0;
}

void pcc_ds_close(pcc_dataset *ds)
{
    if (!ds)
        return;
    if (ds->own)
        fclose(ds->f);
    for (size_t i = 0; i < ds->nnames; i++)
        free(ds->names[i]);
    free(ds->names);
    free(ds->skip);
    free(ds->catcol);
    free(ds->cat);
    json_decref(ds->json);
    free(ds->fields);
    free(ds->feat);
    free(ds->line);
    free(ds->name);
    free(ds);
}

void pcc_ds_progress(const pcc_dataset *ds, uint64_t *done, uint64_t *total)
{
    *done = ds->done;
    *total = ds->total;
}

const char *const *pcc_ds_header(const pcc_dataset *ds, size_t *n)
{
    *n = ds->nnames;
    return (const char *const *)ds->names;
}

/* Reads the next line into ds->line without its end of line.  1, 0 at EOF,
 * -1 on error. */
static int read_line(pcc_dataset *ds, size_t *len, char *err, size_t errlen)
{
    errno = 0;
    ssize_t n = getline(&ds->line, &ds->cap, ds->f);
    if (n < 0) {
        if (ferror(ds->f))
            return fail(ds, err, errlen, 0, "read error: %s", strerror(errno ? errno : EIO));
        return 0;
    }
    ds->lineno++;
    ds->done += (uint64_t)n;
    if (memchr(ds->line, 0, (size_t)n))
        return fail(ds, err, errlen, 0, "the line holds a NUL byte (is this a text file?)");
    while (n > 0 && (ds->line[n - 1] == '\n' || ds->line[n - 1] == '\r'))
        ds->line[--n] = 0;
    *len = (size_t)n;
    return 1;
}

static bool push_feature(pcc_dataset *ds, const char *name, size_t name_len, uint32_t index,
                         double value)
{
    if (!PC_GROW(ds->feat, ds->featcap, ds->nfeat, 64))
        return false;
    ds->feat[ds->nfeat++] = (pcc_ds_feature){name, name_len, index, value};
    return true;
}

/* A finite number spanning all of s. */
static bool number(const char *s, double *v)
{
    if (!*s)
        return false;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return !*end && isfinite(*v) && errno != ERANGE;
}

/* Text strtod reads whole but that is no finite number (nan, inf, 1e999):
 * an error, not a category, since it was meant as a number. */
static bool bad_number(const char *s)
{
    if (!*s)
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    return !*end && (!isfinite(v) || errno == ERANGE);
}

/* Makes room for `need` more bytes of categorical names on this line.  Called
 * once per line before any name is appended, so the pointers handed out stay
 * valid until the next line. */
static bool cat_reserve(pcc_dataset *ds, size_t need)
{
    ds->catlen = 0;
    return PC_RESERVE(ds->cat, ds->catcap, need);
}

/* A check that the room reserved for the line holds one more name (an
 * assertion of the bound cat_reserve was given). */
static bool cat_reserve_more(pcc_dataset *ds, size_t more)
{
    return ds->catlen + more <= ds->catcap;
}

/* Appends "col=value" (NUL-terminated) and returns it; the room was
 * reserved by cat_reserve. */
static const char *cat_name(pcc_dataset *ds, const char *col, size_t clen, const char *val,
                            size_t vlen, size_t *len)
{
    char *p = ds->cat + ds->catlen;
    memcpy(p, col, clen);
    p[clen] = '=';
    memcpy(p + clen + 1, val, vlen);
    p[clen + 1 + vlen] = 0;
    *len = clen + 1 + vlen;
    ds->catlen += *len + 1;
    return p;
}

/* ---- libsvm ------------------------------------------------------------ */

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

static int libsvm_line(pcc_dataset *ds, char *line, pcc_ds_example *ex, char *err, size_t errlen)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = 0; /* svmlight: the rest of the line is a comment */
    char *p = line;
    while (blank(*p))
        p++;
    if (!*p)
        return 0; /* blank or comment only */
    char *label = p;
    while (*p && !blank(*p))
        p++;
    size_t label_len = (size_t)(p - label);
    if (memchr(label, ':', label_len) && ds->opt.labels_optional) {
        p = label; /* no label: the line is all features */
        label = NULL;
        label_len = 0;
    } else if (memchr(label, ':', label_len)) {
        return fail(ds, err, errlen, (size_t)(label - line) + 1,
                    "the line starts with '%.*s', not a label (LABEL INDEX:VALUE ...)",
                    (int)label_len, label);
    }
    if (label && *p)
        *p++ = 0;
    ds->nfeat = 0;
    for (;;) {
        while (blank(*p))
            p++;
        if (!*p)
            break;
        char *tok = p;
        while (*p && !blank(*p))
            p++;
        if (*p)
            *p++ = 0;
        size_t col = (size_t)(tok - line) + 1;
        /* named: the last colon splits NAME:VALUE, so names may hold colons */
        char *colon = ds->opt.named ? strrchr(tok, ':') : strchr(tok, ':');
        if (!colon && ds->opt.named) {
            if (!push_feature(ds, tok, strlen(tok), 0, 1))
                return fail(ds, err, errlen, 0, "out of memory");
            continue;
        }
        if (!colon)
            return fail(ds, err, errlen, col, "expected INDEX:VALUE, found '%s'", tok);
        *colon = 0;
        if (strcmp(tok, "qid") == 0 && !ds->opt.named)
            continue; /* query ids are for ranking; ignored */
        char *end;
        errno = 0;
        unsigned long long idx = strtoull(tok, &end, 10);
        bool is_index = tok[0] >= '0' && tok[0] <= '9' && !*end && !errno && idx <= UINT32_MAX;
        if (!is_index && !(ds->opt.named && tok[0]))
            return fail(ds, err, errlen, col,
                        "bad feature index '%s' (an integer from 0 to 4294967295)", tok);
        double v;
        if (!number(colon + 1, &v))
            return fail(ds, err, errlen, (size_t)(colon + 1 - line) + 1,
                        "bad value '%s' for feature %s (a finite number)", colon + 1, tok);
        if (!push_feature(ds, is_index ? NULL : tok, is_index ? 0 : strlen(tok),
                          is_index ? (uint32_t)idx : 0, v))
            return fail(ds, err, errlen, 0, "out of memory");
    }
    *ex = (pcc_ds_example){
        .line = ds->lineno,
        .label = label,
        .label_len = label_len,
        .label_col = label ? (size_t)(label - line) + 1 : 0,
        .y = label ? pcc_ds_binary_label(label, label_len) : 0,
        .dense = false,
        .n = ds->nfeat,
        .f = ds->feat,
    };
    return 1;
}

/* ---- CSV ------------------------------------------------------------------- */

static int split(pcc_dataset *ds, char *line, char *err, size_t errlen)
{
    ds->nfields = 0;
    char delim = ds->opt.delimiter;
    char *p = line;
    for (;;) {
        if (!PC_GROW(ds->fields, ds->fieldcap, ds->nfields, 32))
            return fail(ds, err, errlen, 0, "out of memory");
        while (blank(*p) && *p != delim)
            p++;
        field *f = &ds->fields[ds->nfields++];
        f->col = (size_t)(p - line) + 1;
        f->s = p;
        char *w = p; /* where the unquoted bytes go */
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p)
                    return fail(ds, err, errlen, f->col,
                                "unterminated quote (a field cannot span lines)");
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *w++ = *p++;
                }
            }
            while (blank(*p) && *p != delim)
                p++;
            if (*p && *p != delim)
                return fail(ds, err, errlen, (size_t)(p - line) + 1,
                            "unexpected '%c' after a quoted field", *p);
        } else {
            while (*p && *p != delim)
                p++;
            w = p;
            while (w > f->s && blank(w[-1]) && w[-1] != delim)
                w--;
        }
        f->len = (size_t)(w - f->s);
        bool more = *p == delim;
        *w = 0; /* w <= p: the delimiter or the end is at or after it */
        if (!more)
            return 0;
        p++;
    }
}

static bool is_number_or_empty(const field *f)
{
    double v;
    return f->len == 0 || number(f->s, &v);
}

/* The first line: how many columns, which is the label, is it a header. */
static int csv_first(pcc_dataset *ds, bool *header, char *err, size_t errlen)
{
    const char *lc = ds->opt.label_column;
    size_t n = ds->nfields;
    ds->ncols = n;
    bool by_name = false;
    if (!lc || strcmp(lc, "last") == 0) {
        ds->label = (long)n - 1;
    } else if (strcmp(lc, "none") == 0) {
        ds->label = -1;
    } else {
        char *end;
        errno = 0;
        unsigned long k = strtoul(lc, &end, 10);
        if (lc[0] >= '1' && lc[0] <= '9' && !*end && !errno) {
            if (k > n)
                return fail(ds, err, errlen, 0,
                            "label column %lu, but the first line has %zu columns", k, n);
            ds->label = (long)k - 1;
        } else {
            by_name = true; /* resolved against the header below */
        }
    }
    *header = ds->opt.header || by_name;
    for (size_t j = 0; j < n && !*header; j++)
        if ((long)j != ds->label && !is_number_or_empty(&ds->fields[j]))
            *header = true;
    if (!*header)
        return 0;
    ds->names = calloc(n, sizeof *ds->names);
    if (!ds->names)
        return fail(ds, err, errlen, 0, "out of memory");
    ds->nnames = n;
    for (size_t j = 0; j < n; j++)
        if (!(ds->names[j] = strdup(ds->fields[j].s)))
            return fail(ds, err, errlen, 0, "out of memory");
    if (lc && strcmp(lc, "last") != 0 && strcmp(lc, "none") != 0) {
        for (size_t j = 0; j < n; j++)
            if (strcmp(ds->names[j], lc) == 0) {
                ds->label = (long)j;
                return 0;
            }
        if (by_name)
            return fail(ds, err, errlen, 0, "no column is named '%s' in the header", lc);
    }
    if (ds->opt.header)
        for (size_t j = 0; j < n; j++)
            if ((long)j != ds->label && ds->names[j][0] == 0)
                return fail(ds, err, errlen, ds->fields[j].col,
                            "column %zu has an empty name in the header", j + 1);
    for (size_t j = 0; j < n; j++)
        ds->names_len += strlen(ds->names[j]);
    return 0;
}

/* A column list (--ignore, --categorical): comma-separated column names
 * (from the header) or numbers from 1, as a flag per column in *out. */
static int column_list(pcc_dataset *ds, const char *list, const char *what, bool **out, char *err,
                       size_t errlen)
{
    const char *p = list;
    if (!p || !*p)
        return 0;
    if (!(*out = calloc(ds->ncols, sizeof **out)))
        return fail(ds, err, errlen, 0, "out of memory");
    while (*p) {
        size_t len = strcspn(p, ",");
        bool found = false;
        for (size_t j = 0; j < ds->nnames && !found; j++)
            if (strlen(ds->names[j]) == len && memcmp(ds->names[j], p, len) == 0)
                (*out)[j] = found = true;
        if (!found) {
            char num[24];
            snprintf(num, sizeof num, "%.*s", (int)(len < 20 ? len : 20), p);
            uint64_t k = 0;
            bool digits = len > 0 && len < 20 && strspn(num, "0123456789") == len;
            if (digits)
                k = strtoull(num, NULL, 10);
            if (!digits || k < 1 || k > ds->ncols)
                return fail(ds, err, errlen, 0,
                            "%s: no column is named '%.*s'%s (names from the header, or "
                            "numbers 1 to %zu)",
                            what, (int)len, p, ds->names ? "" : " and the file has no header",
                            ds->ncols);
            (*out)[k - 1] = true;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

static int csv_ignore(pcc_dataset *ds, char *err, size_t errlen)
{
    if (column_list(ds, ds->opt.ignore, "--ignore", &ds->skip, err, errlen) != 0 ||
        column_list(ds, ds->opt.categorical, "--categorical", &ds->catcol, err, errlen) != 0)
        return -1;
    if (ds->label >= 0 && ds->skip && ds->skip[ds->label])
        return fail(ds, err, errlen, 0, "--ignore names the label column (%ld)", ds->label + 1);
    return 0;
}

static int csv_line(pcc_dataset *ds, char *line, size_t len, pcc_ds_example *ex, char *err,
                    size_t errlen)
{
    if (len == 0)
        return 0;
    if (split(ds, line, err, errlen) != 0)
        return -1;
    if (ds->nfields == 1 && ds->fields[0].len == 0)
        return 0; /* blank */
    if (!ds->started) {
        ds->started = true;
        bool header;
        if (csv_first(ds, &header, err, errlen) != 0 || csv_ignore(ds, err, errlen) != 0)
            return -1;
        if (header)
            return 0;
    }
    if (ds->nfields != ds->ncols)
        return fail(ds, err, errlen, 0, "%zu fields, but the first line has %zu", ds->nfields,
                    ds->ncols);
    bool named = ds->opt.header, dense = !named;
    ds->nfeat = 0;
    /* the most this line's categorical names can take: every field a
     * category named by its column (a header name or a number) */
    if (!cat_reserve(ds, len + ds->nfields * 24 + ds->names_len + 1))
        return fail(ds, err, errlen, 0, "out of memory");
    uint32_t index = 0;
    for (size_t j = 0; j < ds->nfields; j++) {
        const field *f = &ds->fields[j];
        if ((long)j == ds->label || (ds->skip && ds->skip[j]))
            continue;
        double v = 0;
        const char *nm = named ? ds->names[j] : NULL;
        size_t nlen = nm ? strlen(nm) : 0;
        bool category = f->len && ds->catcol && ds->catcol[j];
        if (category || (f->len && !number(f->s, &v))) {
            if (!category && bad_number(f->s)) {
                if (ds->names)
                    return fail(ds, err, errlen, f->col,
                                "'%s' in column '%s' is not a finite number", f->s, ds->names[j]);
                return fail(ds, err, errlen, f->col, "'%s' in column %zu is not a finite number",
                            f->s, j + 1);
            }
            /* a category: the feature "column=value" with value 1 (VW's way) */
            char num[24];
            const char *col = ds->names ? ds->names[j] : num;
            if (!ds->names)
                snprintf(num, sizeof num, "%zu", j + 1);
            nm = cat_name(ds, col, strlen(col), f->s, f->len, &nlen);
            v = 1;
            dense = false;
        }
        if (nm ? f->len > 0 : true) {
            if (!push_feature(ds, nm, nlen, index, v))
                return fail(ds, err, errlen, 0, "out of memory");
        }
        index++;
    }
    /* not dense: indexed numeric columns beside named categories, as a map
     * (the same indices a dense line gives them) */
    *ex = (pcc_ds_example){.line = ds->lineno, .dense = dense, .n = ds->nfeat, .f = ds->feat};
    if (ds->label >= 0) {
        const field *f = &ds->fields[ds->label];
        if (f->len == 0 && ds->opt.labels_optional)
            return 1; /* no label on this line */
        if (f->len == 0)
            return fail(ds, err, errlen, f->col, "empty label (column %ld)", ds->label + 1);
        ex->label = f->s;
        ex->label_len = f->len;
        ex->label_col = f->col;
        ex->y = pcc_ds_binary_label(f->s, f->len);
    }
    return 1;
}

/* ---- JSON lines ---------------------------------------------------------------- */

/* A JSON scalar of a flat object as one feature. */
static int json_feature(pcc_dataset *ds, const char *key, size_t klen, json_t *v, char *err,
                        size_t errlen)
{
    size_t nlen;
    const char *nm;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
    case JSON_REAL:
        if (!push_feature(ds, key, klen, 0, json_number_value(v)))
            return fail(ds, err, errlen, 0, "out of memory");
        return 0;
    case JSON_TRUE:
        if (!push_feature(ds, key, klen, 0, 1))
            return fail(ds, err, errlen, 0, "out of memory");
        return 0;
    case JSON_FALSE:
    case JSON_NULL: return 0; /* absent */
    case JSON_STRING:
        if (!cat_reserve_more(ds, klen + json_string_length(v) + 2))
            return fail(ds, err, errlen, 0, "out of memory");
        nm = cat_name(ds, key, klen, json_string_value(v), json_string_length(v), &nlen);
        if (!push_feature(ds, nm, nlen, 0, 1))
            return fail(ds, err, errlen, 0, "out of memory");
        return 0;
    default:
        return fail(ds, err, errlen, 0,
                    "feature '%.*s' is an %s; features are numbers, strings (categories), "
                    "booleans or null",
                    (int)klen, key, json_is_array(v) ? "array" : "object");
    }
}

static int jsonl_line(pcc_dataset *ds, const char *line, size_t len, pcc_ds_example *ex,
                      char *err, size_t errlen)
{
    size_t skip = strspn(line, " \t");
    if (skip == len)
        return 0; /* blank */
    json_decref(ds->json);
    json_error_t je;
    ds->json = json_loadb(line, len, JSON_ALLOW_NUL, &je);
    if (!ds->json)
        return fail(ds, err, errlen, je.column > 0 ? (size_t)je.column : 0, "not JSON: %s",
                    je.text);
    if (!json_is_object(ds->json))
        return fail(ds, err, errlen, skip + 1, "a line must be a JSON object, not %s",
                    json_is_array(ds->json) ? "an array" : "a scalar");
    const char *lk = ds->opt.label_column;
    if (!lk || strcmp(lk, "last") == 0)
        lk = "label";
    bool labelled = strcmp(lk, "none") != 0;
    *ex = (pcc_ds_example){.line = ds->lineno};
    if (labelled) {
        json_t *l = json_object_get(ds->json, lk);
        if (!l && !ds->opt.labels_optional)
            return fail(ds, err, errlen, 0, "no '%s' key (the label; --label-column names another)",
                        lk);
        if (!l) {
            /* no label on this line (labels_optional) */
        } else if (json_is_string(l) && json_string_length(l) > 0) {
            ex->label = json_string_value(l);
            ex->label_len = json_string_length(l);
        } else if (json_is_integer(l)) {
            snprintf(ds->label_buf, sizeof ds->label_buf, "%" JSON_INTEGER_FORMAT,
                     json_integer_value(l));
        } else if (json_is_real(l)) {
            snprintf(ds->label_buf, sizeof ds->label_buf, "%.17g", json_real_value(l));
        } else {
            return fail(ds, err, errlen, 0, "the label '%s' must be a non-empty string or a number",
                        lk);
        }
        if (l && !ex->label) {
            ex->label = ds->label_buf;
            ex->label_len = strlen(ds->label_buf);
        }
        ex->label_col = 1;
        ex->y = ex->label ? pcc_ds_binary_label(ex->label, ex->label_len) : 0;
    }
    ds->nfeat = 0;
    /* every "key": "value" pair takes at least klen + vlen + 5 bytes of the
     * line (escapes only shrink when decoded): the line's length bounds the
     * names "key=value\0" */
    if (!cat_reserve(ds, len + 16))
        return fail(ds, err, errlen, 0, "out of memory");
    json_t *fs = json_object_get(ds->json, "features");
    const char *key;
    size_t klen;
    json_t *v;
    if (fs && json_is_array(fs)) { /* dense */
        size_t i;
        json_array_foreach(fs, i, v) {
            if (!json_is_number(v))
                return fail(ds, err, errlen, 0, "features[%zu] is not a number (a dense array "
                            "holds numbers only)", i);
            if (!push_feature(ds, NULL, 0, (uint32_t)i, json_number_value(v)))
                return fail(ds, err, errlen, 0, "out of memory");
        }
        ex->dense = true;
    } else if (fs && json_is_object(fs)) {
        json_object_keylen_foreach(fs, key, klen, v) {
            if (json_feature(ds, key, klen, v, err, errlen) != 0)
                return -1;
        }
    } else if (fs) {
        return fail(ds, err, errlen, 0, "'features' must be an object or an array of numbers");
    } else {
        json_object_keylen_foreach(ds->json, key, klen, v) {
            if (labelled && strcmp(key, lk) == 0 && strlen(lk) == klen)
                continue;
            if (json_feature(ds, key, klen, v, err, errlen) != 0)
                return -1;
        }
    }
    ex->n = ds->nfeat;
    ex->f = ds->feat;
    return 1;
}

/* ---- libsvm names files ----------------------------------------------------- */

void pcc_ds_names_free(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

int pcc_ds_names_load(const char *path, char ***names, size_t *n, char *err, size_t errlen)
{
    *names = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL, **v = NULL;
    size_t cap = 0, vcap = 0, nv = 0;
    uint64_t lineno = 0, next = 1;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        char *p = line + strspn(line, " \t");
        if (!*p || *p == '#')
            continue;
        uint64_t idx = next;
        char *end;
        errno = 0;
        unsigned long long k = strtoull(p, &end, 10);
        if (p[0] >= '0' && p[0] <= '9' && (*end == ' ' || *end == '\t') && !errno) {
            idx = k;
            p = end + strspn(end, " \t");
        }
        if (!*p || idx >= (1ull << 28)) {
            snprintf(err, errlen, "%s:%llu: expected INDEX NAME or NAME (an index below 2^28)",
                     path, (unsigned long long)lineno);
            rc = -1;
            break;
        }
        next = idx + 1;
        if (idx >= vcap) {
            size_t nc = vcap ? vcap : 64;
            while (nc <= idx)
                nc *= 2;
            char **g = realloc(v, nc * sizeof *g);
            if (!g) {
                snprintf(err, errlen, "out of memory reading %s", path);
                rc = -1;
                break;
            }
            memset(g + vcap, 0, (nc - vcap) * sizeof *g);
            v = g;
            vcap = nc;
        }
        free(v[idx]);
        if (!(v[idx] = strdup(p))) {
            snprintf(err, errlen, "out of memory reading %s", path);
            rc = -1;
            break;
        }
        if (idx + 1 > nv)
            nv = idx + 1;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno ? errno : EIO));
        rc = -1;
    }
    free(line);
    fclose(f);
    if (rc != 0) {
        pcc_ds_names_free(v, vcap);
        return -1;
    }
    *names = v;
    *n = nv;
    return 0;
}

pcc_ds_format pcc_ds_format_of(const char *path, char *delim)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot && !(slash && dot < slash)) {
        if (strcmp(dot, ".csv") == 0)
            return PCC_DS_CSV;
        if (strcmp(dot, ".tsv") == 0) {
            if (delim)
                *delim = '\t';
            return PCC_DS_CSV;
        }
        if (strcmp(dot, ".jsonl") == 0 || strcmp(dot, ".ndjson") == 0 || strcmp(dot, ".json") == 0)
            return PCC_DS_JSONL;
        if (strcmp(dot, ".svm") == 0 || strcmp(dot, ".libsvm") == 0 || strcmp(dot, ".svmlight") == 0)
            return PCC_DS_LIBSVM;
    }
    /* Another name (UCI's adult.data): the first line that is not blank or a
     * '#' comment tells: '{' starts JSON, a comma or a tab without any
     * INDEX:VALUE pair is CSV, anything else libsvm.  Stdin is not read
     * ahead: libsvm unless --format says otherwise. */
    FILE *f = strcmp(path, "-") == 0 ? NULL : fopen(path, "r");
    if (!f)
        return PCC_DS_LIBSVM;
    char *line = NULL;
    size_t cap = 0;
    pcc_ds_format fmt = PCC_DS_LIBSVM;
    for (int i = 0; i < 100 && getline(&line, &cap, f) >= 0; i++) {
        const char *p = line + strspn(line, " \t\r\n");
        if (!*p || *p == '#')
            continue;
        if (*p == '{') {
            fmt = PCC_DS_JSONL;
        } else if (!strchr(p, ':') && (strchr(p, ',') || strchr(p, '\t'))) {
            fmt = PCC_DS_CSV;
            if (!strchr(p, ',') && delim)
                *delim = '\t';
        }
        break;
    }
    free(line);
    fclose(f);
    return fmt;
}

int pcc_ds_next(pcc_dataset *ds, pcc_ds_example *ex, char *err, size_t errlen)
{
    if (ds->failed) {
        snprintf(err, errlen, "%s: reading after an error", ds->name);
        return -1;
    }
    for (;;) {
        size_t len = 0;
        int r = read_line(ds, &len, err, errlen);
        if (r <= 0)
            return r;
        r = ds->opt.format == PCC_DS_CSV     ? csv_line(ds, ds->line, len, ex, err, errlen)
            : ds->opt.format == PCC_DS_JSONL ? jsonl_line(ds, ds->line, len, ex, err, errlen)
                                             : libsvm_line(ds, ds->line, ex, err, errlen);
        if (r != 0)
            return r;
    }
}
