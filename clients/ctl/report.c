/* report.c - the evaluation report (report.h).
 *
 * Classes are kept in the order first seen (true or predicted), the
 * confusion matrix grows with them.  The AUC is the Mann-Whitney statistic of
 * the binary scores (ties count a half), from one sort of every (score,
 * label) pair: O(n log n) once, when the report is printed. */
#include "clients/ctl/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clients/ctl/ctl.h"
#include "lib/grow.h"

typedef struct scored {
    double s;
    bool pos;
} scored;

struct ctl_report {
    bool binary;
    char **names;
    size_t ncls, cap;
    uint64_t *cm; /* cap * cap, row = true class */
    uint64_t n, correct;
    double loss;   /* sum of -log p(true class) */
    uint64_t nloss;
    scored *sc;
    size_t nsc, sccap;
    const char *no_loss_why; /* borrowed: why there is no log loss, NULL when unknown */
};

ctl_report *ctl_report_new(bool binary)
{
    ctl_report *r = calloc(1, sizeof *r);
    if (r)
        r->binary = binary;
    return r;
}

void ctl_report_free(ctl_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncls; i++)
        free(r->names[i]);
    free(r->names);
    free(r->cm);
    free(r->sc);
    free(r);
}

/* The index of class name, added when new; (size_t)-1 when out of memory. */
static size_t class_of(ctl_report *r, const char *name)
{
    for (size_t i = 0; i < r->ncls; i++)
        if (strcmp(r->names[i], name) == 0)
            return i;
    if (r->ncls == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        char **names = realloc(r->names, cap * sizeof *names);
        uint64_t *cm = names ? calloc(cap * cap, sizeof *cm) : NULL;
        if (!cm) {
            if (names)
                r->names = names;
            return (size_t)-1;
        }
        for (size_t i = 0; i < r->ncls; i++)
            memcpy(cm + i * cap, r->cm + i * r->cap, r->ncls * sizeof *cm);
        free(r->cm);
        r->names = names;
        r->cm = cm;
        r->cap = cap;
    }
    if (!(r->names[r->ncls] = strdup(name)))
        return (size_t)-1;
    return r->ncls++;
}

bool ctl_report_add(ctl_report *r, const char *truth, const char *pred, double score, double prob)
{
    size_t t = class_of(r, truth), p = class_of(r, pred ? pred : "(none)");
    if (t == (size_t)-1 || p == (size_t)-1)
        return false;
    r->cm[t * r->cap + p]++;
    r->n++;
    r->correct += t == p;
    if (!isnan(prob)) {
        double q = prob < 1e-15 ? 1e-15 : prob > 1 - 1e-15 ? 1 - 1e-15 : prob;
        r->loss -= log(q);
        r->nloss++;
    }
    if (r->binary && !isnan(score)) {
        if (!PC_GROW(r->sc, r->sccap, r->nsc, 1024))
            return false;
        r->sc[r->nsc++] = (scored){score, strcmp(truth, "1") == 0};
    }
    return true;
}

uint64_t ctl_report_examples(const ctl_report *r) { return r->n; }

double ctl_report_accuracy(const ctl_report *r)
{
    return r->n ? (double)r->correct / (double)r->n : NAN;
}

void ctl_report_no_loss(ctl_report *r, const char *why) { r->no_loss_why = why; }

double ctl_report_log_loss(const ctl_report *r)
{
    return r->n && r->nloss == r->n ? r->loss / (double)r->nloss : NAN;
}

static int by_score(const void *a, const void *b)
{
    double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
    return x < y ? -1 : x > y;
}

double ctl_report_auc(ctl_report *r)
{
    if (!r->binary || r->nsc == 0)
        return NAN;
    qsort(r->sc, r->nsc, sizeof *r->sc, by_score);
    /* for each run of equal scores: its positives beat every negative below
     * it and tie with the run's negatives */
    double wins = 0;
    uint64_t neg_below = 0, npos = 0, nneg = 0;
    for (size_t i = 0; i < r->nsc;) {
        size_t j = i;
        uint64_t p = 0, q = 0;
        while (j < r->nsc && r->sc[j].s == r->sc[i].s) {
            p += r->sc[j].pos;
            q += !r->sc[j].pos;
            j++;
        }
        wins += (double)p * ((double)neg_below + 0.5 * (double)q);
        neg_below += q;
        npos += p;
        nneg += q;
        i = j;
    }
    return npos && nneg ? wins / ((double)npos * (double)nneg) : NAN;
}

size_t ctl_report_classes(const ctl_report *r) { return r->ncls; }

uint64_t ctl_report_cell(const ctl_report *r, size_t truth, size_t pred)
{
    return truth < r->ncls && pred < r->ncls ? r->cm[truth * r->cap + pred] : 0;
}

void ctl_report_class(const ctl_report *r, size_t i, ctl_report_class_t *c)
{
    memset(c, 0, sizeof *c);
    c->name = r->names[i];
    for (size_t k = 0; k < r->ncls; k++) {
        c->support += r->cm[i * r->cap + k];
        c->predicted += r->cm[k * r->cap + i];
    }
    c->correct = r->cm[i * r->cap + i];
    c->precision = c->predicted ? (double)c->correct / (double)c->predicted : NAN;
    c->recall = c->support ? (double)c->correct / (double)c->support : NAN;
    c->f1 = c->correct ? 2 * c->precision * c->recall / (c->precision + c->recall)
                       : (c->predicted || c->support ? 0 : NAN);
}

static const char *fixed(double v, char *buf, size_t len)
{
    if (isnan(v))
        return "-";
    snprintf(buf, len, "%.4f", v);
    return buf;
}

void ctl_report_print(ctl_report *r, FILE *out)
{
    char b[64];
    fprintf(out, "%-14s %llu\n", "examples", (unsigned long long)r->n);
    fprintf(out, "%-14s %s\n", "accuracy", fixed(ctl_report_accuracy(r), b, sizeof b));
    if (r->binary)
        fprintf(out, "%-14s %s\n", "ROC AUC", fixed(ctl_report_auc(r), b, sizeof b));
    /* a missing log loss is shown with its reason when known (binary: always) */
    double ll = ctl_report_log_loss(r);
    const char *why = r->no_loss_why ? r->no_loss_why
                      : r->binary    ? "no calibrated probabilities"
                                     : NULL;
    if (!isnan(ll))
        fprintf(out, "%-14s %s\n", "log loss", fixed(ll, b, sizeof b));
    else if (why)
        fprintf(out, "%-14s -  (%s)\n", "log loss", why);
    fputc('\n', out);
    static const char *const head[] = {"CLASS", "PRECISION", "RECALL", "F1", "SUPPORT"};
    ctl_table t;
    ctl_table_init(&t, 5, head, "lrrrr");
    double sp = 0, sr = 0, sf = 0;
    size_t np = 0, nr = 0, nf = 0;
    for (size_t i = 0; i < r->ncls; i++) {
        ctl_report_class_t c;
        ctl_report_class(r, i, &c);
        char p[32], rc[32], f[32], s[32];
        snprintf(s, sizeof s, "%llu", (unsigned long long)c.support);
        const char *row[] = {c.name, fixed(c.precision, p, sizeof p), fixed(c.recall, rc, sizeof rc),
                             fixed(c.f1, f, sizeof f), s};
        ctl_table_add(&t, row);
        if (!isnan(c.precision))
            {
            sp += c.precision;
            np++;
        }
        if (!isnan(c.recall))
            {
            sr += c.recall;
            nr++;
        }
        if (!isnan(c.f1))
            {
            sf += c.f1;
            nf++;
        }
    }
    char p[32], rc[32], f[32], s[32];
    snprintf(s, sizeof s, "%llu", (unsigned long long)r->n);
    const char *row[] = {"(macro avg)", fixed(np ? sp / (double)np : NAN, p, sizeof p),
                         fixed(nr ? sr / (double)nr : NAN, rc, sizeof rc),
                         fixed(nf ? sf / (double)nf : NAN, f, sizeof f), s};
    ctl_table_add(&t, row);
    ctl_table_print(&t, out);
    ctl_table_free(&t);

    if (r->ncls > 30) {
        fprintf(out, "\n(%zu classes: the confusion matrix is in --json)\n", r->ncls);
        return;
    }
    fprintf(out, "\nconfusion matrix (rows: true class, columns: predicted)\n");
    const char **h = calloc(r->ncls + 1, sizeof *h);
    char *align = calloc(r->ncls + 2, 1);
    if (!h || !align) {
        free(h);
        free(align);
        return;
    }
    h[0] = "TRUE\\PREDICTED";
    align[0] = 'l';
    for (size_t i = 0; i < r->ncls; i++) {
        h[i + 1] = r->names[i];
        align[i + 1] = 'r';
    }
    ctl_table_init(&t, r->ncls + 1, h, align);
    char **cells = calloc(r->ncls + 1, sizeof *cells);
    for (size_t i = 0; cells && i < r->ncls; i++) {
        cells[0] = r->names[i];
        char num[31][24]; /* at most 30 classes here */
        for (size_t k = 0; k < r->ncls; k++) {
            snprintf(num[k], sizeof num[k], "%llu", (unsigned long long)r->cm[i * r->cap + k]);
            cells[k + 1] = num[k];
        }
        ctl_table_add(&t, (const char *const *)cells);
    }
    ctl_table_print(&t, out);
    ctl_table_free(&t);
    free(cells);
    free(h);
    free(align);
}

static void kv_real(msgpack_packer *pk, const char *k, double v)
{
    ctl_pack_str(pk, k);
    if (isnan(v))
        msgpack_pack_nil(pk);
    else
        msgpack_pack_double(pk, v);
}

void ctl_report_pack(ctl_report *r, msgpack_packer *pk)
{
    bool why = r->no_loss_why && isnan(ctl_report_log_loss(r));
    msgpack_pack_map(pk, (r->binary ? 6 : 5) + why);
    ctl_pack_str(pk, "examples");
    msgpack_pack_uint64(pk, r->n);
    kv_real(pk, "accuracy", ctl_report_accuracy(r));
    kv_real(pk, "log_loss", ctl_report_log_loss(r));
    if (why) {
        ctl_pack_str(pk, "log_loss_missing");
        ctl_pack_str(pk, r->no_loss_why);
    }
    if (r->binary)
        kv_real(pk, "roc_auc", ctl_report_auc(r));
    ctl_pack_str(pk, "classes");
    msgpack_pack_array(pk, r->ncls);
    for (size_t i = 0; i < r->ncls; i++) {
        ctl_report_class_t c;
        ctl_report_class(r, i, &c);
        msgpack_pack_map(pk, 6);
        ctl_pack_str(pk, "class");
        ctl_pack_str(pk, c.name);
        kv_real(pk, "precision", c.precision);
        kv_real(pk, "recall", c.recall);
        kv_real(pk, "f1", c.f1);
        ctl_pack_str(pk, "support");
        msgpack_pack_uint64(pk, c.support);
        ctl_pack_str(pk, "predicted");
        msgpack_pack_uint64(pk, c.predicted);
    }
    ctl_pack_str(pk, "confusion");
    msgpack_pack_map(pk, 2);
    ctl_pack_str(pk, "labels");
    msgpack_pack_array(pk, r->ncls);
    for (size_t i = 0; i < r->ncls; i++)
        ctl_pack_str(pk, r->names[i]);
    ctl_pack_str(pk, "matrix"); /* rows: true class */
    msgpack_pack_array(pk, r->ncls);
    for (size_t i = 0; i < r->ncls; i++) {
        msgpack_pack_array(pk, r->ncls);
        for (size_t k = 0; k < r->ncls; k++)
            msgpack_pack_uint64(pk, r->cm[i * r->cap + k]);
    }
}
