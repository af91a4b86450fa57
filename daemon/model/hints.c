/* hints.c - label hints by selective sampling (hints.h). */
#include "daemon/model/hints.h"

#include <math.h>
#include <xxhash.h>

#include "daemon/model/pending.h"

uint64_t pcd_hints_clock(const pcd_model *e)
{
    return pc_model_examples(e->model);
}

/* Uniform in [0, 1): the example's indices and values, hashed under the
 * seed moved by the clock (a new draw for the same example at every label). */
static double draw(uint64_t seed, const pc_svec *x, uint64_t examples)
{
    uint64_t s = seed ^ (examples * 0x9E3779B97F4A7C15ull);
    uint64_t h = XXH3_64bits_withSeed(x->idx, x->n * sizeof *x->idx, s);
    h = XXH3_64bits_withSeed(x->val, x->n * sizeof *x->val, h);
    return (double)(h >> 11) * 0x1p-53;
}

/* How sure the prediction is: the paper's |w.x| for a binary model; for a
 * multiclass one (one-vs-rest) how far the predicted class leads the next,
 * a close second being as unsure as a score near 0. */
static double margin(const pcd_model *e, const pc_prediction *p)
{
    if (!pc_model_config_of(e->model)->multiclass)
        return fabs(p->score);
    return p->cls >= 0 && isfinite(p->second) ? p->score - p->second : 0;
}

pcd_hint pcd_hints_decide(const pcd_model *e, const pc_svec *x, const pc_prediction *pred,
                          uint64_t examples)
{
    const pcp_join_config *c = &e->pending->cfg;
    double b = c->hints_b, a = margin(e, pred);
    double p = isfinite(a) ? b / (b + a) : 0; /* b > 0: in (0, 1], 1 at margin 0 */
    return (pcd_hint){.ask = draw(c->hints_seed, x, examples) < p, .probability = p};
}

void pcd_hints_count(pcd_model *e, const pc_svec *x, const pc_prediction *p, uint64_t ago,
                     bool mistake)
{
    pcd_hint h = pcd_hints_decide(e, x, p, pcd_hints_clock(e) - ago);
    pcd_join_stats *st = &e->pending->st;
    st->hint_labels++;
    st->hint_mistakes += mistake;
    st->hint_asked += h.ask;
    st->hint_asked_mistakes += h.ask && mistake;
}
