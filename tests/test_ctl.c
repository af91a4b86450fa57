/* test_ctl.c - perceptronctl: the data file parsers and the JSON printer as
 * units, then the real binary against the real daemon: every subcommand, its
 * --json output checked by Python's json module, exit codes, and replays whose
 * mistake counts are computed independently by libperceptron on the same
 * examples.
 *
 * $PERCEPTROND and $PERCEPTRONCTL come from tests/meson.build. */
#include "tests/e2e.h"
#include "tests/testutil.h"

#include <math.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "clients/ctl/ctl.h"
#include "clients/ctl/dataset.h"
#include "clients/ctl/report.h"
#include "lib/perceptron.h"
#include "proto/journal.h"

/* ---- dataset parser units ------------------------------------------------- */

typedef struct ds_run {
    pcc_dataset *ds;
    FILE *f;
    char err[512];
} ds_run;

static void ds_open(ds_run *r, const char *text, const char *name, const pcc_ds_options *o)
{
    r->f = fmemopen((void *)text, strlen(text), "r");
    ck_assert(r->f != NULL);
    ck_assert_int_eq(pcc_ds_open_file(r->f, name, o, &r->ds, r->err, sizeof r->err), 0);
}

static void ds_done(ds_run *r)
{
    pcc_ds_close(r->ds);
    fclose(r->f);
}

/* Parses text until the first error and returns its message ("" when the
 * whole text parses; n receives the count of examples before). */
static const char *ds_error(const char *text, const char *name, const pcc_ds_options *o, int *n)
{
    static char msg[512];
    ds_run r;
    ds_open(&r, text, name, o);
    pcc_ds_example ex;
    int rc, k = 0;
    while ((rc = pcc_ds_next(r.ds, &ex, r.err, sizeof r.err)) == 1)
        k++;
    snprintf(msg, sizeof msg, "%s", rc < 0 ? r.err : "");
    if (rc < 0) /* after an error the dataset refuses to go on */
        ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), -1);
    ds_done(&r);
    if (n)
        *n = k;
    return msg;
}

#define assert_error(text, name, opts, want)                                                     \
    do {                                                                                         \
        const char *got_ = ds_error((text), (name), (opts), NULL);                               \
        ck_assert_msg(strstr(got_, (want)) != NULL, "for %s: expected \"%s\", got \"%s\"", #text, \
                      (want), got_);                                                             \
    } while (0)

START_TEST(libsvm_parses_labels_features_comments)
{
    const char *text = "# a comment line\n"
                       "+1 1:0.5 3:-2 # trailing comment\n"
                       "\n"
                       "   \t\n"
                       "-1 qid:7 2:1e-3\r\n"
                       "0 4294967295:1 0:2\n"
                       "1\n"
                       "cat 5:1\n"
                       "1.0 1:1";
    pcc_ds_options o = {.format = PCC_DS_LIBSVM};
    ds_run r;
    ds_open(&r, text, "t.svm", &o);
    pcc_ds_example ex;
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_uint_eq(ex.line, 2);
    ck_assert_int_eq(ex.y, 1);
    ck_assert_str_eq(ex.label, "+1");
    ck_assert(!ex.dense);
    ck_assert_uint_eq(ex.n, 2);
    ck_assert_uint_eq(ex.f[0].index, 1);
    ck_assert(ex.f[0].value == 0.5 && ex.f[0].name == NULL);
    ck_assert_uint_eq(ex.f[1].index, 3);
    ck_assert(ex.f[1].value == -2);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_uint_eq(ex.line, 5);
    ck_assert_int_eq(ex.y, -1);
    ck_assert_uint_eq(ex.n, 1); /* qid ignored */
    ck_assert_uint_eq(ex.f[0].index, 2);
    ck_assert(ex.f[0].value == 1e-3);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_int_eq(ex.y, -1); /* 0 is the negative class */
    ck_assert_uint_eq(ex.n, 2);
    ck_assert_uint_eq(ex.f[0].index, 4294967295u);
    ck_assert_uint_eq(ex.f[1].index, 0);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_int_eq(ex.y, 1);
    ck_assert_uint_eq(ex.n, 0); /* a label alone: an empty example */
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_int_eq(ex.y, 0); /* a class name */
    ck_assert_str_eq(ex.label, "cat");
    ck_assert_uint_eq(ex.label_len, 3);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_int_eq(ex.y, 1); /* no final newline */
    ck_assert_uint_eq(ex.line, 9);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 0);
    uint64_t done, total;
    pcc_ds_progress(r.ds, &done, &total);
    ck_assert_uint_eq(done, strlen(text));
    ds_done(&r);
}
END_TEST

START_TEST(libsvm_bad_lines_name_file_line_column)
{
    pcc_ds_options o = {.format = PCC_DS_LIBSVM};
    assert_error("1 3:abc\n", "t.svm", &o, "t.svm:1:5: bad value 'abc' for feature 3");
    assert_error("1 1:1\n-1 x:1\n", "t.svm", &o, "t.svm:2:4: bad feature index 'x'");
    assert_error("1 3\n", "t.svm", &o, "t.svm:1:3: expected INDEX:VALUE, found '3'");
    assert_error("1 3:nan\n", "t.svm", &o, "t.svm:1:5: bad value 'nan'");
    assert_error("1 3:inf\n", "t.svm", &o, "t.svm:1:5: bad value 'inf'");
    assert_error("1 3:1e999\n", "t.svm", &o, "t.svm:1:5: bad value '1e999'");
    assert_error("1 3:\n", "t.svm", &o, "t.svm:1:5: bad value ''");
    assert_error("1 4294967296:1\n", "t.svm", &o, "t.svm:1:3: bad feature index '4294967296'");
    assert_error("1 -3:1\n", "t.svm", &o, "t.svm:1:3: bad feature index '-3'");
    assert_error("1 :1\n", "t.svm", &o, "t.svm:1:3: bad feature index ''");
    assert_error("1 3:1:2\n", "t.svm", &o, "t.svm:1:5: bad value '1:2'");
    assert_error("1:2 3:4\n", "t.svm", &o, "t.svm:1:1: the line starts with '1:2', not a label");
    assert_error("  2:1\n", "t.svm", &o, "t.svm:1:3: the line starts with '2:1'");
    static const char nul[] = "1 1:1\n1 2:\0\n";
    FILE *f = fmemopen((void *)nul, sizeof nul - 1, "r");
    pcc_dataset *ds;
    char err[256];
    ck_assert_int_eq(pcc_ds_open_file(f, "bin", &o, &ds, err, sizeof err), 0);
    pcc_ds_example ex;
    ck_assert_int_eq(pcc_ds_next(ds, &ex, err, sizeof err), 1);
    ck_assert_int_eq(pcc_ds_next(ds, &ex, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "bin:2: the line holds a NUL byte") != NULL, "%s", err);
    pcc_ds_close(ds);
    fclose(f);
    /* a missing file names itself */
    ck_assert_int_eq(pcc_ds_open("/nonexistent/x.svm", &o, &ds, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cannot open /nonexistent/x.svm") != NULL, "%s", err);
}
END_TEST

START_TEST(binary_labels)
{
    static const char *const pos[] = {"1", "+1", "1.0", "1e0", "+1.000"};
    static const char *const neg[] = {"-1", "0", "-1.0", "0.0", "-0", "-1e0"};
    static const char *const other[] = {"2", "0.5", "abc", "", "1x", "nan", "-2", "yes"};
    for (size_t i = 0; i < sizeof pos / sizeof *pos; i++)
        ck_assert_int_eq(pcc_ds_binary_label(pos[i], strlen(pos[i])), 1);
    for (size_t i = 0; i < sizeof neg / sizeof *neg; i++)
        ck_assert_int_eq(pcc_ds_binary_label(neg[i], strlen(neg[i])), -1);
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        ck_assert_int_eq(pcc_ds_binary_label(other[i], strlen(other[i])), 0);
    ck_assert_int_eq(pcc_ds_binary_label("1 ", 1), 1); /* the length counts, not the NUL */
}
END_TEST

START_TEST(csv_header_detected_label_last_dense)
{
    pcc_ds_options o = {.format = PCC_DS_CSV};
    ds_run r;
    ds_open(&r, "a,b,y\n1,2,+1\n 3 , ,-1\n\n0.5,\"4\",cat\n", "t.csv", &o);
    pcc_ds_example ex;
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_uint_eq(ex.line, 2);
    ck_assert(ex.dense);
    ck_assert_uint_eq(ex.n, 2);
    ck_assert(ex.f[0].value == 1 && ex.f[1].value == 2);
    ck_assert_uint_eq(ex.f[1].index, 1);
    ck_assert_int_eq(ex.y, 1);
    ck_assert_uint_eq(ex.label_col, 5);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_uint_eq(ex.n, 2);
    ck_assert(ex.f[0].value == 3 && ex.f[1].value == 0); /* empty: zero */
    ck_assert_int_eq(ex.y, -1);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_uint_eq(ex.line, 5);
    ck_assert(ex.f[0].value == 0.5 && ex.f[1].value == 4);
    ck_assert_str_eq(ex.label, "cat");
    ck_assert_int_eq(ex.y, 0);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 0);
    size_t n;
    const char *const *h = pcc_ds_header(r.ds, &n);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(h[2], "y");
    ds_done(&r);

    /* no header: the first line is data */
    int k;
    ck_assert_str_eq(ds_error("1,2,1\n3,4,-1\n", "t.csv", &o, &k), "");
    ck_assert_int_eq(k, 2);
}
END_TEST

START_TEST(csv_named_features_label_by_name_and_number)
{
    pcc_ds_options o = {.format = PCC_DS_CSV, .header = true, .label_column = "label"};
    ds_run r;
    ds_open(&r, "label,\"word, count\",len\nspam,3,\nham,,2.5\n", "t.csv", &o);
    pcc_ds_example ex;
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert(!ex.dense);
    ck_assert_str_eq(ex.label, "spam");
    ck_assert_uint_eq(ex.n, 1); /* the empty field is an absent feature */
    ck_assert_str_eq(ex.f[0].name, "word, count");
    ck_assert_uint_eq(ex.f[0].name_len, 11);
    ck_assert(ex.f[0].value == 3);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_str_eq(ex.label, "ham");
    ck_assert_uint_eq(ex.n, 1);
    ck_assert_str_eq(ex.f[0].name, "len");
    ck_assert(ex.f[0].value == 2.5);
    ds_done(&r);

    /* by number (from 1), a semicolon delimiter, quotes with "" inside */
    pcc_ds_options o2 = {.format = PCC_DS_CSV, .label_column = "1", .delimiter = ';'};
    ds_open(&r, "\"a \"\"b\"\"\";7;8\n", "t.csv", &o2);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_str_eq(ex.label, "a \"b\"");
    ck_assert_uint_eq(ex.n, 2);
    ck_assert(ex.f[0].value == 7 && ex.f[1].value == 8);
    ds_done(&r);

    /* none: every column is a feature; tabs */
    pcc_ds_options o3 = {.format = PCC_DS_CSV, .label_column = "none", .delimiter = '\t'};
    ds_open(&r, "1\t2\t3\n", "t.tsv", &o3);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert(ex.label == NULL);
    ck_assert_uint_eq(ex.n, 3);
    ds_done(&r);

    /* a header name that looks like a number wins over the number */
    pcc_ds_options o4 = {.format = PCC_DS_CSV, .label_column = "2"};
    ds_open(&r, "x,y,2\n1,5,-1\n", "t.csv", &o4);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_str_eq(ex.label, "-1");
    ck_assert(ex.f[0].value == 1 && ex.f[1].value == 5);
    ds_done(&r);
}
END_TEST

START_TEST(csv_bad_lines_name_file_line_column)
{
    pcc_ds_options o = {.format = PCC_DS_CSV};
    assert_error("a,b,y\n1,2,1\n1,2\n", "t.csv", &o, "t.csv:3: 2 fields, but the first line has 3");
    assert_error("a,b,y\n1,2,1\n1,2,3,4\n", "t.csv", &o, "t.csv:3: 4 fields");
    /* text is a category; text that reads as a number but is not finite is not */
    assert_error("a,b,y\n1,inf,1\n", "t.csv", &o,
                 "t.csv:2:3: 'inf' in column 'b' is not a finite number");
    assert_error("1,2,1\n1,1e999,1\n", "t.csv", &o,
                 "t.csv:2:3: '1e999' in column 2 is not a finite number");
    assert_error("1,2,1\n1,nan,1\n", "t.csv", &o, "t.csv:2:3: 'nan' in column 2");
    assert_error("1,2,1\n1,2,\n", "t.csv", &o, "t.csv:2:5: empty label (column 3)");
    assert_error("1,\"2,1\n", "t.csv", &o, "t.csv:1:3: unterminated quote");
    assert_error("1,\"2\"x,1\n", "t.csv", &o, "t.csv:1:6: unexpected 'x' after a quoted field");
    pcc_ds_options byname = {.format = PCC_DS_CSV, .label_column = "class"};
    assert_error("a,b,y\n1,2,1\n", "t.csv", &byname, "t.csv:1: no column is named 'class'");
    pcc_ds_options bynum = {.format = PCC_DS_CSV, .label_column = "4"};
    assert_error("1,2,1\n", "t.csv", &bynum, "t.csv:1: label column 4, but the first line has 3");
    pcc_ds_options hdr = {.format = PCC_DS_CSV, .header = true};
    assert_error("a,,y\n1,2,1\n", "t.csv", &hdr, "t.csv:1:3: column 2 has an empty name");
    pcc_ds_options ign = {.format = PCC_DS_CSV, .ignore = "zz"};
    assert_error("a,b,y\n1,2,1\n", "t.csv", &ign, "t.csv:1: --ignore: no column is named 'zz'");
    ign.ignore = "4";
    assert_error("1,2,1\n", "t.csv", &ign, "--ignore: no column is named '4' and the file has no "
                                           "header (names from the header, or numbers 1 to 3)");
    pcc_ds_options cat = {.format = PCC_DS_CSV, .categorical = "zz"};
    assert_error("a,b,y\n1,2,1\n", "t.csv", &cat, "t.csv:1: --categorical: no column is named 'zz'");
    ign.ignore = "y";
    assert_error("a,b,y\n1,2,1\n", "t.csv", &ign, "t.csv:1: --ignore names the label column (3)");
}
END_TEST

/* Adult's way: text columns are categories "column=value" (value 1), numeric
 * columns keep their position, --ignore drops columns. */
START_TEST(csv_categories_hashed_as_column_value)
{
    pcc_ds_options o = {.format = PCC_DS_CSV, .ignore = "fnlwgt,2"};
    ds_run r;
    ds_open(&r,
            "age,workclass,fnlwgt,education,class\n"
            "39, State-gov, 77516, Bachelors, <=50K\n"
            "50, 7, 83311, \"Some, college\", >50K\n"
            "38, ?, 1, , <=50K\n",
            "adult.data", &o);
    pcc_ds_example ex;
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_str_eq(ex.label, "<=50K");
    ck_assert(!ex.dense); /* a category makes a map */
    ck_assert_uint_eq(ex.n, 2);
    ck_assert(ex.f[0].name == NULL && ex.f[0].index == 0 && ex.f[0].value == 39);
    ck_assert_str_eq(ex.f[1].name, "education=Bachelors");
    ck_assert_uint_eq(ex.f[1].name_len, 19);
    ck_assert(ex.f[1].index == 1 && ex.f[1].value == 1);
    /* workclass (column 2) and fnlwgt are ignored; a quoted category keeps its comma */
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_uint_eq(ex.n, 2);
    ck_assert_str_eq(ex.f[1].name, "education=Some, college");
    /* an empty category is absent */
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert(ex.dense && ex.n == 2 && ex.f[0].value == 38 && ex.f[1].value == 0);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 0);
    ds_done(&r);

    /* no header (a first line of numbers): the column's number names the
     * category; --header: every name */
    pcc_ds_options o2 = {.format = PCC_DS_CSV};
    ds_open(&r, "1,2,1\n1,red,1\n", "t.csv", &o2);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert(ex.dense);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert(!ex.dense && ex.n == 2);
    ck_assert_str_eq(ex.f[1].name, "2=red");
    ds_done(&r);
    /* --categorical: a numeric column's values as categories */
    pcc_ds_options oc = {.format = PCC_DS_CSV, .categorical = "age"};
    ds_open(&r, "age,h,y\n39,40,1\n", "t.csv", &oc);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert(!ex.dense && ex.n == 2 && ex.f[0].value == 1 && ex.f[1].value == 40);
    ck_assert_str_eq(ex.f[0].name, "age=39");
    ds_done(&r);
    pcc_ds_options o3 = {.format = PCC_DS_CSV, .header = true};
    ds_open(&r, "n,colour,y\n2.5,red,1\n", "t.csv", &o3);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_str_eq(ex.f[0].name, "n");
    ck_assert_str_eq(ex.f[1].name, "colour=red");
    ds_done(&r);
}
END_TEST

START_TEST(jsonl_flat_and_nested)
{
    pcc_ds_options o = {.format = PCC_DS_JSONL};
    ds_run r;
    ds_open(&r,
            "{\"label\": \"spam\", \"cheap\": 2, \"from\": \"x@y\", \"urgent\": true, "
            "\"draft\": false, \"cc\": null}\n"
            "\n"
            "{\"label\": -1, \"features\": {\"a\": 0.5, \"colour\": \"r\\u00e9d\"}}\n"
            "{\"label\": 1.0, \"features\": [1, 2.5, 0]}\n",
            "t.jsonl", &o);
    pcc_ds_example ex;
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_str_eq(ex.label, "spam");
    ck_assert_int_eq(ex.y, 0);
    ck_assert_uint_eq(ex.n, 3);
    ck_assert(strcmp(ex.f[0].name, "cheap") == 0 && ex.f[0].value == 2);
    ck_assert(strcmp(ex.f[1].name, "from=x@y") == 0 && ex.f[1].value == 1);
    ck_assert(strcmp(ex.f[2].name, "urgent") == 0 && ex.f[2].value == 1);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_uint_eq(ex.line, 3);
    ck_assert_str_eq(ex.label, "-1");
    ck_assert_int_eq(ex.y, -1);
    ck_assert_uint_eq(ex.n, 2);
    ck_assert_str_eq(ex.f[1].name, "colour=r\xc3\xa9" "d");
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert_int_eq(ex.y, 1);
    ck_assert(ex.dense && ex.n == 3 && ex.f[1].value == 2.5);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 0);
    ds_done(&r);

    /* --label-column names the key; none: no labels */
    pcc_ds_options o2 = {.format = PCC_DS_JSONL, .label_column = "y"};
    ds_open(&r, "{\"y\": \"cat\", \"w\": 1}\n", "t.jsonl", &o2);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert(strcmp(ex.label, "cat") == 0 && ex.n == 1);
    ds_done(&r);
    pcc_ds_options o3 = {.format = PCC_DS_JSONL, .label_column = "none"};
    ds_open(&r, "{\"label\": 3}\n", "t.jsonl", &o3);
    ck_assert_int_eq(pcc_ds_next(r.ds, &ex, r.err, sizeof r.err), 1);
    ck_assert(ex.label == NULL && ex.n == 1 && strcmp(ex.f[0].name, "label") == 0);
    ds_done(&r);
}
END_TEST

START_TEST(jsonl_bad_lines_name_file_line_column)
{
    pcc_ds_options o = {.format = PCC_DS_JSONL};
    assert_error("{\"label\": 1, \"a\": 1}\n{\"label\": 1, \"a\": }\n", "t.jsonl", &o,
                 "t.jsonl:2:");
    assert_error("{\"label\": 1, \"a\": }\n", "t.jsonl", &o, "not JSON: ");
    assert_error("[1, 2]\n", "t.jsonl", &o, "t.jsonl:1:1: a line must be a JSON object, not an array");
    assert_error("{\"a\": 1}\n", "t.jsonl", &o, "t.jsonl:1: no 'label' key");
    assert_error("{\"label\": [1]}\n", "t.jsonl", &o, "the label 'label' must be a non-empty string");
    assert_error("{\"label\": \"\"}\n", "t.jsonl", &o, "must be a non-empty string or a number");
    assert_error("{\"label\": 1, \"a\": {\"b\": 1}}\n", "t.jsonl", &o,
                 "t.jsonl:1: feature 'a' is an object");
    assert_error("{\"label\": 1, \"features\": [1, \"x\"]}\n", "t.jsonl", &o,
                 "features[1] is not a number");
    assert_error("{\"label\": 1, \"features\": 3}\n", "t.jsonl", &o,
                 "'features' must be an object or an array of numbers");
}
END_TEST

/* Writes n bytes to path (a new file, or over an old one). */
static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f && fwrite(b, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

static void write_file(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

START_TEST(names_file_and_format_by_name_or_content)
{
    char dir[] = "/tmp/ctl-names-XXXXXX";
    ck_assert(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/features.names", dir);
    write_file(path, "# index name\n1 word count\nlength\n\n7 has link\n");
    char **names, err[256];
    size_t n;
    ck_assert_int_eq(pcc_ds_names_load(path, &names, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 8);
    ck_assert(names[0] == NULL);
    ck_assert_str_eq(names[1], "word count");
    ck_assert_str_eq(names[2], "length"); /* the index after the previous line's */
    ck_assert(names[3] == NULL);
    ck_assert_str_eq(names[7], "has link");
    pcc_ds_names_free(names, n);
    write_file(path, "1 a\n999999999999 b\n");
    ck_assert_int_eq(pcc_ds_names_load(path, &names, &n, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "features.names:2: expected INDEX NAME") != NULL, "%s", err);
    ck_assert_int_eq(pcc_ds_names_load("/nonexistent/n", &names, &n, err, sizeof err), -1);

    /* the format: by the name, else by the first line */
    char d = 0;
    ck_assert_int_eq(pcc_ds_format_of("x.csv", &d), PCC_DS_CSV);
    ck_assert_int_eq(pcc_ds_format_of("x.tsv", &d), PCC_DS_CSV);
    ck_assert_int_eq(d, '\t');
    ck_assert_int_eq(pcc_ds_format_of("x.jsonl", NULL), PCC_DS_JSONL);
    ck_assert_int_eq(pcc_ds_format_of("-", NULL), PCC_DS_LIBSVM);
    static const struct {
        const char *text;
        pcc_ds_format want;
    } sniff[] = {{"# c\n\nage,workclass,y\n", PCC_DS_CSV},
                 {"{\"label\": 1}\n", PCC_DS_JSONL},
                 {"+1 1:2 3:4\n", PCC_DS_LIBSVM},
                 {"1,2 3:4\n", PCC_DS_LIBSVM}};
    for (size_t i = 0; i < sizeof sniff / sizeof *sniff; i++) {
        snprintf(path, sizeof path, "%s/data.txt", dir);
        write_file(path, sniff[i].text);
        ck_assert_int_eq(pcc_ds_format_of(path, NULL), sniff[i].want);
    }
    unlink(path);
    snprintf(path, sizeof path, "%s/features.names", dir);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* ---- JSON printer units ------------------------------------------------------ */

static char *json_of(void (*pack)(msgpack_packer *), int indent)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack(&pk);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ctl_json_write(f, &u.data, indent);
    fclose(f);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
    return buf;
}

static void pk_str(msgpack_packer *pk, const char *s, size_t n)
{
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_everything(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 8);
    pk_str(pk, "ints", 4);
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint64(pk, UINT64_MAX);
    msgpack_pack_int64(pk, INT64_MIN);
    msgpack_pack_int(pk, 0);
    msgpack_pack_int(pk, -7);
    pk_str(pk, "reals", 5);
    msgpack_pack_array(pk, 6);
    msgpack_pack_double(pk, 0.1);
    msgpack_pack_double(pk, 1e300);
    msgpack_pack_double(pk, NAN);
    msgpack_pack_double(pk, INFINITY);
    msgpack_pack_double(pk, -INFINITY);
    msgpack_pack_float(pk, 0.5f);
    pk_str(pk, "text", 4);
    static const char text[] = "q\"b\\s/\n\t\x01\x1f\xc3\xa9\xff\xe2\x82";
    pk_str(pk, text, sizeof text - 1);
    pk_str(pk, "bin", 3);
    msgpack_pack_bin(pk, 4);
    msgpack_pack_bin_body(pk, "\x00\x01\x02\x03", 4);
    msgpack_pack_int(pk, 3); /* a non-string key */
    msgpack_pack_nil(pk);
    msgpack_pack_true(pk); /* another */
    msgpack_pack_false(pk);
    pk_str(pk, "empty", 5);
    msgpack_pack_map(pk, 0);
    pk_str(pk, "ext", 3);
    msgpack_pack_ext(pk, 5, 2); /* length 5, type 2 */
    msgpack_pack_ext_body(pk, "hello", 5);
}

START_TEST(json_printer_maps_every_type)
{
    char *s = json_of(pack_everything, -1);
    ck_assert_str_eq(s,
                     "{\"ints\": [18446744073709551615, -9223372036854775808, 0, -7], "
                     "\"reals\": [0.1, 1e+300, null, null, null, 0.5], "
                     "\"text\": \"q\\\"b\\\\s/\\n\\t\\u0001\\u001f\xc3\xa9\\ufffd\\ufffd\\ufffd\", "
                     "\"bin\": \"AAECAw==\", \"3\": null, \"true\": false, \"empty\": {}, "
                     "\"ext\": {\"ext\": 2, \"base64\": \"aGVsbG8=\"}}");
    free(s);
    s = json_of(pack_everything, 2);
    ck_assert(strstr(s, "{\n  \"ints\": [\n    18446744073709551615,\n") == s);
    ck_assert(s[strlen(s) - 1] == '}');
    free(s);
}
END_TEST

static void pack_utf8_edges(msgpack_packer *pk)
{
    /* overlong '/', a surrogate, above U+10FFFF, a 4-byte emoji, a lone continuation */
    static const char s[] = "\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xf0\x9f\x98\x80|\x80";
    pk_str(pk, s, sizeof s - 1);
}

START_TEST(json_strings_are_valid_utf8)
{
    char *s = json_of(pack_utf8_edges, -1);
    ck_assert_str_eq(s, "\"\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd|"
                        "\xf0\x9f\x98\x80|\\ufffd\"");
    free(s);
}
END_TEST

static void pack_numbers(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 5);
    msgpack_pack_double(pk, 1.0 / 3);
    msgpack_pack_double(pk, -0.0);
    msgpack_pack_double(pk, 5e-324);
    msgpack_pack_double(pk, 123456789012345678.0);
    msgpack_pack_double(pk, 2.5);
}

START_TEST(json_numbers_read_back_exactly)
{
    char *s = json_of(pack_numbers, -1);
    ck_assert_str_eq(
        s, "[0.3333333333333333, -0, 4.94065645841247e-324, 1.2345678901234568e+17, 2.5]");
    char *p = s + 1;
    double want[] = {1.0 / 3, -0.0, 5e-324, 123456789012345678.0, 2.5};
    for (int i = 0; i < 5; i++) {
        char *end;
        double v = strtod(p, &end);
        ck_assert(memcmp(&v, &want[i], sizeof v) == 0);
        p = end + 2;
    }
    free(s);
}
END_TEST

/* ---- running perceptronctl ------------------------------------------------------ */

static e2e d;
static char out_path[256], err_path[256];
static char *out_text, *err_text;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = 2 * cap + 8192;
            buf = realloc(buf, cap);
            ck_assert(buf != NULL);
        }
        size_t n = fread(buf + len, 1, 4096, f);
        len += n;
        if (n == 0)
            break;
    }
    buf[len] = 0;
    fclose(f);
    return buf;
}

/* Runs perceptronctl with argv (NULL-terminated), stdin from in_path (NULL:
 * /dev/null); the output lands in out_text/err_text; returns the exit status. */
static int ctl_argv(const char *in_path, char *const *args)
{
    const char *bin = getenv("PERCEPTRONCTL");
    ck_assert_msg(bin != NULL, "PERCEPTRONCTL is not set");
    snprintf(out_path, sizeof out_path, "%s/ctl.out", d.dir);
    snprintf(err_path, sizeof err_path, "%s/ctl.err", d.dir);
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)bin;
    for (; args[n - 1] && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0)
            _exit(126);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        execv(bin, argv);
        _exit(127);
    }
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    ck_assert_msg(WIFEXITED(status), "perceptronctl died of signal %d", WTERMSIG(status));
    free(out_text);
    free(err_text);
    out_text = slurp(out_path);
    err_text = slurp(err_path);
    /* under -Db_sanitize the binary reports here */
    ck_assert_msg(!strstr(err_text, "runtime error:") && !strstr(err_text, "Sanitizer"), "%s",
                  err_text);
    return WEXITSTATUS(status);
}

#define CTL(...) ctl_argv(NULL, (char *const[]){__VA_ARGS__, NULL})
#define CTL_IN(in, ...) ctl_argv((in), (char *const[]){__VA_ARGS__, NULL})

/* Asserts status and, when it differs, shows what perceptronctl said. */
#define assert_status(got, want)                                                                 \
    do {                                                                                         \
        int got_ = (got);                                                                        \
        ck_assert_msg(got_ == (want), "exit %d, expected %d\nstdout: %s\nstderr: %s", got_,      \
                      (want), out_text, err_text);                                               \
    } while (0)

/* Runs a Python expression over the JSON in the last stdout (as `d`) and
 * returns what it prints: "INVALID" when the text is not one JSON document. */
static const char *py(const char *expr)
{
    static char result[4096];
    char script[1024], cmd[1400];
    snprintf(script, sizeof script, "%s/q.py", d.dir);
    FILE *f = fopen(script, "w");
    ck_assert(f != NULL);
    fprintf(f, "import json, sys\n"
               "try:\n    d = json.load(sys.stdin)\nexcept ValueError as e:\n"
               "    print('INVALID', e); sys.exit(0)\n"
               "print(%s)\n",
            expr);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 '%s' < '%s'", script, out_path);
    FILE *p = popen(cmd, "r");
    ck_assert(p != NULL);
    size_t n = fread(result, 1, sizeof result - 1, p);
    result[n] = 0;
    ck_assert_msg(pclose(p) == 0, "python3 failed on: %s", out_text);
    while (n > 0 && result[n - 1] == '\n')
        result[--n] = 0;
    return result;
}

#define assert_py(expr, want)                                                                    \
    do {                                                                                         \
        const char *got_ = py(expr);                                                             \
        ck_assert_msg(strcmp(got_, (want)) == 0, "%s: got '%s', expected '%s'\njson: %s", expr,  \
                      got_, (want), out_text);                                                   \
    } while (0)

static void daemon_up(void)
{
    e2e_init(&d, "limits: {idle_timeout: 30}\n");
    e2e_start(&d);
}

static void daemon_down(void)
{
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
    free(out_text);
    free(err_text);
    out_text = err_text = NULL;
}

/* ---- the admin subcommands ---------------------------------------------------- */

START_TEST(every_subcommand_has_help)
{
    /* the command list, from the top-level help (main.c's table) */
    assert_status(CTL("--help"), 0);
    char names[32][16];
    int n = 0;
    const char *p = strstr(out_text, "Commands:\n");
    ck_assert(p != NULL);
    for (p = strchr(p, '\n') + 1; *p == ' ' && n < 32; p = strchr(p, '\n') + 1)
        ck_assert_int_eq(sscanf(p, " %15s", names[n++]), 1);
    ck_assert_int_ge(n, 12);
    for (int i = 0; i < n; i++) {
        assert_status(CTL(names[i], "--help"), 0);
        char want[600];
        snprintf(want, sizeof want, "Usage: perceptronctl %s", names[i]);
        ck_assert_msg(strncmp(out_text, want, strlen(want)) == 0, "%s --help: %s", names[i],
                      out_text);
        ck_assert(strstr(out_text, "Exit status") != NULL);
        assert_status(CTL("help", names[i]), 0);
        ck_assert(strncmp(out_text, want, strlen(want)) == 0);
        assert_status(CTL(names[i], "-h"), 0);
    }
    assert_status(CTL("--version"), 0);
    ck_assert(strstr(out_text, PC_VERSION_STRING) != NULL);
    assert_status(CTL("help", "bogus"), 2);
}
END_TEST

START_TEST(usage_errors_exit_2_before_connecting)
{
    /* no daemon is asked: the address is unusable on purpose */
    static char *const cases[][6] = {
        {"bogus"},
        {"info"},
        {"info", "a", "b"},
        {"top", "m", "-n", "0"},
        {"top", "m", "-n", "x"},
        {"top", "m", "-n"},
        {"ping", "--bogus"},
        {"ping", "--json=1"},
        {"create", "m", "--dim", "3", "--hash-bits", "4"},
        {"create", "m", "--dim", "-3"},
        {"create", "m", "--param", "eta"},
        {"create", "m", "--param", "eta=1,,2"},
        {"create", "m", "--param", "eta=nan"},
        {"create", "m", "--classes", "a,,b"},
        {"watch", "m", "-i", "0"},
        {"watch", "m", "--count", "0"},
        {"replay", "m"},
        {"replay", "m", "f", "--format", "xml"},
        {"replay", "m", "f", "--window", "0"},
        {"replay", "m", "f", "--label-column", "none"},
        {"predict", "m", "f", "--delimiter", "ab"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *args[10] = {"-a", "unix:/nonexistent/sock"};
        for (int k = 0; k < 6 && cases[i][k]; k++)
            args[2 + k] = cases[i][k];
        int st = ctl_argv(NULL, args);
        ck_assert_msg(st == 2, "%s %s: exit %d\n%s", cases[i][0], cases[i][1] ? cases[i][1] : "",
                      st, err_text);
        ck_assert_msg(strstr(err_text, "perceptronctl") != NULL && out_text[0] == 0, "%s",
                      err_text);
    }
    assert_status(CTL("--bogus"), 2);
    assert_status(ctl_argv(NULL, (char *const[]){NULL}), 2);
    assert_status(CTL("-a"), 2);
}
END_TEST

START_TEST(no_daemon_exits_3)
{
    assert_status(CTL("-a", "unix:/nonexistent/perceptrond.sock", "ping"), 3);
    ck_assert(strstr(err_text, "cannot connect") != NULL);
    char tcp[64];
    snprintf(tcp, sizeof tcp, "tcp:127.0.0.1:%d", e2e_free_port());
    assert_status(CTL("-a", tcp, "models"), 3);
    assert_status(CTL("-a", tcp, "info", "m", "--json"), 3);
    /* --json: the reason on stdout too, as JSON (it printed nothing before) */
    assert_py("d['error']['code'], 'cannot connect' in d['error']['message']", "None True");
    /* the environment variable is the default address */
    setenv("PERCEPTROND_ADDRESS", tcp, 1);
    assert_status(CTL("stats"), 3);
    ck_assert(strstr(err_text, tcp + 4) != NULL);
    unsetenv("PERCEPTROND_ADDRESS");
}
END_TEST

START_TEST(admin_subcommands_against_the_daemon)
{
    /* ping, by -a over TCP and by the environment over Unix */
    assert_status(CTL("-a", d.tcp, "ping"), 0);
    ck_assert(strncmp(out_text, "pong", 4) == 0);
    setenv("PERCEPTROND_ADDRESS", d.sock, 1);
    assert_status(CTL("ping", "--json"), 0);
    assert_py("d['result']", "pong");
    assert_py("d['round_trip_ms'] >= 0", "True");

    assert_status(CTL("models", "--json"), 0);
    assert_py("d", "[]");
    assert_status(CTL("models"), 0);
    ck_assert(strstr(out_text, "no models") != NULL);

    /* create with every option */
    assert_status(CTL("create", "bin", "--rule", "perceptron", "--dim", "16", "--bias"), 0);
    ck_assert_str_eq(out_text, "created bin\n");
    assert_status(CTL("--json", "create", "multi", "-r", "perceptron", "--hash-bits", "10",
                      "--no-bias", "--averaged", "--classes", "a,b,c", "--open-classes"),
                  0);
    assert_py("d['created']", "multi");
    assert_status(CTL("create", "bat", "--dim", "4", "--batch", "--no-averaged", "--param",
                      "eta=0.5"),
                  0);
    /* a second create of the same name: the daemon says no */
    assert_status(CTL("create", "bin", "--dim", "16"), 1);
    ck_assert(strstr(err_text, "exists") != NULL);
    /* a parameter the rule does not have */
    assert_status(CTL("create", "x", "--param", "nosuch=1"), 1);
    ck_assert(strstr(err_text, "nosuch") != NULL);

    assert_status(CTL("info", "multi", "--json"), 0);
    assert_py("d['name'], d['rule'], d['dim'], d['bias'], d['averaged'], d['multiclass'], "
              "d['open_classes'], [c['name'] for c in d['classes']]",
              "multi perceptron 1024 False True True True ['a', 'b', 'c']");
    assert_status(CTL("info", "bat", "--json"), 0);
    assert_py("d['mode'], d['params']['eta'], d['dim']", "batch 0.5 4");
    assert_status(CTL("create", "f32", "--dim", "16", "--storage", "auto", "--weights", "float32"), 0);
    assert_status(CTL("info", "f32", "--json"), 0);
    assert_py("d['storage'], d['weights']", "auto float32");
    assert_status(CTL("info", "f32"), 0);
    ck_assert_msg(strstr(out_text, "float32 weights") != NULL, "%s", out_text);
    assert_status(CTL("create", "f64", "--weights", "float16"), 1);
    ck_assert(strstr(err_text, "float64") != NULL);
    assert_status(CTL("drop", "f32"), 0);
    assert_status(CTL("info", "bin"), 0);
    ck_assert(strstr(out_text, "perceptron") && strstr(out_text, "mistakes") &&
              strstr(out_text, "never saved") && strstr(out_text, "binary"));

    assert_status(CTL("models"), 0);
    ck_assert(strstr(out_text, "MODEL") && strstr(out_text, "bin") && strstr(out_text, "multi") &&
              strstr(out_text, "bat"));
    assert_status(CTL("models", "--json"), 0);
    assert_py("sorted(d)", "['bat', 'bin', 'multi']");

    assert_status(CTL("top", "bin", "--json"), 0);
    assert_py("d", "[]");
    assert_status(CTL("top", "multi", "zebra"), 1); /* no such class */

    /* compare and promote on a model without challengers */
    assert_status(CTL("compare", "bin"), 0);
    ck_assert(strstr(out_text, "champion") && strstr(out_text, "no challengers"));
    assert_status(CTL("compare", "bin", "--json"), 0);
    assert_py("d['champion']['rule'], d['challengers']", "perceptron []");
    assert_status(CTL("promote", "bin", "0"), 1); /* the daemon: no challenger 0 */
    ck_assert(strstr(err_text, "0 challengers") != NULL);
    assert_status(CTL("promote", "bin", "first"), 2); /* not an index: nothing sent */
    /* the same strict number as every other option: no sign, no blank, no overflow */
    assert_status(CTL("promote", "bin", "+0"), 2);
    assert_status(CTL("promote", "bin", " 0"), 2);
    assert_status(CTL("promote", "bin", "99999999999999999999"), 2);
    /* a model with label later settings and challengers, from the command line */
    assert_status(CTL("create", "ch", "--dim", "8", "--ttl", "60", "--default-label", "-1",
                      "--max-pending", "5", "--challenger", "pa", "--challenger",
                      "perceptron+avg"),
                  0);
    assert_status(CTL("info", "ch", "--json"), 0);
    assert_py("d['join']['ttl'], d['join']['default_label'], d['join']['max_pending']",
              "60 -1 5");
    assert_status(CTL("compare", "ch", "--json"), 0);
    assert_py("[(c['rule'], c['averaged']) for c in d['challengers']]",
              "[('pa', False), ('perceptron', True)]");
    assert_status(CTL("promote", "ch", "1"), 0);
    assert_status(CTL("compare", "ch"), 0);
    ck_assert(strstr(out_text, "perceptron (averaged)") != NULL);
    assert_status(CTL("--json", "compare", "ch"), 0);
    assert_py("d['champion']['averaged'], d['challengers'][1]['averaged']", "True False");
    assert_status(CTL("create", "bad", "--challenger", "nosuchrule"), 1);
    assert_status(CTL("create", "bad", "--ttl", "0"), 2);
    assert_status(CTL("drop", "ch"), 0);

    assert_status(CTL("stats", "--json"), 0);
    assert_py("d['models'], d['version']", "3 " PC_VERSION_STRING);
    assert_status(CTL("stats"), 0);
    ck_assert(strstr(out_text, "uptime_seconds") && strstr(out_text, "bytes_in"));

    assert_status(CTL("save", "--json"), 0);
    assert_py("d['written']", "3");
    assert_status(CTL("save"), 0);
    ck_assert(strstr(out_text, "up to date") != NULL);
    assert_status(CTL("info", "bin", "--json"), 0);
    assert_py("d['snapshot']['age_seconds'] is not None", "True");

    assert_status(CTL("reset", "bin"), 0);
    ck_assert_str_eq(out_text, "reset bin\n");
    assert_status(CTL("reset", "bin", "--json"), 0);
    assert_py("d['reset']", "bin");

    assert_status(CTL("drop", "bat", "--json"), 0);
    assert_py("d['dropped'], d['snapshots_removed'] >= 1", "bat True");
    assert_status(CTL("drop", "multi"), 0);
    ck_assert(strncmp(out_text, "dropped multi", 13) == 0);
    assert_status(CTL("models", "--json"), 0);
    assert_py("d", "['bin']");
    unsetenv("PERCEPTROND_ADDRESS");
}
END_TEST

/* `journal FILE [--check]`: the reader's verdict, the daemon's own, offline. */
START_TEST(journal_check_tells_a_torn_tail_from_corruption)
{
    char path[600];
    snprintf(path, sizeof path, "%s/00000000000000000001.pcj", d.dir);
    pc_writer w = {0};
    pcp_journal_put_header(&w, 1);
    static const uint8_t msgs[3][40] = {
        {0x94, 0x00, 0x01, 0xa6, 'c', 'r', 'e', 'a', 't', 'e', 0x92, 0xa1, 'm', 0x80},
        {0x94, 0x00, 0x02, 0xa5, 'l', 'a', 'b', 'e', 'l', 0x93, 0xa1, 'm', 0x81, 0x00, 0x01, 0x01},
        {0x94, 0x00, 0x03, 0xa5, 'l', 'a', 'b', 'e', 'l', 0x93, 0xa1, 'm', 0x81, 0x01, 0x01, 0xff}};
    static const uint32_t lens[3] = {14, 16, 16};
    for (int i = 0; i < 3; i++)
        pcp_journal_put_record(&w, (uint64_t)i + 1, msgs[i], lens[i]);
    ck_assert(!w.failed);
    write_bytes(path, w.buf, w.len);
    assert_status(CTL("journal", path), 0);
    ck_assert_msg(strstr(out_text, "[0, 2, \"label\", [\"m\", {\"0\": 1}, 1]]") &&
                  strstr(out_text, "3 records, the segment ends cleanly"), "%s", out_text);
    /* cut in the last record: a torn tail */
    ck_assert_int_eq(truncate(path, (off_t)w.len - 3), 0);
    assert_status(CTL("journal", path, "--check"), 4);
    ck_assert_msg(strstr(out_text, "2 records, then a torn tail") &&
                  strstr(out_text, "LSN 3: ") && !strstr(out_text, "\"label\""), "%s", out_text);
    /* the first record's length flipped: corruption, with two intact records after it */
    w.buf[PCP_JOURNAL_HEADER_LEN + 2] ^= 0x10;
    write_bytes(path, w.buf, w.len);
    assert_status(CTL("journal", path, "--check", "--json"), 4);
    assert_py("d['damage'], d['damaged_at'], d['damaged_lsn'], d['intact_after'], 'records' in d",
              "corrupt 20 1 2 False");
    assert_status(CTL("journal", path), 4);
    ck_assert_msg(strstr(out_text, "0 records, then corruption at offset 20, LSN 1:") &&
                  strstr(out_text, "2 intact records"), "%s", out_text);
    /* a header of zeros (never reached the disk): torn at 0, its LSNs unknown */
    w.buf[PCP_JOURNAL_HEADER_LEN + 2] ^= 0x10;
    memset(w.buf, 0, PCP_JOURNAL_HEADER_LEN);
    write_bytes(path, w.buf, w.len);
    assert_status(CTL("journal", path, "--check", "--json"), 4);
    assert_py("d['first_lsn'], d['damage'], d['damaged_at'], d['damaged_lsn'], d['intact_after']",
              "None torn 0 None 3");
    assert_status(CTL("journal", path), 4);
    ck_assert_msg(strstr(out_text, "header never reached the disk") &&
                  strstr(out_text, "0 records, then a torn tail (what a crash mid-append leaves) "
                                   "at offset 0: "), "%s", out_text);
    free(w.buf);
}
END_TEST

START_TEST(unknown_model_exits_1)
{
    static char *const cmds[] = {"info", "top", "drop", "reset", "watch"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        assert_status(CTL("-a", d.sock, cmds[i], "nosuch"), 1);
        ck_assert_msg(strstr(err_text, "nosuch") != NULL, "%s", err_text);
        ck_assert(out_text[0] == 0);
        /* with --json the error is also one JSON document on stdout */
        assert_status(CTL("-a", d.sock, "--json", cmds[i], "nosuch"), 1);
        assert_py("d['error']['code'] > 0 and 'nosuch' in d['error']['message']", "True");
    }
    assert_status(CTL("-a", d.sock, "info", "bad/name"), 1);
    assert_status(CTL("-a", d.sock, "create", ".hidden"), 1);
}
END_TEST

/* ---- data files and exact replays ------------------------------------------------ */

#define DIM 8

/* A noisy linear stream over sparse indices 1..5, values multiples of 1/8
 * (exact in text), so the perceptron keeps making mistakes. */
static void gen(uint32_t *state, pc_svec *x, int *y, double v[6])
{
    pc_svec_clear(x);
    double s = 0;
    static const double w[6] = {0, 1, -2, 0.5, 1.5, -1};
    for (uint32_t i = 1; i <= 5; i++) {
        *state = *state * 1664525u + 1013904223u;
        v[i] = (*state >> 16) % 3 == 0 ? 0 : (double)((int)((*state >> 8) % 33) - 16) / 8;
        if (v[i] != 0)
            ck_assert_int_eq(pc_svec_push(x, i, v[i]), PC_OK);
        s += w[i] * v[i];
    }
    *state = *state * 1664525u + 1013904223u;
    *y = s > 0.25 ? 1 : -1;
    if ((*state >> 20) % 10 == 0)
        *y = -*y; /* 10% label noise */
}

typedef struct expect {
    uint64_t examples, mistakes, updates;
    double log_loss; /* of the probability the model would have served before each label */
} expect;

/* Writes n examples as libsvm (labels +1 / 0) and as CSV (y first, 5 dense
 * columns, header a..e), and learns them with the library: the expected
 * progressive-validation counts of a perceptron of dim DIM. */
static expect write_stream(const char *svm, const char *csv, int n, bool bias, pc_model **out)
{
    FILE *fs = fopen(svm, "w"), *fc = fopen(csv, "w");
    ck_assert(fs && fc);
    fprintf(fs, "# generated by test_ctl\n");
    fprintf(fc, "y,a,b,c,d,e\n");
    pc_model *m = tu_model("perceptron", DIM, bias);
    pc_svec x;
    pc_svec_init(&x);
    uint32_t st = 12345;
    expect e = {0};
    for (int t = 0; t < n; t++) {
        int y;
        double v[6];
        gen(&st, &x, &y, v);
        fprintf(fs, "%s", y > 0 ? "+1" : (t % 2 ? "0" : "-1"));
        fprintf(fc, "%d", y);
        for (uint32_t i = 1; i <= 5; i++) {
            if (v[i] != 0)
                fprintf(fs, " %u:%.17g", i, v[i]);
            fprintf(fc, ",%.17g", v[i]);
        }
        fprintf(fs, t % 7 == 0 ? " # note\n" : "\n");
        fprintf(fc, "\n");
        pc_error err;
        ck_assert_int_eq(pc_svec_normalize(&x, DIM, &err), PC_OK);
        pc_prediction p;
        pc_model_predict(m, &x, &p, NULL);
        double p1 = pc_model_probability(m, 0, p.score), q = y > 0 ? p1 : 1 - p1;
        e.log_loss -= log(q < 1e-15 ? 1e-15 : q > 1 - 1e-15 ? 1 - 1e-15 : q);
        pc_label l = {.y = y};
        pc_outcome o;
        ck_assert_int_eq(pc_model_label(m, &x, &l, &o, &err), PC_OK);
        e.examples++;
        e.mistakes += o.mistake;
        e.updates += o.updated;
    }
    pc_svec_free(&x);
    fclose(fs);
    fclose(fc);
    e.log_loss /= n;
    if (out)
        *out = m;
    else
        pc_model_free(m);
    return e;
}

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", d.dir, name);
}

/* Issue 14: `create` sent a full spec, so the daemon's template was ignored;
 * the keys not given now come from it.  And the lifecycle commands. */
START_TEST(create_honours_the_template_and_lifecycle_commands)
{
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_write_config(&d, "limits: {idle_timeout: 30}\n"
                         "template: {rule: pa1, hash_bits: 10, bias: false, params: {C: 0.25}, "
                         E2E_PLAIN "}\n");
    e2e_start(&d);
    setenv("PERCEPTROND_ADDRESS", d.sock, 1);
    assert_status(CTL("create", "t1", "--dim", "8"), 0);
    assert_status(CTL("info", "t1", "--json"), 0);
    assert_py("(d['rule'], d['dim'], d['bias'], d['params']['C'])", "('pa1', 8, False, 0.25)");
    assert_status(CTL("create", "t2"), 0);
    assert_status(CTL("info", "t2", "--json"), 0);
    assert_py("(d['rule'], d['dim'], d['bias'])", "('pa1', 1024, False)");
    assert_status(CTL("create", "t3", "--rule", "perceptron"), 0);
    assert_status(CTL("info", "t3", "--json"), 0);
    assert_py("(d['rule'], d['dim'], d['bias'])", "('perceptron', 1024, False)");
    /* feature preparation from the command line, and --plain taking it off */
    assert_status(CTL("create", "t6", "--rule", "pa", "--averaged", "--scale", "std", "--transform",
                      "age:bins=18,65", "--transform", "x*:log", "--cross", "a=,b=",
                      "--max-crossed", "9"), 0);
    assert_status(CTL("info", "t6", "--json"), 0);
    assert_py("(d['averaged'], d['scale'], d['transforms'], d['crosses'], d['max_crossed'])",
              "(True, 'std', ['age:bins=18,65', 'x*:log'], ['a=,b='], 9)");
    assert_status(CTL("create", "t7", "--rule", "pa", "--plain"), 0);
    assert_status(CTL("info", "t7", "--json"), 0);
    assert_py("(d['averaged'], d['scale'], d['transforms'], d['crosses'])",
              "(False, 'none', [], [])");
    assert_status(CTL("create", "t8", "--plain", "--scale", "max"), 2);
    ck_assert_msg(strstr(err_text, "--plain is the rule without averaging"), "%s", err_text);
    assert_status(CTL("create", "t8", "--transform", "age:sqrt"), 1);
    ck_assert_msg(strstr(err_text, "unknown transform"), "%s", err_text);

    char data[256], file[256];
    path_in(data, sizeof data, "t.svm");
    path_in(file, sizeof file, "t2.model");
    write_file(data, "1 1:1 2:0.5\n-1 3:1\n1 1:0.3 4:2\n");
    assert_status(CTL("replay", "t2", data, "--no-progress"), 0);
    assert_status(CTL("save"), 0);
    assert_status(CTL("snapshots", "t2", "--json"), 0);
    assert_py("(len(d), d[0]['examples'])", "(1, 3)");
    assert_status(CTL("snapshots", "t2"), 0);
    ck_assert(strstr(out_text, "GENERATION") != NULL);
    assert_status(CTL("export", "t2", file), 0);
    assert_status(CTL("import", "t4", file), 0);
    ck_assert(strncmp(out_text, "imported t4 from ", 17) == 0);
    assert_status(CTL("import", "t4", file), 1); /* exists */
    assert_status(CTL("import", "t4", file, "--replace"), 0);
    assert_status(CTL("copy", "t4", "t5"), 0);
    assert_status(CTL("info", "t5", "--json"), 0);
    assert_py("(d['rule'], d['examples'])", "('pa1', 3)");
    assert_status(CTL("rollback", "t2", "1"), 0);
    assert_status(CTL("rollback", "t2", "x"), 2);
    assert_status(CTL("rollback", "t2", "99"), 1);
}
END_TEST

START_TEST(replay_libsvm_counts_exactly_what_the_library_counts)
{
    char svm[256], csv[256], num[32];
    path_in(svm, sizeof svm, "s.svm");
    path_in(csv, sizeof csv, "s.csv");
    expect e = write_stream(svm, csv, 3000, false, NULL);
    ck_assert(e.mistakes > 50); /* a stream where mistakes matter */
    assert_status(
        CTL("-a", d.sock, "create", "p", "--rule", "perceptron", "--dim", "8", "--no-bias"), 0);
    /* a small window forces many full-window waits */
    assert_status(CTL("-a", d.sock, "replay", "p", svm, "--json", "--window", "7"), 0);
    snprintf(num, sizeof num, "%llu %llu %llu", (unsigned long long)e.examples,
             (unsigned long long)e.mistakes, (unsigned long long)e.updates);
    assert_py("d['examples'], d['mistakes'], d['updates']", num);
    assert_py("d['model'], d['examples_per_second'] > 0, abs(d['mistake_rate'] - d['mistakes'] / "
              "d['examples']) < 1e-12",
              "p True True");
    /* the daemon agrees */
    assert_status(CTL("-a", d.sock, "info", "p", "--json"), 0);
    snprintf(num, sizeof num, "%llu %llu", (unsigned long long)e.examples,
             (unsigned long long)e.mistakes);
    assert_py("d['examples'], d['mistakes']", num);

    /* the table, from stdin, on a fresh model with a bias */
    expect eb = write_stream(svm, csv, 3000, true, NULL);
    assert_status(CTL("-a", d.sock, "create", "pb", "--rule", "perceptron", "--dim", "8", "--bias"),
                  0);
    assert_status(CTL_IN(svm, "-a", d.sock, "replay", "pb", "-"), 0);
    char want[64];
    snprintf(want, sizeof want, "mistakes       %llu\n", (unsigned long long)eb.mistakes);
    ck_assert_msg(strstr(out_text, want) != NULL, "%s", out_text);
    snprintf(want, sizeof want, "examples       %llu\n", (unsigned long long)eb.examples);
    ck_assert_msg(strstr(out_text, want) != NULL, "%s", out_text);
    ck_assert(strstr(out_text, "examples/s") != NULL);
    ck_assert_msg(strstr(err_text, "\033[") == NULL, "a progress bar into a file: %s", err_text);
}
END_TEST

START_TEST(replay_csv_dense_and_named)
{
    char svm[256], csv[256], num[64];
    path_in(svm, sizeof svm, "s.svm");
    path_in(csv, sizeof csv, "s.csv");
    expect e = write_stream(svm, csv, 1500, false, NULL);
    /* CSV by position: column a is index 0, so the same model needs the
     * same weights one index lower; the counts do not depend on the shift */
    assert_status(CTL("-a", d.sock, "create", "c", "--dim", "8", "--no-bias"), 0);
    assert_status(CTL("-a", d.sock, "--json", "replay", "c", csv, "--format", "csv",
                      "--label-column", "y"),
                  0);
    snprintf(num, sizeof num, "%llu %llu", (unsigned long long)e.examples,
             (unsigned long long)e.mistakes);
    assert_py("d['examples'], d['mistakes']", num);
    assert_status(CTL("-a", d.sock, "replay", "c2", csv, "--format", "csv", "--label-column", "1",
                      "--json"),
                  0); /* created on first use from the template */
    assert_py("d['examples']", "1500");

    /* by name: the daemon hashes a..e; the library does the same here */
    assert_status(CTL("-a", d.sock, "create", "n", "--hash-bits", "12", "--no-bias"), 0);
    assert_status(CTL("-a", d.sock, "--json", "replay", "n", csv, "--format", "csv", "--header",
                      "--label-column", "y"),
                  0);
    pc_model *m = tu_model("perceptron", 4096, false);
    FILE *f = fopen(csv, "r");
    char line[512];
    ck_assert(fgets(line, sizeof line, f) != NULL);
    uint64_t mistakes = 0;
    static const char *const names[] = {"a", "b", "c", "d", "e"};
    pc_svec x;
    pc_svec_init(&x);
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        int y = (int)strtol(p, &p, 10);
        pc_svec_clear(&x);
        for (int i = 0; i < 5; i++) {
            double v = strtod(p + 1, &p);
            if (v != 0)
                pc_svec_push(&x, pc_hash_feature(names[i], 1, 4096), v);
        }
        pc_error err;
        ck_assert_int_eq(pc_svec_normalize(&x, 4096, &err), PC_OK);
        pc_outcome o;
        ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = y}, &o, &err), PC_OK);
        mistakes += o.mistake;
    }
    fclose(f);
    pc_svec_free(&x);
    pc_model_free(m);
    snprintf(num, sizeof num, "1500 %llu", (unsigned long long)mistakes);
    assert_py("d['examples'], d['mistakes']", num);
    /* and `top` shows the names */
    assert_status(CTL("-a", d.sock, "top", "n", "-n", "5", "--json"), 0);
    assert_py("sorted(w['feature'] for w in d)", "['a', 'b', 'c', 'd', 'e']");
    assert_status(CTL("-a", d.sock, "top", "n", "-n", "2"), 0);
    ck_assert(strstr(out_text, "RANK") && strstr(out_text, "FEATURE"));
    assert_status(CTL("-a", d.sock, "top", "c", "-n", "3"), 0);
    ck_assert_msg(strstr(out_text, "#") != NULL, "index features show as #INDEX: %s", out_text);
}
END_TEST

START_TEST(replay_multiclass_sends_class_names)
{
    char path[256];
    path_in(path, sizeof path, "m.svm");
    FILE *f = fopen(path, "w");
    pc_model_config c;
    pc_model_config_default(&c, DIM);
    c.rule = pc_rule_find("perceptron");
    pc_params_default(c.rule, &c.params);
    c.bias = true;
    c.multiclass = true;
    static const char *const cls[] = {"red", "green", "blue"};
    c.classes = cls;
    c.nclasses = 3;
    pc_model *m;
    pc_error err;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_OK);
    pc_svec x;
    pc_svec_init(&x);
    uint64_t mistakes = 0;
    for (int t = 0; t < 600; t++) {
        int k = (t * 7 + t / 5) % 3;
        double a = (double)((t * 13) % 9) / 4, b = (double)((t * 5) % 7) / 4;
        pc_svec_clear(&x);
        pc_svec_push(&x, (uint32_t)k + 1, 1 + a);
        pc_svec_push(&x, 5, b);
        ck_assert_int_eq(pc_svec_normalize(&x, DIM, &err), PC_OK);
        fprintf(f, "%s %d:%.17g 5:%.17g\n", cls[k], k + 1, 1 + a, b);
        pc_outcome o;
        pc_label l = {.cls = cls[k], .cls_len = strlen(cls[k])};
        ck_assert_int_eq(pc_model_label(m, &x, &l, &o, &err), PC_OK);
        mistakes += o.mistake;
    }
    fclose(f);
    pc_svec_free(&x);
    pc_model_free(m);
    assert_status(CTL("-a", d.sock, "create", "mc", "--dim", "8", "--bias", "--classes",
                      "red,green,blue"),
                  0);
    /* no --multiclass: perceptronctl asks the model */
    assert_status(CTL("-a", d.sock, "--json", "replay", "mc", path), 0);
    char num[64];
    snprintf(num, sizeof num, "600 %llu", (unsigned long long)mistakes);
    assert_py("d['examples'], d['mistakes']", num);
    assert_status(CTL("-a", d.sock, "info", "mc"), 0);
    ck_assert(strstr(out_text, "red") && strstr(out_text, "CLASS"));
    assert_status(CTL("-a", d.sock, "top", "mc", "green", "--json"), 0);
    assert_py("len(d) > 0", "True");
    /* binary labels on a fresh binary model: class names are refused */
    assert_status(CTL("-a", d.sock, "create", "b", "--dim", "8"), 0);
    assert_status(CTL("-a", d.sock, "replay", "b", path), 4);
    ck_assert_msg(strstr(err_text, "m.svm:1:1: label 'red' is not binary") != NULL, "%s", err_text);
    /* forced as strings on a binary model: the daemon refuses them */
    assert_status(CTL("-a", d.sock, "replay", "b", path, "--multiclass"), 1);
    ck_assert_msg(strstr(err_text, "m.svm:1:") != NULL, "%s", err_text);
}
END_TEST

START_TEST(replay_errors_name_the_line)
{
    char path[256];
    path_in(path, sizeof path, "bad.svm");
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 100; i++)
        fprintf(f, "%s 1:%d 2:1\n", i % 2 ? "+1" : "-1", i % 5);
    fprintf(f, "+1 1:1 2:zz\n-1 1:1\n");
    fclose(f);
    assert_status(CTL("-a", d.sock, "create", "e", "--dim", "4"), 0);
    assert_status(CTL("-a", d.sock, "replay", "e", path), 4);
    ck_assert_msg(strstr(err_text, "bad.svm:101:10: bad value 'zz' for feature 2"), "%s", err_text);
    ck_assert_msg(strstr(err_text, "stopped after 100 examples"), "%s", err_text);
    ck_assert(out_text[0] == 0);
    /* every example before the bad line was learned, no more */
    assert_status(CTL("-a", d.sock, "info", "e", "--json"), 0);
    assert_py("d['examples']", "100");
    assert_status(CTL("-a", d.sock, "--json", "replay", "e", path), 4);
    assert_py("d['examples'], 'bad.svm:101:10' in d['error']['message'], d['error']['code']",
              "100 True None");

    /* an index beyond the model's dimension: the daemon's error, with the line */
    write_file(path, "+1 1:1\n-1 2:1\n+1 9:1\n-1 1:1\n");
    assert_status(CTL("-a", d.sock, "replay", "e", path, "-w", "2"), 1);
    ck_assert_msg(strstr(err_text, "bad.svm:3: ") != NULL, "%s", err_text);
    assert_status(CTL("-a", d.sock, "replay", "e", "/nonexistent/file.svm"), 4);
    ck_assert(strstr(err_text, "cannot open /nonexistent/file.svm") != NULL);
    assert_status(CTL("-a", d.sock, "replay", "e", path, "--format", "csv"), 4);
}
END_TEST

START_TEST(predict_writes_one_line_per_example)
{
    char svm[256], csv[256];
    path_in(svm, sizeof svm, "s.svm");
    path_in(csv, sizeof csv, "s.csv");
    pc_model *m;
    write_stream(svm, csv, 500, true, &m);
    assert_status(CTL("-a", d.sock, "create", "q", "--dim", "8", "--bias"), 0);
    assert_status(CTL("-a", d.sock, "replay", "q", svm), 0);
    assert_status(CTL("-a", d.sock, "predict", "q", svm), 0);
    /* the same lines as the library's model, in file order */
    FILE *f = fopen(svm, "r");
    char line[512];
    const char *p = out_text;
    int n = 0;
    uint64_t wrong = 0;
    pc_svec x;
    pc_svec_init(&x);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        pcc_dataset *ds;
        char err[256];
        FILE *lf = fmemopen(line, strlen(line), "r");
        pcc_ds_options o = {.format = PCC_DS_LIBSVM};
        ck_assert_int_eq(pcc_ds_open_file(lf, "l", &o, &ds, err, sizeof err), 0);
        pcc_ds_example ex;
        ck_assert_int_eq(pcc_ds_next(ds, &ex, err, sizeof err), 1);
        pc_svec_clear(&x);
        for (size_t i = 0; i < ex.n; i++)
            pc_svec_push(&x, ex.f[i].index, ex.f[i].value);
        pc_error perr;
        ck_assert_int_eq(pc_svec_normalize(&x, DIM, &perr), PC_OK);
        pc_prediction pr;
        pc_model_predict(m, &x, &pr, NULL);
        wrong += pr.y != ex.y;
        pcc_ds_close(ds);
        fclose(lf);
        char want[128];
        /* the probability of the predicted label: the daemon's calibration
         * learned the same stream as the library's model */
        double prob = pc_model_probability(m, 0, pr.score);
        snprintf(want, sizeof want, "%d\t%.10g\t%.10g\n", pr.y, pr.score,
                 pr.y > 0 ? prob : 1 - prob);
        ck_assert_msg(strncmp(p, want, strlen(want)) == 0, "line %d: got '%.40s', want '%s'", n + 1,
                      p, want);
        p += strlen(want);
        n++;
    }
    fclose(f);
    pc_svec_free(&x);
    pc_model_free(m);
    ck_assert_int_eq(n, 500);
    ck_assert(*p == 0);
    char want[128];
    snprintf(want, sizeof want, "%llu mistakes against the file's 500 labels",
             (unsigned long long)wrong);
    ck_assert_msg(strstr(err_text, want) != NULL, "%s", err_text);
    /* predict does not learn */
    assert_status(CTL("-a", d.sock, "info", "q", "--json"), 0);
    assert_py("d['examples']", "500");

    /* --json: one document with every prediction */
    assert_status(CTL("-a", d.sock, "--json", "predict", "q", svm), 0);
    assert_py("len(d['predictions']), d['examples'], d['predictions'][0]['line']", "500 500 2");
    /* CSV with no label column at all */
    write_file(csv, "1,2,3,4,5\n-1,0,0,1,2\n");
    assert_status(
        CTL("-a", d.sock, "predict", "q", csv, "--format", "csv", "--label-column", "none"), 0);
    int lines = 0;
    for (const char *q = out_text; *q; q++)
        lines += *q == '\n';
    ck_assert_int_eq(lines, 2);
    ck_assert(strstr(err_text, "2 examples") != NULL);
    /* a daemon error stops the output at the line before: no gap */
    write_file(svm, "+1 1:1\n-1 2:1\n+1 9:1\n-1 1:1\n+1 2:1\n");
    assert_status(CTL("-a", d.sock, "predict", "q", svm, "-w", "3"), 1);
    lines = 0;
    for (const char *q = out_text; *q; q++)
        lines += *q == '\n';
    ck_assert_int_eq(lines, 2);
    ck_assert_msg(strstr(err_text, "s.svm:3: ") && strstr(err_text, "2 examples"), "%s", err_text);
    assert_status(CTL("-a", d.sock, "--json", "predict", "q", svm, "-w", "3"), 1);
    assert_py("len(d['predictions']), d['examples'], d['error']['code'] > 0", "2 2 True");
    assert_status(CTL("-a", d.sock, "predict", "nosuch", svm), 1);
    ck_assert_msg(strstr(err_text, "unknown model 'nosuch'"), "%s", err_text);
    assert_status(CTL("-a", d.sock, "--json", "predict", "nosuch", svm), 1);
    assert_py("'nosuch' in d['error']['message'], d['error']['code'] > 0", "True True");
    assert_status(CTL("-a", d.sock, "--json", "predict", "q", "/nonexistent"), 4);
    assert_py("d['examples'], 'cannot open' in d['error']['message'], d['error']['code']",
              "0 True None");
}
END_TEST

START_TEST(watch_refreshes_and_stops)
{
    char svm[256], csv[256];
    path_in(svm, sizeof svm, "s.svm");
    path_in(csv, sizeof csv, "s.csv");
    write_stream(svm, csv, 200, true, NULL);
    assert_status(CTL("-a", d.sock, "create", "w", "--dim", "8"), 0);
    assert_status(CTL("-a", d.sock, "replay", "w", svm), 0);
    assert_status(CTL("-a", d.sock, "watch", "w", "-i", "0.05", "--count", "3"), 0);
    int frames = 0;
    for (const char *p = out_text; (p = strstr(p, "perceptronctl watch w")); p++)
        frames++;
    ck_assert_int_eq(frames, 3);
    ck_assert(strstr(out_text, "examples") && strstr(out_text, "200") &&
              strstr(out_text, "throughput") && strstr(out_text, "mistake rate"));
    ck_assert_msg(strstr(out_text, "\033[") == NULL, "ANSI codes into a file");
    assert_status(CTL("-a", d.sock, "--json", "watch", "w", "-i", "0.05", "-c", "2"), 0);
    assert_py("len(d), d[0]['examples'], d[1]['interval_examples'], d[0]['examples_per_second']",
              "2 200 0 None");

    /* Ctrl-C ends it cleanly, with the JSON array closed */
    const char *bin = getenv("PERCEPTRONCTL");
    unlink(out_path);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(out, 1);
        execl(bin, bin, "-a", d.sock, "--json", "watch", "w", "-i", "0.05", (char *)NULL);
        _exit(127);
    }
    /* wait for the first frame: the handler is installed by then */
    for (int i = 0; i < 1000; i++) {
        struct stat st;
        if (stat(out_path, &st) == 0 && st.st_size > 10)
            break;
        e2e_sleep_ms(10);
    }
    e2e_sleep_ms(150);
    kill(pid, SIGINT);
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free(out_text);
    out_text = slurp(out_path);
    assert_py("len(d) >= 2 and d[-1]['examples'] == 200", "True");
}
END_TEST


/* Many classes, large examples, a daemon that buffers little output: the
 * answers in flight must stay under what it buffers, or the pipelined
 * writes and the daemon's back-pressure wait on each other forever. */
START_TEST(predict_many_classes_does_not_stall)
{
    e2e_init(&d, "limits: {idle_timeout: 30, max_output_bytes: 65536}\n");
    e2e_start(&d);
    char classes[300 * 6], path[256];
    size_t off = 0;
    for (int i = 0; i < 300; i++)
        off += (size_t)snprintf(classes + off, sizeof classes - off, "%sc%03d", i ? "," : "", i);
    path_in(path, sizeof path, "wide.svm");
    FILE *f = fopen(path, "w");
    for (int t = 0; t < 400; t++) {
        fprintf(f, "c%03d", t % 300);
        for (int j = 1; j <= 2000; j++)
            fprintf(f, " %d:%d.%d", j, (t + j) % 7, j % 10);
        fputc('\n', f);
    }
    fclose(f);
    assert_status(CTL("-a", d.sock, "create", "wide", "--dim", "4096", "--classes", classes), 0);
    assert_status(CTL("-a", d.sock, "--json", "replay", "wide", path), 0);
    assert_py("d['examples']", "400");
    assert_status(CTL("-a", d.sock, "--json", "predict", "wide", path), 0);
    assert_py("d['examples'], len(d['predictions']), d['predictions'][399]['label'][0]",
              "400 400 c");
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}
END_TEST

/* ---- issue 16: ingestion, evaluation, rules, one-example commands, the prompt ---- */

/* The report on its own: a hand-computed binary and multiclass case. */
START_TEST(report_figures_by_hand)
{
    ctl_report *r = ctl_report_new(true);
    /* truth, predicted, score, p(truth) */
    ck_assert(ctl_report_add(r, "1", "1", 0.0, 0.5));
    ck_assert(ctl_report_add(r, "1", "-1", -0.5, 0.25));
    ck_assert(ctl_report_add(r, "-1", "-1", -1.0, 0.75));
    ck_assert(ctl_report_add(r, "-1", "1", 0.0, 0.5));
    ck_assert(ctl_report_add(r, "-1", "-1", -2.0, 0.875));
    ck_assert(ctl_report_add(r, "1", "1", 0.0, 0.5));
    ck_assert_uint_eq(ctl_report_examples(r), 6);
    ck_assert_double_eq_tol(ctl_report_accuracy(r), 4.0 / 6, 1e-15);
    /* AUC: positives {0, -0.5, 0} against negatives {-1, 0, -2}: 7 of 9 pairs */
    ck_assert_double_eq_tol(ctl_report_auc(r), 7.0 / 9, 1e-15);
    double ll = -(3 * log(0.5) + log(0.25) + log(0.75) + log(0.875)) / 6;
    ck_assert_double_eq_tol(ctl_report_log_loss(r), ll, 1e-15);
    ck_assert_uint_eq(ctl_report_classes(r), 2);
    ctl_report_class_t c;
    ctl_report_class(r, 0, &c); /* "1", seen first */
    ck_assert_str_eq(c.name, "1");
    ck_assert(c.support == 3 && c.predicted == 3 && c.correct == 2);
    ck_assert_double_eq_tol(c.f1, 2.0 / 3, 1e-15);
    ck_assert_uint_eq(ctl_report_cell(r, 1, 0), 1); /* a -1 predicted 1 */
    ctl_report_free(r);

    /* multiclass: one class never predicted, one never true */
    r = ctl_report_new(false);
    ck_assert(ctl_report_add(r, "cat", "cat", NAN, NAN));
    ck_assert(ctl_report_add(r, "cat", "dog", NAN, NAN));
    ck_assert(ctl_report_add(r, "eel", "dog", NAN, NAN));
    ck_assert(ctl_report_add(r, "dog", "dog", NAN, NAN));
    ck_assert(isnan(ctl_report_auc(r)) && isnan(ctl_report_log_loss(r)));
    ctl_report_class(r, 2, &c); /* eel: never predicted */
    ck_assert_str_eq(c.name, "eel");
    ck_assert(isnan(c.precision) && c.recall == 0 && c.f1 == 0);
    ctl_report_class(r, 1, &c); /* dog: 1 of 3 predicted right, its only example found */
    ck_assert(c.precision == 1.0 / 3 && c.recall == 1 && fabs(c.f1 - 0.5) < 1e-15);
    ctl_report_free(r);
}
END_TEST

/* evaluate on a file whose every prediction is known: the model learned one
 * example "-1 2:1" (perceptron, no bias: score 0 predicts +1, a mistake, so
 * w2 = -1), so the score is -x2 and the prediction +1 exactly when x2 = 0
 * (sign(0) = +1). */
START_TEST(evaluate_figures_exact_on_a_hand_computed_file)
{
    char train[256], test[256];
    path_in(train, sizeof train, "train.svm");
    path_in(test, sizeof test, "test.svm");
    write_file(train, "-1 2:1\n");
    /*              truth  score  predicted
     *  +1 1:1      +1     0      +1   TP
     *  +1 2:0.5    +1     -0.5   -1   FN
     *  -1 2:1      -1     -1     -1   TN
     *  -1 1:1      -1     0      +1   FP
     *  -1 2:2      -1     -2     -1   TN
     *  +1 1:2      +1     0      +1   TP                                     */
    write_file(test, "+1 1:1\n+1 2:0.5\n-1 2:1\n-1 1:1\n-1 2:2\n+1 1:2\n");
    assert_status(CTL("-a", d.sock, "create", "ev", "--dim", "4", "--no-bias"), 0);
    assert_status(CTL("-a", d.sock, "replay", "ev", train), 0);
    assert_status(CTL("-a", d.sock, "evaluate", "ev", test, "--json"), 0);
    assert_py("d['report']['examples'], d['report']['accuracy'] == 4/6", "6 True");
    assert_py("d['report']['confusion']", "{'labels': ['1', '-1'], 'matrix': [[2, 1], [1, 2]]}");
    assert_py("[(c['class'], c['precision'] == 2/3, c['recall'] == 2/3, abs(c['f1'] - 2/3) < 1e-15,"
              " c['support']) for c in d['report']['classes']]",
              "[('1', True, True, True, 3), ('-1', True, True, True, 3)]");
    assert_py("abs(d['report']['roc_auc'] - 7/9) < 1e-15", "True");
    char ev_json[256];
    path_in(ev_json, sizeof ev_json, "ev.json");
    rename(out_path, ev_json);
    /* the log loss is that of the probabilities `predict` returns */
    assert_status(CTL("-a", d.sock, "predict", "ev", test, "--json"), 0);
    char expr[700];
    snprintf(expr, sizeof expr,
             "(lambda e, ys: abs(e['report']['log_loss'] - sum(-__import__('math').log(p['probability'] "
             "if y > 0 else 1 - p['probability']) for p, y in zip(d['predictions'], ys)) / 6) < "
             "1e-12)(json.load(open('%s')), [1, 1, -1, -1, -1, 1])",
             ev_json);
    assert_py(expr, "True");
    /* the table */
    assert_status(CTL("-a", d.sock, "evaluate", "ev", test), 0);
    ck_assert_msg(strstr(out_text, "accuracy       0.6667\n") && strstr(out_text, "ROC AUC        0.7778\n"),
                  "%s", out_text);
    ck_assert_msg(strstr(out_text, "TRUE\\PREDICTED  1  -1\n1               2   1\n-1              1   2\n"),
                  "%s", out_text);
    /* a model created with --no-calibrate: the same figures, no log loss, and why */
    assert_status(CTL("-a", d.sock, "create", "evn", "--dim", "4", "--no-bias", "--no-calibrate"), 0);
    assert_status(CTL("-a", d.sock, "replay", "evn", train), 0);
    assert_status(CTL("-a", d.sock, "info", "evn", "--json"), 0);
    assert_py("d['calibrate'], d['examples']", "False 1");
    assert_status(CTL("-a", d.sock, "evaluate", "evn", test, "--json"), 0);
    assert_py("d['report']['accuracy'] == 4/6, abs(d['report']['roc_auc'] - 7/9) < 1e-15, "
              "d['report']['log_loss'], d['report']['log_loss_missing']",
              "True True None the model has calibrate: false, so no probabilities");
    assert_status(CTL("-a", d.sock, "evaluate", "evn", test), 0);
    ck_assert_msg(strstr(out_text, "log loss       -  (the model has calibrate: false, so no "
                                   "probabilities)\n"), "%s", out_text);
    assert_status(CTL("-a", d.sock, "predict", "evn", test), 0);
    ck_assert_msg(strncmp(out_text, "1\t0\t-\n-1\t-0.5\t-\n", 16) == 0, "%s", out_text);
    assert_status(CTL("-a", d.sock, "predict", "evn", "1:1", "--json"), 0);
    assert_py("sorted(d)", "['label', 'score']");
    /* labels that are not binary on a binary model: say so */
    write_file(test, "+1 1:1\ncat 2:1\n");
    assert_status(CTL("-a", d.sock, "evaluate", "ev", test), 4);
    ck_assert_msg(strstr(err_text, "line 2: label 'cat' is not binary") &&
                      strstr(err_text, "--positive"),
                  "%s", err_text);
    /* --positive maps text labels to +1 / -1 */
    write_file(test, "yes 1:1\nno 2:1\n");
    assert_status(CTL("-a", d.sock, "evaluate", "ev", test, "--positive", "yes", "--json"), 0);
    assert_py("d['report']['accuracy']", "1");
    ck_assert_msg(!strstr(err_text, "warning"), "%s", err_text);
    /* a --positive that matches no label: every example was -1, and it says
     * so with the labels it met (adult.test's '>50K.' against '>50K') */
    write_file(test, "<=50K. 1:1\n>50K. 2:1\n<=50K. 2:1\n");
    assert_status(CTL("-a", d.sock, "evaluate", "ev", test, "--positive", ">50K"), 0);
    ck_assert_msg(strstr(err_text, "warning: --positive '>50K' matched none of the 3 labels") &&
                      strstr(err_text, "'<=50K.', '>50K.'"),
                  "%s", err_text);
    assert_status(CTL("-a", d.sock, "replay", "ev", test, "--positive", ">50K"), 0);
    ck_assert_msg(strstr(err_text, "so replay sent every example as -1"), "%s", err_text);
    /* a multiclass model evaluated on a class it never learned */
    write_file(train, "cat 1:1\ndog 2:1\n");
    write_file(test, "cat 1:1\nbird 2:1\nbird 1:1\nemu 1:1\n");
    assert_status(CTL("-a", d.sock, "replay", "mc", train), 0);
    assert_status(CTL("-a", d.sock, "evaluate", "mc", test), 0);
    ck_assert_msg(strstr(err_text, "warning: 3 of the labels are classes the model never learned "
                                   "('bird', 'emu')"), "%s", err_text);
    /* an unknown model */
    assert_status(CTL("-a", d.sock, "evaluate", "nosuch", test), 1);
    ck_assert_msg(strstr(err_text, "unknown model 'nosuch'"), "%s", err_text);
}
END_TEST

/* The issue's case: replay into a new model with class labels creates a
 * multiclass model; a failed run counts nothing it did not learn. */
START_TEST(replay_creates_the_right_model_and_reports_honestly)
{
    char path[256];
    path_in(path, sizeof path, "cls.svm");
    write_file(path, "red 1:1\ngreen 2:1\nblue 3:1\nred 1:1\ngreen 2:1\n");
    assert_status(CTL("-a", d.sock, "replay", "fresh", path, "--json"), 0);
    assert_py("d['examples']", "5");
    assert_status(CTL("-a", d.sock, "info", "fresh", "--json"), 0);
    assert_py("d['multiclass'], d['open_classes'], sorted(c['name'] for c in d['classes'])",
              "True True ['blue', 'green', 'red']");
    /* --multiclass on a new model with binary-looking labels */
    char bin[256];
    path_in(bin, sizeof bin, "bin.svm");
    write_file(bin, "1 1:1\n-1 2:1\n1 1:1\n");
    assert_status(CTL("-a", d.sock, "replay", "fresh2", bin, "--multiclass", "--json"), 0);
    assert_status(CTL("-a", d.sock, "info", "fresh2", "--json"), 0);
    assert_py("d['multiclass'], sorted(c['name'] for c in d['classes'])", "True ['-1', '1']");
    /* binary labels: a binary model from the template */
    assert_status(CTL("-a", d.sock, "replay", "fresh3", bin), 0);
    assert_status(CTL("-a", d.sock, "info", "fresh3", "--json"), 0);
    assert_py("d['multiclass']", "False");
    /* class names forced onto a binary model: every request fails, and the
     * summary says nothing was learned (it said 100 examples, 0.00% before) */
    assert_status(CTL("-a", d.sock, "replay", "fresh3", path, "--multiclass"), 1);
    ck_assert_msg(strstr(err_text, "stopped after 0 examples learned") &&
                      strstr(err_text, "examples       0\n") &&
                      strstr(err_text, "mistake rate   -\n"),
                  "%s", err_text);
    assert_status(CTL("-a", d.sock, "info", "fresh3", "--json"), 0);
    assert_py("d['examples']", "3");
}
END_TEST

/* `perceptronctl replay MODEL -` (with `-w WINDOW` unless NULL) reading a
 * fifo of its own, stdout and stderr in files named after the model (the
 * latter's path in err); returns its pid, and in *w the fifo's writing end. */
static pid_t replay_from_fifo(const char *model, const char *window, int *w, char err[256])
{
    char fifo[256], o[256], name[64], m[32];
    snprintf(m, sizeof m, "%s", model); /* CTL's words are not const */
    snprintf(name, sizeof name, "%s.fifo", model);
    path_in(fifo, sizeof fifo, name);
    snprintf(name, sizeof name, "%s.out", model);
    path_in(o, sizeof o, name);
    snprintf(name, sizeof name, "%s.err", model);
    path_in(err, 256, name);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    assert_status(CTL("-a", d.sock, "create", m, "--dim", "8"), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int in = open(fifo, O_RDONLY), out = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0644),
            er = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(in, 0);
        dup2(out, 1);
        dup2(er, 2);
        execl(getenv("PERCEPTRONCTL"), "perceptronctl", "-a", d.sock, "replay", model, "-",
              window ? "-w" : (char *)NULL, window, (char *)NULL);
        _exit(127);
    }
    *w = open(fifo, O_WRONLY);
    ck_assert(*w >= 0);
    unlink(fifo); /* both ends are open */
    return pid;
}

/* n lines "+-1 k:1" into w, the pipe left open (the replay waits for more),
 * then waits until the daemon has learned all n of model (10 s at most). */
static void feed_and_wait(int w, const char *model, int n)
{
    char m[32];
    snprintf(m, sizeof m, "%s", model);
    for (int i = 0; i < n; i++) {
        char line[64];
        int len = snprintf(line, sizeof line, "%s %d:1\n", i % 2 ? "+1" : "-1", 1 + i % 3);
        ck_assert(write(w, line, (size_t)len) == len);
    }
    char want[16];
    snprintf(want, sizeof want, "%d", n);
    for (int t = 0; t < 200; t++) {
        assert_status(CTL("-a", d.sock, "info", m, "--json"), 0);
        if (strcmp(py("d['examples']"), want) == 0)
            break;
        usleep(50000);
    }
    assert_py("d['examples']", want);
}

/* Ctrl-C during a replay from a pipe that stalls: the examples sent are
 * answered and counted, the summary printed, exit status 130. */
START_TEST(replay_interrupted_prints_a_partial_summary)
{
    char e[256];
    int w;
    pid_t pid = replay_from_fifo("intr", "4", &w, e);
    feed_and_wait(w, "intr", 300);
    ck_assert_int_eq(kill(pid, SIGINT), 0);
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    close(w);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
    char *err = slurp(e);
    ck_assert_msg(strstr(err, "interrupted after 300 examples") && strstr(err, "examples       300\n"),
                  "%s", err);
    free(err);
}
END_TEST

/* A replay from a pipe that stalls (`tail -f log | perceptronctl replay`):
 * each line reaches the daemon without waiting for the next (with the
 * default window, 64 requests were packed per write: 36 of these 100 waited). */
START_TEST(replay_from_a_stalled_pipe_sends_every_line)
{
    char e[256];
    int w;
    pid_t pid = replay_from_fifo("stall", NULL, &w, e);
    feed_and_wait(w, "stall", 100);
    close(w); /* the end of the input: the replay ends */
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
}
END_TEST

/* CSV categories and JSON lines through the daemon: the same named features
 * give the same model; the mistakes are the library's on the hashed names. */
START_TEST(replay_csv_categories_and_jsonl_match_the_library)
{
    char csv[256], jl[256];
    path_in(csv, sizeof csv, "cat.csv");
    path_in(jl, sizeof jl, "cat.jsonl");
    static const char *const colours[] = {"red", "green", "blue", "grey"};
    FILE *fc = fopen(csv, "w"), *fj = fopen(jl, "w");
    fprintf(fc, "colour,size,skipme,y\n");
    pc_model *m = tu_model("perceptron", 1u << 16, true);
    pc_svec x;
    pc_svec_init(&x);
    uint64_t mistakes = 0;
    for (int i = 0; i < 400; i++) {
        const char *c = colours[(i * 7 + i / 3) % 4];
        double size = (double)((i * 5) % 9) / 2;
        int y = (c[0] == 'r' || c[1] == 'r') == (size > 1.5) ? 1 : -1; /* red/green XOR small */
        fprintf(fc, "%s,%g,%d,%d\n", c, size, i, y);
        fprintf(fj, "{\"label\": %d, \"colour\": \"%s\", \"size\": %g}\n", y, c, size);
        char name[32];
        int n = snprintf(name, sizeof name, "colour=%s", c);
        pc_svec_clear(&x);
        pc_svec_push(&x, pc_hash_feature(name, (size_t)n, 1u << 16), 1);
        if (size != 0)
            pc_svec_push(&x, pc_hash_feature("size", 4, 1u << 16), size);
        pc_error perr;
        ck_assert_int_eq(pc_svec_normalize(&x, 1u << 16, &perr), PC_OK);
        pc_outcome out;
        ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = y}, &out, &perr), PC_OK);
        mistakes += out.mistake;
    }
    fclose(fc);
    fclose(fj);
    pc_svec_free(&x);
    pc_model_free(m);
    char want[64];
    snprintf(want, sizeof want, "400 %llu", (unsigned long long)mistakes);
    assert_status(CTL("-a", d.sock, "create", "kc", "--hash-bits", "16", "--bias"), 0);
    assert_status(CTL("-a", d.sock, "replay", "kc", csv, "--header", "--ignore", "skipme", "--json"), 0);
    assert_py("d['examples'], d['mistakes']", want);
    assert_status(CTL("-a", d.sock, "create", "kj", "--hash-bits", "16", "--bias"), 0);
    assert_status(CTL("-a", d.sock, "replay", "kj", jl, "--json"), 0);
    assert_py("d['examples'], d['mistakes']", want);
    /* the names are kept: top shows the categories */
    assert_status(CTL("-a", d.sock, "top", "kj", "-n", "10", "--json"), 0);
    assert_py("all(w['feature'] in ('colour=blue', 'colour=green', 'colour=grey', 'colour=red', "
              "'size') for w in d), len(d) >= 3",
              "True True");
    /* an --ignore naming no column is a data error before anything is sent */
    assert_status(CTL("-a", d.sock, "replay", "kc", csv, "--ignore", "nosuch"), 4);
    ck_assert_msg(strstr(err_text, "--ignore: no column is named 'nosuch'"), "%s", err_text);
    /* a bad JSON line names its line */
    write_file(jl, "{\"label\": 1, \"a\": 1}\n{\"label\": 1, \"a\": [1]}\n");
    assert_status(CTL("-a", d.sock, "replay", "kj", jl), 4);
    ck_assert_msg(strstr(err_text, "cat.jsonl:2: feature 'a' is an array"), "%s", err_text);
}
END_TEST

START_TEST(replay_report_and_curve)
{
    char svm[256], csv[256], png[256], svg[256];
    path_in(svm, sizeof svm, "s.svm");
    path_in(csv, sizeof csv, "s.csv");
    path_in(png, sizeof png, "curve.png");
    path_in(svg, sizeof svg, "curve.svg");
    expect e = write_stream(svm, csv, 2000, true, NULL);
    /* a model the replay creates (the template: perceptron, 2^DIM_BITS dims, bias) */
    assert_status(CTL("-a", d.sock, "replay", "rc", svm, "--report", "--curve", png, "--json"), 0);
    /* the report's confusion matrix holds exactly the replay's mistakes, and
     * its log loss is of the probabilities the model itself would have served
     * (the library's model fed the same stream) */
    char want[128];
    snprintf(want, sizeof want, "2000 %llu True %.12e", (unsigned long long)e.mistakes, e.log_loss);
    assert_py("d['report']['examples'], sum(d['report']['confusion']['matrix'][i][j] for i in "
              "range(2) for j in range(2) if i != j), d['curve'] is not None, "
              "'%.12e' % d['report']['log_loss']",
              want);
    /* the model existed: its calibration history is the daemon's, no log loss */
    assert_status(CTL("-a", d.sock, "replay", "rc", svm, "--report", "--json"), 0);
    assert_py("d['report']['log_loss']", "None");
    FILE *f = fopen(png, "rb");
    ck_assert(f != NULL);
    unsigned char magic[8];
    ck_assert_uint_eq(fread(magic, 1, 8, f), 8);
    fclose(f);
    ck_assert(memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0);
    assert_status(CTL("-a", d.sock, "replay", "rc", svm, "--curve", svg), 0);
    char *text = slurp(svg);
    ck_assert(strstr(text, "<svg") && strstr(text, "mistake rate"));
    free(text);
    assert_status(CTL("-a", d.sock, "replay", "rc", svm, "--curve", "x.gif"), 2);
}
END_TEST

START_TEST(rules_come_from_the_library_table)
{
    assert_status(CTL("rules", "--json"), 0);
    size_t n = 0;
    while (pc_rules()[n])
        n++;
    char want[32];
    snprintf(want, sizeof want, "%zu", n);
    assert_py("len(d)", want);
    /* every parameter as the library declares it */
    for (size_t i = 0; i < n; i++) {
        const pc_rule *r = pc_rules()[i];
        for (size_t k = 0; k < pc_rule_param_count(r); k++) {
            const pc_param_spec *s = pc_rule_param(r, k);
            char expr[256], val[256];
            snprintf(expr, sizeof expr, "(lambda p: (p['name'], p['min'], p['min_open']))(d[%zu]['params'][%zu])",
                     i, k);
            snprintf(val, sizeof val, "('%s', %s, %s)", s->name, s->min <= -1e300 ? "None" : "X",
                     s->min_open ? "True" : "False");
            if (s->min > -1e300) {
                char m[64];
                snprintf(m, sizeof m, "%.17g", s->min);
                snprintf(expr, sizeof expr,
                         "(lambda p: (p['name'], p['min'] == %s, p['min_open']))(d[%zu]['params'][%zu])",
                         m, i, k);
                snprintf(val, sizeof val, "('%s', True, %s)", s->name, s->min_open ? "True" : "False");
            }
            assert_py(expr, val);
        }
    }
    assert_status(CTL("rules", "pa1"), 0);
    ck_assert_msg(strstr(out_text, "pa1: ") && strstr(out_text, "C      real  1        (0, inf)"),
                  "%s", out_text);
    assert_status(CTL("rules", "nosuch"), 2);
    assert_status(CTL("create", "--help", "alma"), 0);
    ck_assert_msg(strstr(out_text, "Usage: perceptronctl create") && strstr(out_text, "Rule alma: "),
                  "%s", out_text);
    assert_status(CTL("create", "--help"), 0);
    ck_assert_msg(strstr(out_text, "omm-naive"), "%s", out_text);
}
END_TEST

START_TEST(one_example_call_and_silent_cases)
{
    assert_status(CTL("-a", d.sock, "label", "one", "1", "cheap", "pills:2", "--json"), 0);
    assert_py("d['predicted'], d['mistake'], d['updated']", "1 False True");
    assert_status(CTL("-a", d.sock, "label", "one", "-1", "meeting", "agenda:1.5"), 0);
    ck_assert_msg(strstr(out_text, "a mistake; the model changed"), "%s", out_text);
    /* a negative label after a flag is still the label, not options '-1' */
    assert_status(CTL("-a", d.sock, "label", "one", "--json", "-1", "meeting"), 0);
    assert_py("type(d['mistake']).__name__, type(d['updated']).__name__", "bool bool");
    assert_status(CTL("-a", d.sock, "label", "one", "--js", "-1", "meeting"), 0);
    /* after an option that takes a value, the number is that value */
    assert_status(CTL("-a", d.sock, "top", "one", "-n", "-3"), 2);
    ck_assert_msg(strstr(err_text, "-n wants a count in 1..10000, not '-3'"), "%s", err_text);
    assert_status(CTL("-a", d.sock, "top", "one", "--count", "-3"), 2);
    ck_assert_msg(strstr(err_text, "not '-3'"), "%s", err_text);
    assert_status(CTL("-a", d.sock, "predict", "one", "cheap", "--json"), 0);
    assert_py("d['label'], d['score'], 0 < d['probability'] < 1", "1 1 True");
    assert_status(CTL("-a", d.sock, "predict", "one", "cheap"), 0);
    ck_assert_msg(strstr(out_text, "probability "), "%s", out_text);
    /* call: any method, JSON arguments */
    assert_status(CTL("-a", d.sock, "call", "predict", "one", "{\"cheap\": 1}"), 0);
    assert_py("d['label'], d['score']", "1 1");
    assert_status(CTL("-a", d.sock, "call", "ping"), 0);
    assert_py("d", "pong");
    assert_status(CTL("-a", d.sock, "call", "predict", "one", "{\"cheap\": }"), 2);
    ck_assert_msg(strstr(err_text, "argument 2 is not valid JSON"), "%s", err_text);
    assert_status(CTL("-a", d.sock, "call", "nosuch"), 1);
    /* bad words */
    assert_status(CTL("-a", d.sock, "predict", "one", "cheap:x"), 2);
    ck_assert_msg(strstr(err_text, "bad value 'x' for feature cheap"), "%s", err_text);
    /* weights m 3 2: an integer class is refused, not read as top_k */
    assert_status(CTL("-a", d.sock, "create", "mm", "--dim", "8", "--classes", "a,b,c"), 0);
    assert_status(CTL("-a", d.sock, "call", "weights", "mm", "3", "2"), 1);
    ck_assert_msg(strstr(err_text, "must be a class name or nil, not an integer"), "%s", err_text);
    assert_status(CTL("-a", d.sock, "call", "weights", "one", "5"), 0); /* (model, top_k) */
    /* top on a multiclass model without CLASS: refused, not the first class */
    assert_status(CTL("-a", d.sock, "top", "mm"), 1);
    ck_assert_msg(strstr(err_text, "is multiclass: name one of its 3 classes"), "%s", err_text);
    assert_status(CTL("-a", d.sock, "top", "mm", "b"), 0);
    /* ping --json without a daemon: a JSON error on stdout */
    char nowhere[300];
    snprintf(nowhere, sizeof nowhere, "unix:%s/nobody.sock", d.dir);
    assert_status(CTL("-a", nowhere, "ping", "--json"), 3);
    assert_py("d['error']['code'], 'cannot connect' in d['error']['message']", "None True");
    /* top --names for a libsvm model */
    char svm[256], names[256];
    path_in(svm, sizeof svm, "n.svm");
    path_in(names, sizeof names, "n.names");
    write_file(svm, "1 1:1 3:2\n-1 2:1\n1 1:1\n");
    write_file(names, "1 word count\nlength\n");
    assert_status(CTL("-a", d.sock, "create", "nm", "--dim", "8", "--no-bias"), 0);
    assert_status(CTL("-a", d.sock, "replay", "nm", svm), 0);
    assert_status(CTL("-a", d.sock, "top", "nm", "--names", names), 0);
    ck_assert_msg(strstr(out_text, "word count") && strstr(out_text, "length") && strstr(out_text, "#3"),
                  "%s", out_text);
    assert_status(CTL("-a", d.sock, "top", "nm", "--names", names, "--json"), 0);
    assert_py("sorted((w['index'], w['feature']) for w in d)",
              "[(1, 'word count'), (2, 'length'), (3, None)]");
    assert_status(CTL("-a", d.sock, "top", "nm", "--names", "/nonexistent"), 4);
    /* replay --names: named indices go by name (hashed, remembered by the
     * daemon), the others stay indices; the same mistakes as by index here */
    assert_status(CTL("-a", d.sock, "create", "nh", "--hash-bits", "12", "--no-bias"), 0);
    assert_status(CTL("-a", d.sock, "replay", "nh", svm, "--names", names), 0);
    assert_status(CTL("-a", d.sock, "top", "nh", "--json"), 0);
    assert_py("sorted((w['feature'] or w['index']) for w in d if w['feature'])",
              "['length', 'word count']");
    assert_py("[w['index'] for w in d if not w['feature']]", "[3]");
    assert_status(CTL("-a", d.sock, "replay", "nh", svm, "--names", "/nonexistent"), 4);

    /* predict classifies unlabelled lines (refused before: "the line starts
     * with '1:1', not a label"); the mistakes count the labelled ones */
    write_file(svm, "1:1 3:2\n-1 2:1\n3:1\n");
    assert_status(CTL("-a", d.sock, "predict", "nm", svm), 0);
    ck_assert_msg(strstr(err_text, "3 examples") && strstr(err_text, "against the file's 1 labels"),
                  "%s", err_text);
    char jl[256];
    path_in(jl, sizeof jl, "u.jsonl");
    write_file(jl, "{\"cheap\": 1}\n{\"label\": 1, \"cheap\": 1}\n");
    assert_status(CTL("-a", d.sock, "predict", "one", jl, "--json"), 0);
    assert_py("len(d['predictions']), d['labelled']", "2 1");
    /* replay and evaluate still need the labels */
    assert_status(CTL("-a", d.sock, "replay", "nm", svm), 4);
    ck_assert_msg(strstr(err_text, "not a label"), "%s", err_text);
}
END_TEST

/* Reads the pty until want appears (or 10 s pass); returns what was read. */
static const char *pty_expect(int fd, const char *want)
{
    static char buf[65536];
    static size_t len;
    double end = (double)time(NULL) + 10;
    for (;;) {
        buf[len] = 0;
        char *hit = strstr(buf, want);
        if (hit) {
            /* keep what follows the match for the next expectation */
            size_t keep = len - (size_t)(hit + strlen(want) - buf);
            memmove(buf, hit + strlen(want), keep);
            len = keep;
            return "ok";
        }
        if ((double)time(NULL) > end)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 200) > 0) {
            ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
            if (n <= 0)
                break;
            len += (size_t)n;
            if (len > sizeof buf - 1024) { /* keep the tail */
                memmove(buf, buf + len - 8192, 8192);
                len = 8192;
            }
        }
    }
    buf[len] = 0;
    return buf;
}

#define assert_pty(fd, want)                                                                     \
    do {                                                                                         \
        const char *got_ = pty_expect((fd), (want));                                             \
        ck_assert_msg(strcmp(got_, "ok") == 0, "expected \"%s\" on the terminal; got:\n%s",    \
                      (want), got_);                                                             \
    } while (0)

static void pty_send(int fd, const char *s)
{
    ck_assert(write(fd, s, strlen(s)) == (ssize_t)strlen(s));
}

/* The prompt through a pseudo-terminal: Tab completes a command and a model
 * name, the up arrow recalls the last line, the history is saved. */
START_TEST(interactive_mode_through_a_pty)
{
    assert_status(CTL("-a", d.sock, "create", "spamfilter", "--dim", "16", "--rule", "alma"), 0);
    char hist[256];
    path_in(hist, sizeof hist, "history");
    int fd;
    fflush(NULL);
    pid_t pid = forkpty(&fd, NULL, NULL, NULL);
    ck_assert(pid >= 0);
    if (pid == 0) {
        setenv("PERCEPTRONCTL_HISTORY", hist, 1);
        setenv("TERM", "vt100", 1);
        execl(getenv("PERCEPTRONCTL"), "perceptronctl", "-a", d.sock, (char *)NULL);
        _exit(127);
    }
    assert_pty(fd, "Tab completes");
    pty_send(fd, "pi\t\r"); /* Tab: "ping " */
    assert_pty(fd, "pong from");
    pty_send(fd, "info spamf\t\r"); /* the model's name from the daemon */
    assert_pty(fd, "alma");
    pty_send(fd, "\033[A\r"); /* the up arrow: info spamfilter again */
    assert_pty(fd, "alma");
    pty_send(fd, "top nosuch\r"); /* an error does not end the session */
    assert_pty(fd, "unknown model 'nosuch'");
    pty_send(fd, "rules 'pa1'\r"); /* quotes as in sh */
    assert_pty(fd, "aggressiveness");
    pty_send(fd, "quit\r");
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    close(fd);
    ck_assert_msg(WIFEXITED(status), "status %d", status);
    char *h = slurp(hist);
    /* libedit's format: blanks written as \040 */
    ck_assert_msg(strstr(h, "spamfilter") && strstr(h, "ping"), "history: %s", h);
    free(h);
}
END_TEST

/* A token from $PERCEPTROND_TOKEN or $PERCEPTROND_TOKEN_FILE: TCP learns
 * without one and administers with it; a refused token exits 3. */
START_TEST(tokens_from_the_environment)
{
    e2e_init(&d, NULL);
    char tokens[300], extra[400], tfile[300];
    snprintf(tokens, sizeof tokens, "%s/tokens", d.dir);
    write_file(tokens, "ops admin ctl-token-0123456789abcdef\n");
    chmod(tokens, 0600);
    snprintf(tfile, sizeof tfile, "%s/my-token", d.dir);
    write_file(tfile, "ctl-token-0123456789abcdef\n");
    snprintf(extra, sizeof extra, "auth: {tokens_file: \"%s\"}\n", tokens);
    e2e_write_config(&d, extra);
    e2e_start(&d);
    assert_status(CTL("-a", d.tcp, "create", "m", "--dim", "4"), 1);
    ck_assert_msg(strstr(err_text, "needs the admin right"), "%s", err_text);
    setenv("PERCEPTROND_TOKEN", "ctl-token-0123456789abcdef", 1);
    assert_status(CTL("-a", d.tcp, "create", "m", "--dim", "4"), 0);
    setenv("PERCEPTROND_TOKEN", "ctl-token-wrong-0123456789", 1);
    assert_status(CTL("-a", d.tcp, "drop", "m"), 3);
    ck_assert_msg(strstr(err_text, "refused the token"), "%s", err_text);
    unsetenv("PERCEPTROND_TOKEN");
    setenv("PERCEPTROND_TOKEN_FILE", tfile, 1);
    assert_status(CTL("-a", d.tcp, "drop", "m"), 0);
    unsetenv("PERCEPTROND_TOKEN_FILE");
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ctl");
    TU_TCASE(s, "units", 0, libsvm_parses_labels_features_comments,
        libsvm_bad_lines_name_file_line_column, binary_labels, csv_header_detected_label_last_dense,
        csv_named_features_label_by_name_and_number, csv_bad_lines_name_file_line_column,
        csv_categories_hashed_as_column_value, jsonl_flat_and_nested,
        jsonl_bad_lines_name_file_line_column, names_file_and_format_by_name_or_content,
        json_printer_maps_every_type, json_strings_are_valid_utf8, json_numbers_read_back_exactly,
        report_figures_by_hand);
    TCase *e = TU_TCASE(s, "daemon", 120, every_subcommand_has_help,
        usage_errors_exit_2_before_connecting, no_daemon_exits_3,
        admin_subcommands_against_the_daemon, create_honours_the_template_and_lifecycle_commands,
        unknown_model_exits_1, journal_check_tells_a_torn_tail_from_corruption,
        replay_libsvm_counts_exactly_what_the_library_counts, replay_csv_dense_and_named,
        replay_multiclass_sends_class_names, replay_errors_name_the_line,
        predict_writes_one_line_per_example, watch_refreshes_and_stops,
        evaluate_figures_exact_on_a_hand_computed_file,
        replay_creates_the_right_model_and_reports_honestly,
        replay_interrupted_prints_a_partial_summary, replay_from_a_stalled_pipe_sends_every_line,
        replay_csv_categories_and_jsonl_match_the_library, replay_report_and_curve,
        rules_come_from_the_library_table, one_example_call_and_silent_cases,
        interactive_mode_through_a_pty);
    tcase_add_checked_fixture(e, daemon_up, daemon_down);
    TU_TCASE(s, "own daemon", 120, predict_many_classes_does_not_stall,
        tokens_from_the_environment);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
