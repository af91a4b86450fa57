/* dataset.h - streaming parsers for files of labelled examples: libsvm /
 * svmlight, CSV and JSON lines; and the names file of a libsvm data set.  Used by `perceptronctl replay` / `predict` and by the
 * evaluation program; no sockets, no printing, no globals.
 *
 * libsvm:  `LABEL INDEX:VALUE INDEX:VALUE ... [# comment]`, one example a
 *   line.  Blank lines and comment lines are skipped, `qid:N` is ignored,
 *   indices are integers in [0, 2^32) used as written (no shift), values are
 *   finite numbers, CRLF line ends are accepted.
 * CSV: fields separated by a delimiter (default ','), RFC 4180 quotes within
 *   a line ("a ""b""" is `a "b"`), spaces around fields ignored.  The label
 *   column is named or numbered (default: the last, or none at all); the
 *   other columns are features: by position (index 0, 1, ... over the feature
 *   columns, `dense`), or, with `header`, named by the first line.  An empty
 *   field is a zero (an absent feature).  Without `header`, a first line whose
 *   feature fields are not all numbers is taken as a header and skipped.
 *   A field that is not a number is a category: the feature named
 *   "COLUMN=value" (the header's name, else the column's number from 1) with
 *   value 1, hashed by the daemon as Vowpal Wabbit does; such a line is sent
 *   as a map (numeric columns keep their index).  Text that reads as a
 *   number but is not finite (nan, inf, 1e999) is an error.  `ignore` leaves
 *   columns out (names or numbers from 1, comma-separated); `categorical`
 *   makes columns' numbers categories too ("age=39": one weight per value).
 * JSON lines: one object a line.  The label is the key `label_column`
 *   ("label" by default; "none": no labels), a string or a number.  The
 *   features are the object under "features" when there is one (an object,
 *   or an array of numbers: dense), else every other key.  A number is the
 *   feature's value, a string a category ("key=value", 1), true is 1,
 *   false and null are absent; anything else is an error.
 *
 * Errors name the file, the line and (when it helps) the column:
 * "data.svm:12:7: bad feature value 'x1' (a finite number)".
 *
 * Ownership: a pcc_dataset owns its buffers and, when opened by path, its
 * FILE.  A pcc_ds_example points into the dataset and is valid until the next
 * pcc_ds_next or pcc_ds_close.
 */
#ifndef PCC_DATASET_H
#define PCC_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum pcc_ds_format { PCC_DS_LIBSVM, PCC_DS_CSV, PCC_DS_JSONL } pcc_ds_format;

/* The format of a file: by its name (.csv and .tsv (tab-separated: *delim
 * set to '\t') CSV, .jsonl / .ndjson / .json JSON lines, .svm / .libsvm
 * libsvm), else by its first line (see dataset.c); libsvm for stdin.  delim
 * may be NULL. */
pcc_ds_format pcc_ds_format_of(const char *path, char *delim);

typedef struct pcc_ds_options {
    pcc_ds_format format;
    /* CSV: the label's column: a header name, a number from 1, "last" (the
     * default, also NULL) or "none" (the file has no labels).  A header name
     * wins over a number when a column is named like one. */
    const char *label_column;
    bool header;    /* CSV: the first line names the columns; features go by name */
    char delimiter; /* CSV: 0 means ',' */
    const char *ignore; /* CSV: columns left out: names or numbers, comma-separated */
    const char *categorical; /* CSV: columns whose values are categories even when
                                numbers (age=39): names or numbers, comma-separated */
    bool labels_optional; /* an example without a label is read (label NULL): a libsvm
                             line starting with INDEX:VALUE, a JSON line without the
                             label's key, an empty CSV label field (`predict`) */
    bool named;     /* libsvm: a NAME:VALUE whose NAME is not an integer, or a bare
                       NAME (value 1), is a named feature (the command line's
                       `label` / `predict` examples) */
} pcc_ds_options;

typedef struct pcc_ds_feature {
    const char *name; /* CSV with header: the column's name (NUL-terminated); else NULL */
    size_t name_len;
    uint32_t index;   /* libsvm: the index; CSV: the position among feature columns */
    double value;
} pcc_ds_feature;

typedef struct pcc_ds_example {
    uint64_t line;      /* 1-based line number in the file */
    const char *label;  /* the label's text, NUL-terminated; NULL when the file has none */
    size_t label_len;
    size_t label_col;   /* 1-based byte column of the label, for messages */
    int y;              /* +1 / -1 for a binary label (1, +1, -1, 0, 1.0, ...), else 0 */
    bool dense;         /* f[i].index == i for every i (CSV by position) */
    size_t n;
    const pcc_ds_feature *f;
} pcc_ds_example;

typedef struct pcc_dataset pcc_dataset;

/* Opens path ("-" is stdin).  Returns 0, or -1 with err set. */
int pcc_ds_open(const char *path, const pcc_ds_options *opt, pcc_dataset **out, char *err,
                size_t errlen);
/* Reads from an open FILE the caller keeps owning (closes after
 * pcc_ds_close); name is used in messages. */
int pcc_ds_open_file(FILE *f, const char *name, const pcc_ds_options *opt, pcc_dataset **out,
                     char *err, size_t errlen);
/* The next example: 1 with *ex set, 0 at the end of the file, -1 on a read
 * or parse error with err set ("NAME:LINE:COL: why").  After -1 the dataset
 * can only be closed. */
int pcc_ds_next(pcc_dataset *ds, pcc_ds_example *ex, char *err, size_t errlen);
/* True when the next read may wait for a writer: a pipe or terminal with no
 * bytes ready now (`tail -f log | ...`).  Never for a regular file. */
bool pcc_ds_would_wait(const pcc_dataset *ds);
void pcc_ds_close(pcc_dataset *ds);

/* Bytes read so far, and the file's size (0 when unknown: a pipe). */
void pcc_ds_progress(const pcc_dataset *ds, uint64_t *done, uint64_t *total);
/* The column names of a CSV header (NULL if none): count in *n. */
const char *const *pcc_ds_header(const pcc_dataset *ds, size_t *n);

/* A libsvm data set's feature names: lines "INDEX NAME" (NAME is the rest
 * of the line), or "NAME" alone for the index after the previous line's
 * (1 for the first); '#' starts a comment line.  *names gets an array of
 * *n entries indexed by feature index (NULL where none is named); free with
 * pcc_ds_names_free.  Returns 0, or -1 with err set ("FILE:LINE: why"). */
int pcc_ds_names_load(const char *path, char ***names, size_t *n, char *err, size_t errlen);
void pcc_ds_names_free(char **names, size_t n);

/* +1 / -1 if s[0..len) is a binary label (1, +1, -1, 0 in any numeric
 * spelling: 1.0, -1e0), else 0. */
int pcc_ds_binary_label(const char *s, size_t len);

#endif
