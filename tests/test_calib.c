/* test_calib.c - the online probability calibration (lib/calib.c) on
 * synthetic streams whose true probabilities are known, then through a model:
 * reliability (mean predicted probability against the observed frequency in
 * bins) within a stated tolerance, independence from the scores' scale, and
 * a snapshot round trip that keeps every probability bit for bit. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/calib.h"

/* xorshift64*: the same stream on every machine */
static uint64_t rng_state;
static double uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * 0x1.0p-53;
}

static double sigmoid(double t) { return 1 / (1 + exp(-t)); }

/* Scores s ~ U[-3, 3] times `scale`, labels +1 with probability
 * sigmoid(2 s/scale - 0.5).  After 30000 examples the fitted curve is within
 * 0.05 of the true one everywhere on [-3, 3] (the fit follows the last ~1000
 * examples: its own sampling error is about 0.03). */
static void fits_known_curve(double scale)
{
    rng_state = 88172645463325252ull;
    pc_calib c = {0};
    ck_assert_double_eq(pc_calib_prob(&c, 1.0), 0.5); /* nothing seen: no opinion */
    for (int t = 0; t < 30000; t++) {
        double s = (uniform() * 6 - 3);
        int y = uniform() < sigmoid(2 * s - 0.5) ? 1 : -1;
        pc_calib_learn(&c, s * scale, y);
    }
    double worst = 0;
    for (double s = -3; s <= 3; s += 0.25) {
        double d = fabs(pc_calib_prob(&c, s * scale) - sigmoid(2 * s - 0.5));
        worst = d > worst ? d : worst;
    }
    ck_assert_msg(worst < 0.05, "scale %g: worst error %g", scale, worst);
}

START_TEST(platt_fit_follows_the_true_curve)
{
    fits_known_curve(1);
    fits_known_curve(1e-4); /* normalized rules' small margins */
    fits_known_curve(1e4);  /* a perceptron's growing margins */
}
END_TEST

START_TEST(forgets_an_old_relation)
{
    /* the relation flips after 20000 examples: the window is 1000 */
    rng_state = 7;
    pc_calib c = {0};
    for (int t = 0; t < 25000; t++) {
        double s = uniform() * 6 - 3;
        double truth = t < 20000 ? sigmoid(2 * s) : sigmoid(-s);
        pc_calib_learn(&c, s, uniform() < truth ? 1 : -1);
    }
    ck_assert_msg(fabs(pc_calib_prob(&c, 2) - sigmoid(-2)) < 0.05, "%g", pc_calib_prob(&c, 2));
}
END_TEST

START_TEST(degenerate_scores_stay_finite)
{
    pc_calib c = {0};
    for (int t = 0; t < 5000; t++) /* separable: every positive score is +1 */
        pc_calib_learn(&c, t % 2 ? 1.0 : -1.0, t % 2 ? 1 : -1);
    ck_assert(pc_calib_prob(&c, 1) > 0.99 && pc_calib_prob(&c, -1) < 0.01);
    pc_calib z = {0};
    for (int t = 0; t < 100; t++) /* only zeros, only one label */
        pc_calib_learn(&z, 0, 1);
    pc_calib_learn(&z, NAN, -1); /* ignored */
    ck_assert(isfinite(z.a) && isfinite(z.b) && pc_calib_prob(&z, 0) > 0.9);
    ck_assert_double_eq(pc_calib_prob(&z, INFINITY), 1);

    /* scores that grow without bound up to the double's range, with labels
     * that do not follow them: a and b stay finite and sane, so a snapshot
     * stays loadable (it refuses NaN and infinities).  Before the scores
     * beyond sqrt(DBL_MAX) were skipped, a reached -3.7e306 here. */
    pc_calib g = {0};
    double s = 1;
    rng_state = 5;
    for (int t = 0; t < 20000; t++) {
        s *= 1.05;
        pc_calib_learn(&g, uniform() < 0.5 ? s : -s, uniform() < 0.5 ? 1 : -1);
    }
    ck_assert_msg(isfinite(g.a) && isfinite(g.b) && isfinite(g.inv), "a %g b %g", g.a, g.b);
    ck_assert_msg(fabs(g.a) < 1e6, "a %g", g.a);
    ck_assert(pc_calib_prob(&g, 1e300) >= 0 && pc_calib_prob(&g, -1e300) <= 1);

    /* a state the decoder takes (every value finite, every sign right) but
     * whose scale is far from the scores (a damaged snapshot; fuzzed, an mcp
     * model's): z = s/scale squared overflows.  The step is not taken
     * (before, hzz became infinite: a snapshot that does not load), and
     * the state stays as it was. */
    pc_calib j = {.a = 1e-300, .inv = 1e300, .ms = 1, .n = 40};
    pc_calib before = j;
    pc_calib_learn(&j, 1, 1);
    ck_assert_msg(isfinite(j.hzz) && isfinite(j.hz) && isfinite(j.h1) && isfinite(j.ms),
                  "hzz %g hz %g h1 %g ms %g", j.hzz, j.hz, j.h1, j.ms);
    ck_assert(memcmp(&j, &before, sizeof j) == 0);
}
END_TEST

/* The decoder refuses a calibration whose signs no step could leave, and
 * takes one that learned. */
static bool calib_loads(const pc_calib *c)
{
    pc_writer w = {0};
    pc_calib_encode(c, &w);
    ck_assert(!w.failed);
    pc_reader r = {.p = w.buf, .left = w.len};
    pc_calib back;
    pc_calib_decode(&back, &r);
    bool ok = !r.failed && !r.nonfinite && memcmp(&back, c, sizeof back) == 0;
    free(w.buf);
    return ok;
}

START_TEST(decode_refuses_what_no_step_leaves)
{
    pc_calib c = {0}; /* a new model's (calibrate: false keeps it so) */
    ck_assert(calib_loads(&c));
    rng_state = 9;
    for (int t = 0; t < 3000; t++) {
        double s = 3 * (2 * uniform() - 1);
        pc_calib_learn(&c, s, uniform() < 1 / (1 + exp(-s)) ? 1 : -1);
        if (t < 40 || t % 97 == 0)
            ck_assert_msg(calib_loads(&c), "after %d examples", t + 1);
    }
    pc_calib bad = c;
    bad.ms = -1;
    ck_assert(!calib_loads(&bad));
    bad = c, bad.hzz = -1e-300;
    ck_assert(!calib_loads(&bad));
    bad = c, bad.h1 = -2;
    ck_assert(!calib_loads(&bad));
    bad = c, bad.inv = 0;
    ck_assert(!calib_loads(&bad));
    bad = c, bad.hz = -5; /* hz has either sign */
    ck_assert(calib_loads(&bad));
}
END_TEST

/* A binary averaged perceptron on one feature x ~ U[-3, 3] whose label is +1
 * with probability sigmoid(2x - 0.5): the progressive probabilities are
 * reliable: in each of 10 bins of predicted probability holding at least 300
 * of the last 40000 examples, the observed frequency of +1 is within 0.04 of
 * the mean prediction (0.018 at worst measured, the bins' sampling error
 * being about 0.013).  A plain perceptron, whose boundary jumps at every
 * update on this noisy stream, measured up to 0.04 in the middle bins. */
START_TEST(model_probabilities_are_reliable_and_persist)
{
    rng_state = 12345;
    pc_model_config cfg;
    pc_model_config_default(&cfg, 4);
    cfg.averaged = true; /* the usual choice on noisy data: a boundary that settles */
    pc_model *m;
    pc_error err;
    ck_assert_int_eq(pc_model_new(&cfg, &m, &err), PC_OK);
    pc_svec x;
    pc_svec_init(&x);
    double sum_p[10] = {0};
    uint64_t n[10] = {0}, pos[10] = {0};
    for (int t = 0; t < 60000; t++) {
        double v = uniform() * 6 - 3;
        int y = uniform() < sigmoid(2 * v - 0.5) ? 1 : -1;
        pc_svec_clear(&x);
        pc_svec_push(&x, 0, v);
        ck_assert_int_eq(pc_svec_normalize(&x, 4, &err), PC_OK);
        pc_prediction p;
        pc_model_predict(m, &x, &p, NULL);
        double prob = pc_model_probability(m, 0, p.score);
        if (t >= 20000) {
            int b = prob >= 1 ? 9 : (int)(prob * 10);
            sum_p[b] += prob;
            n[b]++;
            pos[b] += y > 0;
        }
        pc_outcome o;
        ck_assert_int_eq(pc_model_label(m, &x, &(pc_label){.y = y}, &o, &err), PC_OK);
        ck_assert(o.pred.score == p.score);
    }
    int bins = 0;
    for (int b = 0; b < 10; b++) {
        if (n[b] < 300)
            continue;
        bins++;
        double mean = sum_p[b] / (double)n[b], freq = (double)pos[b] / (double)n[b];
        ck_assert_msg(fabs(mean - freq) < 0.04, "bin %d: predicted %.3f, observed %.3f (%llu)", b,
                      mean, freq, (unsigned long long)n[b]);
    }
    ck_assert_int_ge(bins, 6);

    /* a snapshot keeps the calibration: the same probabilities after decode */
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(pc_model_encode(m, &buf, &len, &err), PC_OK);
    pc_model *back;
    ck_assert_int_eq(pc_model_decode(buf, len, &back, &err), PC_OK);
    for (double s = -5; s <= 5; s += 0.5)
        ck_assert(pc_model_probability(back, 0, s) == pc_model_probability(m, 0, s));
    /* reset forgets it */
    ck_assert_int_eq(pc_model_reset(back, &err), PC_OK);
    ck_assert_double_eq(pc_model_probability(back, 0, 3), 0.5);
    free(buf);
    pc_model_free(back);
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

/* Three classes with known class probabilities: the normalized one-vs-rest
 * probabilities add to 1 and the true class's mean probability tracks its
 * frequency. */
START_TEST(multiclass_probabilities_sum_to_one)
{
    rng_state = 99;
    pc_model_config c;
    pc_model_config_default(&c, 4);
    c.multiclass = true;
    c.open_classes = true;
    pc_model *m;
    pc_error err;
    ck_assert_int_eq(pc_model_new(&c, &m, &err), PC_OK);
    static const char *const cls[] = {"a", "b", "c"};
    pc_svec x;
    pc_svec_init(&x);
    double scores[3], probs[3], loss = 0;
    int counted = 0;
    for (int t = 0; t < 20000; t++) {
        int k = (int)(uniform() * 3);
        int shown = uniform() < 0.8 ? k : (k + 1) % 3; /* the feature names the class 80% */
        pc_svec_clear(&x);
        pc_svec_push(&x, (uint32_t)shown, 1);
        ck_assert_int_eq(pc_svec_normalize(&x, 4, &err), PC_OK);
        if (pc_model_class_count(m) == 3) {
            pc_prediction p;
            pc_model_predict(m, &x, &p, scores);
            pc_model_probabilities(m, scores, probs);
            ck_assert(fabs(probs[0] + probs[1] + probs[2] - 1) < 1e-12);
            if (t >= 10000) {
                loss -= log(probs[pc_model_class_find(m, cls[k], 1)]);
                counted++;
            }
        }
        pc_label l = {.cls = cls[k], .cls_len = 1};
        ck_assert_int_eq(pc_model_label(m, &x, &l, NULL, &err), PC_OK);
    }
    /* the best possible log loss here is the entropy of (0.8, 0.2), 0.500; no
     * information (1/3 each) gives log 3 = 1.099.  The one-vs-rest perceptron
     * keeps moving on this noisy stream and normalized one-vs-rest sigmoids
     * are not a joint fit: 0.68 measured, 0.75 asserted. */
    loss /= counted;
    ck_assert_msg(loss < 0.75, "log loss %g", loss);
    pc_svec_free(&x);
    pc_model_free(m);
}
END_TEST

/* calibrate: false skips only the calibration: on the same stream (binary and
 * multiclass, plain and averaged) a model without it scores, errs and updates
 * exactly as the calibrated one, keeps an empty calibration (0.5), and its
 * snapshot keeps the flag: decoded, it says calibrate false and re-encodes to
 * the same bytes; the calibrated model's snapshot says true. */
/* Where codec.c's version 4 puts the weights byte: after "PCMODEL", the
 * version, the rule's name, its parameters, dim and the flags. */
static size_t weights_byte_at(const pc_model_config *c)
{
    size_t at = 7 + 1 + 4 + strlen(pc_rule_name(c->rule));
    for (size_t i = 0; i < pc_rule_param_count(c->rule); i++)
        at += 4 + 8 * c->params.val[i].n;
    return at + 4 + 1;
}

START_TEST(calibrate_false_learns_the_same)
{
    for (int v = 0; v < 4; v++) {
        bool mc = v & 1, avg = v & 2;
        rng_state = 7 + (uint64_t)v;
        pc_model_config c;
        pc_model_config_default(&c, 8);
        ck_assert(c.calibrate); /* the default */
        c.averaged = avg;
        c.multiclass = c.open_classes = mc;
        pc_model *on, *off;
        pc_error err;
        ck_assert_int_eq(pc_model_new(&c, &on, &err), PC_OK);
        c.calibrate = false;
        ck_assert_int_eq(pc_model_new(&c, &off, &err), PC_OK);
        ck_assert(!pc_model_config_of(off)->calibrate && pc_model_config_of(on)->calibrate);
        static const char *const cls[] = {"a", "b", "c"};
        pc_svec x;
        pc_svec_init(&x);
        double s_on[3], s_off[3];
        for (int t = 0; t < 3000; t++) {
            int k = (int)(uniform() * 3), y = uniform() < 0.3 ? -1 : 1;
            pc_svec_clear(&x);
            pc_svec_push(&x, (uint32_t)k, 1 + uniform());
            pc_svec_push(&x, 3 + (uint32_t)(uniform() * 4), uniform() - 0.5);
            ck_assert_int_eq(pc_svec_normalize(&x, 8, &err), PC_OK);
            pc_label l = mc ? (pc_label){.cls = cls[k], .cls_len = 1} : (pc_label){.y = y};
            pc_outcome a, b;
            ck_assert_int_eq(pc_model_label(on, &x, &l, &a, &err), PC_OK);
            ck_assert_int_eq(pc_model_label(off, &x, &l, &b, &err), PC_OK);
            ck_assert(a.pred.score == b.pred.score && a.pred.y == b.pred.y &&
                      a.pred.cls == b.pred.cls && a.mistake == b.mistake &&
                      a.updated == b.updated);
            pc_prediction pa, pb;
            pc_model_predict(on, &x, &pa, mc ? s_on : NULL);
            pc_model_predict(off, &x, &pb, mc ? s_off : NULL);
            ck_assert(pa.score == pb.score);
            for (size_t i = 0; mc && i < pc_model_class_count(on); i++)
                ck_assert(s_on[i] == s_off[i]);
        }
        pc_stats so, sf;
        pc_model_stats(on, &so);
        pc_model_stats(off, &sf);
        ck_assert(so.examples == sf.examples && so.mistakes == sf.mistakes &&
                  so.updates == sf.updates && sf.updates > 0);
        /* the calibrated one learned; the other still answers an empty calibration */
        ck_assert(pc_model_probability(on, 0, 2) != 0.5);
        ck_assert_double_eq(pc_model_probability(off, 0, 2), 0.5);

        uint8_t *buf, *buf2, *bon;
        size_t len, len2, lon;
        pc_model *back, *back_on;
        ck_assert_int_eq(pc_model_encode(off, &buf, &len, &err), PC_OK);
        ck_assert_int_eq(pc_model_decode(buf, len, &back, &err), PC_OK);
        ck_assert(!pc_model_config_of(back)->calibrate);
        ck_assert_int_eq(pc_model_encode(back, &buf2, &len2, &err), PC_OK);
        ck_assert(len == len2 && memcmp(buf, buf2, len) == 0);
        ck_assert_int_eq(pc_model_encode(on, &bon, &lon, &err), PC_OK);
        ck_assert_int_eq(pc_model_decode(bon, lon, &back_on, &err), PC_OK);
        ck_assert(pc_model_config_of(back_on)->calibrate);
        ck_assert(lon == len); /* the same layout: only the flag and the calibration differ */
        if (!mc) { /* a version 2 snapshot (no calibration, no flag) means calibrate: true */
            ck_assert(bon[7] == 4);
            bon[7] = 2;
            /* version 4's weights byte (after the flags) out too */
            size_t at = weights_byte_at(pc_model_config_of(on));
            ck_assert(bon[at] == PC_WEIGHTS_FLOAT64);
            memmove(bon + at, bon + at + 1, lon - at - 1);
            pc_model *old;
            ck_assert_int_eq(pc_model_decode(bon, lon - 1 - 64, &old, &err), PC_OK); /* 8 x 8 bytes */
            ck_assert(pc_model_config_of(old)->calibrate);
            ck_assert_double_eq(pc_model_probability(old, 0, 2), 0.5);
            pc_model_free(old);
        }
        free(buf);
        free(buf2);
        free(bon);
        pc_model_free(back);
        pc_model_free(back_on);
        pc_svec_free(&x);
        pc_model_free(on);
        pc_model_free(off);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calib");
    TU_TCASE(s, "calib", 0, platt_fit_follows_the_true_curve, forgets_an_old_relation,
        degenerate_scores_stay_finite, decode_refuses_what_no_step_leaves,
        model_probabilities_are_reliable_and_persist, multiclass_probabilities_sum_to_one,
        calibrate_false_learns_the_same);
    return tu_run(s);
}
