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
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct field {
    char *s;    /* NUL-terminated, unquoted, trimmed */
    size_t len;
    size_t col; /* 1-based byte column where the field starts */
} field;

struct pcc_dataset {
    FILE *f;
    bool own;
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
    size_t nnames;
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

void pcc_ds_close(pcc_dataset *ds)
{
    if (!ds)
        return;
    if (ds->own)
        fclose(ds->f);
    for (size_t i = 0; i < ds->nnames; i++)
        free(ds->names[i]);
    free(ds->names);
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
    if (ds->nfeat == ds->featcap) {
        size_t cap = ds->featcap ? 2 * ds->featcap : 64;
        pcc_ds_feature *f = realloc(ds->feat, cap * sizeof *f);
        if (!f)
            return false;
        ds->feat = f;
        ds->featcap = cap;
    }
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
    if (memchr(label, ':', label_len))
        return fail(ds, err, errlen, (size_t)(label - line) + 1,
                    "the line starts with '%.*s', not a label (LABEL INDEX:VALUE ...)",
                    (int)label_len, label);
    if (*p)
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
        char *colon = strchr(tok, ':');
        if (!colon)
            return fail(ds, err, errlen, col, "expected INDEX:VALUE, found '%s'", tok);
        *colon = 0;
        if (strcmp(tok, "qid") == 0)
            continue; /* query ids are for ranking; ignored */
        char *end;
        errno = 0;
        unsigned long long idx = strtoull(tok, &end, 10);
        if (tok[0] < '0' || tok[0] > '9' || *end || errno || idx > UINT32_MAX)
            return fail(ds, err, errlen, col,
                        "bad feature index '%s' (an integer from 0 to 4294967295)", tok);
        double v;
        if (!number(colon + 1, &v))
            return fail(ds, err, errlen, (size_t)(colon + 1 - line) + 1,
                        "bad value '%s' for feature %s (a finite number)", colon + 1, tok);
        if (!push_feature(ds, NULL, 0, (uint32_t)idx, v))
            return fail(ds, err, errlen, 0, "out of memory");
    }
    *ex = (pcc_ds_example){
        .line = ds->lineno,
        .label = label,
        .label_len = label_len,
        .label_col = (size_t)(label - line) + 1,
        .y = pcc_ds_binary_label(label, label_len),
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
        if (ds->nfields == ds->fieldcap) {
            size_t cap = ds->fieldcap ? 2 * ds->fieldcap : 32;
            field *f = realloc(ds->fields, cap * sizeof *f);
            if (!f)
                return fail(ds, err, errlen, 0, "out of memory");
            ds->fields = f;
            ds->fieldcap = cap;
        }
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
        if (csv_first(ds, &header, err, errlen) != 0)
            return -1;
        if (header)
            return 0;
    }
    if (ds->nfields != ds->ncols)
        return fail(ds, err, errlen, 0, "%zu fields, but the first line has %zu", ds->nfields,
                    ds->ncols);
    bool named = ds->opt.header;
    ds->nfeat = 0;
    uint32_t index = 0;
    for (size_t j = 0; j < ds->nfields; j++) {
        const field *f = &ds->fields[j];
        if ((long)j == ds->label)
            continue;
        double v = 0;
        if (f->len && !number(f->s, &v)) {
            if (ds->names)
                return fail(ds, err, errlen, f->col, "'%s' in column '%s' is not a finite number",
                            f->s, ds->names[j]);
            return fail(ds, err, errlen, f->col, "'%s' in column %zu is not a finite number", f->s,
                        j + 1);
        }
        if (named ? f->len > 0 : true) {
            const char *nm = named ? ds->names[j] : NULL;
            if (!push_feature(ds, nm, nm ? strlen(nm) : 0, index, v))
                return fail(ds, err, errlen, 0, "out of memory");
        }
        index++;
    }
    *ex = (pcc_ds_example){.line = ds->lineno, .dense = !named, .n = ds->nfeat, .f = ds->feat};
    if (ds->label >= 0) {
        const field *f = &ds->fields[ds->label];
        if (f->len == 0)
            return fail(ds, err, errlen, f->col, "empty label (column %ld)", ds->label + 1);
        ex->label = f->s;
        ex->label_len = f->len;
        ex->label_col = f->col;
        ex->y = pcc_ds_binary_label(f->s, f->len);
    }
    return 1;
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
        r = ds->opt.format == PCC_DS_CSV ? csv_line(ds, ds->line, len, ex, err, errlen)
                                         : libsvm_line(ds, ds->line, ex, err, errlen);
        if (r != 0)
            return r;
    }
}
