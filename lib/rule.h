/* rule.h - the interface every update rule implements.
 *
 * A rule is a const struct of function pointers, the optional ones NULL, in
 * the file of its family under lib/rules/ (one algorithm and its variants per
 * file), listed once in lib/rules/registry.c (the libevent `eventop` /
 * OpenSSL `EVP_MD` pattern).  It declares how much private state one binary
 * learner needs; the learner allocates that state zeroed and hands it to every
 * call.  A rule sees binary labels only (y = +1 or -1) and normalized sparse
 * vectors; bias features, averaging, multiclass, statistics and batch mode are
 * handled above it (learner.c, model.c), so a rule file holds only its paper's
 * formulas, tagged with the seed and equation they implement; docs/algorithms.md
 * has each rule with its paper and the choices the papers leave open.
 */
#ifndef PC_RULE_H
#define PC_RULE_H

#include "lib/bytes.h"
#include "lib/perceptron.h"
#include "lib/wvec.h"

#include <stddef.h>

enum pc_rule_flags {
    PC_RULE_ADDITIVE = 1u << 0, /* updates are w += alpha x on the primary wvec:
                                   averaging is available */
    PC_RULE_BATCH = 1u << 1,    /* the update does not read w, so batch mode
                                   (score all, then update) is the seed 003 rule */
    PC_RULE_OWN_BIAS = 1u << 2, /* the rule learns its own bias (OMM): no constant
                                   feature is added */
    PC_RULE_STRICT_SIGN = 1u << 3, /* predicts +1 only when s > 0 (Winnow's
                                      1[w.x > theta]); others: s >= 0 */
    PC_RULE_SORTED = 1u << 4,   /* needs the indices of x increasing (it merges
                                   index lists): the model sorts a copy */
    PC_RULE_ORIGIN = 1u << 5,   /* the zero example is the origin, a point like
                                   any other (the translation-invariant OMM rules,
                                   seed 004 Remark 3.4): the learner passes it to
                                   update instead of skipping it */
    PC_RULE_FLOAT64_ONLY = 1u << 6, /* its weights leave float32's range (Winnow's
                                       clamps at 1e+-100): weights: float32 is refused */
    PC_RULE_CHECKED_DECODE = 1u << 7, /* decode refuses every state its updates could not
                                         have left (its invariants, not only finite
                                         values), so a model that loads learns into a
                                         state that saves and loads again, whatever the
                                         file held; tests/fuzz/fuzz_snapshot.c holds
                                         the rule to it (docs/fuzzing.md) */
};

/* What a rule's init receives. */
typedef struct pc_rule_ctx {
    uint32_t dim;               /* size of the vectors the rule sees (the model's
                                   dim, plus 1 when a bias feature is added) */
    const pc_params *params;    /* validated, in the order of the spec table;
                                   derived parameters are NaN */
    bool averaged;              /* PC_RULE_ADDITIVE rules: init the primary wvec
                                   with averaging */
    pc_storage storage;         /* how vectors of dim entries are kept
                                   (pc_wvec_init reads it; wstore.h) */
    pc_weights weights;         /* the width of dense entries (pc_wvec_init) */
    bool bias;                  /* the last coordinate (dim - 1) is the model's
                                   constant bias feature (rules that must leave
                                   the bias out of ||w|| or count N read it) */
} pc_rule_ctx;

/* The operations.  Required: init, score, update: every rule has something to
 * say there.  The others are NULL unless the rule has something to add to what
 * the learner (learner.c) does without them:
 *
 *   primary   NULL: the rule has no plain weight vector.  Given, it is the
 *             vector the defaults below read, and the one averaging
 *             accumulates (averaging itself is PC_RULE_ADDITIVE's to allow).
 *   destroy   NULL: nothing allocated beyond the primary vector, which the
 *             learner frees in any case.
 *   weight    NULL: the primary vector's entry.
 *   bias      NULL: no bias of its own (0): the model's constant feature, if
 *             any, is the bias.  Only PC_RULE_OWN_BIAS rules give it.
 *   describe  NULL: the norm is the primary vector's, no margin, no note.
 *   encode/decode  both NULL: the state is the primary vector (pc_wvec_encode).
 *   bytes     NULL: the primary vector is all the rule allocates.
 *
 * The contract test (tests/test_rules_contract.c) holds every rule to this. */
struct pc_rule {
    const char *name;
    const char *summary;        /* one line: what it is and its seed */
    unsigned flags;
    const pc_param_spec *params;
    size_t nparams;
    size_t state_size;

    /* Sets up zeroed state for ctx->dim.  May allocate; on failure must leave
     * nothing allocated.  Also checks cross-parameter constraints. */
    pc_status (*init)(void *state, const pc_rule_ctx *ctx, pc_error *err);
    /* Frees what init or decode allocated, except the primary vector (the
     * state block itself is the caller's).  Must accept zeroed state. */
    void (*destroy)(void *state);
    /* The signed score s whose sign is the prediction (sign(0) = +1). */
    double (*score)(const void *state, const pc_svec *x);
    /* Learns from (x, y) whose score under the current state is s.  Returns
     * true when the state changed.  Must not fail: any allocation it needs is
     * made in init, or the update is skipped and noted in describe(). */
    bool (*update)(void *state, const pc_svec *x, int y, double s);
    /* The rule's plain weight vector w, w.x being the score. */
    pc_wvec *(*primary)(void *state);
    /* Weight of feature i, and the rule's own bias term. */
    double (*weight)(const void *state, uint32_t i);
    double (*bias)(const void *state);
    /* Margin estimate, note, and the norm when it is not the primary
     * vector's: the learner has set the norm from the primary vector (0
     * without one) and the margin to NaN; it counts the updates itself. */
    void (*describe)(const void *state, pc_learner_info *info);
    /* Exact, versioned by the model codec.  decode gets the state as init left
     * it (same ctx) and reads into it: PC_OK, or PC_EFORMAT when the bytes are
     * not a state encode could have written. */
    pc_status (*encode)(const void *state, pc_writer *w);
    pc_status (*decode)(void *state, pc_reader *r);
    /* Heap bytes the state holds beyond state_size.  NULL: the primary
     * vector's (pc_wvec_bytes). */
    size_t (*bytes)(const void *state);
};

/* Helpers shared by the rules (learner.c). */
/* A weight vector as the rule's context says: ctx->dim entries in
 * ctx->storage, of ctx->weights' width. */
static inline pc_status pc_wvec_init(pc_wvec *w, const pc_rule_ctx *ctx, bool averaged)
{
    return pc_wvec_init_store(w, ctx->dim, ctx->storage, ctx->weights, averaged);
}

static inline double pc_param1(const pc_rule_ctx *ctx, size_t i)
{
    return ctx->params->val[i].v[0];
}

/* A rule's parameter table (a static array in its file), in its struct. */
#define PC_RULE_PARAMS(table) .params = (table), .nparams = sizeof(table) / sizeof *(table)

/* score and primary of a rule whose state begins with its plain weight vector
 * (a pc_wvec named w, the first member, which PC_RULE_W_FIRST checks): w.x
 * and w. */
double pc_rule_w_score(const void *state, const pc_svec *x);
pc_wvec *pc_rule_w_primary(void *state);
#define PC_RULE_W_FIRST(type)                                                                      \
    _Static_assert(offsetof(type, w) == 0, "pc_rule_w_score: " #type "'s w must come first")

/* The learning rate of the perceptron and the margin perceptron. */
#define PC_PARAM_SPEC_ETA                                                                          \
    {"eta", PC_PARAM_REAL, 1, 0, 1e6, true, false, NULL, 0,                                        \
     "learning rate (seed 002 Def. 10): the step added on a mistake"}

#endif
