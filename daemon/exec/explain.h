/* explain.h - a prediction's reasons: the K largest contributions of an
 * example's features to a class's score, the bias, and the rest, such that
 * they add up to the score bit for bit (docs/protocol.md, "Explanations").
 * Computed here from pc_model_explain; packed by replies.c. */
#ifndef PCD_EXPLAIN_H
#define PCD_EXPLAIN_H

#include "lib/perceptron.h"

#define PCD_EXPLAIN_MAX 256 /* contributions an answer may list per class */

/* One class's score taken apart. */
typedef struct pcd_explanation {
    int32_t cls;            /* the class (multiclass), -1 for a binary model */
    double score;           /* the class's score: bias + top[0..n) + rest, added in that order */
    double bias;            /* the score of the example with no features */
    double rest;            /* the other features' contributions (and the sums' rounding) */
    uint32_t n, others;     /* contributions listed, features not listed */
    pc_part *top;           /* k: largest |contribution| first, equal ones by index; no 0 */
    uint32_t *name_at;      /* k: top[i]'s name, 1 + its offset in the arena; 0 none */
} pcd_explanation;

/* Everything explaining needs, made ready before a handler answers (so that
 * nothing fails once the answer is being packed), in one block that the loop
 * keeps from one request to the next (no malloc per explained request). */
typedef struct pcd_explainer {
    pcd_explanation ex[2]; /* binary: ex[0]; multiclass: the predicted class, the runner-up */
    size_t n;              /* explanations in ex after pcd_explain */
    const pc_model *model; /* the model explained (its class names) */
    pc_part *parts;        /* scratch: every feature's part, max_features entries */
    double *scores;        /* scratch: the classes' scores, ncls entries */
    char *arena;           /* the listed features' names (pcd_explain_name), NUL-terminated */
    size_t arena_len, arena_cap;
    uint64_t listed_bits;  /* bit i % 64 set for each listed index i: most names are not */
    size_t max_features, ncls; /* what the block holds room for */
    uint32_t k;
} pcd_explainer;

/* *held made ready for examples of up to max_features features, a model of
 * ncls classes and k contributions listed a class (1 to PCD_EXPLAIN_MAX):
 * reused when it has room, else replaced by a larger one (*held may be
 * NULL: none yet).  NULL when out of memory (*held as it was).  The
 * explainer is *held's owner's, freed with pcd_explainer_free. */
pcd_explainer *pcd_explainer_for(pcd_explainer **held, size_t max_features, size_t ncls,
                                 uint32_t k);
void pcd_explainer_free(pcd_explainer *xp);
/* Explains m's prediction of x (x->n <= max_features), listing k contributions
 * (1 to PCD_EXPLAIN_MAX) per class: p and scores as pc_model_predict gave
 * them for x, or p NULL to predict here (into xp->scores). */
void pcd_explain(pcd_explainer *xp, pc_model *m, const pc_svec *x, const pc_prediction *p,
                 const double *scores, uint32_t k);

/* Names the listed parts of feature idx (name[0..len), copied), unless
 * named already: the request's names (request.c keeps them as they are
 * read), reported after pcd_explain.  A name that does not fit in memory is
 * left out (names are a convenience). */
void pcd_explain_name(void *xp, uint32_t idx, const char *name, size_t len);
/* Names every listed part still unnamed that the names table knows (the
 * model's: the first name noted for each index it learned from): a feature
 * sent by index, or label_event's, whose request's names are gone. */
struct pcd_names;
void pcd_explain_known_names(pcd_explainer *xp, const struct pcd_names *names);
/* The name of ex->top[i], or NULL. */
const char *pcd_explain_name_of(const pcd_explainer *xp, const pcd_explanation *ex, uint32_t i);

#endif
