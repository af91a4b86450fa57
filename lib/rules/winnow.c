/* winnow.c - Littlestone's Winnow, as seed 001 Alg. 2 writes it.
 *
 * Seed 001 sec. 4: positive weights, w starts at (1, ..., 1) (line 2), the
 * prediction is yhat = 1[w.x > theta] (line 5; theta = N, the number of
 * features), the labels are y in {0, 1} (line 6), and the update is
 * multiplicative (line 7):
 *   w_i <- w_i (1 + beta)^((y - yhat) x_i)
 * so only a mistake changes w, and only on the non-zero features of x.  The
 * rule's score is w.x - theta with a strict sign (PC_RULE_STRICT_SIGN), and
 * the model's labels -1/+1 are read as 0/1.
 *
 * Storage: w_i is kept as is, except that 0 stands for the initial 1.  Winnow
 * weights are never 0 (they start at 1 and are multiplied by positive
 * factors, and the clamp below keeps them >= W_MIN), so an empty store (a
 * calloc'd array, or an empty sparse table: wstore.h) is the all-ones start
 * without touching dim entries: no O(dim) memory for the features never seen.  ||w||^2 (which starts at dim) is a running sum moved
 * by the touched weights' squares, in double-double with an error bound
 * (ddsum.h): weights swing between 1e-100 and 1e100, and a plain running
 * v^2 - old^2 kept the rounding of every 1e200 it once held (measured 1e12
 * times the true norm after 50,000 noisy examples, tests/test_numerics.c).
 * When demotions cancel the sum down to its error bound it is recounted,
 * O(dim) time in either storage (the untouched 1s are counted in index order
 * so the rounding is the dense loop's); the state counts how often (recounts).
 *
 * Finiteness: a value x_i of 1e150 makes (1 + beta)^x_i overflow, so each
 * weight is clamped to [W_MIN, W_MAX] = [1e-100, 1e100] and the clamps are
 * counted and noted in describe(); then w.x stays finite for |x_i| up to
 * about 1e200, and beyond that the score is clamped to +-DBL_MAX.
 */
#include "lib/rule.h"
#include "lib/rules/ddsum.h"
#include "lib/wstore.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define W_MIN 1e-100
#define W_MAX 1e100
/* |log factor| beyond which the result is clamped whatever w_i is: w_i is in
 * [1e-100, 1e100] and e^460 < 1e200, so w_i * factor is always finite. */
#define T_MAX 460.0

typedef struct winnow {
    pc_wstore w;        /* dim entries, dense or sparse; 0 means the initial weight 1 */
    uint32_t dim;
    double beta, lb;    /* lb = ln(1 + beta) */
    double theta;
    pc_ddsum norm2;     /* ||w||^2, running (ddsum.h) */
    uint64_t clamps;    /* weights that hit W_MIN or W_MAX */
    uint64_t recounts;  /* O(dim) recounts of norm2 (rare) */
    uint64_t skipped;   /* updates skipped: a sparse table could not grow */
} winnow;

enum { P_BETA, P_THETA };
static const pc_param_spec params[] = {
    [P_BETA] = {"beta", PC_PARAM_REAL, 1, 0, 1e6, true, false, NULL, 0,
                "promotion rate (seed 001 Alg. 2): a mistake multiplies w_i by (1 + beta)^(+-x_i)"},
    [P_THETA] = {"theta", PC_PARAM_REAL, NAN, 0, 1e300, false, false, NULL, 0,
                 "threshold (seed 001 Alg. 2): predict +1 when w.x > theta; default derived: "
                 "the model's dimension N (the bias feature not counted)"},
};

typedef struct recount_ctx {
    winnow *p;
    uint32_t next; /* the first index not yet counted */
} recount_ctx;

static inline double wget(const winnow *p, uint32_t i)
{
    double v = pc_wstore_get(&p->w, i);
    return v != 0 ? v : 1;
}

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    winnow *p = state;
    (void)err;
    p->dim = ctx->dim;
    p->beta = pc_param1(ctx, P_BETA);
    p->lb = log1p(p->beta);
    p->theta = pc_param1(ctx, P_THETA);
    if (isnan(p->theta)) /* derived: the seed's N, the model's dimension */
        p->theta = (double)(ctx->dim - (ctx->bias && ctx->dim > 0 ? 1 : 0));
    pc_ddsum_clear(&p->norm2);
    p->norm2.hi = (double)ctx->dim; /* seed 001 Alg. 2 line 2: w = (1, ..., 1) */
    p->clamps = p->recounts = 0;
    return pc_wstore_init(&p->w, ctx->dim, ctx->storage, PC_WEIGHTS_FLOAT64, false);
}

static void destroy(void *state)
{
    winnow *p = state;
    pc_wstore_free(&p->w);
}

static double score(const void *state, const pc_svec *x)
{
    const winnow *p = state;
    double d = 0;
    pc_wstore_prefetch(&p->w, x);
    for (uint32_t k = 0; k < x->n; k++)
        d += wget(p, x->idx[k]) * x->val[k];
    if (isnan(d)) /* +Inf + -Inf: only for |x_i| beyond ~1e200 */
        d = 0;
    else if (isinf(d))
        d = d > 0 ? DBL_MAX : -DBL_MAX;
    return d - p->theta; /* seed 001 Alg. 2 line 5: 1[w.x > theta] */
}

/* Adds the squares of the initial 1s before index `to` not yet counted. */
static void add_ones(recount_ctx *c, uint32_t to)
{
    for (; c->next < to; c->next++)
        pc_dd_add_square(&c->p->norm2.hi, &c->p->norm2.lo, 1);
}

static void add_entry(void *arg, uint32_t i, double v)
{
    recount_ctx *c = arg;
    add_ones(c, i);
    pc_dd_add_square(&c->p->norm2.hi, &c->p->norm2.lo, v);
    c->next = i + 1;
}

/* ||w||^2 summed afresh over all dim weights in index order (the rounding of
 * a dense loop in either storage): O(dim), rare. */
static void recount(winnow *p)
{
    recount_ctx c = {p, 0};
    pc_ddsum_clear(&p->norm2);
    pc_wstore_visit(&p->w, add_entry, &c);
    add_ones(&c, p->dim);
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    winnow *p = state;
    int y01 = y > 0, yhat01 = s > 0; /* labels and prediction in {0, 1} */
    if (y01 == yhat01)
        return false;
    double dir = y01 - yhat01; /* +1: promote, -1: demote */
    if (!pc_wstore_reserve(&p->w, x->n)) {
        p->skipped++;
        return false;
    }
    bool changed = false;
    double oh = 0, ol = 0, nh = 0, nl = 0; /* the changed weights' squares, before and after */
    for (uint32_t k = 0; k < x->n; k++) {
        double e = dir * x->val[k], t = e * p->lb;
        double old = wget(p, x->idx[k]);
        double v = fabs(t) > T_MAX ? (t > 0 ? INFINITY : 0)
                                   : old * pow(1 + p->beta, e); /* seed 001 Alg. 2 line 7 */
        if (v > W_MAX || v < W_MIN) {
            v = v > W_MAX ? W_MAX : W_MIN;
            p->clamps++;
        }
        if (v == old)
            continue;
        pc_dd_add_square(&oh, &ol, old);
        pc_dd_add_square(&nh, &nl, v);
        *pc_wstore_ref(&p->w, x->idx[k]) = v;
        changed = true;
    }
    if (changed && !pc_ddsum_move(&p->norm2, oh, ol, nh, nl)) {
        /* demotions cancelled the sum down to its error bound: recount, O(dim), rare */
        recount(p);
        p->recounts++;
    }
    return changed;
}

static double weight(const void *state, uint32_t i)
{
    const winnow *p = state;
    return i < p->dim ? wget(p, i) : 0;
}

static size_t bytes(const void *state)
{
    return pc_wstore_bytes(&((const winnow *)state)->w);
}

static void describe(const void *state, pc_learner_info *info)
{
    const winnow *p = state;
    info->norm = sqrt(pc_ddsum_value(&p->norm2));
    if (p->skipped)
        info->note = "some updates were skipped: out of memory growing the sparse weight table";
    else if (p->clamps)
        info->note = "some weights were clamped to [1e-100, 1e100] to stay finite";
}

static pc_status encode(const void *state, pc_writer *w)
{
    const winnow *p = state;
    pc_wstore_encode(&p->w, false, w);
    pc_writer_f64(w, p->norm2.hi);
    pc_writer_f64(w, p->norm2.lo);
    pc_writer_f64(w, p->norm2.err);
    pc_writer_u64(w, p->clamps);
    pc_writer_u64(w, p->recounts);
    return PC_OK;
}

static void check_entry(void *arg, uint32_t i, double v)
{
    (void)i;
    if (!(v >= W_MIN && v <= W_MAX))
        *(bool *)arg = false;
}

static pc_status decode(void *state, pc_reader *r)
{
    winnow *p = state;
    if (!pc_wstore_decode(&p->w, false, r))
        return r->nomem ? PC_ENOMEM : PC_EFORMAT;
    p->norm2.hi = pc_reader_f64(r);
    p->norm2.lo = pc_reader_f64(r);
    p->norm2.err = pc_reader_f64(r);
    p->clamps = pc_reader_u64(r);
    p->recounts = pc_reader_u64(r);
    if (r->failed || !pc_ddsum_valid(&p->norm2))
        return PC_EFORMAT;
    bool ok = true; /* 0 (= 1) or a clamped positive weight */
    pc_wstore_visit(&p->w, check_entry, &ok);
    return ok ? PC_OK : PC_EFORMAT;
}

const pc_rule pc_rule_winnow = {
    .name = "winnow",
    .summary = "Winnow: multiplicative updates, predicts 1[w.x > theta] (seed 001 Alg. 2)",
    .flags = PC_RULE_STRICT_SIGN | PC_RULE_FLOAT64_ONLY,
    PC_RULE_PARAMS(params), .state_size = sizeof(winnow),
    .init = init, .destroy = destroy, .score = score, .update = update, .weight = weight,
    .describe = describe, .encode = encode, .decode = decode, .bytes = bytes,
};
