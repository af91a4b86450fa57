/* calib.c - online Platt scaling of a learner's scores (see calib.h). */
#include "lib/calib.h"

#include <math.h>

/* 1 / scale; a zeroed calibration (n = 0) has scale 1 */
static double inv_scale(const pc_calib *c)
{
    return c->n ? c->inv : 1;
}

static double sigmoid(double t)
{
    /* exp of a large positive argument overflows to inf: 1/(1+inf) = 0 */
    return 1 / (1 + exp(-t));
}

double pc_calib_prob(const pc_calib *c, double s)
{
    if (!isfinite(s))
        return s > 0 ? 1 : s < 0 ? 0 : 0.5;
    double t = c->a * (s * inv_scale(c)) + c->b;
    return isnan(t) ? 0.5 : sigmoid(t);
}

/* One example's step, in place (pc_calib_learn checks what it leaves). */
static void step(pc_calib *c, double s, int y)
{
    c->n++;
    /* a plain mean over the first window, then a moving one */
    double w = (double)c->n < PC_CALIB_WINDOW ? 1 / (double)c->n : 1 / PC_CALIB_WINDOW;
    c->ms += w * (s * s - c->ms);
    if (c->n <= PC_CALIB_RESCALE || c->n % PC_CALIB_RESCALE == 0) {
        double r = sqrt(c->ms);
        c->inv = r > 0 && isfinite(r) ? 1 / r : 1;
    }
    double z = s * c->inv;
    double p = sigmoid(c->a * z + c->b), t = y > 0 ? 1 : 0;
    double keep = 1 - 1 / PC_CALIB_WINDOW, v = p * (1 - p);
    c->hzz = keep * c->hzz + v * z * z;
    c->hz = keep * c->hz + v * z;
    c->h1 = keep * c->h1 + v;
    /* Newton step: (H + ridge I) d = g, g = (p - t) [z, 1] */
    double g0 = (p - t) * z, g1 = p - t;
    double A = c->hzz + PC_CALIB_RIDGE, B = c->hz, D = c->h1 + PC_CALIB_RIDGE;
    double det = A * D - B * B; /* > 0: H is positive semi-definite, the ridge makes it definite */
    if (!(det > 0))
        return;
    double id = 1 / det;
    double da = (D * g0 - B * g1) * id, db = (A * g1 - B * g0) * id;
    double na = c->a - da, nb = c->b - db;
    if (isfinite(na) && isfinite(nb)) { /* a snapshot must never hold a NaN or an infinity */
        c->a = na;
        c->b = nb;
    }
}

void pc_calib_learn(pc_calib *c, double s, int y)
{
    if (!isfinite(s * s)) /* a score near the double's range: nothing to learn from */
        return;
    /* Nor may the sums: z = s/scale squared overflows when the scale is far
     * from the scores (a damaged snapshot's, such as inv = 1e300 with a
     * slope of 1e-300, which the decoder cannot tell from a real one).  Such
     * a step is not taken at all. */
    pc_calib t = *c;
    step(&t, s, y);
    if (isfinite(t.ms) && isfinite(t.inv) && isfinite(t.hzz) && isfinite(t.hz) && isfinite(t.h1))
        *c = t;
}

void pc_calib_encode(const pc_calib *c, pc_writer *w)
{
    pc_writer_f64(w, c->a);
    pc_writer_f64(w, c->b);
    pc_writer_f64(w, c->hzz);
    pc_writer_f64(w, c->hz);
    pc_writer_f64(w, c->h1);
    pc_writer_f64(w, c->ms);
    pc_writer_f64(w, c->inv);
    pc_writer_u64(w, c->n);
}

void pc_calib_decode(pc_calib *c, pc_reader *r)
{
    c->a = pc_reader_f64(r);
    c->b = pc_reader_f64(r);
    c->hzz = pc_reader_f64(r);
    c->hz = pc_reader_f64(r);
    c->h1 = pc_reader_f64(r);
    c->ms = pc_reader_f64(r);
    c->inv = pc_reader_f64(r);
    c->n = pc_reader_u64(r);
    /* Signs no step can change (a mean of squares, sums of p(1-p) z^2 and
     * p(1-p), the inverse of a root, set from the first example on): a
     * calibration that breaks them is no state of ours, and a negative mean
     * of squares overflows the next step. */
    if (!(c->ms >= 0 && c->hzz >= 0 && c->h1 >= 0 && (c->inv > 0 || c->n == 0)))
        r->failed = true;
}
