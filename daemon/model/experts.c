/* experts.c - seed 001's weighted majority (WMA) and randomized weighted
 * majority (RWMA) over a model's champion and challengers (see experts.h;
 * the choices the seed leaves open: docs/algorithms.md, "Experts"). */
#include "daemon/model/experts.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

double pcd_experts_eta(const pcd_experts *x, size_t n, uint64_t t)
{
    if (x->cfg.eta > 0)
        return x->cfg.eta;
    /* seed 001, section 2: eta of the order 1/sqrt(T) makes RWMA no-regret;
     * sqrt(ln n / t) balances its two terms, capped where its bounds hold */
    double e = sqrt(log((double)n) / (double)(t ? t : 1));
    return e < 0.5 ? e : 0.5;
}

void pcd_experts_weights(const pcd_experts *x, size_t n, double *w)
{
    /* (1 - eta)^m_i, scaled by (1 - eta)^-min m so that the largest is 1:
     * the counts grow without bound, the weights never underflow to all 0 */
    double l = log1p(-pcd_experts_eta(x, n, x->rounds + 1));
    uint64_t least = pcd_experts_best(x, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += w[i] = exp((double)(x->wrong[i] - least) * l);
    for (size_t i = 0; i < n; i++)
        w[i] /= sum;
}

uint64_t pcd_experts_best(const pcd_experts *x, size_t n)
{
    uint64_t least = x->wrong[0];
    for (size_t i = 1; i < n; i++)
        if (x->wrong[i] < least)
            least = x->wrong[i];
    return least;
}

/* RWMA's uniform number in [0, 1) for the current round: XXH3 of the round
 * under the model's seed, so every copy of the model draws alike. */
static double draw(const pcd_experts *x)
{
    uint8_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(x->rounds >> (8 * i));
    return (double)(XXH3_64bits_withSeed(t, sizeof t, x->cfg.seed) >> 11) * 0x1p-53;
}

static bool same_answer(const pc_prediction *a, const pc_prediction *b, bool multiclass)
{
    return multiclass ? a->cls == b->cls : a->y == b->y;
}

pc_prediction pcd_experts_answer(const pcd_experts *x, size_t n, const pc_prediction *p,
                                 bool multiclass, size_t *who)
{
    double w[PCD_EXPERTS_MAX];
    pcd_experts_weights(x, n, w);
    size_t best = 0;
    if (x->cfg.mode == PCP_EXPERTS_RWMA) {
        double u = draw(x), cum = 0;
        for (best = 0; best + 1 < n; best++)
            if (u < (cum += w[best]))
                break;
        if (who)
            *who = best;
        return p[best];
    }
    /* WMA: the total weight behind each answer, counted at the first expert
     * giving it; the heaviest wins, the earliest on a tie (strictly greater) */
    double total[PCD_EXPERTS_MAX] = {0}, vote = 0;
    for (size_t i = 0; i < n; i++) {
        size_t first = 0;
        while (!same_answer(&p[first], &p[i], multiclass))
            first++;
        total[first] += w[i];
        vote += w[i] * p[i].y;
    }
    for (size_t i = 1; i < n; i++)
        if (total[i] > total[best])
            best = i;
    if (who)
        *who = best;
    pc_prediction out = p[best];
    out.score = multiclass ? total[best] : vote;
    return out;
}

bool pcd_experts_learn(pcd_experts *x, size_t n, const pc_prediction *p, const bool *wrong,
                       bool multiclass, pc_prediction *said)
{
    size_t who;
    pc_prediction a = pcd_experts_answer(x, n, p, multiclass, &who);
    if (said)
        *said = a;
    bool mistake = wrong[who];
    x->mistakes += mistake;
    for (size_t i = 0; i < n; i++)
        x->wrong[i] += wrong[i];
    x->rounds++;
    return mistake;
}

void pcd_experts_swap(pcd_experts *x, size_t i, size_t j)
{
    uint64_t t = x->wrong[i];
    x->wrong[i] = x->wrong[j];
    x->wrong[j] = t;
}

double pcd_experts_bound(const pcd_experts *x, size_t n)
{
    double eta = x->cfg.eta, m = (double)pcd_experts_best(x, n), ln = log((double)n);
    if (eta <= 0)
        return NAN;
    if (x->cfg.mode == PCP_EXPERTS_RWMA)
        return (1 + eta) * m + ln / eta;
    return 2 * (1 + eta) * m + 2 * ln / eta;
}
