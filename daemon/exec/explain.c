/* explain.c - the K largest contributions to a score, and a rest that makes
 * the parts add up to it exactly (explain.h).
 *
 * pc_model_explain gives every feature's w_i x_i and the score of the empty
 * example; their sum is the score up to rounding, since the rule added them
 * in its own order.  A client adds what it is given, bias first, then the
 * contributions as listed, then the rest: the rest is chosen so that this
 * sum, in doubles, is the score bit for bit, but where the listed parts
 * cancel far beyond the score (then within 2^-52 (|bias + listed| + |score|):
 * one rounding).  It is the other features' contributions plus the
 * difference of the two roundings (within 1e-12 of the sum of |parts|, 1e-9
 * for the OMM rules: tests/test_explain.c). */
#include "daemon/exec/explain.h"

#include "daemon/model/names.h"
#include "lib/grow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One block: the explainer, then the parts (listed, scratch), the scores and
 * the name offsets, each suitably aligned after the last. */
static pcd_explainer *explainer_new(size_t max_features, size_t ncls, uint32_t k)
{
    size_t nparts = 2 * (size_t)k + max_features;
    size_t bytes = sizeof(pcd_explainer) + nparts * sizeof(pc_part) + ncls * sizeof(double) +
                   2 * (size_t)k * sizeof(uint32_t);
    pcd_explainer *xp = malloc(bytes);
    if (!xp)
        return NULL;
    pc_part *parts = (pc_part *)(xp + 1);
    xp->ex[0].top = parts;
    xp->ex[1].top = parts + k;
    xp->parts = parts + 2 * (size_t)k;
    xp->scores = (double *)(parts + nparts);
    uint32_t *names = (uint32_t *)(xp->scores + ncls);
    xp->ex[0].name_at = names;
    xp->ex[1].name_at = names + k;
    xp->max_features = max_features;
    xp->ncls = ncls;
    xp->k = k;
    xp->n = 0;
    xp->listed_bits = 0;
    xp->arena = NULL;
    xp->arena_cap = 0;
    return xp;
}

static size_t larger(size_t a, size_t b) { return a > b ? a : b; }

pcd_explainer *pcd_explainer_for(pcd_explainer **held, size_t max_features, size_t ncls,
                                 uint32_t k)
{
    pcd_explainer *xp = *held;
    if (!xp || xp->max_features < max_features || xp->ncls < ncls || xp->k < k) {
        /* room for this request and every one before it, so that a stream
         * of requests of different sizes settles on one block */
        pcd_explainer *bigger =
            explainer_new(larger(larger(max_features, 64), xp ? xp->max_features : 0),
                          larger(larger(ncls, 1), xp ? xp->ncls : 0),
                          (uint32_t)larger(k, xp ? xp->k : 0));
        if (!bigger)
            return NULL;
        if (xp) { /* the names' buffer goes on */
            bigger->arena = xp->arena;
            bigger->arena_cap = xp->arena_cap;
            free(xp);
        }
        *held = xp = bigger;
    }
    xp->arena_len = 0; /* the names of this request's explanations (pcd_explain: the rest) */
    return xp;
}

void pcd_explainer_free(pcd_explainer *xp)
{
    if (!xp)
        return;
    free(xp->arena);
    free(xp);
}

/* A part of magnitude c and index idx before one of m and midx: larger
 * |contribution| first, then smaller index. */
static inline bool ahead(double c, uint32_t idx, double m, uint32_t midx)
{
    return c > m || (c == m && idx < midx);
}

/* The rest that makes t + rest == score in doubles: score - t, moved by an
 * ulp or two when that difference itself rounded.  Where t is far larger
 * than the score (listed parts that cancel), no double may do: then the sum
 * is the score within the rounding of that last addition. */
static double rest_for(double t, double score)
{
    double r = score - t;
    for (int i = 0; i < 4 && t + r != score; i++)
        r = nextafter(r, t + r < score ? INFINITY : -INFINITY);
    return r;
}

static void explain_class(pcd_explainer *xp, const pc_model *m, const pc_svec *x, int32_t cls,
                          double score, uint32_t k)
{
    pcd_explanation *ex = &xp->ex[xp->n++];
    pc_part *parts = xp->parts;
    ex->cls = cls;
    ex->score = score;
    ex->bias = pc_model_explain(m, x, cls < 0 ? 0 : (size_t)cls, parts);
    /* insertion into the top k, larger |contribution| first, then smaller
     * index: O(n k), k small next to what a score costs.  The candidates are
     * kept by position and magnitude (the parts are copied once, the k that
     * win).  A part of 0 (a feature of weight 0, one the model never
     * learned) says nothing: it is one of the others */
    uint32_t best[PCD_EXPLAIN_MAX], listed = 0;
    double mag[PCD_EXPLAIN_MAX];
    for (uint32_t i = 0; i < x->n; i++) {
        double c = fabs(parts[i].contribution);
        if (c == 0 || (listed == k && !ahead(c, parts[i].idx, mag[k - 1], parts[best[k - 1]].idx)))
            continue;
        uint32_t j = listed < k ? listed++ : k - 1;
        for (; j > 0 && ahead(c, parts[i].idx, mag[j - 1], parts[best[j - 1]].idx); j--) {
            best[j] = best[j - 1];
            mag[j] = mag[j - 1];
        }
        best[j] = i;
        mag[j] = c;
    }
    for (uint32_t i = 0; i < listed; i++)
        ex->top[i] = parts[best[i]];
    ex->n = listed;
    ex->others = x->n - ex->n;
    for (uint32_t i = 0; i < ex->n; i++) {
        ex->name_at[i] = 0;
        xp->listed_bits |= 1ull << (ex->top[i].idx & 63);
    }
    double t = ex->bias;
    for (uint32_t i = 0; i < ex->n; i++)
        t += ex->top[i].contribution;
    ex->rest = rest_for(t, score);
}

void pcd_explain(pcd_explainer *xp, pc_model *m, const pc_svec *x, const pc_prediction *p,
                 const double *scores, uint32_t k)
{
    pc_prediction own;
    if (!p) {
        pc_model_predict(m, x, &own, xp->scores);
        p = &own;
        scores = xp->scores;
    }
    xp->n = 0;
    xp->listed_bits = 0;
    xp->model = m;
    size_t ncls = pc_model_class_count(m);
    if (!pc_model_config_of(m)->multiclass) {
        explain_class(xp, m, x, -1, p->score, k);
        return;
    }
    if (ncls == 0) /* no class yet: nothing to take apart */
        return;
    int32_t best = p->cls < 0 ? 0 : p->cls, second = -1;
    for (size_t c = 0; c < ncls; c++)
        if ((int32_t)c != best && (second < 0 || scores[c] > scores[second]))
            second = (int32_t)c;
    explain_class(xp, m, x, best, scores[best], k);
    if (second >= 0)
        explain_class(xp, m, x, second, scores[second], k);
}

void pcd_explain_name(void *arg, uint32_t idx, const char *name, size_t len)
{
    pcd_explainer *xp = arg;
    if (!(xp->listed_bits >> (idx & 63) & 1)) /* a name of no listed part: most of them */
        return;
    for (size_t e = 0; e < xp->n; e++) {
        pcd_explanation *ex = &xp->ex[e];
        for (uint32_t i = 0; i < ex->n; i++) {
            if (ex->top[i].idx != idx || ex->name_at[i])
                continue;
            if (xp->arena_len + len + 1 > xp->arena_cap &&
                !PC_RESERVE(xp->arena, xp->arena_cap, 2 * (xp->arena_cap + len + 1)))
                return;
            memcpy(xp->arena + xp->arena_len, name, len);
            xp->arena[xp->arena_len + len] = 0;
            ex->name_at[i] = (uint32_t)xp->arena_len + 1;
            xp->arena_len += len + 1;
        }
    }
}

const char *pcd_explain_name_of(const pcd_explainer *xp, const pcd_explanation *ex, uint32_t i)
{
    return ex->name_at[i] ? xp->arena + ex->name_at[i] - 1 : NULL;
}

void pcd_explain_known_names(pcd_explainer *xp, const pcd_names *names)
{
    for (size_t e = 0; e < xp->n; e++) {
        pcd_explanation *ex = &xp->ex[e];
        for (uint32_t i = 0; i < ex->n; i++) {
            const char *name = ex->name_at[i] ? NULL : pcd_names_get(names, ex->top[i].idx);
            if (name)
                pcd_explain_name(xp, ex->top[i].idx, name, strlen(name));
        }
    }
}
