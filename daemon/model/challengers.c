/* challengers.c - rules learning beside a model (see challengers.h).
 *
 * A challenger is a plain pc_model built from the champion's config with its
 * own rule, parameters and averaging, so it is the very model an independent
 * `create` with that spec would be, fed the same labels in the same order:
 * the tests check they are bit-identical.  Each one costs what a model of its
 * size costs, and every label is learned 1 + n times.
 */
#include "daemon/model/challengers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"

int pcd_challengers_create(pcd_challengers **out, const pc_model *champion,
                           const pcp_challenger *list, size_t n,
                           const pcp_experts_config *experts, pcp_error *err)
{
    *out = NULL;
    if (!n)
        return PCP_OK;
    pcd_challengers *cs = calloc(1, sizeof *cs);
    if (!cs)
        return pcp_error_set(err, PCP_E_INTERNAL, "out of memory");
    const pc_model_config *champ = pc_model_config_of(champion);
    /* a closed multiclass champion: its classes, by name, in its order */
    size_t k = pc_model_class_count(champion);
    const char **names = k ? calloc(k, sizeof *names) : NULL;
    for (size_t i = 0; names && i < k; i++)
        names[i] = pc_model_class_name(champion, i);
    for (size_t i = 0; i < n; i++) {
        pc_model_config c;
        pcp_challenger_config(champ, &list[i], &c);
        c.classes = names;
        c.nclasses = names ? k : 0;
        pc_error perr;
        pc_status st = pc_model_new(&c, &cs->ch[i].model, &perr);
        if (st != PC_OK) {
            free(names);
            pcd_challengers_free(cs);
            return pcp_error_set(err, pcp_status_code(st, PCP_E_SPEC), "challenger %zu (%s): %s",
                                 i, pc_rule_name(c.rule), perr.msg);
        }
        cs->n++;
    }
    free(names);
    if (experts)
        cs->experts.cfg = *experts;
    *out = cs;
    return PCP_OK;
}

bool pcd_challengers_combine(const pcd_challengers *cs)
{
    return cs && cs->experts.cfg.mode != PCP_EXPERTS_NONE;
}

int pcd_challengers_auto_promote(pcd_challengers *cs, pc_model **champion)
{
    if (!cs || !cs->experts.cfg.auto_promote)
        return -1;
    const pcp_experts_config *c = &cs->experts.cfg;
    double threshold = pcd_msprt_threshold(c->confidence), clearest = 0;
    int best = -1;
    for (size_t i = 0; i < cs->n; i++) {
        const pcd_challenger *ch = &cs->ch[i];
        /* every label comes here: the sequential test from the counts, then
         * the labels learned, O(1) each */
        double llr = ch->b > ch->c ? pcd_msprt_log_lr(ch->b, ch->c) : 0;
        if (llr < threshold || (best >= 0 && llr <= clearest))
            continue;
        if (pc_model_examples(ch->model) >= c->min_examples) {
            best = (int)i;
            clearest = llr;
        }
    }
    if (best >= 0) {
        pcd_challengers_promote(cs, champion, (size_t)best);
        cs->auto_promotions++;
    }
    return best;
}

void pcd_challengers_free(pcd_challengers *cs)
{
    if (!cs)
        return;
    for (size_t i = 0; i < cs->n; i++)
        pc_model_free(cs->ch[i].model);
    free(cs);
}

static void tally(pcd_challenger *ch, bool champion_wrong, bool challenger_wrong)
{
    ch->b += champion_wrong && !challenger_wrong;
    ch->c += !champion_wrong && challenger_wrong;
}

/* One round of the experts on the outcomes of the champion (o) and of the
 * challengers (co[0..n), learned[i] false where one failed): a round where
 * one failed is not scored (only memory can fail it).  *said: the model's
 * answer, o or the experts'. */
static void score(pcd_challengers *cs, const pc_outcome *o, const pc_outcome *co,
                  const bool *learned, pc_outcome *said)
{
    *said = *o;
    if (!pcd_challengers_combine(cs))
        return;
    pc_prediction p[PCD_EXPERTS_MAX] = {o->pred};
    bool wrong[PCD_EXPERTS_MAX] = {o->mistake};
    for (size_t i = 0; i < cs->n; i++) {
        if (!learned[i])
            return;
        p[1 + i] = co[i].pred;
        wrong[1 + i] = co[i].mistake;
    }
    bool multiclass = pc_model_config_of(cs->ch[0].model)->multiclass;
    said->mistake = pcd_experts_learn(&cs->experts, 1 + cs->n, p, wrong, multiclass, &said->pred);
}

void pcd_challengers_learn(pcd_challengers *cs, const pc_svec *x, const pc_label *y,
                           const pc_outcome *o, pc_outcome *said)
{
    pc_outcome co[PCP_CHALLENGERS_MAX], ignored;
    bool learned[PCP_CHALLENGERS_MAX];
    for (size_t i = 0; cs && i < cs->n; i++) {
        pc_error perr;
        /* what the champion accepted, a model of its config accepts: only memory can fail */
        learned[i] = pc_model_label(cs->ch[i].model, x, y, &co[i], &perr) == PC_OK;
        if (learned[i])
            tally(&cs->ch[i], o->mistake, co[i].mistake);
    }
    score(cs, o, co, learned, said ? said : &ignored);
}

uint64_t pcd_challengers_learn_batch(pcd_challengers *cs, const pc_svec *xs, const pc_label *ys,
                                     size_t n, const pc_outcome *os)
{
    uint64_t mistakes = 0;
    size_t k = cs ? cs->n : 0;
    bool combine = pcd_challengers_combine(cs);
    /* the challengers' outcomes: one batch's worth reused, or with experts
     * all k kept for their rounds */
    pc_outcome *co = k && n ? malloc(n * (combine ? k : 1) * sizeof *co) : NULL;
    bool learned[PCP_CHALLENGERS_MAX] = {false};
    for (size_t i = 0; co && i < k; i++) {
        pc_outcome *mine = co + (combine ? i * n : 0);
        pc_error perr;
        if (!(learned[i] = pc_model_label_batch(cs->ch[i].model, xs, ys, n, mine, &perr) == PC_OK))
            continue;
        for (size_t j = 0; j < n; j++)
            tally(&cs->ch[i], os[j].mistake, mine[j].mistake);
    }
    for (size_t j = 0; j < n; j++) {
        pc_outcome said = os[j], each[PCP_CHALLENGERS_MAX];
        if (co && combine) {
            for (size_t i = 0; i < k; i++)
                each[i] = co[i * n + j];
            score(cs, &os[j], each, learned, &said);
        }
        mistakes += said.mistake;
    }
    free(co);
    return mistakes;
}

void pcd_challengers_predict(const pcd_challengers *cs, pc_model *champion,
                             const pc_svec *x, pc_prediction *p, size_t *who)
{
    pc_prediction each[PCD_EXPERTS_MAX];
    pc_model_predict(champion, x, &each[0], NULL);
    for (size_t i = 0; i < cs->n; i++)
        pc_model_predict(cs->ch[i].model, x, &each[1 + i], NULL);
    bool multiclass = pc_model_config_of(champion)->multiclass;
    *p = pcd_experts_answer(&cs->experts, 1 + cs->n, each, multiclass, who);
}

void pcd_challengers_promote(pcd_challengers *cs, pc_model **champion, size_t i)
{
    pc_model *m = *champion;
    *champion = cs->ch[i].model;
    cs->ch[i].model = m;
    uint64_t b = cs->ch[i].b;
    cs->ch[i].b = cs->ch[i].c;
    cs->ch[i].c = b;
    for (size_t j = 0; j < cs->n; j++)
        if (j != i)
            cs->ch[j].b = cs->ch[j].c = 0;
    pcd_experts_swap(&cs->experts, 0, 1 + i);
}

void pcd_challengers_reset(pcd_challengers *cs)
{
    for (size_t i = 0; cs && i < cs->n; i++) {
        pc_error perr;
        pc_model_reset(cs->ch[i].model, &perr);
        cs->ch[i].b = cs->ch[i].c = 0;
    }
    if (cs) { /* the experts start again with their learning */
        pcp_experts_config keep = cs->experts.cfg;
        memset(&cs->experts, 0, sizeof cs->experts);
        cs->experts.cfg = keep;
    }
}

void pcd_mcnemar(uint64_t b, uint64_t c, double *chi2, double *p)
{
    if (b + c == 0) {
        *chi2 = NAN;
        *p = 1;
        return;
    }
    double d = fabs((double)b - (double)c) - 1;
    if (d < 0)
        d = 0;
    *chi2 = d * d / (double)(b + c);
    *p = erfc(sqrt(*chi2 / 2)); /* P(chi-square with 1 dof > chi2) */
}

double pcd_msprt_log_lr(uint64_t b, uint64_t c)
{
    double x = (double)b, y = (double)c;
    /* ln B(b+1, c+1) = lgamma(b+1) + lgamma(c+1) - lgamma(b+c+2) */
    return lgamma(x + 1) + lgamma(y + 1) - lgamma(x + y + 2) + (x + y) * M_LN2;
}

double pcd_msprt_threshold(double confidence)
{
    return -log(1 - confidence);
}

/* ---- snapshot bytes ------------------------------------------------------
 * "PCC1", u64 the length of what follows, then little-endian: u32 count;
 * each challenger u64 b, u64 c, u64 length and its pc_model_encode bytes. */

bool pcd_challengers_append(const pcd_challengers *cs, uint8_t **buf, size_t *len, size_t *cap)
{
    /* the caller's buffer, grown or not, goes back to the caller either way */
    pc_writer w = {*buf, *len, *cap, false};
    size_t start = w.len;
    const pcd_experts *x = &cs->experts;
    bool experts = pcd_challengers_combine(cs) || x->cfg.auto_promote;
    pc_writer_bytes(&w, experts ? "PCC2" : "PCC1", 4);
    pc_writer_u64(&w, 0); /* the length, below */
    pc_writer_u32(&w, (uint32_t)cs->n);
    if (experts) {
        pc_writer_u32(&w, (uint32_t)x->cfg.mode);
        pc_writer_f64(&w, x->cfg.eta);
        pc_writer_u64(&w, x->cfg.seed);
        pc_writer_u64(&w, x->rounds);
        pc_writer_u64(&w, x->mistakes);
        for (size_t i = 0; i <= cs->n; i++)
            pc_writer_u64(&w, x->wrong[i]);
        pc_writer_u8(&w, x->cfg.auto_promote);
        pc_writer_f64(&w, x->cfg.confidence);
        pc_writer_u64(&w, x->cfg.min_examples);
        pc_writer_u64(&w, cs->auto_promotions);
    }
    bool ok = true;
    for (size_t i = 0; ok && !w.failed && i < cs->n; i++) {
        uint8_t *m;
        size_t mlen;
        pc_error perr;
        ok = pc_model_encode(cs->ch[i].model, &m, &mlen, &perr) == PC_OK;
        if (ok) {
            pc_writer_u64(&w, cs->ch[i].b);
            pc_writer_u64(&w, cs->ch[i].c);
            pc_writer_u64(&w, mlen);
            pc_writer_bytes(&w, m, mlen);
            free(m);
        }
    }
    ok = ok && !w.failed;
    if (ok)
        pc_put_u64(w.buf + start + 4, (uint64_t)(w.len - start - 12));
    *buf = w.buf;
    *len = w.len;
    *cap = w.cap;
    return ok;
}

bool pcd_challengers_present(const uint8_t *b, size_t len)
{
    return len >= 12 && (memcmp(b, "PCC1", 4) == 0 || memcmp(b, "PCC2", 4) == 0);
}

pcd_challengers *pcd_challengers_parse(const uint8_t *b, size_t len, size_t *used, char *why,
                                       size_t whylen)
{
    if (!pcd_challengers_present(b, len) || pc_get_u64(b + 4) > len - 12 ||
        pc_get_u64(b + 4) < 4) {
        snprintf(why, whylen, "challengers: truncated section");
        return NULL;
    }
    pc_reader r = {.p = b + 12, .left = (size_t)pc_get_u64(b + 4)};
    *used = 12 + r.left;
    uint32_t n = pc_reader_u32(&r);
    pcd_challengers *cs = calloc(1, sizeof *cs);
    if (!cs || n > PCP_CHALLENGERS_MAX) {
        snprintf(why, whylen, cs ? "challengers: %u, more than %d" : "out of memory", n,
                 PCP_CHALLENGERS_MAX);
        free(cs);
        return NULL;
    }
    if (b[3] == '2') {
        pcd_experts *x = &cs->experts;
        uint32_t mode = pc_reader_u32(&r);
        x->cfg.eta = pc_reader_f64(&r);
        x->cfg.seed = pc_reader_u64(&r);
        x->rounds = pc_reader_u64(&r);
        x->mistakes = pc_reader_u64(&r);
        bool counts = true;
        for (uint32_t i = 0; i <= n; i++)
            counts &= (x->wrong[i] = pc_reader_u64(&r)) <= x->rounds;
        uint8_t autop = pc_reader_u8(&r);
        x->cfg.auto_promote = autop == 1;
        x->cfg.confidence = pc_reader_f64(&r);
        x->cfg.min_examples = pc_reader_u64(&r);
        cs->auto_promotions = pc_reader_u64(&r);
        x->cfg.mode = (pcp_experts_mode)mode;
        if (r.failed || !counts || autop > 1 || mode > PCP_EXPERTS_RWMA || n == 0 ||
            (mode == PCP_EXPERTS_NONE && !autop) || !(x->cfg.eta >= 0 && x->cfg.eta <= 0.5) ||
            (autop && !(x->cfg.confidence > 0 && x->cfg.confidence < 1)) ||
            x->mistakes > x->rounds) {
            snprintf(why, whylen, "challengers: the experts' state is damaged");
            free(cs);
            return NULL;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t cb = pc_reader_u64(&r), cc = pc_reader_u64(&r), mlen = pc_reader_u64(&r);
        const uint8_t *m = pc_reader_need(&r, mlen, 1) ? pc_reader_take(&r, (size_t)mlen) : NULL;
        if (r.failed) {
            snprintf(why, whylen, "challengers: challenger %u is truncated", i);
            pcd_challengers_free(cs);
            return NULL;
        }
        pc_error perr;
        if (pc_model_decode(m, (size_t)mlen, &cs->ch[i].model, &perr) != PC_OK) {
            snprintf(why, whylen, "challenger %u: %s", i, perr.msg);
            pcd_challengers_free(cs);
            return NULL;
        }
        cs->ch[i].b = cb;
        cs->ch[i].c = cc;
        cs->n++;
    }
    if (r.left) {
        snprintf(why, whylen, "challengers: bytes after the end");
        pcd_challengers_free(cs);
        return NULL;
    }
    return cs;
}
