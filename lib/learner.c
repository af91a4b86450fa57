/* learner.c - wraps one rule instance: state allocation, averaging, counts,
 * and the defaults for the operations a rule leaves NULL (rule.h).
 *
 * Averaging lives here rather than in each rule: an additive rule exposes its
 * weight vector (primary) and the learner keeps that vector's example counter
 * (tick) so pc_wvec_add can accumulate the lazy average.  The same vector
 * gives the default weight, norm, encoding and freeing. */
#include "lib/learner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double pc_rule_w_score(const void *state, const pc_svec *x)
{
    return pc_wvec_dot(state, x);
}

pc_wvec *pc_rule_w_primary(void *state)
{
    return state;
}

static pc_wvec *primary_of(const pc_rule *r, void *state)
{
    return r->primary ? r->primary(state) : NULL;
}

/* Frees what the rule allocated, the primary vector last (destroy may still
 * read it), and the state block. */
static void free_state(const pc_rule *r, void *state)
{
    if (r->destroy)
        r->destroy(state);
    pc_wvec_free(primary_of(r, state));
    free(state);
}

pc_status pc_learner_init(pc_learner *l, const pc_rule *r, const pc_rule_ctx *ctx, pc_error *err)
{
    l->rule = r;
    l->updates = 0;
    l->averaged = ctx->averaged;
    l->state = calloc(1, r->state_size ? r->state_size : 1);
    if (!l->state) {
        snprintf(err->msg, sizeof err->msg, "out of memory creating a %s learner", r->name);
        return PC_ENOMEM;
    }
    err->msg[0] = 0;
    pc_status st = r->init(l->state, ctx, err);
    if (st != PC_OK && !err->msg[0]) /* the rules' init fail only for memory, saying nothing */
        snprintf(err->msg, sizeof err->msg, "out of memory for the weights of a %s learner of "
                 "dimension %u", r->name, ctx->dim);
    if (st != PC_OK) {
        free(l->state); /* init left nothing allocated */
        l->state = NULL;
    }
    return st;
}

void pc_learner_destroy(pc_learner *l)
{
    if (!l || !l->state)
        return;
    free_state(l->rule, l->state);
    l->state = NULL;
}

double pc_learner_score(const pc_learner *l, const pc_svec *x)
{
    return l->rule->score(l->state, x);
}

double pc_learner_predict_score(const pc_learner *l, const pc_svec *x)
{
    if (l->averaged) {
        pc_wvec *w = l->rule->primary(l->state);
        return pc_wvec_dot_avg(w, x);
    }
    return l->rule->score(l->state, x);
}

int pc_learner_sign(const pc_learner *l, double s)
{
    if (l->rule->flags & PC_RULE_STRICT_SIGN)
        return s > 0 ? 1 : -1;
    return s >= 0 ? 1 : -1;
}

bool pc_learner_update(pc_learner *l, const pc_svec *x, int y, double s)
{
    bool changed = false;
    /* For a homogeneous rule a zero-norm example cannot move w (and would
     * divide by zero in the normalising ones): it is skipped.  For a rule with
     * PC_RULE_ORIGIN it is the origin, a point like any other. */
    if (x->n > 0 || (l->rule->flags & PC_RULE_ORIGIN))
        changed = l->rule->update(l->state, x, y, s);
    l->updates += changed;
    if (l->averaged)
        l->rule->primary(l->state)->tick += 1;
    return changed;
}

void pc_learner_describe(const pc_learner *l, pc_learner_info *info)
{
    const pc_rule *r = l->rule;
    pc_wvec *w = primary_of(r, l->state);
    info->norm = w ? sqrt(w->norm2) : 0;
    info->bias = r->bias ? r->bias(l->state) : 0;
    info->margin = NAN;
    info->note = NULL;
    if (r->describe)
        r->describe(l->state, info);
    if (w && w->dropped && !info->note)
        info->note = "some updates were skipped: out of memory growing the sparse weight table";
    if (w && w->overflowed && !info->note)
        info->note = w->s.width == PC_WEIGHTS_FLOAT32
                         ? "some updates were skipped: a weight would have left float32's range "
                           "(weights: float32)"
                         : "some updates were skipped: the step would have taken the weights "
                           "past the double's range (an example far shorter than the ones "
                           "before it)";
    info->updates = l->updates;
}

size_t pc_learner_bytes(const pc_learner *l)
{
    const pc_rule *r = l->rule;
    if (!l->state)
        return 0;
    pc_wvec *w = primary_of(r, l->state);
    return r->state_size + (r->bytes ? r->bytes(l->state) : w ? pc_wvec_bytes(w) : 0);
}

double pc_learner_weight(const pc_learner *l, uint32_t i)
{
    if (l->averaged)
        return pc_wvec_get_avg(l->rule->primary(l->state), i);
    if (l->rule->weight)
        return l->rule->weight(l->state, i);
    return pc_wvec_get(l->rule->primary(l->state), i);
}

double pc_learner_weight_sum_sq(const pc_learner *l, uint32_t below)
{
    /* Where the weights are the primary vector's (averaged or not) and it is
     * a table, only its stored indices can weigh anything: they are summed
     * in increasing order, so the sum is the full loop's to the bit (the
     * squares left out are +0).  A 2^20 model's `info` took 11 ms else. */
    const pc_wvec *w = l->rule->primary && (l->averaged || !l->rule->weight)
                           ? l->rule->primary(l->state)
                           : NULL;
    uint32_t n;
    uint32_t *keys = w ? pc_wstore_keys(&w->s, &n) : NULL;
    double sum = 0;
    if (keys) {
        for (uint32_t k = 0; k < n && keys[k] < below; k++) {
            double v = pc_learner_weight(l, keys[k]);
            sum += v * v;
        }
        free(keys);
        return sum;
    }
    for (uint32_t i = 0; i < below; i++) {
        double v = pc_learner_weight(l, i);
        sum += v * v;
    }
    return sum;
}

const pc_wvec *pc_learner_plain_weights(const pc_learner *l)
{
    return l->averaged || l->rule->weight || !l->rule->primary ? NULL : l->rule->primary(l->state);
}

pc_status pc_learner_encode(const pc_learner *l, pc_writer *w)
{
    pc_writer_u64(w, l->updates);
    if (l->rule->encode)
        return l->rule->encode(l->state, w);
    pc_wvec_encode(l->rule->primary(l->state), w);
    return PC_OK;
}

pc_status pc_learner_decode(pc_learner *l, const pc_rule *r, const pc_rule_ctx *ctx,
                            pc_reader *rd, pc_error *err)
{
    l->rule = r;
    l->averaged = ctx->averaged;
    l->updates = pc_reader_u64(rd);
    l->state = calloc(1, r->state_size ? r->state_size : 1);
    if (!l->state) {
        snprintf(err->msg, sizeof err->msg, "out of memory restoring a %s learner", r->name);
        return PC_ENOMEM;
    }
    pc_status st = PC_EFORMAT;
    if (!rd->failed)
        st = r->init(l->state, ctx, err);
    if (st == PC_OK) {
        if (r->decode)
            st = r->decode(l->state, rd);
        else if (!pc_wvec_decode(r->primary(l->state), rd))
            st = PC_EFORMAT;
    }
    if (st == PC_OK && rd->failed)
        st = PC_EFORMAT;
    if (st == PC_OK) {
        /* Whatever the rule's own checks let through, what the model
         * reports and scores with must be finite: a norm or bias that is not
         * is refused here, for every rule (the vectors' bound is
         * pc_wvec_decode's).  Finite, not squared: romma's ||u|| is 1e160
         * after a reset on an example of norm 1e-160, a state of ours. */
        pc_learner_info info;
        pc_learner_describe(l, &info);
        if (!isfinite(info.norm) || !isfinite(info.bias)) {
            rd->why = "its norm or bias is not finite";
            st = PC_EFORMAT;
        }
    }
    if (st != PC_OK) {
        if (err->msg[0] == 0 && st != PC_ENOMEM && rd->why)
            snprintf(err->msg, sizeof err->msg, "%s learner state refused: %s", r->name, rd->why);
        if (err->msg[0] == 0)
            snprintf(err->msg, sizeof err->msg,
                     st == PC_ENOMEM ? "out of memory restoring a %s learner"
                     /* e.g. a running sum that learning from a damaged state made NaN */
                     : rd->nonfinite ? "%s learner state holds a value that is not finite (NaN or infinity)"
                                     : "%s learner state is truncated or malformed",
                     r->name);
        free_state(r, l->state);
        l->state = NULL;
    }
    return st;
}
