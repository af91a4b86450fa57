/* explain.c - a score taken apart: each feature's contribution w_i x_i to a
 * class's score, and the score of the empty example (perceptron.h,
 * pc_model_explain; docs/protocol.md, "Explanations").
 *
 * Every rule's score is affine in the example: w.x plus a term of its own
 * (the bias feature's weight, OMM's bias, Winnow's threshold), w being what
 * pc_model_weight answers (the average for an averaged model, ROMMA's
 * direction times its magnitude, OMM's normalised difference).  So the
 * contributions are read one weight at a time, and the rest of the score is
 * the score of the example with no features, computed by the rule itself.
 * Nothing is learned or changed: the model's scratch vector is not touched
 * either, so an explanation may follow a prediction whose view it holds. */
#include "lib/model_internal.h"

double pc_model_explain(const pc_model *m, const pc_svec *x, size_t cls, pc_part *parts)
{
    if (cls >= m->ncls)
        cls = 0;
    for (uint32_t k = 0; k < x->n; k++) {
        pc_part *p = &parts[k];
        p->idx = x->idx[k];
        p->value = x->val[k];
        p->scaled = pc_scaler_value(&m->scaler, x->idx[k], x->val[k]);
        p->weight = pc_model_weight(m, cls, x->idx[k]);
        p->contribution = p->weight * p->scaled;
    }
    /* the empty example as the rules see it: the bias feature alone */
    uint32_t bidx = m->space;
    double bval = m->cfg.bias_value;
    pc_svec empty = {.n = m->add_bias ? 1 : 0, .cap = 1, .idx = &bidx, .val = &bval,
                     .norm2 = m->add_bias ? bval * bval : 0};
    return pc_learner_predict_score(&m->learners[cls], &empty);
}
