/* model.c - a model: its config, its classes, one learner per class, stats.
 *
 * A binary model has one learner.  A multiclass model is one-vs-rest: one
 * learner per class, each label trains every learner (+1 for the true class,
 * -1 for the others) and the prediction is the argmax of the class scores,
 * ties going to the class added first.  The bias of homogeneous rules is a
 * constant feature appended at index dim (seeds 001, 003), so the rules
 * themselves never see a separate bias.
 */
#include "lib/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pc_storage_names[] = {"dense", "sparse", "auto", NULL};
_Static_assert(PC_STORAGE_DENSE == 0 && PC_STORAGE_SPARSE == 1 && PC_STORAGE_AUTO == 2,
               "pc_storage_names follows pc_storage");
const char *const pc_weights_names[] = {"float64", "float32", NULL};
_Static_assert(PC_WEIGHTS_FLOAT64 == 0 && PC_WEIGHTS_FLOAT32 == 1,
               "pc_weights_names follows pc_weights");

void pc_model_config_default(pc_model_config *c, uint32_t dim)
{
    memset(c, 0, sizeof *c);
    c->rule = pc_rule_find("perceptron");
    pc_params_default(c->rule, &c->params);
    c->dim = dim;
    c->bias = true;
    c->bias_value = 1;
    c->calibrate = true;
    c->prep.max_crossed = PC_CROSSED_DEFAULT;
}

static pc_status fail(pc_error *err, pc_status st, const char *fmt, const char *a)
{
    snprintf(err->msg, sizeof err->msg, fmt, a);
    return st;
}

/* A NUL-terminated text of 1..PC_PATTERN_MAX bytes. */
static bool text_ok(const char *t)
{
    size_t n = strnlen(t, PC_PATTERN_MAX + 1);
    return n >= 1 && n <= PC_PATTERN_MAX;
}

/* A transform is valid when its text form parses back to it: the text
 * parser (pc_transform_parse) is the one validator, for configs built in code
 * and for snapshots too.  The pattern and the kind are checked first, as
 * pc_transform_format reads them. */
static bool transform_ok(const pc_transform *t)
{
    if (!text_ok(t->pattern) || t->kind > PC_TRANSFORM_RANGEBINS)
        return false;
    char text[PC_PREP_TEXT_MAX];
    pc_transform_format(t, text, sizeof text);
    pc_transform back;
    pc_error ignored;
    return pc_transform_parse(text, strlen(text), &back, &ignored) == PC_OK &&
           back.kind == t->kind && back.nbins == t->nbins && back.nedges == t->nedges &&
           memcmp(back.edges, t->edges, t->nedges * sizeof *t->edges) == 0 &&
           strcmp(back.pattern, t->pattern) == 0;
}

/* A cross likewise (pc_cross_parse). */
static bool cross_ok(const pc_cross *c)
{
    if (!text_ok(c->a) || !text_ok(c->b))
        return false;
    char text[PC_PREP_TEXT_MAX];
    pc_cross_format(c, text, sizeof text);
    pc_cross back;
    pc_error ignored;
    return pc_cross_parse(text, strlen(text), &back, &ignored) == PC_OK &&
           strcmp(back.a, c->a) == 0 && strcmp(back.b, c->b) == 0;
}

/* The feature preparation part of a config. */
static pc_status check_prep(const pc_prep *p, pc_error *err)
{
    if ((unsigned)p->scale > PC_SCALE_RMS_SENT)
        return fail(err, PC_EINVAL, "%sscale must be none, max, std, rms or rms-sent", "");
    if (p->ntransforms > PC_TRANSFORMS_MAX || p->ncrosses > PC_CROSSES_MAX)
        return fail(err, PC_ELIMIT, "at most 8 transforms and 8 crosses%s", "");
    for (uint32_t i = 0; i < p->ntransforms; i++) {
        if (!transform_ok(&p->transforms[i]))
            return fail(err, PC_EINVAL, "a transform is malformed (a pattern of 1 to 47 bytes, "
                                        "log, logbins, bins with 1 to 16 increasing edges or "
                                        "rangebins of 2 to 64 bins)%s", "");
        /* rangebins reads the largest |value| learned: the scale step's max */
        if (p->transforms[i].kind == PC_TRANSFORM_RANGEBINS && p->scale != PC_SCALE_MAX)
            return fail(err, PC_EINVAL, "rangebins=N bins a value by the largest |value| the "
                                        "model has learned, which scale: max keeps: give scale: "
                                        "max (not %s)", pc_scale_names[p->scale]);
    }
    for (uint32_t i = 0; i < p->ncrosses; i++)
        if (!cross_ok(&p->crosses[i]))
            return fail(err, PC_EINVAL, "a cross's prefixes must be 1 to 47 bytes%s", "");
    if (p->ncrosses && (p->max_crossed < 1 || p->max_crossed > PC_CROSSED_MAX))
        return fail(err, PC_EINVAL, "max_crossed must be in [1, %s]", "4096");
    return PC_OK;
}

/* Checks everything a config can get wrong, naming the field.  created: a
 * new model, not one a snapshot holds, which keeps the limits it was created
 * under (a model whose bias value predates its bound still loads). */
static pc_status check_config(const pc_model_config *c, bool created, pc_error *err)
{
    if (!c->rule)
        return fail(err, PC_EINVAL, "%smodel has no rule", "");
    const char *rn = c->rule->name;
    if (c->dim < 1 || c->dim > PC_DIM_MAX) {
        snprintf(err->msg, sizeof err->msg, "dim %u is out of range: it must be in [1, %u]",
                 c->dim, PC_DIM_MAX);
        return PC_EINVAL;
    }
    for (size_t i = 0; i < c->rule->nparams; i++) {
        const pc_param_spec *s = &c->rule->params[i];
        const pc_param_value *v = &c->params.val[i];
        if (v->n == 1 && isnan(v->v[0]) && isnan(s->def))
            continue; /* derived by the rule */
        pc_params scratch;
        pc_status st = pc_params_set(c->rule, &scratch, s->name, v->v, v->n, err);
        if (st != PC_OK)
            return st;
    }
    /* The constant feature is a feature value, bounded as every one is
     * (PC_VALUE_MAX): 1e160 took perceptron, margin, greedy, fuzzy and mcp to
     * an infinite weight within a few labels, and a snapshot that did not
     * load. */
    if (c->bias && !(c->rule->flags & PC_RULE_OWN_BIAS) &&
        (!isfinite(c->bias_value) || c->bias_value == 0 || (created && !pc_value_ok(c->bias_value))))
        return fail(err, PC_EINVAL,
                    "bias_value must be a non-zero number of magnitude at most 2^64 (1.8e19), as "
                    "every feature value (rule %s)",
                    rn);
    if (c->averaged && !(c->rule->flags & PC_RULE_ADDITIVE))
        return fail(err, PC_EINVAL,
                    "averaged: true needs an additive rule (perceptron, margin, greedy, fuzzy, pa*, "
                    "mcp, cmcp); %s rescales its weights", rn);
    if (c->batch && !(c->rule->flags & PC_RULE_BATCH))
        return fail(err, PC_EINVAL, "mode: batch is defined for the perceptron only, not %s", rn);
    if (c->storage != PC_STORAGE_DENSE && c->storage != PC_STORAGE_SPARSE &&
        c->storage != PC_STORAGE_AUTO)
        return fail(err, PC_EINVAL, "%sstorage must be dense, sparse or auto", "");
    if (c->weights != PC_WEIGHTS_FLOAT64 && c->weights != PC_WEIGHTS_FLOAT32)
        return fail(err, PC_EINVAL, "%sweights must be float64 or float32", "");
    if (c->weights == PC_WEIGHTS_FLOAT32 && c->storage == PC_STORAGE_SPARSE)
        return fail(err, PC_EINVAL,
                    "%sweights: float32 narrows dense arrays; a sparse table keeps float64: use "
                    "storage dense or auto, or leave weights out", "");
    if (c->weights == PC_WEIGHTS_FLOAT32 && (c->rule->flags & PC_RULE_FLOAT64_ONLY))
        return fail(err, PC_EINVAL,
                    "weights: float32 is not available for %s: its weights range over 1e+-100, "
                    "past float32's 3.4e38", rn);
    pc_status st = check_prep(&c->prep, err);
    if (st != PC_OK)
        return st;
    if (c->batch && c->prep.scale != PC_SCALE_NONE)
        return fail(err, PC_EINVAL,
                    "mode: batch scores a whole batch with the weights at its start; scale %s "
                    "learns as it goes: use mode online, or scale none", pc_scale_names[c->prep.scale]);
    if (!c->multiclass && (c->nclasses || c->open_classes))
        return fail(err, PC_EINVAL, "%sclasses are for multiclass models only", "");
    if (c->nclasses > PC_CLASSES_MAX)
        return fail(err, PC_ELIMIT, "too many classes (at most %s)", "4096");
    return PC_OK;
}

void pc_model_rule_ctx(const pc_model *m, pc_rule_ctx *ctx)
{
    ctx->dim = m->rule_dim;
    ctx->params = &m->cfg.params;
    ctx->averaged = m->cfg.averaged;
    ctx->storage = m->cfg.storage;
    ctx->weights = m->cfg.weights;
    ctx->bias = m->add_bias;
}

pc_status pc_model_class_add(pc_model *m, const char *name, size_t len, int32_t *idx, pc_error *err)
{
    if (!m->cfg.multiclass)
        return fail(err, PC_EINVAL, "%sa binary model has no classes: label it with 1 or -1", "");
    if (len == 0 || len > PC_CLASS_NAME_MAX || memchr(name, 0, len))
        return fail(err, PC_EINVAL, "class names must be 1 to 255 bytes without NUL%s", "");
    if (pc_model_class_find(m, name, len) >= 0) {
        snprintf(err->msg, sizeof err->msg, "class '%.*s' is listed twice", (int)len, name);
        return PC_EINVAL;
    }
    if (m->ncls >= PC_CLASSES_MAX)
        return fail(err, PC_ELIMIT, "the model has the maximum number of classes (%s)", "4096");
    if (m->ncls == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 4;
        pc_learner *l = realloc(m->learners, cap * sizeof *l);
        if (!l)
            return fail(err, PC_ENOMEM, "out of memory adding a class%s", "");
        m->learners = l;
        char **n = realloc(m->names, cap * sizeof *n);
        if (!n)
            return fail(err, PC_ENOMEM, "out of memory adding a class%s", "");
        m->names = n;
        uint64_t *ce = realloc(m->cls_examples, cap * sizeof *ce);
        if (!ce)
            return fail(err, PC_ENOMEM, "out of memory adding a class%s", "");
        m->cls_examples = ce;
        uint64_t *cm = realloc(m->cls_mistakes, cap * sizeof *cm);
        if (!cm)
            return fail(err, PC_ENOMEM, "out of memory adding a class%s", "");
        m->cls_mistakes = cm;
        double *sc = realloc(m->scores, cap * sizeof *sc);
        if (!sc)
            return fail(err, PC_ENOMEM, "out of memory adding a class%s", "");
        m->scores = sc;
        pc_calib *ca = realloc(m->calib, cap * sizeof *ca);
        if (!ca)
            return fail(err, PC_ENOMEM, "out of memory adding a class%s", "");
        m->calib = ca;
        m->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return fail(err, PC_ENOMEM, "out of memory adding a class%s", "");
    memcpy(copy, name, len);
    copy[len] = 0;
    pc_rule_ctx ctx;
    pc_model_rule_ctx(m, &ctx);
    pc_status st = pc_learner_init(&m->learners[m->ncls], m->cfg.rule, &ctx, err);
    if (st != PC_OK) {
        free(copy);
        return st;
    }
    m->names[m->ncls] = copy;
    m->cls_examples[m->ncls] = 0;
    m->cls_mistakes[m->ncls] = 0;
    m->calib[m->ncls] = (pc_calib){0};
    if (idx)
        *idx = (int32_t)m->ncls;
    m->ncls++;
    return PC_OK;
}

/* Allocates the model shell without learners (shared by new and decode). */
pc_status pc_model_shell(const pc_model_config *c, bool created, pc_model **out, pc_error *err)
{
    pc_status st = check_config(c, created, err);
    if (st != PC_OK)
        return st;
    pc_model *m = calloc(1, sizeof *m);
    if (!m)
        return fail(err, PC_ENOMEM, "out of memory creating a model%s", "");
    m->cfg = *c;
    m->cfg.classes = NULL;
    m->cfg.nclasses = 0;
    m->add_bias = c->bias && !(c->rule->flags & PC_RULE_OWN_BIAS);
    m->space = pc_prep_space(&c->prep, c->dim);
    m->rule_dim = m->space + (m->add_bias ? 1 : 0);
    pc_svec_init(&m->xb);
    if (pc_scaler_init(&m->scaler, c->prep.scale, c->dim, c->storage) != PC_OK) {
        free(m);
        return fail(err, PC_ENOMEM, "out of memory for the model's feature scales%s", "");
    }
    *out = m;
    return PC_OK;
}

pc_status pc_model_new(const pc_model_config *c, pc_model **out, pc_error *err)
{
    pc_model *m;
    pc_status st = pc_model_shell(c, true, &m, err);
    if (st != PC_OK)
        return st;
    if (!c->multiclass) {
        st = pc_model_class_add_binary(m, err);
    } else {
        for (size_t i = 0; i < c->nclasses && st == PC_OK; i++)
            st = pc_model_class_add(m, c->classes[i], strlen(c->classes[i]), NULL, err);
    }
    if (st != PC_OK) {
        pc_model_free(m);
        return st;
    }
    *out = m;
    return PC_OK;
}

/* The single learner of a binary model (named "" internally). */
pc_status pc_model_class_add_binary(pc_model *m, pc_error *err)
{
    m->learners = calloc(1, sizeof *m->learners);
    m->names = calloc(1, sizeof *m->names);
    m->cls_examples = calloc(1, sizeof *m->cls_examples);
    m->cls_mistakes = calloc(1, sizeof *m->cls_mistakes);
    m->scores = calloc(1, sizeof *m->scores);
    m->calib = calloc(1, sizeof *m->calib);
    if (!m->learners || !m->names || !m->cls_examples || !m->cls_mistakes || !m->scores ||
        !m->calib)
        return fail(err, PC_ENOMEM, "out of memory creating a model%s", "");
    m->cap = 1;
    pc_rule_ctx ctx;
    pc_model_rule_ctx(m, &ctx);
    pc_status st = pc_learner_init(&m->learners[0], m->cfg.rule, &ctx, err);
    if (st == PC_OK)
        m->ncls = 1;
    return st;
}

void pc_model_free(pc_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->ncls; i++) {
        pc_learner_destroy(&m->learners[i]);
        free(m->names[i]);
    }
    free(m->learners);
    free(m->names);
    free(m->cls_examples);
    free(m->cls_mistakes);
    free(m->scores);
    free(m->calib);
    pc_svec_free(&m->xb);
    pc_scaler_free(&m->scaler);
    free(m);
}

const pc_model_config *pc_model_config_of(const pc_model *m)
{
    return &m->cfg;
}

pc_status pc_model_reset(pc_model *m, pc_error *err)
{
    pc_rule_ctx ctx;
    pc_model_rule_ctx(m, &ctx);
    /* Build every fresh learner first so a failure leaves the model as it was. */
    pc_learner *fresh = calloc(m->ncls ? m->ncls : 1, sizeof *fresh);
    if (!fresh)
        return fail(err, PC_ENOMEM, "out of memory resetting the model%s", "");
    for (size_t i = 0; i < m->ncls; i++) {
        pc_status st = pc_learner_init(&fresh[i], m->cfg.rule, &ctx, err);
        if (st != PC_OK) {
            for (size_t k = 0; k < i; k++)
                pc_learner_destroy(&fresh[k]);
            free(fresh);
            return st;
        }
    }
    for (size_t i = 0; i < m->ncls; i++) {
        pc_learner_destroy(&m->learners[i]);
        m->learners[i] = fresh[i];
        m->cls_examples[i] = m->cls_mistakes[i] = 0;
        m->calib[i] = (pc_calib){0};
    }
    free(fresh);
    pc_scaler_clear(&m->scaler);
    memset(&m->stats, 0, sizeof m->stats);
    memset(m->recent, 0, sizeof m->recent);
    m->recent_pos = 0;
    return PC_OK;
}

/* The vector the rules see: x itself, or a copy, scaled (learn: the scale
 * statistics learn x first), sorted for the rules that merge index lists,
 * with the bias feature appended (index dim, so a sorted copy stays sorted).
 * NULL: out of memory, nothing learned. */
static const pc_svec *rule_view(pc_model *m, const pc_svec *x, bool learn)
{
    bool scale = m->scaler.mode != PC_SCALE_NONE;
    bool sort = (m->cfg.rule->flags & PC_RULE_SORTED) && !pc_svec_is_sorted(x);
    if (!m->add_bias && !sort && !scale)
        return x;
    pc_svec *xb = &m->xb;
    while (xb->cap < x->n + 1)
        if (pc_svec_grow(xb) != PC_OK)
            return NULL;
    if (scale) {
        if (!learn)
            pc_scaler_apply(&m->scaler, x, xb);
        else if (pc_scaler_learn(&m->scaler, x, xb) != PC_OK)
            return NULL;
    } else {
        if (x->n) { /* an empty x may have no arrays: memcpy from NULL is undefined even for 0 bytes */
            memcpy(xb->idx, x->idx, x->n * sizeof *x->idx);
            memcpy(xb->val, x->val, x->n * sizeof *x->val);
        }
        xb->n = x->n;
        xb->norm2 = x->norm2;
    }
    if (sort)
        pc_svec_sort(xb);
    double n2 = xb->norm2;
    if (m->add_bias && pc_svec_push(xb, m->space, m->cfg.bias_value) != PC_OK)
        return NULL;
    xb->norm2 = n2 + (m->add_bias ? m->cfg.bias_value * m->cfg.bias_value : 0);
    return xb;
}

static void predict_view(pc_model *m, const pc_svec *x, pc_prediction *p, double *scores)
{
    p->cls = -1;
    p->y = 1;
    p->score = 0;
    p->second = -INFINITY;
    if (!m->cfg.multiclass) {
        p->score = pc_learner_predict_score(&m->learners[0], x);
        p->y = pc_learner_sign(&m->learners[0], p->score);
        p->cls = -1;
        return;
    }
    for (size_t i = 0; i < m->ncls; i++) {
        double s = pc_learner_predict_score(&m->learners[i], x);
        if (scores)
            scores[i] = s;
        if (p->cls < 0 || s > p->score) {
            if (p->cls >= 0)
                p->second = p->score;
            p->cls = (int32_t)i;
            p->score = s;
        } else if (s > p->second) {
            p->second = s;
        }
    }
}

void pc_model_predict(pc_model *m, const pc_svec *x, pc_prediction *p, double *scores)
{
    const pc_svec *v = rule_view(m, x, false);
    if (!v) { /* out of memory for the bias copy: predict without it */
        v = x;
    }
    predict_view(m, v, p, scores);
}

/* Feeds the calibration the scores predicted before learning (binary: the
 * model's score; multiclass: each class's one-vs-rest score). */
static void calibrate(pc_model *m, const pc_prediction *p, const double *scores, int y,
                      int32_t cls)
{
    if (!m->cfg.calibrate) /* switched off: it costs up to a third of the label rate */
        return;
    if (!m->cfg.multiclass) {
        pc_calib_learn(&m->calib[0], p->score, y);
        return;
    }
    for (size_t i = 0; i < m->ncls; i++)
        pc_calib_learn(&m->calib[i], scores[i], (int32_t)i == cls ? 1 : -1);
}

double pc_model_probability(const pc_model *m, size_t cls, double score)
{
    size_t i = m->cfg.multiclass ? cls : 0;
    return i < m->ncls ? pc_calib_prob(&m->calib[i], score) : NAN;
}

void pc_model_probabilities(const pc_model *m, const double *scores, double *probs)
{
    double sum = 0;
    for (size_t i = 0; i < m->ncls; i++)
        sum += probs[i] = pc_calib_prob(&m->calib[i], scores[i]);
    for (size_t i = 0; i < m->ncls; i++)
        probs[i] = sum > 0 ? probs[i] / sum : 1.0 / (double)m->ncls;
}

static void count(pc_model *m, int32_t cls, bool mistake, bool updated)
{
    m->stats.examples++;
    m->stats.mistakes += mistake;
    m->stats.updates += updated;
    m->recent[m->recent_pos] = (uint8_t)(1 | (mistake ? 2 : 0));
    m->recent_pos = (m->recent_pos + 1) % PC_RECENT_WINDOW;
    size_t c = cls >= 0 ? (size_t)cls : 0;
    m->cls_examples[c]++;
    m->cls_mistakes[c] += mistake;
}

/* Resolves a label to the true class index (multiclass) or checks y. */
static pc_status resolve_label(pc_model *m, const pc_label *y, int32_t *cls, pc_error *err)
{
    if (!m->cfg.multiclass) {
        if (y->y != 1 && y->y != -1)
            return fail(err, PC_EINVAL, "binary models take the labels 1 and -1%s", "");
        *cls = -1;
        return PC_OK;
    }
    if (!y->cls)
        return fail(err, PC_EINVAL, "multiclass models take a class name as the label%s", "");
    *cls = pc_model_class_find(m, y->cls, y->cls_len);
    if (*cls >= 0)
        return PC_OK;
    if (!m->cfg.open_classes) {
        char name[64];
        size_t n = y->cls_len < sizeof name - 1 ? y->cls_len : sizeof name - 1;
        memcpy(name, y->cls, n);
        name[n] = 0;
        snprintf(err->msg, sizeof err->msg,
                 "unknown class '%s': the model's classes are fixed (set open_classes to add them "
                 "on first sight)", name);
        return PC_ENOTFOUND;
    }
    return pc_model_class_add(m, y->cls, y->cls_len, cls, err);
}

/* Prediction before the update, then every learner's update.  Without
 * averaging the prediction's scores are the ones the updates need: the
 * weights are read once, not twice. */
static void learn_one(pc_model *m, const pc_svec *v, int y, int32_t cls, pc_outcome *out)
{
    pc_outcome o = {0};
    bool reuse = !m->cfg.averaged;
    predict_view(m, v, &o.pred, m->scores);
    calibrate(m, &o.pred, m->scores, y, cls);
    if (!m->cfg.multiclass) {
        o.mistake = o.pred.y != y;
        double s = reuse ? o.pred.score : pc_learner_score(&m->learners[0], v);
        o.updated = pc_learner_update(&m->learners[0], v, y, s);
    } else {
        o.mistake = o.pred.cls != cls;
        for (size_t i = 0; i < m->ncls; i++) {
            double s = reuse ? m->scores[i] : pc_learner_score(&m->learners[i], v);
            o.updated |= pc_learner_update(&m->learners[i], v, (int32_t)i == cls ? 1 : -1, s);
        }
    }
    count(m, cls, o.mistake, o.updated);
    if (out)
        *out = o;
}

pc_status pc_model_label(pc_model *m, const pc_svec *x, const pc_label *y, pc_outcome *out,
                         pc_error *err)
{
    int32_t cls;
    pc_status st = resolve_label(m, y, &cls, err);
    if (st != PC_OK)
        return st;
    const pc_svec *v = rule_view(m, x, true);
    if (!v)
        return fail(err, PC_ENOMEM, "out of memory%s", "");
    learn_one(m, v, y->y, cls, out);
    return PC_OK;
}

/* Seed 003's batch perceptron: every example is scored with the weights at
 * the start of the batch, then the updates of the misclassified ones are
 * applied.  Valid because a PC_RULE_BATCH rule's update does not read w. */
static pc_status label_batch_mode(pc_model *m, const pc_svec *xs, const pc_label *ys,
                                  const int32_t *cls, size_t n, pc_outcome *out, pc_error *err)
{
    size_t K = m->ncls;
    double *s = malloc((n * K > 0 ? n * K : 1) * sizeof *s);
    if (!s)
        return fail(err, PC_ENOMEM, "out of memory for the batch%s", "");
    pc_outcome o;
    for (size_t j = 0; j < n; j++) {
        const pc_svec *v = rule_view(m, &xs[j], false); /* batch mode never scales */
        if (!v) {
            free(s);
            return fail(err, PC_ENOMEM, "out of memory%s", "");
        }
        predict_view(m, v, &o.pred, m->scores);
        calibrate(m, &o.pred, m->scores, ys[j].y, cls[j]);
        o.mistake = m->cfg.multiclass ? o.pred.cls != cls[j] : o.pred.y != ys[j].y;
        o.updated = false;
        for (size_t i = 0; i < K; i++)
            s[j * K + i] = pc_learner_score(&m->learners[i], v);
        if (out)
            out[j] = o;
    }
    for (size_t j = 0; j < n; j++) {
        const pc_svec *v = rule_view(m, &xs[j], false);
        bool upd = false;
        for (size_t i = 0; i < K; i++) {
            int y = m->cfg.multiclass ? ((int32_t)i == cls[j] ? 1 : -1) : ys[j].y;
            upd |= pc_learner_update(&m->learners[i], v, y, s[j * K + i]);
        }
        bool mistake = out ? out[j].mistake : false;
        if (!out) { /* recompute the mistake from the stored scores */
            if (m->cfg.multiclass) {
                int32_t best = -1;
                for (size_t i = 0; i < K; i++)
                    if (best < 0 || s[j * K + i] > s[j * K + (size_t)best])
                        best = (int32_t)i;
                mistake = best != cls[j];
            } else {
                mistake = pc_learner_sign(&m->learners[0], s[j]) != ys[j].y;
            }
        }
        if (out)
            out[j].updated = upd;
        count(m, cls[j], mistake, upd);
    }
    free(s);
    return PC_OK;
}

pc_status pc_model_label_batch(pc_model *m, const pc_svec *xs, const pc_label *ys, size_t n,
                               pc_outcome *out, pc_error *err)
{
    int32_t *cls = malloc((n ? n : 1) * sizeof *cls);
    if (!cls)
        return fail(err, PC_ENOMEM, "out of memory for the batch%s", "");
    /* Resolve every label first so a bad one rejects the whole batch before
     * anything is learned (classes added on the way are kept: they are
     * legitimate new classes). */
    for (size_t j = 0; j < n; j++) {
        pc_status st = resolve_label(m, &ys[j], &cls[j], err);
        if (st != PC_OK) {
            free(cls);
            return st;
        }
    }
    pc_status st = PC_OK;
    if (m->cfg.batch) {
        st = label_batch_mode(m, xs, ys, cls, n, out, err);
    } else {
        for (size_t j = 0; j < n && st == PC_OK; j++) {
            const pc_svec *v = rule_view(m, &xs[j], true);
            if (!v)
                st = fail(err, PC_ENOMEM, "out of memory%s", "");
            else
                learn_one(m, v, ys[j].y, cls[j], out ? &out[j] : NULL);
        }
    }
    free(cls);
    return st;
}

size_t pc_model_bytes(const pc_model *m)
{
    size_t b = sizeof *m + m->cap * (sizeof *m->learners + sizeof *m->names +
                                     sizeof *m->cls_examples + sizeof *m->cls_mistakes +
                                     sizeof *m->scores) +
               (size_t)m->xb.cap * (sizeof *m->xb.idx + sizeof *m->xb.val);
    b += pc_scaler_bytes(&m->scaler);
    for (size_t i = 0; i < m->ncls; i++) {
        b += pc_learner_bytes(&m->learners[i]);
        if (m->names[i])
            b += strlen(m->names[i]) + 1;
    }
    return b;
}

size_t pc_model_class_count(const pc_model *m)
{
    return m->cfg.multiclass ? m->ncls : 0;
}

const char *pc_model_class_name(const pc_model *m, size_t i)
{
    return m->cfg.multiclass && i < m->ncls ? m->names[i] : NULL;
}

int32_t pc_model_class_find(const pc_model *m, const char *name, size_t len)
{
    if (!m->cfg.multiclass)
        return -1;
    /* name may hold a NUL (`weights` passes the wire's bytes): neither
     * strncmp (it stops at one) nor names[i][len] (past a shorter name). */
    for (size_t i = 0; i < m->ncls; i++)
        if (strnlen(m->names[i], len + 1) == len && memcmp(m->names[i], name, len) == 0)
            return (int32_t)i;
    return -1;
}

void pc_model_stats(const pc_model *m, pc_stats *s)
{
    *s = m->stats;
    s->recent_examples = s->recent_mistakes = 0;
    for (size_t i = 0; i < PC_RECENT_WINDOW; i++) {
        s->recent_examples += m->recent[i] & 1;
        s->recent_mistakes += (m->recent[i] >> 1) & 1;
    }
}

uint64_t pc_model_examples(const pc_model *m)
{
    return m->stats.examples;
}

void pc_model_class_stats(const pc_model *m, size_t i, uint64_t *examples, uint64_t *mistakes)
{
    *examples = i < m->ncls ? m->cls_examples[i] : 0;
    *mistakes = i < m->ncls ? m->cls_mistakes[i] : 0;
}

void pc_model_learner_info(const pc_model *m, size_t cls, pc_learner_info *info)
{
    memset(info, 0, sizeof *info);
    info->margin = NAN;
    if (cls >= m->ncls)
        return;
    const pc_learner *l = &m->learners[cls];
    pc_learner_describe(l, info);
    if (m->cfg.averaged) {
        /* The predicting weights are the average: report its norm (O(dim)
         * dense, O(stored) sparse: an inspection call, not a per-example one). */
        info->norm = sqrt(pc_learner_weight_sum_sq(l, m->rule_dim));
    }
    if (m->add_bias) { /* report the bias feature's weight as the bias */
        double wb = pc_learner_weight(l, m->space);
        double all2 = info->norm * info->norm, n2 = all2 - wb * wb;
        /* The difference keeps only the digits the bias does not dominate:
         * past half of them, sum the weights themselves (O(dim), an
         * inspection call). */
        if (n2 < 1e-8 * all2)
            n2 = pc_learner_weight_sum_sq(l, m->space);
        info->bias = wb * m->cfg.bias_value;
        info->norm = sqrt(n2 > 0 ? n2 : 0);
    }
}

void pc_namer_for(pc_namer *nm, const pc_model *m)
{
    pc_namer_set(nm, m->cfg.dim, &m->cfg.prep);
    nm->scales = &m->scaler;
}

double pc_model_feature_scale(const pc_model *m, uint32_t i)
{
    return i < m->space ? pc_scaler_divisor(&m->scaler, i) : 1;
}

double pc_model_weight(const pc_model *m, size_t cls, uint32_t i)
{
    if (cls >= m->ncls || i >= m->space)
        return 0;
    return pc_learner_weight(&m->learners[cls], i);
}

/* The k largest |w| seen so far, by |w| descending, ties by index ascending. */
typedef struct topk {
    size_t k, n;
    uint32_t *idx;
    double *w;
} topk;

static inline bool topk_before(double a, uint32_t i, double b, uint32_t j)
{
    return a > b || (a == b && i < j);
}

static inline void topk_offer(topk *t, uint32_t i, double v)
{
    double a = fabs(v);
    if (t->n == t->k && !topk_before(a, i, fabs(t->w[t->n - 1]), t->idx[t->n - 1]))
        return; /* most weights: one compare */
    size_t j = t->n < t->k ? t->n++ : t->k - 1;
    while (j > 0 && topk_before(a, i, fabs(t->w[j - 1]), t->idx[j - 1])) {
        t->w[j] = t->w[j - 1];
        t->idx[j] = t->idx[j - 1];
        j--;
    }
    t->w[j] = v;
    t->idx[j] = i;
}

uint32_t pc_model_scan_length(const pc_model *m, size_t cls)
{
    if (cls >= m->ncls)
        return 0;
    const pc_wvec *plain = pc_learner_plain_weights(&m->learners[cls]);
    return plain && plain->s.groups ? plain->s.cap : m->space;
}

size_t pc_model_top_weights_slice(const pc_model *m, size_t cls, uint32_t from, uint32_t to,
                                  size_t k, uint32_t *idx, double *w, size_t n)
{
    if (cls >= m->ncls || k == 0)
        return 0;
    uint32_t len = pc_model_scan_length(m, cls);
    to = to < len ? to : len;
    topk t = {k, n, idx, w};
    const pc_learner *l = &m->learners[cls];
    const pc_wvec *plain = pc_learner_plain_weights(l);
    uint32_t dim = m->space; /* the bias weight, past it, is not a feature's */
    /* The store read directly: the daemon's event loop waits for this scan,
     * and a call per index cost 3 to 4 times as much.  w = scale * v as
     * pc_wvec_get computes it: the same bits. */
    if (plain && plain->s.v) {
        const double *v = plain->s.v;
        for (uint32_t i = from; i < to; i++)
            if (v[i] != 0)
                topk_offer(&t, i, plain->scale * v[i]);
    } else if (plain && plain->s.f) {
        const float *f = plain->s.f;
        for (uint32_t i = from; i < to; i++)
            if (f[i] != 0)
                topk_offer(&t, i, plain->scale * (double)f[i]);
    } else if (plain) {
        for (uint32_t h = from; h < to; h++) {
            uint32_t i = pc_wstore_key(&plain->s, h); /* PC_WSTORE_EMPTY >= dim */
            double v = *pc_wstore_val(&plain->s, h);
            if (i < dim && v != 0)
                topk_offer(&t, i, plain->scale * v);
        }
    } else {
        for (uint32_t i = from; i < to; i++) {
            double v = pc_learner_weight(l, i);
            if (v != 0)
                topk_offer(&t, i, v);
        }
    }
    return t.n;
}

size_t pc_model_top_weights(const pc_model *m, size_t cls, size_t k, uint32_t *idx, double *w)
{
    return pc_model_top_weights_slice(m, cls, 0, pc_model_scan_length(m, cls), k, idx, w, 0);
}
