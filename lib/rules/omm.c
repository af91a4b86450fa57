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
 * Translation invariance to the last bit (docs/algorithms.md): the state is
 * kept relative to an anchor a, an example (anchor.h): p = v+ - a and
 * q = v- - a, and every example is seen as d = x - a, formed coordinate by
 * coordinate.  Only differences enter the formulas above, so they read the
 * same with v+-, x replaced by p, q, d:
 *     w.x + b = [(p - q).d - (||p||^2 - ||q||^2)/2] / ||p - q||.
 * Kept from the origin instead, features around ||u|| = 1e7 lost the margin
 * in the cancellation of v+.x - v-.x (the mistakes changed under translation).
 *
 * Precision.  ||p||^2, ||q||^2 and p.q are running scalars, and so is
 * d2 = ||p - q||^2 = 4 gamma^2, kept by eq. 7's own value at each update
 * (||u||^2 - (u.z)^2/||z||^2, or ||u - z||^2 when beta* = 1) rather than as
 * ||p||^2 + ||q||^2 - 2 p.q: that difference loses as many digits as
 * m = ||p||^2 + ||q||^2 is larger than d2, while eq. 7's step errs by about
 * eps m beta*.  m depends on where a is, so a moves: after an update, when
 * m > 64 d2 (6 bits lost) and x is 4 times nearer both certificates than a
 * (in m), x becomes the anchor (p, q -= x - a, O(nnz)); and the four
 * scalars are recounted exactly over the entries p and q hold (the set sup)
 * after such a move, or when their estimated drift passes 1e-12 d2.  A
 * recount is allowed once the entries added since the last one reach the
 * size of sup, so it costs O(nnz) amortised.  The anchor always is an
 * example and every decision reads anchored values, so a stream and its
 * translate still make the same steps bit for bit.
 *
 * Cost O(nnz(x) + nnz(a)) amortised: p and q are wvecs (the convex step is
 * pc_wvec_scale_add); u.z, ||z||^2 and the score need only p.d, q.d and
 * ||d||^2, one merge of x with a.  beta* = 1 resets p or q to d, an O(dim)
 * zeroing (docs/algorithms.md allows this rare reset).  The origin (the zero
 * example) is a point like any other (PC_RULE_ORIGIN).
 *
 * Initialisation, Alg. 1 lines 1-13: the first example is predicted +1 (score
 * 0) and kept; then the first label y1 is predicted (score y1, i.e. w = 0,
 * b = y1) until an example of the other class arrives, which is kept too.
 * Not separable (our choice; outside the paper's assumption).  On noisy data
 * the hulls of the two classes meet and every update pulls the certificates
 * closer, until ||v+ - v-||^2 is lost in the rounding of the running scalars
 * (or below 64 eps m).  Past that point w is
 * rounding noise, and in exact arithmetic the rule would be stuck for good
 * (beta* = 0 once v+ = v-).  So the rule estimates the rounding its running
 * d2 carries, a random walk of 16 eps (||p||^2 + ||q||^2 + ||d||^2) per
 * update, and when d2 falls to that estimate it restarts from the example at
 * hand (Alg. 1 line 1: phase 1 with x as the only point) and counts the
 * restart in describe().  A restart zeroes both certificates (only the
 * entries touched since the last one: pc_wvec_track_support) and never
 * happens on separable data whose margin the doubles resolve.
 */
#include "lib/rule.h"
#include "lib/rules/anchor.h"
#include "lib/rules/idxset.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct omm {
    pc_wvec vp, vn; /* p = v+ - a and q = v- - a; wvec norm2 holds ||p||^2, ||q||^2 */
    pc_anchor an;   /* a */
    double pn;      /* p.q */
    double d2;      /* ||p - q||^2 = 4 gamma^2, by eq. 7 at each update (see the top) */
    double err2;    /* estimated squared rounding error of d2 and the vectors since the
                       last restart: a recount leaves the vectors' own as they are */
    double drift2;  /* the same since the last recount: the scalars' drift */
    uint64_t restarts, skipped; /* skipped: updates without memory for x - a */
    /* Re-anchoring (see the top of the file): sup holds every index where p or
     * q may be non-zero, work counts the entries added since the last
     * recount; sup_lost: the set could not grow, or the state came from a
     * snapshot written without it (no re-anchoring until a restart). */
    pc_idxset sup;
    bool sup_lost;
    uint64_t work, reanchors;
    char note[160]; /* describe()'s remark on restarts and skips */
    double rho;
    uint32_t dim;
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
    o->dim = ctx->dim;
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
    pc_anchor_free(&o->an);
    pc_idxset_free(&o->sup);
}

/* ||v+ - v-||^2 = 4 gamma^2 from the running scalars; 0 where it is not
 * resolved: within 64 eps (||v+||^2 + ||v-||^2) or the estimated error. */
static double dist2(const omm *o)
{
    double n2 = o->vp.norm2 + o->vn.norm2, d2 = o->d2;
    return d2 > 64 * DBL_EPSILON * n2 && d2 > sqrt(o->err2) && isfinite(d2) ? d2 : 0;
}

static void set_note(omm *o)
{
    int n = 0;
    if (o->restarts)
        n = snprintf(o->note, sizeof o->note,
                     "%llu restarts: the hulls of the points seen met (data not separable)",
                     (unsigned long long)o->restarts);
    if (o->skipped) /* both parts fit: < 160 bytes */
        snprintf(o->note + n, sizeof o->note - (size_t)n, "%s%llu updates skipped (out of memory)",
                 n ? "; " : "", (unsigned long long)o->skipped);
}

/* Alg. 1 line 1 again, from x: both certificates zeroed (O(entries touched
 * since the last restart), paid for by the adds that touched them), x kept
 * as the new anchor (so p = q = 0). */
static void restart(omm *o, const pc_svec *x, int y)
{
    pc_wvec_zero(&o->vp);
    pc_wvec_zero(&o->vn);
    pc_anchor_set(&o->an, x);
    pc_idxset_clear(&o->sup);
    o->work = 0, o->sup_lost = false;
    o->pn = o->d2 = o->err2 = o->drift2 = 0;
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

/* Before p or q receives d: d's indices where both are still 0 join sup
 * (every other one is in it already; p and q are read at those indices by
 * the add anyway, while a probe of sup would miss the cache). */
static void note_sup(omm *o, const pc_svec *d)
{
    o->work += d->n;
    for (uint32_t k = 0; k < d->n && !o->sup_lost; k++)
        if (pc_wvec_get(&o->vp, d->idx[k]) == 0 && pc_wvec_get(&o->vn, d->idx[k]) == 0)
            o->sup_lost = !pc_idxset_add(&o->sup, d->idx[k]); /* no memory: keep the anchor */
}

/* ||p||^2, ||q||^2, p.q and ||p - q||^2 summed afresh over sup: the running
 * values' error is gone. */
static void recount(omm *o)
{
    double sp = 0, sq = 0, spq = 0, su = 0;
    for (uint32_t k = 0; k < o->sup.cap; k++) {
        if (o->sup.slot[k] == PC_IDXSET_EMPTY)
            continue;
        double p = pc_wvec_get(&o->vp, o->sup.slot[k]), q = pc_wvec_get(&o->vn, o->sup.slot[k]);
        sp += p * p, sq += q * q, spq += p * q, su += (p - q) * (p - q);
    }
    o->vp.norm2 = sp, o->vn.norm2 = sq, o->pn = spq, o->d2 = su;
    o->drift2 = 0;
    o->work = 0;
}

/* x becomes the anchor: p, q <- p - d, q - d (d = x - a), then a recount. */
static void reanchor(omm *o, const pc_svec *x, const pc_svec *d)
{
    note_sup(o, d);
    pc_wvec_add(&o->vp, -1, d);
    pc_wvec_add(&o->vn, -1, d);
    pc_anchor_set(&o->an, x);
    if (!o->sup_lost)
        recount(o);
    o->reanchors++;
}

/* p.d, q.d and ||d||^2 for d = x - a: one merge (the same bits as over d) */
static void dots(const omm *o, const pc_svec *x, double *dp, double *dn, double *dd)
{
    pc_anchor_dots(&o->an, &o->vp, &o->vn, x, dp, dn, dd);
}

static double score(const void *state, const pc_svec *x)
{
    const omm *o = state;
    if (o->phase < 2) /* seed 004 Alg. 1 lines 2 and 6: predict +1, then y1 */
        return o->phase ? o->y1 : 0;
    double dp, dn, dd;
    dots(o, x, &dp, &dn, &dd);
    return normalise(raw_score(o, dp, dn), dist2(o));
}

static bool update(void *state, const pc_svec *x, int y, double s)
{
    omm *o = state;
    if (o->phase == 1 && y == o->y1)
        return false; /* predicted y1 correctly: nothing is added (Alg. 1 line 7) */
    double d2 = dist2(o);
    /* a < rho gamma (seed 004 Alg. 1 line 18), a = y s read from the score
     * given, which score() formed from the anchored values: the same bits for
     * a stream and its translate, and no second merge unless x is learnt */
    if (o->phase == 2 && !(y * s < o->rho * sqrt(d2) / 2))
        return false;
    /* room for x - a, and for x as the anchor; d = x - a, and in the same
     * pass the dots over d (the bits dots() gives: anchor.h) */
    bool room = pc_anchor_reserve(&o->an, x);
    const pc_svec *d = NULL;
    double dp = 0, dn = 0, dd = 0;
    if (room && o->phase == 2)
        d = pc_anchor_diff_dots(&o->an, x, &o->vp, &o->vn, &dp, &dn), dd = d->norm2;
    else if (room && o->phase == 1)
        d = pc_anchor_diff(&o->an, x);
    if (!room) {
        o->skipped++;
        set_note(o);
        return false;
    }
    if (o->phase == 0) { /* seed 004 Alg. 1 lines 1-4: x_1 is v_y1, the anchor: p = q = 0 */
        pc_anchor_set(&o->an, x);
        o->y1 = y;
        o->phase = 1;
        return true;
    }
    if (o->phase == 1) { /* lines 5-13: the first of the other class; the other of p, q is 0 */
        note_sup(o, d);
        pc_wvec_add(y > 0 ? &o->vp : &o->vn, 1, d);
        o->pn = 0;
        o->d2 = d->norm2; /* u = +-d */
        o->phase = 2;
        return true;
    }
    if (d2 == 0) { /* the hulls met: see the top of the file */
        restart(o, x, y);
        return true;
    }
    /* seed 004 section 5.1: eq. 7 and beta*(u, z) with u = v+ - v-, z = y (v_y - x) */
    double uz, zz;
    if (y > 0) {
        uz = o->vp.norm2 - o->pn - dp + dn;
        zz = o->vp.norm2 - 2 * dp + dd;
    } else {
        uz = dp - o->pn - dn + o->vn.norm2;
        zz = o->vn.norm2 - 2 * dn + dd;
    }
    if (!(zz > 0) || !isfinite(zz) || !isfinite(uz) || !(uz > 0))
        return false; /* x = v_y, or beta* = 0: the certificates stay */
    double beta = uz >= zz ? 1 : uz / zz; /* beta* clipped to [0, 1] */
    /* ||u'||^2 = ||u - beta z||^2: eq. 7's minimum, ||u||^2 - (u.z)^2/||z||^2, or
     * ||u - z||^2 when clipped (section 5.1) */
    o->d2 = fmax(0, beta == 1 ? o->d2 - 2 * uz + zz : o->d2 - uz * (uz / zz));
    double e = 16 * DBL_EPSILON * (o->vp.norm2 + o->vn.norm2 + dd);
    o->err2 += e * e;
    o->drift2 += e * e;
    /* p.q moves with the replaced certificate: (1-beta) p.q + beta d.(the other) */
    o->pn = (1 - beta) * o->pn + beta * (y > 0 ? dn : dp);
    note_sup(o, d);
    pc_wvec_scale_add(y > 0 ? &o->vp : &o->vn, 1 - beta, beta, d);
    /* Re-anchor at x when it is much nearer both certificates than a is and
     * a costs more than 6 bits of ||p - q||^2; else recount when the running
     * scalars' estimated drift passes 1e-12 ||p - q||^2.  At most once per
     * as many entries added since the last recount as sup holds: O(nnz)
     * amortised. */
    double pd = y > 0 ? (1 - beta) * dp + beta * dd : dp, qd = y > 0 ? dn : (1 - beta) * dn + beta * dd;
    double m = o->vp.norm2 + o->vn.norm2, mx = m - 2 * (pd + qd) + 2 * dd, d2n = dist2(o);
    bool move = m > 64 * d2n && 4 * mx < m;
    if (!o->sup_lost && o->work >= o->sup.count &&
        (move || !(sqrt(o->drift2) <= 1e-12 * d2n))) {
        if (move)
            reanchor(o, x, d);
        else
            recount(o);
    }
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
    /* b = -u.(v+ + v-)/(2 ||u||) with v+- = a + p, q: -(u.a + (||p||^2 - ||q||^2)/2)/||u|| */
    double ua = pc_anchor_dot_a(&o->an, &o->vp) - pc_anchor_dot_a(&o->an, &o->vn);
    return normalise(-(ua + (o->vp.norm2 - o->vn.norm2) / 2), dist2(o));
}

static void describe(const void *state, pc_learner_info *info)
{
    const omm *o = state;
    if (o->phase < 2) {
        info->norm = 0;
        info->note = o->restarts || o->skipped ? o->note
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
    else if (o->restarts || o->skipped)
        info->note = o->note;
}

/* The first byte is the phase, with ANCHORED set since the anchor came in;
 * without it (a snapshot from before) the state is kept from the origin: an
 * empty anchor, which is exactly what those bytes meant. */
#define ANCHORED 0x10

static pc_status encode(const void *state, pc_writer *w)
{
    const omm *o = state;
    pc_writer_u8(w, (uint8_t)(ANCHORED | o->phase));
    pc_writer_u8(w, o->y1 > 0);
    pc_writer_f64(w, o->pn);
    pc_writer_f64(w, o->err2);
    pc_writer_f64(w, o->drift2);
    pc_writer_f64(w, o->d2);
    pc_writer_u64(w, o->restarts);
    pc_writer_u64(w, o->skipped);
    pc_anchor_encode(&o->an, w);
    pc_writer_u8(w, o->sup_lost);
    pc_writer_u64(w, o->work);
    pc_writer_u64(w, o->reanchors);
    pc_idxset_encode(&o->sup, w);
    pc_wvec_encode(&o->vp, w);
    pc_wvec_encode(&o->vn, w);
    return PC_OK;
}

static pc_status decode(void *state, pc_reader *r)
{
    omm *o = state;
    uint8_t f = pc_reader_u8(r);
    o->phase = f & ~ANCHORED;
    uint8_t y1 = pc_reader_u8(r);
    o->y1 = y1 ? 1 : -1;
    o->pn = pc_reader_f64(r);
    o->err2 = pc_reader_f64(r);
    o->drift2 = f & ANCHORED ? pc_reader_f64(r) : o->err2;
    o->d2 = f & ANCHORED ? pc_reader_f64(r) : NAN; /* NAN: from the norms, below */
    o->restarts = pc_reader_u64(r);
    o->skipped = f & ANCHORED ? pc_reader_u64(r) : 0;
    set_note(o);
    if (r->failed || o->phase > 2 || y1 > 1 || !isfinite(o->pn) || !(o->err2 >= 0) ||
        !isfinite(o->err2) || !(o->drift2 >= 0) || !isfinite(o->drift2) || ((f & ANCHORED) && !pc_anchor_decode(&o->an, r, o->dim)))
        return r->nomem ? PC_ENOMEM : PC_EFORMAT;
    o->sup_lost = true; /* a state from before: its support is not known */
    if (f & ANCHORED) {
        uint8_t lost = pc_reader_u8(r);
        o->work = pc_reader_u64(r);
        o->reanchors = pc_reader_u64(r);
        if (r->failed || lost > 1 || !pc_idxset_decode(&o->sup, r, o->dim))
            return r->nomem ? PC_ENOMEM : PC_EFORMAT;
        o->sup_lost = lost;
    }
    if (!pc_wvec_decode(&o->vp, r) || !pc_wvec_decode(&o->vn, r) || !isfinite(o->vp.norm2) ||
        !isfinite(o->vn.norm2))
        return PC_EFORMAT;
    if (isnan(o->d2)) /* what the state from before read its margin from */
        o->d2 = fmax(0, o->vp.norm2 + o->vn.norm2 - 2 * o->pn);
    return isfinite(o->d2) && o->d2 >= 0 ? PC_OK : PC_EFORMAT;
}

static size_t bytes(const void *state)
{
    const omm *o = state;
    return pc_wvec_bytes(&o->vp) + pc_wvec_bytes(&o->vn) + pc_anchor_bytes(&o->an) +
           (size_t)o->sup.cap * sizeof *o->sup.slot;
}

const pc_rule pc_rule_omm = {
    .name = "omm",
    .summary = "e-OMM, efficient Online Maximum Margin; rho = 0 is ce-OMM (seed 004 Alg. 1, 5.1)",
    .state_size = sizeof(omm),
    PC_ANCHORED_RULE_OPS,
};
