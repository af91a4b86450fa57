/* ddsum.h - a running sum of squares that stays accurate, for rules that keep
 * ||w||^2 from the entries they touch (O(nnz)) instead of recounting (O(dim)).
 *
 * Why.  A running ||w||^2 kept in plain double by algebra (norm2 += new^2 -
 * old^2, or += 2a w.x + a^2||x||^2) carries a rounding error of about 2^-53
 * of the largest value it ever held.  When entries that were large shrink
 * again (Winnow demoting a weight it had promoted to 1e100; a step that nearly
 * cancels w), that error is left behind and can exceed the sum itself:
 * tests/test_numerics.c measured Winnow's running norm 1e12 times the stored
 * weights' norm after 50,000 noisy examples.
 *
 * How.  The sum is a double-double (hi + lo) moved by the touched entries'
 * squares, each formed exactly (Dekker), so one update errs by at most
 * ~2^-104 of the values involved; `err` bounds the accumulated error.  While
 * err <= 2^-50 hi the sum is as good as a dense recount; past that (the
 * entries cancelled down to the carried error) the owner recounts over every
 * entry, O(dim): rare, only after a large entry has shrunk by ~2^25.
 * Static inline: shared by mcf.h (the seed 000 rules) and winnow.c.
 */
#ifndef PC_RULES_DDSUM_H
#define PC_RULES_DDSUM_H

#include <math.h>
#include <stdbool.h>

typedef struct pc_ddsum {
    double hi, lo; /* the sum, double-double */
    double err;    /* bound on |(hi + lo) - the true sum| */
} pc_ddsum;

/* s + e = a + b exactly (Knuth's TwoSum). */
static inline void pc_dd_two_sum(double a, double b, double *s, double *e)
{
    double t = a + b, bb = t - a;
    *s = t;
    *e = (a - (t - bb)) + (b - bb);
}

/* p + e = v^2 exactly (Dekker's product, no fma needed; |v| < 1e290). */
static inline void pc_dd_square(double v, double *p, double *e)
{
    double t = 134217729.0 * v, hi = t - (t - v), lo = v - hi;
    *p = v * v;
    *e = ((hi * hi - *p) + 2 * hi * lo) + lo * lo;
}

/* (hi, lo) += p + e in double-double. */
static inline void pc_dd_add(double *hi, double *lo, double p, double e)
{
    double s, err;
    pc_dd_two_sum(*hi, p, &s, &err);
    err += *lo + e;
    *hi = s + err;
    *lo = err - (*hi - s);
}

/* (hi, lo) += v^2. */
static inline void pc_dd_add_square(double *hi, double *lo, double v)
{
    double p, e;
    pc_dd_square(v, &p, &e);
    pc_dd_add(hi, lo, p, e);
}

static inline void pc_ddsum_clear(pc_ddsum *s)
{
    s->hi = s->lo = s->err = 0;
}

/* The sum moves from old (oh + ol, the touched entries' squares before) to
 * new (nh + nl, after).  Returns false when the bound passed 2^-50 of the sum:
 * the caller must recount (and clear, then re-add every entry). */
static inline bool pc_ddsum_move(pc_ddsum *s, double oh, double ol, double nh, double nl)
{
    pc_dd_add(&s->hi, &s->lo, nh, nl);
    pc_dd_add(&s->hi, &s->lo, -oh, -ol);
    s->err += 0x1p-100 * (fabs(s->hi) + oh + nh);
    return s->err <= 0x1p-50 * s->hi;
}

static inline double pc_ddsum_value(const pc_ddsum *s)
{
    double r = s->hi + s->lo;
    return r > 0 ? r : 0;
}

/* A decoded sum is usable: finite, non-negative, with a finite bound. */
static inline bool pc_ddsum_valid(const pc_ddsum *s)
{
    return s->hi >= 0 && isfinite(s->hi) && isfinite(s->lo) && s->err >= 0 && isfinite(s->err);
}

#endif
