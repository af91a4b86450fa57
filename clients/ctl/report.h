/* report.h - the evaluation report of `evaluate` and `replay --report`:
 * accuracy, per-class precision / recall / F1, the confusion matrix, and for
 * binary models the ROC AUC of the score and the log loss of the calibrated
 * probability.  Fed one (true label, predicted label, score, probability)
 * at a time; printed as a table or packed for --json.
 *
 * Ownership: the report copies every class name it sees. */
#ifndef CTL_REPORT_H
#define CTL_REPORT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ctl_report ctl_report;

/* binary: labels are "1" / "-1" and the AUC and log loss are computed. */
ctl_report *ctl_report_new(bool binary);
void ctl_report_free(ctl_report *r);

/* One example.  score: the binary score (NaN: none); prob: the calibrated
 * probability of the *true* class (NaN: none; then no log loss).  Returns
 * false when out of memory. */
bool ctl_report_add(ctl_report *r, const char *truth, const char *pred, double score,
                    double prob);

/* The figures, for tests and for the table. */
typedef struct ctl_report_class_t {
    const char *name;
    uint64_t support, predicted, correct;
    double precision, recall, f1; /* NaN when undefined (nothing predicted / no support) */
} ctl_report_class_t;
uint64_t ctl_report_examples(const ctl_report *r);
double ctl_report_accuracy(const ctl_report *r);
double ctl_report_auc(ctl_report *r);           /* binary, both classes seen; else NaN */
double ctl_report_log_loss(const ctl_report *r); /* every example had a probability; else NaN */
size_t ctl_report_classes(const ctl_report *r);
void ctl_report_class(const ctl_report *r, size_t i, ctl_report_class_t *c);
uint64_t ctl_report_cell(const ctl_report *r, size_t truth, size_t pred);

void ctl_report_print(ctl_report *r, FILE *out);
/* Packs the report as one map value. */
void ctl_report_pack(ctl_report *r, msgpack_packer *pk);

#endif
