/* omm.c - e-OMM, the efficient Online Maximum Margin (ce-OMM when rho = 0).
 *
 * Seed 004, Alg. 1 (efficient implementation) with the l2 closed form of
 * section 5.1.  The state is two dual certificates v+ and v- (points of the
 * convex hulls of the positive and negative points seen).  The classifier is
 * the maximum-margin separator of {v+} and {v-} (Lemma 3.1):
 *     gamma = ||v+ - v-|| / 2,  w = (v+ - v-) / (2 gamma),  b = -w.(v+ + v-) / 2.
 * On a < rho gamma (line 18) the same-class certificate is replaced by the
 * nearest point of the segment [v_y, x] to the other certificate (line 23):
 *     v_y <- (1 - beta*) v_y + beta* x,  beta* = clip(u.z / ||z||^2, 0, 1)
 * with u = v+ - v-, z = y (v_y - x) (section 5.1, eq. 7).  Because only
 * differences of points enter, the rule is translation invariant (Remark 3.4)
 * and has its own bias.
 *
 * Cost O(nnz): v+ and v- are wvecs (the convex step is pc_wvec_scale_add) and
 * ||v+||^2, ||v-||^2 (kept by the wvecs) and v+.v- are running scalars, so
 * u.z, ||z||^2 and the score need only v+.x and v-.x.  beta* = 1 resets v_y to
 * x, an O(dim) zeroing (docs/algorithms.md allows this rare reset).
 *
 * Initialisation, Alg. 1 lines 1-13: the first example is predicted +1 (score
 * 0) and kept; then the first label y1 is predicted (score y1, i.e. w = 0,
 * b = y1) until an example of the other class arrives, which is kept too.
 * Not separable (our choice; outside the paper's assumption).  On noisy data
 * the hulls of the two classes meet and every update pulls the certificates
 * closer, until ||v+ - v-||^2 is lost in the rounding of the running scalars
 * it is computed from (||v+||^2 + ||v-||^2 - 2 v+.v-: the cancellation costs
 * as many digits as ||v+||^2 / ||v+ - v-||^2 has).  Past that point w is
 * rounding noise, and in exact arithmetic the rule would be stuck for good
 * (beta* = 0 once v+ = v-).  So the rule estimates the rounding its running
 * d2 carries, a random walk of 16 eps (||v+||^2 + ||v-||^2 + ||x||^2) per
 * update, and when d2 falls to that estimate it restarts from the example at
 * hand (Alg. 1 line 1: phase 1 with x as the only point) and counts the
 * restart in describe().  A restart zeroes both certificates (only the
 * entries touched since the last one: pc_wvec_track_support) and never
 * happens on separable data whose margin the doubles resolve.
 */
#include "lib/rule.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

typedef struct omm {
    pc_wvec vp, vn; /* v+ and v-; wvec norm2 holds ||v+||^2, ||v-||^2 */
    double pn;      /* v+.v- */
    double err2;    /* estimated squared rounding error of the running d2 */
    uint64_t restarts;
    char note[96];  /* describe()'s remark on restarts */
    double rho;
    int phase;      /* 0: nothing seen, 1: only class y1 seen, 2: running */
    int y1;
} omm;

enum { P_RHO };
static const pc_param_spec params[] = {
    [P_RHO] = {"rho", PC_PARAM_REAL, 1, 0, 1, false, false, NULL, 0,
               "aggressiveness (seed 004 Alg. 1, Remark 3.3): update when y(w.x+b) < rho*gamma; "
               "0 is ce-OMM (mistakes only), 1 updates whenever the margin can improve"},
};

static pc_status init(void *state, const pc_rule_ctx *ctx, pc_error *err)
{
    omm *o = state;
    (void)err;
    o->rho = pc_param1(ctx, P_RHO);
    pc_status st = pc_wvec_init(&o->vp, ctx, false);
    if (st == PC_OK && (st = pc_wvec_init(&o->vn, ctx, false)) != PC_OK)
        pc_wvec_free(&o->vp);
    if (st == PC_OK) { /* restarts clear what was touched, not all dim */
        pc_wvec_track_support(&o->vp);
        pc_wvec_track_support(&o->vn);
    }
    return st;
}

static void destroy(void *state)
{
    omm *o = state;
    pc_wvec_free(&o->vp);
    pc_wvec_free(&o->vn);
}

/* ||v+ - v-||^2 = 4 gamma^2 from the running scalars; 0 where it is not
 * resolved: within 64 eps (||v+||^2 + ||v-||^2) or the estimated error. */
static double dist2(const omm *o)
{
    double n2 = o->vp.norm2 + o->vn.norm2, d2 = n2 - 2 * o->pn;
    return d2 > 64 * DBL_EPSILON * n2 && d2 > sqrt(o->err2) && isfinite(d2) ? d2 : 0;
}

static void set_note(omm *o)
{
    snprintf(o->note, sizeof o->note,
             "%llu restarts: the hulls of the points seen met (data not separable)",
             (unsigned long long)o->restarts);
}

/* Alg. 1 line 1 again, from x: both certificates zeroed (O(entries touched
 * since the last restart), paid for by the adds that touched them), x kept. */
static void restart(omm *o, const pc_svec *x, int y)
{
    pc_wvec_zero(&o->vp);
    pc_wvec_zero(&o->vn);
    pc_wvec_add(y > 0 ? &o->vp : &o->vn, 1, x);
    o->pn = o->err2 = 0;
    o->y1 = y;
    o->phase = 1;
    o->restarts++;
    set_note(o);
}

/* seed 004 Lemma 3.1: w.x + b = [(v+ - v-).x - (||v+||^2 - ||v-||^2)/2] / ||v+ - v-||. */
static double normalise(double raw, double d2)
{
    double s = d2 > 0 ? raw / sqrt(d2) : raw;
    return isfinite(s) ? s : copysign(DBL_MAX, raw);
}

static double raw_score(const omm *o, double dp, double dn)
{
    return dp - dn - (o->vp.norm2 - o->vn.norm2) / 2;
}

static double score(const void *state, const pc_svec *x)
{
    const omm *o = state;
    if (o->phase < 2) /* seed 004 Alg. 1 lines 2 and 6: predict +1, then y1 */
        return o->phase ? o->y1 : 0;
    return normalise(raw_score(o, pc_wvec_dot(&o->vp, x), pc_wvec_dot(&o->vn, x)), dist2(o));
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    omm *o = state;
    (void)s; /* recomputed unnormalised below, so gamma = 0 never divides */
    if (o->phase < 2) { /* seed 004 Alg. 1 lines 1-13: x_1, then the first mistake */
        if (o->phase == 1 && y == o->y1)
            return false; /* predicted y1 correctly: nothing is added (line 7) */
        pc_wvec_add(y > 0 ? &o->vp : &o->vn, 1, x);
        o->pn = o->phase ? pc_wvec_dot(y > 0 ? &o->vn : &o->vp, x) : 0;
        o->y1 = o->phase ? o->y1 : y;
        o->phase++;
        return true;
    }
    double dp = pc_wvec_dot(&o->vp, x), dn = pc_wvec_dot(&o->vn, x);
    double d2 = dist2(o);
    /* a < rho gamma  <=>  y raw / ||u|| < rho ||u|| / 2  (seed 004 Alg. 1 line 18) */
    if (!(y * raw_score(o, dp, dn) < o->rho * d2 / 2))
        return false;
    if (d2 == 0) { /* the hulls met: see the top of the file */
        restart(o, x, y);
        return true;
    }
    /* seed 004 section 5.1: eq. 7 and beta*(u, z) with u = v+ - v-, z = y (v_y - x) */
    double uz, zz;
    if (y > 0) {
        uz = o->vp.norm2 - o->pn - dp + dn;
        zz = o->vp.norm2 - 2 * dp + x->norm2;
    } else {
        uz = dp - o->pn - dn + o->vn.norm2;
        zz = o->vn.norm2 - 2 * dn + x->norm2;
    }
    if (!(zz > 0) || !isfinite(zz) || !isfinite(uz) || !(uz > 0))
        return false; /* x = v_y, or beta* = 0: the certificates stay */
    double beta = uz >= zz ? 1 : uz / zz; /* beta* clipped to [0, 1] */
    double e = 16 * DBL_EPSILON * (o->vp.norm2 + o->vn.norm2 + x->norm2);
    o->err2 += e * e;
    /* v+.v- moves with the replaced certificate: (1-beta) v+.v- + beta x.v_other */
    o->pn = (1 - beta) * o->pn + beta * (y > 0 ? dn : dp);
    pc_wvec_scale_add(y > 0 ? &o->vp : &o->vn, 1 - beta, beta, x);
    return true;
}

static double weight(const void *state, uint32_t i)
{
    const omm *o = state;
    if (o->phase < 2)
        return 0;
    return normalise(pc_wvec_get(&o->vp, i) - pc_wvec_get(&o->vn, i), dist2(o));
}

static double bias(const void *state)
{
    const omm *o = state;
    if (o->phase < 2)
        return o->phase ? o->y1 : 0;
    return normalise(-(o->vp.norm2 - o->vn.norm2) / 2, dist2(o));
}

static void describe(const void *state, pc_learner_info *info)
{
    const omm *o = state;
    if (o->phase < 2) {
        info->norm = 0;
        info->note = o->restarts ? o->note
                                 : "initialisation (seed 004 Alg. 1): predicting the first label "
                                   "until both classes are seen";
        return;
    }
    double d2 = dist2(o);
    info->norm = d2 > 0 ? 1 : 0; /* w = u/||u|| */
    info->margin = sqrt(d2) / 2; /* gamma_t */
    if (d2 == 0)
        info->note = "the certificates coincide: the data seen are not separable (gamma = 0); "
                     "the next update restarts";
    else if (o->restarts)
        info->note = o->note;
}

static pc_status encode(const void *state, pc_writer *w)
{
    const omm *o = state;
    pc_writer_u8(w, (uint8_t)o->phase);
    pc_writer_u8(w, o->y1 > 0);
    pc_writer_f64(w, o->pn);
    pc_writer_f64(w, o->err2);
    pc_writer_u64(w, o->restarts);
    pc_wvec_encode(&o->vp, w);
    pc_wvec_encode(&o->vn, w);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    omm *o = state;
    o->phase = pc_reader_u8(r);
    uint8_t y1 = pc_reader_u8(r);
    o->y1 = y1 ? 1 : -1;
    o->pn = pc_reader_f64(r);
    o->err2 = pc_reader_f64(r);
    o->restarts = pc_reader_u64(r);
    set_note(o);
    if (r->failed || o->phase > 2 || y1 > 1 || !isfinite(o->pn) || !(o->err2 >= 0) ||
        !isfinite(o->err2) || !pc_wvec_decode(&o->vp, r) ||
        !pc_wvec_decode(&o->vn, r) || !isfinite(o->vp.norm2) || !isfinite(o->vn.norm2))
        return PC_EFORMAT;
    return PC_OK;
}

static size_t bytes(const void *state)
{
    const omm *o = state;
    return pc_wvec_bytes(&o->vp) + pc_wvec_bytes(&o->vn);
}

const pc_rule pc_rule_omm = {
    .name = "omm",
    .summary = "e-OMM, efficient Online Maximum Margin; rho = 0 is ce-OMM (seed 004 Alg. 1, 5.1)",
    .flags = PC_RULE_OWN_BIAS,
    .params = params,
    .nparams = sizeof params / sizeof *params,
    .state_size = sizeof(omm),
    .init = init,
    .destroy = destroy,
    .score = score,
    .update = update,
    .weight = weight,
    .bias = bias,
    .describe = describe,
    .encode = encode,
    .decode = decode,
    .bytes = bytes,
};
