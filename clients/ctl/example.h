/* example.h - one example given as command-line words FEATURE[:VALUE] ...
 * (`perceptronctl label` and `predict`), read by the libsvm parser with named
 * features (dataset.c), so the syntax and its errors are the data files';
 * and the packing of an example's features that every request shares
 * (stream.c sends the data files' examples with it too). */
#ifndef CTL_EXAMPLE_H
#define CTL_EXAMPLE_H

#include "clients/ctl/ctl.h"
#include "clients/ctl/dataset.h"

typedef struct ctl_example {
    char *buf;
    FILE *f;
    pcc_dataset *ds;
    pcc_ds_example ex; /* valid until ctl_example_free */
} ctl_example;
/* label may be NULL.  Returns 0, or an exit status after printing why. */
int ctl_example_parse(ctl_ctx *ctx, const char *label, char *const *words, int n, ctl_example *e);
void ctl_example_free(ctl_example *e);
/* The features as a map {name or index: value}. */
void ctl_example_pack(msgpack_packer *pk, const pcc_ds_example *ex);

#endif
