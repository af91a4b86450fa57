/* greedy.c - the Greedy Perceptron (seed 002 ch. 3): the learning rate that helps most now.
 *
 * On y(w.x) <= 0 (Alg. 2 line 5): eta* = argmin_{eta in S} L(w + eta y x) (Def. 12), w += eta* y x
 * (Def. 13), L the 0-1 loss (Def. 11), ties to the smallest eta.  The thesis takes L over the whole
 * data set; a stream has none, so L runs over the last `window` labelled examples plus the current
 * one.  A window example's post-update score is w.x_j + eta y (x.x_j): x.x_j is computed once per
 * update and w.x_j is kept per entry (w.x_j += alpha x.x_j on every step alpha x), so no update
 * reads w at the window's features: O(window*nnz + window*|S|) per update, cache-friendly at any
 * dim.  A term of L counts when y_j s_j <= 0 (Def. 4: a point on the boundary is misclassified).
 *
 * The window keeps copies of past examples (bias feature included) in a circular pool of
 * `window_features` feature slots allocated in init: it is always the longest suffix of the stream
 * with at most `window` examples and `window_features` features, so storing an example evicts the
 * oldest until it fits, and one wider than the pool empties it.  The default pool,
 * window * min(dim, 64), holds a full window whenever dim <= 64.  update never fails.
 */
#include "lib/rule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot { uint32_t i; double v; } slot;  /* one stored feature */
/* A window example: first pool slot, feature count, label, w.x_j (kept current), x.x_j (scratch). */
typedef struct entry { uint32_t off, len; int y; double a, b; } entry;
typedef struct greedy {
    pc_wvec w;
    double etas[PC_PARAM_LIST_MAX]; /* S, in the order given */
    size_t netas;
    uint32_t window, cap;           /* cap: pool slots */
    slot *pool;                     /* circular, cap slots */
    entry *ent;                     /* circular, window entries */
    uint32_t head, count;           /* oldest entry, entries held */
    uint32_t tail, used;            /* next free slot, slots held */
    uint8_t pool_limited;           /* an example was evicted for pool space */
} greedy;
PC_RULE_W_FIRST(greedy);

enum { G_ETAS, G_WINDOW, G_FEATURES };
static const double def_etas[] = {0.5, 1, 2, 4};
static const pc_param_spec params[] = {
    [G_ETAS] = {"etas", PC_PARAM_LIST, 1, 0, 1e6, true, false, def_etas, 4,
                "the set S of learning rates the greedy step chooses from (seed 002 Def. 12)"},
    [G_WINDOW] = {"window", PC_PARAM_INT, 256, 1, 65536, false, false, NULL, 0,
                  "past labelled examples the 0-1 loss of Def. 12 (seed 002) is measured on"},
    [G_FEATURES] = {"window_features", PC_PARAM_INT, NAN, 1, 1 << 24, false, false, NULL, 0,
                    "feature slots of the window's pool; the oldest examples are evicted to "
                    "fit; default (derived) window * min(dim, 64)"},
};

static uint32_t next(uint32_t p, uint32_t n) { return p + 1 == n ? 0 : p + 1; }

static void destroy(void *state)
{
    greedy *g = state;
    free(g->pool), free(g->ent);
}

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    greedy *g = state;
    (void)err;
    g->netas = ctx->params->val[G_ETAS].n;
    memcpy(g->etas, ctx->params->val[G_ETAS].v, sizeof g->etas);
    g->window = (uint32_t)pc_param1(ctx, G_WINDOW);
    double f = pc_param1(ctx, G_FEATURES);
    g->cap = isnan(f) ? g->window * (ctx->dim < 64 ? ctx->dim : 64) : (uint32_t)f;
    g->pool = malloc((size_t)g->cap * sizeof *g->pool);
    g->ent = malloc((size_t)g->window * sizeof *g->ent);
    if (g->pool && g->ent && pc_wvec_init(&g->w, ctx, ctx->averaged) == PC_OK)
        return PC_OK;
    destroy(g); /* pc_wvec_init leaves nothing allocated when it fails */
    *g = (greedy){0};
    return PC_ENOMEM;
}

/* Appends (x, y) to the window, evicting the oldest entries to make room. */
static void push(greedy *g, const pc_svec *x, int y, double a)
{
    while (g->count > 0 && (g->count == g->window || g->used + x->n > g->cap)) {
        g->pool_limited |= g->count < g->window;
        g->used -= g->ent[g->head].len;
        g->head = next(g->head, g->window);
        g->count--;
    }
    if (x->n > g->cap) /* cannot be kept: the suffix that fits is empty */
        return (void)(g->pool_limited = 1);
    g->ent[(g->head + g->count++) % g->window] = (entry){.off = g->tail, .len = x->n, .y = y, .a = a};
    for (uint32_t k = 0; k < x->n; k++, g->tail = next(g->tail, g->cap))
        g->pool[g->tail] = (slot){x->idx[k], x->val[k]};
    g->used += x->n;
}

static bool wrong(double s, int y) { return y * s <= 0; } /* Def. 4: on the boundary is wrong */
static bool update(void *state, const pc_svec *x, int y, double s)
{
    greedy *g = state;
    bool upd = y * s <= 0; /* seed 002 Alg. 2 line 5 */
    if (upd) {
        uint32_t loss[PC_PARAM_LIST_MAX] = {0};
        /* Per entry: x.x_j, merging two sorted index lists; then every candidate. */
        for (uint32_t j = 0, e = g->head; j < g->count; j++, e = next(e, g->window)) {
            entry *en = &g->ent[e];
            uint32_t p = en->off, k = 0;
            en->b = 0;
            for (uint32_t t = 0; t < en->len; t++, p = next(p, g->cap)) {
                while (k < x->n && x->idx[k] < g->pool[p].i)
                    k++;
                if (k < x->n && x->idx[k] == g->pool[p].i)
                    en->b += x->val[k] * g->pool[p].v;
            }
            for (size_t c = 0; c < g->netas; c++)
                loss[c] += wrong(en->a + g->etas[c] * y * en->b, en->y);
        }
        size_t best = 0; /* Def. 12, the current example included; ties to the smallest eta */
        for (size_t c = 0; c < g->netas; c++) {
            loss[c] += wrong(s + g->etas[c] * y * x->norm2, y);
            if (loss[c] < loss[best] || (loss[c] == loss[best] && g->etas[c] < g->etas[best]))
                best = c;
        }
        pc_wvec_add(&g->w, g->etas[best] * y, x); /* seed 002 Def. 13 */
        for (uint32_t j = 0, e = g->head; j < g->count; j++, e = next(e, g->window))
            g->ent[e].a += g->etas[best] * y * g->ent[e].b; /* (w + eta* y x).x_j */
    }
    push(g, x, y, pc_wvec_dot(&g->w, x));
    return upd; /* only a weight change counts as an update */
}

static size_t bytes(const void *state)
{
    const greedy *g = state;
    return pc_wvec_bytes(&g->w) + (size_t)g->cap * sizeof *g->pool +
           (size_t)g->window * sizeof *g->ent;
}
static void describe(const void *state, pc_learner_info *info)
{
    const greedy *g = state;
    if (g->pool_limited)
        info->note = "window shortened: examples evicted to fit window_features";
}

static pc_status encode(const void *state, pc_writer *w)
{
    const greedy *g = state;
    pc_wvec_encode(&g->w, w);
    pc_writer_u8(w, g->pool_limited);
    pc_writer_u32(w, g->count); /* oldest first; decode lays them out from slot 0 */
    for (uint32_t j = 0, e = g->head; j < g->count; j++, e = next(e, g->window)) {
        pc_writer_u8(w, g->ent[e].y > 0);
        pc_writer_f64(w, g->ent[e].a);
        pc_writer_u32(w, g->ent[e].len);
        for (uint32_t t = 0, p = g->ent[e].off; t < g->ent[e].len; t++, p = next(p, g->cap)) {
            pc_writer_u32(w, g->pool[p].i);
            pc_writer_f64(w, g->pool[p].v);
        }
    }
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    greedy *g = state;
    if (!pc_wvec_decode(&g->w, r) || !isfinite(g->w.norm2))
        return PC_EFORMAT;
    g->pool_limited = pc_reader_u8(r);
    uint32_t count = pc_reader_u32(r);
    if (r->failed || g->pool_limited > 1 || count > g->window)
        return PC_EFORMAT;
    for (; g->count < count; g->count++) {
        uint8_t pos = pc_reader_u8(r);
        double a = pc_reader_f64(r);
        uint32_t n = pc_reader_u32(r);
        if (pos > 1 || !isfinite(a) || n == 0 || n > g->cap - g->used || !pc_reader_need(r, n, 12))
            return PC_EFORMAT;
        g->ent[g->count] = (entry){.off = g->used, .len = n, .y = pos ? 1 : -1, .a = a};
        for (uint32_t t = 0; t < n; t++, g->used++) {
            slot *sl = &g->pool[g->used];
            sl->i = pc_reader_u32(r);
            sl->v = pc_reader_f64(r);
            /* indices strictly increasing (the merge needs it), values finite, non-zero */
            if (sl->i >= g->w.dim || (t > 0 && sl->i <= sl[-1].i) || !isfinite(sl->v) || sl->v == 0)
                return PC_EFORMAT;
        }
    }
    g->tail = g->used == g->cap ? 0 : g->used;
    return r->failed ? PC_EFORMAT : PC_OK;
}

const pc_rule pc_rule_greedy = {
    .name = "greedy",
    .summary = "Greedy Perceptron: the rate in S of least 0-1 loss on a window (seed 002 ch. 3)",
    .flags = PC_RULE_ADDITIVE | PC_RULE_SORTED, .state_size = sizeof(greedy),
    PC_RULE_PARAMS(params),
    .init = init, .destroy = destroy, .score = pc_rule_w_score, .update = update,
    .primary = pc_rule_w_primary, .describe = describe, .bytes = bytes,
    .encode = encode, .decode = decode,
};
