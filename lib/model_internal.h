/* model_internal.h - the model struct, shared by model.c and codec.c only. */
#ifndef PC_MODEL_INTERNAL_H
#define PC_MODEL_INTERNAL_H

#include "lib/calib.h"
#include "lib/learner.h"
#include "lib/scaler.h"

struct pc_model {
    pc_model_config cfg;      /* classes/nclasses cleared: the model owns names */
    bool add_bias;            /* a constant feature is appended at index space */
    uint32_t space;           /* the features' indices: pc_prep_space (dim, or 2 dim) */
    uint32_t rule_dim;        /* space + add_bias: what the rules see */
    size_t ncls, cap;         /* learners (1 for a binary model) */
    pc_learner *learners;
    char **names;             /* class names (multiclass), owned */
    uint64_t *cls_examples, *cls_mistakes;
    double *scores;           /* scratch, cap entries: each class's score for learn_one */
    pc_calib *calib;          /* cap entries: each learner's probability calibration */
    pc_stats stats;
    uint8_t recent[PC_RECENT_WINDOW]; /* bit 0: slot used, bit 1: a mistake */
    uint32_t recent_pos;
    pc_svec xb;               /* scratch: the example scaled, sorted, with the bias feature */
    pc_scaler scaler;         /* the scale step's statistics (cfg.prep.scale) */
};

pc_status pc_model_class_add_binary(pc_model *m, pc_error *err);
/* created: a new model (false: decoding a snapshot; see check_config). */
pc_status pc_model_shell(const pc_model_config *c, bool created, pc_model **out, pc_error *err);
void pc_model_rule_ctx(const pc_model *m, pc_rule_ctx *ctx);

#endif
