/* perceptron.h - public API of libperceptron, the learning core of perceptrond.
 *
 * Online linear classifiers of the perceptron family (see docs/algorithms.md and
 * the rule files in lib/rules/).  The library does no I/O, keeps no globals and never
 * logs: every failure is a negative pc_status plus a message in a pc_error that
 * the caller may show to a user as is.
 *
 * Ownership: every pc_*_new / pc_*_decode returns an object the caller frees with
 * the matching pc_*_free (which accepts NULL).  Borrowed pointers (rule tables,
 * class names returned by accessors) stay valid while their owner lives and is
 * not modified.
 */
#ifndef PERCEPTRON_H
#define PERCEPTRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PC_VERSION_STRING "0.1.0"

/* ---- errors ------------------------------------------------------------ */

typedef enum pc_status {
    PC_OK = 0,
    PC_EINVAL = -1,   /* an argument or parameter is out of its documented range */
    PC_ENOMEM = -2,   /* an allocation failed */
    PC_EFORMAT = -3,  /* encoded bytes are malformed, truncated or of another version */
    PC_ENOTFOUND = -4,/* unknown rule, parameter or class */
    PC_ELIMIT = -5,   /* a hard limit (dimension, classes, points) would be exceeded */
} pc_status;

typedef struct pc_error {
    char msg[256];
} pc_error;

const char *pc_status_name(pc_status s);

/* ---- sparse examples --------------------------------------------------- */

/* Largest supported model dimension (number of weights per class). */
#define PC_DIM_MAX (1u << 28)

/* A sparse vector: n (index, value) pairs.  After pc_svec_normalize() the
 * indices are distinct (duplicates summed), zeros are dropped, and norm2 holds
 * the squared Euclidean norm; every learner entry point expects that form.
 * The order is the order given (first occurrences), except that vectors of
 * more than 1024 entries given with repeats come out sorted: sorting costs
 * more than the rest of a label, and only a rule's own merges need it
 * (PC_RULE_SORTED: the model sorts a copy for those). */
typedef struct pc_svec {
    uint32_t n, cap;
    uint32_t *idx;
    double *val;
    double norm2;
} pc_svec;

void pc_svec_init(pc_svec *x);          /* empty vector, no allocation */
void pc_svec_clear(pc_svec *x);         /* n = 0, keeps the buffers */
void pc_svec_free(pc_svec *x);          /* releases the buffers */
pc_status pc_svec_grow(pc_svec *x);    /* doubles the buffers (for pc_svec_push) */
/* Appends a pair; inline because a daemon calls it for every feature. */
static inline pc_status pc_svec_push(pc_svec *x, uint32_t index, double value)
{
    if (x->n == x->cap && pc_svec_grow(x) != PC_OK)
        return PC_ENOMEM;
    x->idx[x->n] = index;
    x->val[x->n++] = value;
    return PC_OK;
}
/* The largest magnitude of a feature value: 2^64, so that every 64-bit
 * integer is one.  The bound keeps every rule's arithmetic within double's
 * range over any stream: without it, finite values near 1e77 take omm's
 * squared distances past it, and values near 1e150 the other rules' norms,
 * and the model to a state that its snapshot cannot hold (docs/algorithms.md,
 * "Example and score").  False for NaN and the infinities too. */
#define PC_VALUE_MAX 0x1p64
static inline bool pc_value_ok(double v)
{
    return v >= -PC_VALUE_MAX && v <= PC_VALUE_MAX;
}
/* Merges duplicates, drops zeros, computes norm2.  Fails with PC_EINVAL on a
 * value (or a sum of duplicates) that is not pc_value_ok or an index >= dim. */
pc_status pc_svec_normalize(pc_svec *x, uint32_t dim, pc_error *err);
bool pc_svec_is_sorted(const pc_svec *x); /* indices strictly increasing */
void pc_svec_sort(pc_svec *x);            /* by index; x normalized (distinct indices) */

/* Feature hashing: XXH3-64 (libxxhash, stable since 0.8.0) of the name's bytes
 * with seed 0, reduced modulo dim.  The same name maps to the same index on
 * every machine and release. */
uint32_t pc_hash_feature(const char *name, size_t len, uint32_t dim);

/* ---- rules and their parameters ---------------------------------------- */

typedef struct pc_rule pc_rule;

#define PC_PARAMS_MAX 8        /* parameters per rule */
#define PC_PARAM_LIST_MAX 16   /* values in a list parameter */

typedef enum pc_param_kind {
    PC_PARAM_REAL,             /* one finite double */
    PC_PARAM_INT,              /* one integer (stored as double) */
    PC_PARAM_LIST,             /* 1..PC_PARAM_LIST_MAX doubles, each in [min, max] */
} pc_param_kind;

/* One parameter a rule declares.  The same table feeds config validation,
 * `create`, `info` and the docs. */
typedef struct pc_param_spec {
    const char *name;
    pc_param_kind kind;
    double def;                /* NaN: derived by the rule (see help) */
    double min, max;           /* inclusive unless min_open / max_open */
    bool min_open, max_open;
    const double *def_list;    /* PC_PARAM_LIST default */
    size_t def_list_len;
    const char *help;
} pc_param_spec;

typedef struct pc_param_value {
    size_t n;                  /* 1 for scalars */
    double v[PC_PARAM_LIST_MAX];
} pc_param_value;

/* Values in the order of the rule's spec table. */
typedef struct pc_params {
    pc_param_value val[PC_PARAMS_MAX];
} pc_params;

/* The NULL-terminated registry of every rule. */
const pc_rule *const *pc_rules(void);
const pc_rule *pc_rule_find(const char *name);
const char *pc_rule_name(const pc_rule *r);
const char *pc_rule_summary(const pc_rule *r);
size_t pc_rule_param_count(const pc_rule *r);
const pc_param_spec *pc_rule_param(const pc_rule *r, size_t i);
bool pc_rule_can_average(const pc_rule *r);
bool pc_rule_can_batch(const pc_rule *r);
bool pc_rule_has_own_bias(const pc_rule *r);

/* Fills p with the defaults of r (derived parameters stay NaN). */
void pc_params_default(const pc_rule *r, pc_params *p);
/* Sets one parameter by name, checking its kind and range. */
pc_status pc_params_set(const pc_rule *r, pc_params *p, const char *name,
                        const double *v, size_t n, pc_error *err);

/* ---- models ------------------------------------------------------------ */

#define PC_CLASSES_MAX 4096
#define PC_CLASS_NAME_MAX 255

/* How a model keeps its weights (lib/wstore.h).  Every storage gives
 * bit-identical scores and snapshots on the same stream; only memory and speed
 * differ. */
typedef enum pc_storage {
    PC_STORAGE_DENSE = 0,      /* dim doubles per vector: fastest, 8 bytes x dim */
    PC_STORAGE_SPARSE,         /* only the touched weights, in a hash table */
    PC_STORAGE_AUTO,           /* sparse until the table would outgrow the dense array */
} pc_storage;
/* Their names, indexed by pc_storage and NULL-terminated: "dense", "sparse",
 * "auto" (the spec key `storage`, info, the benches). */
extern const char *const pc_storage_names[];

/* How wide a dense array's entries are (the spec key `weights`).  float32
 * halves a dense model's memory and gives up exactness: every stored entry is
 * rounded to float after each update, so scores and mistakes may differ from
 * float64's (docs/operations.md).  Sparse tables keep float64. */
typedef enum pc_weights {
    PC_WEIGHTS_FLOAT64 = 0,    /* exact: bit-identical in every storage */
    PC_WEIGHTS_FLOAT32,        /* dense arrays of float: 4 bytes x dim */
} pc_weights;
/* "float64", "float32", NULL-terminated, indexed by pc_weights. */
extern const char *const pc_weights_names[];

/* ---- feature preparation (lib/prep.c, lib/scaler.c; docs/config.md) ------
 *
 * Between a client's named features and the rule, two steps a model's config
 * may ask for.  The name step (pc_namer, below) runs where names are hashed:
 * it rewrites or adds features by the feature's name (transforms) and hashes
 * pairs of names together (crosses); it depends on the config and the
 * request only (and rangebins on the model as it stands before the request).
 * The scale step runs inside the model (pc_model_label, pc_model_predict): it
 * divides each feature by a per-index statistic of the stream the model has
 * learned from, state that snapshots, journal replay and replicas reproduce
 * bit for bit.  With both off a model is exactly what it was without them. */

/* Online per-feature scaling.  Each example is scaled by the statistics of the
 * labelled stream up to and including itself (predict computes what a label
 * of the same example would use, without keeping it). */
typedef enum pc_scale {
    PC_SCALE_NONE = 0,         /* the rule sees the values as sent */
    PC_SCALE_MAX,              /* x_i / max |x_i| seen: every value in [-1, 1] */
    PC_SCALE_STD,              /* x_i / the standard deviation of x_i where it was present */
    PC_SCALE_RMS,              /* x_i / sqrt(sum of x_i^2 / examples learned), an example
                                  without the feature counting 0: a rare feature is divided by
                                  less (by sqrt(its frequency) at the same magnitude) */
    PC_SCALE_RMS_SENT,         /* rms for the features sent (and their crosses); the bins that
                                  transforms add are left at 1, hashed into an index space of
                                  their own past dim (pc_prep_space: the weights double) */
} pc_scale;
/* "none", "max", "std", "rms", "rms-sent", NULL-terminated, indexed by pc_scale; and
 * what each does, in a line (perceptronctl rules, docs). */
extern const char *const pc_scale_names[];
extern const char *const pc_scale_help[];

/* A numeric transform, chosen by a glob over feature names ('*' any run,
 * '?' one byte); the first transform whose pattern matches a name applies. */
typedef enum pc_transform_kind {
    PC_TRANSFORM_LOG = 0,      /* v -> sign(v) ln(1 + |v|), the same feature */
    PC_TRANSFORM_BINS,         /* adds "NAME#bK" = 1, K = how many edges are <= v */
    PC_TRANSFORM_LOGBINS,      /* adds "NAME#lbK" = 1, K half-octaves of 1 + |v| ("#lb-K" below 0) */
    PC_TRANSFORM_RANGEBINS,    /* adds "NAME#rbK" = 1, K = floor(nbins |v| / m) (at most nbins - 1),
                                  m the largest |v| the model has learned of NAME: bins learned
                                  online, from the scale step's statistics (needs scale: max) */
} pc_transform_kind;
/* "log", "bins", "logbins", "rangebins", NULL */
extern const char *const pc_transform_names[];
extern const char *const pc_transform_help[];  /* each one's text form and effect, in a line */

#define PC_TRANSFORMS_MAX 8
#define PC_CROSSES_MAX 8
#define PC_PATTERN_MAX 47      /* bytes of a pattern or a cross's prefix */
#define PC_EDGES_MAX 16
#define PC_CROSSED_MAX 4096    /* crossed features per example, at most */
#define PC_CROSSED_DEFAULT 256

typedef struct pc_transform {
    char pattern[PC_PATTERN_MAX + 1];
    uint8_t kind;              /* pc_transform_kind */
    uint8_t nedges;            /* bins: 1..PC_EDGES_MAX increasing finite edges */
    uint8_t nbins;             /* rangebins: 2..PC_RANGEBINS_MAX equal bins of the range */
    double edges[PC_EDGES_MAX];
} pc_transform;
#define PC_RANGEBINS_MAX 64

/* A cross: every feature whose name starts with a, times every other one
 * whose name starts with b, as the feature "NAME_A*NAME_B" with the product
 * of their values (bounded at PC_VALUE_MAX). */
typedef struct pc_cross {
    char a[PC_PATTERN_MAX + 1], b[PC_PATTERN_MAX + 1];
} pc_cross;

typedef struct pc_prep {
    pc_scale scale;
    uint32_t ntransforms, ncrosses;
    uint32_t max_crossed;      /* crossed features an example gets at most (the first ones) */
    pc_transform transforms[PC_TRANSFORMS_MAX];
    pc_cross crosses[PC_CROSSES_MAX];
} pc_prep;

/* Parses "PATTERN:log", "PATTERN:logbins", "PATTERN:bins=E1,E2,..." or
 * "PATTERN:rangebins=K" (the last ':' ends the pattern), and "PREFIX_A,PREFIX_B" for a cross.  The
 * message says what is wrong in terms of the text. */
pc_status pc_transform_parse(const char *s, size_t len, pc_transform *t, pc_error *err);
pc_status pc_cross_parse(const char *s, size_t len, pc_cross *c, pc_error *err);
/* The text that parses back to t (c): at most PC_PREP_TEXT_MAX bytes with the NUL. */
#define PC_PREP_TEXT_MAX 512
void pc_transform_format(const pc_transform *t, char *buf, size_t cap);
void pc_cross_format(const pc_cross *c, char *buf, size_t cap);
/* True when the name step has anything to do (a transform or a cross). */
bool pc_prep_names(const pc_prep *p);
/* The features' index space of a model of dimension dim with preparation p:
 * dim, or 2 dim when the bins are kept apart (scale: rms-sent with a
 * transform that adds bins): the features sent hash into [0, dim), the bins
 * into [dim, 2 dim), so that the scale step can tell them apart by index
 * alone, in every path that stores an example (label-later) or replays it. */
uint32_t pc_prep_space(const pc_prep *p, uint32_t dim);

typedef struct pc_model_config {
    const pc_rule *rule;
    pc_params params;
    uint32_t dim;              /* weights per class, 1..PC_DIM_MAX */
    bool bias;                 /* homogeneous rules: learn a bias via a constant feature */
    double bias_value;         /* that feature's value (default 1) */
    bool averaged;             /* predict with the average of past weights */
    bool batch;                /* perceptron batch mode for pc_model_label_batch */
    bool multiclass;           /* one-vs-rest over string classes */
    bool open_classes;         /* multiclass: add a class on first sight */
    bool calibrate;            /* learn the probability calibration (default true); false:
                                  no probabilities, and the library labels up to 1.5x faster */
    pc_storage storage;        /* dense (default), sparse or auto */
    pc_weights weights;        /* float64 (default) or float32 (dense and auto only) */
    pc_prep prep;              /* feature preparation (default: none) */
    size_t nclasses;           /* initial classes (multiclass) */
    const char *const *classes;/* borrowed during pc_model_new only */
} pc_model_config;

/* Fills c with a binary perceptron of dimension dim and every default. */
void pc_model_config_default(pc_model_config *c, uint32_t dim);

typedef struct pc_model pc_model;

/* Label of an example: binary models use y (+1/-1); multiclass models use the
 * class name. */
typedef struct pc_label {
    int y;
    const char *cls;
    size_t cls_len;
} pc_label;

typedef struct pc_prediction {
    int y;                     /* binary: +1/-1; multiclass: +1 */
    int32_t cls;               /* multiclass: index of the argmax class, -1 if none */
    double score;              /* binary score, or the argmax class's score */
    double second;             /* multiclass: the runner-up class's score (-inf: none) */
} pc_prediction;

typedef struct pc_outcome {
    pc_prediction pred;        /* made before the update (progressive validation) */
    bool mistake;
    bool updated;              /* any learner changed */
} pc_outcome;

typedef struct pc_stats {
    uint64_t examples, mistakes, updates;
    uint64_t recent_examples, recent_mistakes; /* last PC_RECENT_WINDOW labels */
} pc_stats;

#define PC_RECENT_WINDOW 1000

pc_status pc_model_new(const pc_model_config *c, pc_model **out, pc_error *err);
void pc_model_free(pc_model *m);
const pc_model_config *pc_model_config_of(const pc_model *m); /* classes not kept here */
pc_status pc_model_reset(pc_model *m, pc_error *err);        /* forget learning, keep config and classes */

/* x must be normalized for the model's dim.  scores (may be NULL) receives one
 * score per class for multiclass models; it must hold pc_model_class_count(). */
/* Not const: the bias feature is appended in a scratch buffer the model owns,
 * so a model is used by one thread at a time. */
void pc_model_predict(pc_model *m, const pc_svec *x, pc_prediction *p, double *scores);
/* One feature's part in a class's score (pc_model_explain). */
typedef struct pc_part {
    uint32_t idx;
    double value;        /* as given to the model (after the name step) */
    double scaled;       /* as the rule saw it: value / its scale (value itself without one) */
    double weight;       /* pc_model_weight(m, cls, idx) */
    double contribution; /* weight * scaled */
} pc_part;
/* Class cls's score of x (binary: cls 0) taken apart: parts[k] for x's k-th
 * feature (x->n entries, in x's order); returns the score of the example
 * with no features (the bias feature's weight, a rule's own bias or
 * threshold).  Every rule's score is affine in x: the score pc_model_predict
 * gives is that value plus the contributions, up to the rounding of the sums
 * (docs/protocol.md, "Explanations", says how close). */
double pc_model_explain(const pc_model *m, const pc_svec *x, size_t cls, pc_part *parts);
/* Probabilities calibrated online on the model's own recent stream (Platt
 * scaling of the scores it predicted before learning each label; lib/calib.h).
 * pc_model_probability: binary: P(y = +1) for a score (cls ignored);
 * multiclass: class cls's one-vs-rest probability for its score, before the
 * classes are normalized to sum 1 (NaN for no such class).
 * pc_model_probabilities: multiclass, one per class from the scores
 * pc_model_predict gave, summing to 1.
 * A model with calibrate false never learns its calibration: both answer as
 * an empty calibration would (0.5 each; ask pc_model_config_of first). */
double pc_model_probability(const pc_model *m, size_t cls, double score);
void pc_model_probabilities(const pc_model *m, const double *scores, double *probs);
pc_status pc_model_label(pc_model *m, const pc_svec *x, const pc_label *y,
                         pc_outcome *out, pc_error *err);
/* n examples at once.  In batch mode (perceptron) the update uses the weights at
 * the start of the call (seed 003); otherwise the examples are learned in order.
 * out (may be NULL) receives n outcomes.  On error nothing was learned. */
pc_status pc_model_label_batch(pc_model *m, const pc_svec *xs, const pc_label *ys,
                               size_t n, pc_outcome *out, pc_error *err);

size_t pc_model_class_count(const pc_model *m);
const char *pc_model_class_name(const pc_model *m, size_t i);
int32_t pc_model_class_find(const pc_model *m, const char *name, size_t len);
pc_status pc_model_class_add(pc_model *m, const char *name, size_t len, int32_t *idx, pc_error *err);

void pc_model_stats(const pc_model *m, pc_stats *s);
/* The labels learned (pc_stats.examples), in O(1): pc_model_stats also
 * counts the recent window, a pass over it. */
uint64_t pc_model_examples(const pc_model *m);
/* Per class (multiclass: examples whose true class is i, mistakes on them). */
void pc_model_class_stats(const pc_model *m, size_t i, uint64_t *examples, uint64_t *mistakes);

/* Bytes the model's weights and rule state hold on the heap (dense vectors
 * counted at their allocated size, whether or not their pages were touched). */
size_t pc_model_bytes(const pc_model *m);

/* Inspection of one binary learner (class i; 0 for binary models). */
typedef struct pc_learner_info {
    double norm;               /* ||w|| of the predicting weights (no bias component) */
    double bias;               /* bias term (0 when none) */
    double margin;             /* the rule's own margin estimate, NaN when it has none */
    uint64_t updates;
    const char *note;          /* rule-specific remark (e.g. a cap hit), or NULL */
} pc_learner_info;

void pc_model_learner_info(const pc_model *m, size_t cls, pc_learner_info *info);
/* Weight of feature index i in class cls's predicting weights. */
double pc_model_weight(const pc_model *m, size_t cls, uint32_t i);
/* The k features of largest |weight| of class cls, in decreasing order
 * (equal ones by index).  idx/w hold k entries; returns how many were
 * filled.  O(dim), or O(the table) for sparse storage. */
size_t pc_model_top_weights(const pc_model *m, size_t cls, size_t k, uint32_t *idx, double *w);
/* The same a slice at a time, for a caller that must not wait for the whole
 * scan: positions [0, pc_model_scan_length) cover every weight of class cls
 * (indices, or a sparse table's slots) while the model does not change;
 * pc_model_top_weights_slice offers positions [from, to) to the n entries
 * idx/w already hold and returns the new n.  Slices [0, a), [a, b), ...
 * [z, length) give exactly pc_model_top_weights's answer. */
uint32_t pc_model_scan_length(const pc_model *m, size_t cls);
size_t pc_model_top_weights_slice(const pc_model *m, size_t cls, uint32_t from, uint32_t to,
                                  size_t k, uint32_t *idx, double *w, size_t n);

/* The statistic the scale step divides feature i by (max |x_i|, or its
 * standard deviation), as the model's last label left it; 0 for a feature
 * never seen, 1 for every feature when the model does not scale. */
double pc_model_feature_scale(const pc_model *m, uint32_t i);

/* ---- the name step ------------------------------------------------------- */

/* Turns one example's named features into the entries of a pc_svec under a
 * model's config: plain hashing (pc_hash_feature), or its transforms and
 * crosses.  The caller owns the namer (pc_namer_free), starts each example
 * with pc_namer_start, adds each feature, then calls pc_namer_end before
 * pc_svec_normalize.  Names passed to pc_namer_add must stay valid until
 * pc_namer_end (crosses read them there). */
typedef struct pc_named_ref {
    const char *name;
    uint32_t len;
    uint32_t sides;            /* bit 2k: the name starts with cross k's a; 2k+1: with its b */
    double v;
} pc_named_ref;

typedef struct pc_namer {
    uint32_t dim;
    uint32_t bins_at;          /* where the bins' indices start: 0 (among the features), or dim */
    const pc_prep *prep;       /* borrowed; NULL or nothing to do: plain hashing */
    /* Borrowed: the scale statistics of the model that rangebins reads (NULL:
     * none yet, every value in the top bin), set by pc_namer_for.  Read as
     * the model stands before the request learns anything, so a replay of
     * the same requests reads the same statistics. */
    const struct pc_scaler *scales;
    uint32_t n, cap;           /* this example's names that a cross may take, owned */
    pc_named_ref *refs;
    /* When set, called with each derived feature's index and name ("age#b2",
     * "a*b"): the bytes are valid during the call only. */
    void (*on_derived)(void *ud, uint32_t idx, const char *name, size_t len);
    /* When set, called with each name as given and its index, as it is
     * hashed (the plain case too): a caller that wants an example's names
     * later (an explanation) keeps them in the one pass over the example. */
    void (*on_name)(void *ud, uint32_t idx, const char *name, size_t len);
    void *ud;
} pc_namer;
#define PC_DERIVED_NAME_MAX 256 /* bytes of a derived name built on the stack */

/* A namer that hashes every name as it is, owning nothing. */
static inline pc_namer pc_namer_plain(uint32_t dim)
{
    pc_namer nm = {dim, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL};
    return nm;
}
/* Points nm at a model's dim and preparation (prep may be NULL; scales NULL,
 * on_derived and on_name NULL), keeping its buffer for the next example. */
void pc_namer_set(pc_namer *nm, uint32_t dim, const pc_prep *prep);
/* The same for model m: its dim, its preparation, and its scales (rangebins). */
void pc_namer_for(pc_namer *nm, const pc_model *m);
void pc_namer_free(pc_namer *nm);
static inline void pc_namer_start(pc_namer *nm) { nm->n = 0; }
pc_status pc_namer_add_prepared(pc_namer *nm, pc_svec *x, const char *name, size_t len, double v);
/* Appends name's entries to x: inline for the plain case, which every
 * feature of every request takes. */
static inline pc_status pc_namer_add(pc_namer *nm, pc_svec *x, const char *name, size_t len,
                                     double v)
{
    if (!nm->prep && !nm->on_name)
        return pc_svec_push(x, pc_hash_feature(name, len, nm->dim), v);
    return pc_namer_add_prepared(nm, x, name, len, v);
}
/* Appends the example's crossed features (nothing without crosses). */
pc_status pc_namer_end(pc_namer *nm, pc_svec *x);
/* The bound of the indices the namer writes (pc_svec_normalize's dim). */
static inline uint32_t pc_namer_space(const pc_namer *nm)
{
    return nm->bins_at ? 2 * nm->dim : nm->dim;
}

/* ---- encode / decode ---------------------------------------------------- */

/* Encodes the whole model (config, classes, stats, every learner's state) into a
 * new buffer owned by the caller (free()).  Exact: decode(encode(m)) scores and
 * learns bit-identically to m. */
pc_status pc_model_encode(const pc_model *m, uint8_t **buf, size_t *len, pc_error *err);
/* Every length is checked against len before anything is allocated. */
pc_status pc_model_decode(const uint8_t *buf, size_t len, pc_model **out, pc_error *err);

#ifdef __cplusplus
}
#endif
#endif
