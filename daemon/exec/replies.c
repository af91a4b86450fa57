/* replies.c - result maps of the administrative methods (see replies.h).
 *
 * A map's header carries its number of entries, and a count typed by hand
 * drifts the day someone adds a key and forgets the number.  So every map
 * here is a table of entries (KV_* below) handed to MAP(), which packs the
 * count the table has.  Nested maps and arrays are entries too (KV_SUB), with
 * a function that packs them.
 */
#include "daemon/core/budget.h"
#include "daemon/core/rest.h"
#include "daemon/exec/replies.h"

#include <math.h>
#include <stdlib.h>

#include "daemon/base/clock.h"
#include "daemon/core/server.h"
#include "daemon/exec/explain.h"
#include "daemon/journal/journal.h"
#include "daemon/model/challengers.h"
#include "daemon/model/pending.h"

typedef enum { KIND_U64, KIND_F64, KIND_BOOL, KIND_STR, KIND_SUB } kv_kind;

typedef struct kv {
    const char *key;
    kv_kind kind;
    uint64_t u;
    double d;                                      /* nil when not finite */
    bool b;
    const char *s;                                 /* nil when NULL */
    void (*sub)(msgpack_packer *pk, const void *arg);
    const void *arg;
} kv;

#define KV_U64(k, v) {.key = (k), .kind = KIND_U64, .u = (v)}
#define KV_F64(k, v) {.key = (k), .kind = KIND_F64, .d = (v)}
#define KV_BOOL(k, v) {.key = (k), .kind = KIND_BOOL, .b = (v)}
#define KV_STR(k, v) {.key = (k), .kind = KIND_STR, .s = (v)}
#define KV_SUB(k, f, a) {.key = (k), .kind = KIND_SUB, .sub = (f), .arg = (a)}
/* sizeof does not evaluate its operand: the entries are built once. */
#define MAP(pk, ...) \
    pack_map((pk), (const kv[]){__VA_ARGS__}, sizeof((const kv[]){__VA_ARGS__}) / sizeof(kv))

static void pack_str_or_nil(msgpack_packer *pk, const char *s)
{
    if (s)
        pcp_pack_str(pk, s);
    else
        msgpack_pack_nil(pk);
}

static void pack_map(msgpack_packer *pk, const kv *e, size_t n)
{
    msgpack_pack_map(pk, n);
    for (size_t i = 0; i < n; i++, e++) {
        pcp_pack_str(pk, e->key);
        switch (e->kind) {
        case KIND_U64: msgpack_pack_uint64(pk, e->u); break;
        case KIND_F64:
            if (isfinite(e->d))
                msgpack_pack_double(pk, e->d);
            else
                msgpack_pack_nil(pk);
            break;
        case KIND_BOOL:
            if (e->b)
                msgpack_pack_true(pk);
            else
                msgpack_pack_false(pk);
            break;
        case KIND_STR: pack_str_or_nil(pk, e->s); break;
        case KIND_SUB: e->sub(pk, e->arg); break;
        }
    }
}

static double rate(uint64_t mistakes, uint64_t examples)
{
    return examples ? (double)mistakes / (double)examples : NAN;
}

void pcd_reply_models(msgpack_packer *pk, pcd_model *const *all, size_t n)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++)
        pcp_pack_str(pk, all[i]->name);
}

/* ---- info ---------------------------------------------------------------- */

/* compare's, below */
static void pack_experts(msgpack_packer *pk, const void *arg);
static void pack_auto_promote(msgpack_packer *pk, const void *arg);

typedef struct info_ctx {
    const pcd_model *e;
    pc_stats st;
    int64_t now;
} info_ctx;

/* The rule's parameters by name: a list, a number, or nil (derived by the rule). */
static void pack_params(msgpack_packer *pk, const void *arg)
{
    const pc_model_config *cfg = arg;
    size_t n = pc_rule_param_count(cfg->rule);
    msgpack_pack_map(pk, n);
    for (size_t i = 0; i < n; i++) {
        const pc_param_spec *s = pc_rule_param(cfg->rule, i);
        const pc_param_value *v = &cfg->params.val[i];
        pcp_pack_str(pk, s->name);
        if (s->kind == PC_PARAM_LIST) {
            msgpack_pack_array(pk, v->n);
            for (size_t k = 0; k < v->n; k++)
                msgpack_pack_double(pk, v->v[k]);
        } else if (isnan(v->v[0])) {
            msgpack_pack_nil(pk);
        } else {
            msgpack_pack_double(pk, v->v[0]);
        }
    }
}

static void pack_recent(msgpack_packer *pk, const void *arg)
{
    const pc_stats *st = arg;
    MAP(pk, KV_U64("examples", st->recent_examples), KV_U64("mistakes", st->recent_mistakes),
        KV_F64("mistake_rate", rate(st->recent_mistakes, st->recent_examples)));
}

static void pack_classes(msgpack_packer *pk, const void *arg)
{
    const pc_model *m = arg;
    size_t k = pc_model_class_count(m);
    msgpack_pack_array(pk, k);
    for (size_t i = 0; i < k; i++) {
        uint64_t ce, cm;
        pc_model_class_stats(m, i, &ce, &cm);
        MAP(pk, KV_STR("name", pc_model_class_name(m, i)), KV_U64("examples", ce),
            KV_U64("mistakes", cm));
    }
}

/* transforms or crosses, each as the text that creates it. */
static void pack_prep_texts(msgpack_packer *pk, const pc_prep *p, bool crosses)
{
    char text[PC_PREP_TEXT_MAX];
    uint32_t n = crosses ? p->ncrosses : p->ntransforms;
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++) {
        if (crosses)
            pc_cross_format(&p->crosses[i], text, sizeof text);
        else
            pc_transform_format(&p->transforms[i], text, sizeof text);
        pcp_pack_str(pk, text);
    }
}

static void pack_transforms(msgpack_packer *pk, const void *arg)
{
    pack_prep_texts(pk, arg, false);
}

static void pack_crosses(msgpack_packer *pk, const void *arg)
{
    pack_prep_texts(pk, arg, true);
}

/* One learner per class (one in all for a binary model). */
static void pack_learners(msgpack_packer *pk, const void *arg)
{
    const pc_model *m = arg;
    size_t k = pc_model_class_count(m), nl = k ? k : 1;
    msgpack_pack_array(pk, nl);
    for (size_t i = 0; i < nl; i++) {
        pc_learner_info li;
        pc_model_learner_info(m, i, &li);
        MAP(pk, KV_STR("class", pc_model_class_name(m, i)), KV_F64("norm", li.norm),
            KV_F64("bias", li.bias), KV_F64("margin", li.margin), KV_U64("updates", li.updates),
            KV_STR("note", li.note));
    }
}

static void pack_snapshot(msgpack_packer *pk, const void *arg)
{
    const info_ctx *c = arg;
    MAP(pk, KV_U64("generation", c->e->generation),
        KV_F64("age_seconds", c->e->saved_at ? (double)(c->now - c->e->saved_at) : NAN),
        KV_BOOL("dirty", pcd_model_dirty(c->e)), KV_U64("journal_lsn", c->e->saved_lsn));
}

/* The delays of joined outcomes, in seconds. */
static void pack_delays(msgpack_packer *pk, const void *arg)
{
    const pcd_pending *p = arg;
    const pcd_join_stats *st = &p->st;
    MAP(pk, KV_F64("mean", st->joined ? (double)st->delay_sum_ms / 1000 / (double)st->joined : NAN),
        KV_F64("p50", pcd_pending_delay_quantile(p, 0.5) / 1000),
        KV_F64("p90", pcd_pending_delay_quantile(p, 0.9) / 1000),
        KV_F64("p99", pcd_pending_delay_quantile(p, 0.99) / 1000),
        KV_F64("max", (double)st->delay_max_ms / 1000));
}

/* Label hints (hints.h): the settings and figures; nil when off. */
static void pack_hints(msgpack_packer *pk, const void *arg)
{
    const pcd_pending *p = arg;
    if (!(p->cfg.hints_b > 0)) {
        msgpack_pack_nil(pk);
        return;
    }
    const pcd_join_stats *st = &p->st;
    MAP(pk, KV_F64("b", p->cfg.hints_b), KV_U64("seed", p->cfg.hints_seed),
        KV_U64("predictions", p->hint_predictions),
        KV_U64("asked_predictions", p->hint_asked_predictions),
        KV_U64("labels", st->hint_labels), KV_U64("asked", st->hint_asked),
        KV_F64("asked_rate", rate(st->hint_asked, st->hint_labels)),
        KV_U64("mistakes", st->hint_mistakes), KV_U64("asked_mistakes", st->hint_asked_mistakes),
        KV_F64("mistake_rate", rate(st->hint_mistakes, st->hint_labels)),
        KV_F64("asked_mistake_rate", rate(st->hint_asked_mistakes, st->hint_asked)),
        KV_U64("unasked_outcomes", st->hint_unasked_outcomes));
}

/* Label later (docs/label-later.md): the join settings and figures. */
static void pack_join(msgpack_packer *pk, const void *arg)
{
    const pcd_model *e = arg;
    pcd_pending none = {0};
    if (!e->pending)
        pcp_join_config_default(&none.cfg);
    const pcd_pending *p = e->pending ? e->pending : &none;
    const pcd_join_stats *st = &p->st;
    MAP(pk, KV_U64("ttl", p->cfg.ttl),
        KV_STR("default_label", p->cfg.has_default ? p->cfg.default_label : NULL),
        KV_U64("max_pending", p->cfg.max_pending), KV_U64("max_bytes", p->cfg.max_bytes),
        KV_U64("pending", p->npending), KV_U64("pending_bytes", p->bytes),
        KV_U64("events", st->events), KV_U64("joined", st->joined),
        KV_U64("served_mistakes", st->served_mistakes),
        KV_F64("served_mistake_rate", rate(st->served_mistakes, st->joined)),
        KV_U64("expired", st->expired), KV_U64("defaulted", st->defaulted),
        KV_U64("evicted", st->evicted), KV_U64("forgotten", st->forgotten),
        KV_U64("unknown", st->unknown), KV_U64("duplicate", st->duplicate),
        KV_U64("late", st->late), KV_SUB("delay", pack_delays, p),
        KV_SUB("hints", pack_hints, p));
}

/* The replica lag with the shared log (nil when unknown or without it):
 * entries of the model's stream not applied here at the last look (once a
 * second), and then how old the newest applied one is, in ms. */
static void pack_lag(msgpack_packer *pk, const void *arg)
{
    const pcd_model *e = arg;
    if (!e->log_behind_known) {
        msgpack_pack_nil(pk);
        return;
    }
    uint64_t now_ms = (uint64_t)pcd_now_ms();
    uint64_t ms = e->log_behind && now_ms > e->log_ms ? now_ms - e->log_ms : 0;
    MAP(pk, KV_U64("entries", e->log_behind), KV_U64("ms", ms));
}

void pcd_reply_info(msgpack_packer *pk, const pcd_model *e, int64_t now)
{
    const pc_model_config *cfg = pc_model_config_of(e->model);
    info_ctx c = {.e = e, .now = now};
    /* Replicas that applied the same entries hold the same bytes: compare
     * log_id and digest across daemons (docs/scale-out.md). */
    char log_id[48], digest[24];
    snprintf(log_id, sizeof log_id, "%llu-%llu", (unsigned long long)e->log_ms,
             (unsigned long long)e->log_seq);
    snprintf(digest, sizeof digest, "%016llx", (unsigned long long)pcd_model_digest(e));
    pc_model_stats(e->model, &c.st);
    MAP(pk, KV_STR("name", e->name), KV_STR("rule", pc_rule_name(cfg->rule)),
        KV_SUB("params", pack_params, cfg), KV_U64("dim", cfg->dim), KV_BOOL("bias", cfg->bias),
        KV_F64("bias_value", cfg->bias_value), KV_BOOL("averaged", cfg->averaged),
        KV_STR("mode", cfg->batch ? "batch" : "online"),
        KV_STR("storage", pcp_spec_keys[PCP_SPEC_STORAGE].choices[cfg->storage]),
        KV_STR("weights", pcp_spec_keys[PCP_SPEC_WEIGHTS].choices[cfg->weights]),
        KV_U64("bytes", pc_model_bytes(e->model)), KV_BOOL("multiclass", cfg->multiclass),
        KV_BOOL("open_classes", cfg->open_classes), KV_BOOL("calibrate", cfg->calibrate),
        KV_STR("scale", pc_scale_names[cfg->prep.scale]),
        KV_SUB("transforms", pack_transforms, &cfg->prep),
        KV_SUB("crosses", pack_crosses, &cfg->prep), KV_U64("max_crossed", cfg->prep.max_crossed),
        KV_U64("examples", c.st.examples),
        KV_U64("mistakes", c.st.mistakes),
        KV_F64("mistake_rate", rate(c.st.mistakes, c.st.examples)),
        KV_U64("updates", c.st.updates), KV_SUB("recent", pack_recent, &c.st),
        KV_SUB("classes", pack_classes, e->model), KV_SUB("learners", pack_learners, e->model),
        KV_SUB("snapshot", pack_snapshot, &c), KV_U64("journal_lsn", e->lsn),
        KV_STR("log_id", log_id), KV_SUB("log_lag", pack_lag, e), KV_STR("digest", digest),
        KV_U64("feature_names", e->names.count),
        KV_U64("feature_names_bytes", pcd_names_bytes(&e->names)),
        KV_U64("feature_names_max", PCD_NAMES_MAX), KV_SUB("join", pack_join, e),
        KV_U64("loads", e->loads), KV_U64("evictions", e->evictions), /* models at rest */
        KV_SUB("experts", pack_experts, e->challengers),
        KV_SUB("auto_promote", pack_auto_promote, e->challengers));
}

/* ---- compare ---------------------------------------------------------------- */

typedef struct learner_ctx {
    const pc_model *m;
    pc_stats st;
    char digest[24];
} learner_ctx;

static void learner_init(learner_ctx *l, const pc_model *m)
{
    l->m = m;
    pc_model_stats(m, &l->st);
    snprintf(l->digest, sizeof l->digest, "%016llx", (unsigned long long)pcd_digest(m));
}

static void pack_cfg_params(msgpack_packer *pk, const void *arg)
{
    pack_params(pk, pc_model_config_of(arg));
}

#define LEARNER_KVS(l)                                                                            \
    KV_STR("rule", pc_rule_name(pc_model_config_of((l)->m)->rule)),                             \
        KV_SUB("params", pack_cfg_params, (l)->m),                                              \
        KV_BOOL("averaged", pc_model_config_of((l)->m)->averaged),                              \
        KV_U64("examples", (l)->st.examples), KV_U64("mistakes", (l)->st.mistakes),             \
        KV_F64("mistake_rate", rate((l)->st.mistakes, (l)->st.examples)),                       \
        KV_F64("recent_mistake_rate", rate((l)->st.recent_mistakes, (l)->st.recent_examples)),  \
        KV_STR("digest", (l)->digest)

static void pack_champion(msgpack_packer *pk, const void *arg)
{
    learner_ctx l;
    learner_init(&l, arg);
    MAP(pk, LEARNER_KVS(&l));
}

static void pack_challengers(msgpack_packer *pk, const void *arg)
{
    const pcd_challengers *cs = arg;
    msgpack_pack_array(pk, cs ? cs->n : 0);
    for (size_t i = 0; cs && i < cs->n; i++) {
        const pcd_challenger *ch = &cs->ch[i];
        learner_ctx l;
        learner_init(&l, ch->model);
        double chi2, p;
        pcd_mcnemar(ch->b, ch->c, &chi2, &p);
        bool significant = p < 0.05;
        const char *better = !significant ? NULL : ch->b > ch->c ? "challenger" : "champion";
        /* the always-valid test: the one to watch (docs/protocol.md) */
        double llr = pcd_msprt_log_lr(ch->b, ch->c);
        double threshold = pcd_msprt_threshold(PCD_MSPRT_CONFIDENCE);
        const char *verdict =
            llr < threshold ? NULL : ch->b > ch->c ? "challenger" : "champion";
        MAP(pk, KV_U64("index", i), LEARNER_KVS(&l), KV_U64("champion_only_wrong", ch->b),
            KV_U64("challenger_only_wrong", ch->c), KV_F64("chi2", chi2), KV_F64("p_value", p),
            KV_BOOL("significant", significant), KV_STR("better", better),
            KV_F64("sequential_log_lr", llr), KV_F64("sequential_threshold", threshold),
            KV_F64("sequential_confidence", PCD_MSPRT_CONFIDENCE),
            KV_STR("sequential_better", verdict));
    }
}

/* Each expert's weight and mistakes, champion first (docs/protocol.md, compare). */
static void pack_expert_list(msgpack_packer *pk, const void *arg)
{
    const pcd_challengers *cs = arg;
    const pcd_experts *x = &cs->experts;
    double w[PCD_EXPERTS_MAX];
    pcd_experts_weights(x, 1 + cs->n, w);
    msgpack_pack_array(pk, 1 + cs->n);
    for (size_t i = 0; i <= cs->n; i++)
        MAP(pk, KV_STR("expert", i ? "challenger" : "champion"), KV_U64("index", i ? i - 1 : 0),
            KV_F64("weight", w[i]), KV_U64("mistakes", x->wrong[i]));
}

/* The experts' combination (nil without): seed 001's bound on the run so far
 * beside the mistakes it bounds. */
static void pack_experts(msgpack_packer *pk, const void *arg)
{
    const pcd_challengers *cs = arg;
    if (!pcd_challengers_combine(cs)) {
        msgpack_pack_nil(pk);
        return;
    }
    const pcd_experts *x = &cs->experts;
    size_t n = 1 + cs->n;
    MAP(pk, KV_STR("combination", pcp_experts_names[x->cfg.mode]),
        KV_F64("eta", pcd_experts_eta(x, n, x->rounds + 1)),
        KV_BOOL("eta_scheduled", x->cfg.eta == 0), KV_U64("seed", x->cfg.seed),
        KV_U64("rounds", x->rounds), KV_U64("mistakes", x->mistakes),
        KV_F64("mistake_rate", rate(x->mistakes, x->rounds)),
        KV_U64("best_expert_mistakes", pcd_experts_best(x, n)),
        KV_F64("bound", pcd_experts_bound(x, n)), KV_SUB("experts", pack_expert_list, cs));
}

/* promote.auto's settings and count (nil when off). */
static void pack_auto_promote(msgpack_packer *pk, const void *arg)
{
    const pcd_challengers *cs = arg;
    if (!cs || !cs->experts.cfg.auto_promote) {
        msgpack_pack_nil(pk);
        return;
    }
    const pcp_experts_config *c = &cs->experts.cfg;
    MAP(pk, KV_F64("confidence", c->confidence), KV_U64("min_examples", c->min_examples),
        KV_U64("promotions", cs->auto_promotions));
}

void pcd_reply_compare(msgpack_packer *pk, const pcd_model *e)
{
    MAP(pk, KV_STR("model", e->name), KV_SUB("champion", pack_champion, e->model),
        KV_SUB("challengers", pack_challengers, e->challengers),
        KV_SUB("experts", pack_experts, e->challengers),
        KV_SUB("auto_promote", pack_auto_promote, e->challengers));
}

void pcd_reply_experts_prediction(msgpack_packer *pk, const pc_model *m,
                                  const pcd_challengers *cs, const pc_prediction *p, size_t who,
                                  uint32_t extra)
{
    msgpack_pack_map(pk, 3 + extra);
    pcp_pack_str(pk, "label");
    pcp_pack_label(pk, m, p);
    pcp_pack_str(pk, "score");
    msgpack_pack_double(pk, p->score);
    pcp_pack_str(pk, "expert");
    if (cs->experts.cfg.mode == PCP_EXPERTS_RWMA)
        msgpack_pack_uint64(pk, who);
    else
        msgpack_pack_nil(pk);
}

void pcd_reply_weights(msgpack_packer *pk, const pcd_model *e, const uint32_t *idx,
                       const double *w, size_t n)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++)
        /* scale: what the model divides the feature's value by before this
         * weight applies (1 when it does not scale; docs/protocol.md) */
        MAP(pk, KV_U64("index", idx[i]), KV_STR("feature", pcd_names_get(&e->names, idx[i])),
            KV_F64("weight", w[i]), KV_F64("scale", pc_model_feature_scale(e->model, idx[i])));
}

/* ---- explanations (explain.h) ----------------------------------------- */

typedef struct explain_ctx {
    const pcd_model *e;
    const pcd_explainer *xp;
    const pcd_explanation *ex;
} explain_ctx;

/* Each part named as the request named it, else as the model remembers it
 * (pcd_explain_name, then pcd_explain_known_names). */
static void pack_contributions(msgpack_packer *pk, const void *arg)
{
    const explain_ctx *c = arg;
    msgpack_pack_array(pk, c->ex->n);
    for (uint32_t i = 0; i < c->ex->n; i++) {
        const pc_part *p = &c->ex->top[i];
        const char *name = pcd_explain_name_of(c->xp, c->ex, i);
        MAP(pk, KV_STR("feature", name),
            KV_U64("index", p->idx),
            KV_F64("value", p->value), KV_F64("scaled", p->scaled), KV_F64("weight", p->weight),
            KV_F64("contribution", p->contribution));
    }
}

static void pack_explanation(msgpack_packer *pk, const pcd_model *e, const pcd_explainer *xp,
                             const pcd_explanation *ex)
{
    const pc_model *m = xp->model;
    explain_ctx c = {e, xp, ex};
    if (ex->cls < 0)
        MAP(pk, KV_F64("score", ex->score), KV_F64("bias", ex->bias),
            KV_SUB("features", pack_contributions, &c), KV_F64("rest", ex->rest),
            KV_U64("others", ex->others));
    else
        MAP(pk, KV_STR("class", pc_model_class_name(m, (size_t)ex->cls)),
            KV_F64("score", ex->score), KV_F64("bias", ex->bias),
            KV_SUB("features", pack_contributions, &c), KV_F64("rest", ex->rest),
            KV_U64("others", ex->others));
}

void pcd_reply_explanation(msgpack_packer *pk, const pcd_model *e,
                           const struct pcd_explainer *xp)
{
    pcp_pack_str(pk, "explain");
    if (!pc_model_config_of(xp->model)->multiclass) {
        pack_explanation(pk, e, xp, &xp->ex[0]);
        return;
    }
    msgpack_pack_array(pk, xp->n);
    for (size_t i = 0; i < xp->n; i++)
        pack_explanation(pk, e, xp, &xp->ex[i]);
}

/* ---- stats --------------------------------------------------------------- */

/* Only the codes that occurred, by name. */
static void pack_errors_by_code(msgpack_packer *pk, const void *arg)
{
    const uint64_t *by_code = arg;
    size_t n = sizeof ((pcd_counters *)0)->errors_by_code / sizeof *by_code, nz = 0;
    for (size_t i = 0; i < n; i++)
        nz += by_code[i] != 0;
    msgpack_pack_map(pk, nz);
    for (size_t i = 0; i < n; i++)
        if (by_code[i]) {
            pcp_pack_str(pk, pcp_code_name((pcp_code)i));
            msgpack_pack_uint64(pk, by_code[i]);
        }
}

/* The journal's state; nil when journal.enabled is false. */
static void pack_journal(msgpack_packer *pk, const void *arg)
{
    const pcd_server *srv = arg;
    if (!srv->journal) {
        msgpack_pack_nil(pk);
        return;
    }
    pcd_journal_stats st;
    pcd_journal_stats_get(srv->journal, &st);
    char why[600] = "";
    pcd_journal_writable(srv->journal, why, sizeof why);
    MAP(pk, KV_STR("fsync", srv->cfg.journal_fsync), KV_BOOL("healthy", st.healthy),
        KV_STR("error", st.healthy ? NULL : why), KV_U64("bytes", st.bytes),
        KV_U64("segments", st.segments), KV_U64("next_lsn", st.next_lsn),
        KV_U64("durable_lsn", st.durable_lsn),
        KV_U64("writes_waiting", st.next_lsn - 1 - pcd_journal_ack_lsn(srv->journal)),
        KV_U64("unsynced_bytes", st.unsynced_bytes),
        KV_F64("last_fsync_age_seconds", st.last_fsync_at ? (double)(pcd_now() - st.last_fsync_at) : NAN),
        KV_U64("fsyncs", st.fsyncs), KV_F64("fsync_last_ms", st.fsync_last_ms),
        KV_F64("fsync_max_ms", st.fsync_max_ms),
        KV_F64("fsync_avg_ms", st.fsyncs ? st.fsync_total_ms / (double)st.fsyncs : NAN),
        KV_U64("fsync_failures", st.fsync_failures), KV_U64("write_failures", st.write_failures),
        KV_U64("appended", st.appended), KV_U64("replayed_at_start", st.replayed),
        KV_U64("replay_failed", st.replay_failed));
}

/* The shared log's state; nil without `log: {backend: redis}`. */
static void pack_log(msgpack_packer *pk, const void *arg)
{
    const pcd_server *srv = arg;
    if (!srv->rlog) {
        msgpack_pack_nil(pk);
        return;
    }
    const struct pcd_logstats *l = &srv->logst;
    MAP(pk, KV_STR("backend", srv->cfg.log_backend), KV_STR("address", srv->cfg.log_address),
        KV_STR("replica", l->replica), KV_BOOL("connected", l->up),
        KV_BOOL("ready", l->ready), KV_STR("error", l->up ? NULL : l->error),
        KV_U64("streams", l->streams), KV_U64("appended", l->appended),
        KV_U64("applied", l->applied), KV_U64("apply_failed", l->apply_failed),
        KV_U64("refused", l->refused), KV_U64("lost", l->lost),
        KV_U64("bootstrapped", l->bootstrapped),
        KV_U64("writes_waiting", l->waiting), KV_U64("wait_unconfirmed", l->unconfirmed),
        KV_U64("reads_waiting", l->after_waiting), KV_U64("after_timeouts", l->after_timeouts),
        KV_BOOL("cluster", srv->cfg.log_cluster), KV_U64("nodes", l->nodes),
        KV_U64("nodes_up", l->nodes_up));
}

/* Label later over every model: the sums of their join figures. */
static void pack_join_totals(msgpack_packer *pk, const void *arg)
{
    const pcd_server *srv = arg;
    pcd_join_stats t = {0};
    uint64_t pending = 0, bytes = 0;
    for (size_t i = 0; i < srv->models.nresident; i++) {
        const pcd_pending *p = srv->models.resident[i]->pending; /* resting: on disk, not counted */
        if (!p)
            continue;
        pending += p->npending;
        bytes += p->bytes;
        t.events += p->st.events;
        t.joined += p->st.joined;
        t.served_mistakes += p->st.served_mistakes;
        t.expired += p->st.expired;
        t.evicted += p->st.evicted;
        t.unknown += p->st.unknown;
        t.duplicate += p->st.duplicate;
        t.late += p->st.late;
    }
    MAP(pk, KV_U64("pending", pending), KV_U64("pending_bytes", bytes), KV_U64("events", t.events),
        KV_U64("joined", t.joined), KV_F64("served_mistake_rate", rate(t.served_mistakes, t.joined)),
        KV_U64("expired", t.expired), KV_U64("evicted", t.evicted), KV_U64("unknown", t.unknown),
        KV_U64("duplicate", t.duplicate), KV_U64("late", t.late));
}

/* stats' sections that read the models' memory, walked once a reply. */
typedef struct stats_ctx {
    const pcd_server *srv;
    pcd_memory_parts m;
} stats_ctx;

/* What the bounds hold and what they refused (budget.c, conn.c, listen.c). */
static void pack_bounds(msgpack_packer *pk, const void *arg)
{
    const stats_ctx *x = arg;
    const pcd_server *srv = x->srv;
    const pcd_counters *k = &srv->loop.counters;
    const pcd_memory_parts *m = &x->m;
    MAP(pk, KV_U64("models_bytes", m->all), KV_U64("counted_bytes", srv->models.counted_bytes),
        KV_U64("weights_bytes", m->weights), KV_U64("names_bytes", m->names),
        KV_U64("challengers_bytes", m->challengers), KV_U64("pending_bytes", m->pending),
        KV_U64("input_bytes", srv->loop.input_bytes), KV_U64("output_bytes",
                                                             srv->loop.output_bytes),
        KV_U64("rss_bytes", pcd_rss_bytes()),
        KV_U64("max_memory", srv->cfg.max_memory), KV_U64("max_models", srv->cfg.max_models),
        KV_U64("max_connections", srv->cfg.max_connections),
        KV_U64("connections_evicted", k->connections_evicted),
        KV_U64("connections_slow", k->connections_slow),
        KV_U64("refused_memory", k->refused_memory), KV_U64("refused_models", k->refused_models),
        KV_U64("accept_errors", k->accept_errors));
}

/* Models at rest (core/rest.c). */
static void pack_rest(msgpack_packer *pk, const void *arg)
{
    const pcd_server *srv = arg;
    const struct pcd_reststats *t = &srv->rest;
    MAP(pk, KV_U64("resident_max", srv->cfg.resident_max),
        KV_U64("resident", srv->models.nresident),
        KV_U64("resting", srv->models.count - srv->models.nresident),
        KV_U64("resting_bytes", pcd_rest_resting_bytes(srv)), KV_U64("writing", t->writing),
        KV_U64("writing_bytes", t->writing_bytes), KV_U64("loads", t->loads),
        KV_U64("load_failed", t->load_failed), KV_U64("loads_ahead", t->loads_ahead),
        KV_U64("load_retried", t->load_retried), KV_U64("written_in_loop", t->written_in_loop),
        KV_U64("taken_back", t->taken_back),
        KV_U64("evictions", t->evictions),
        KV_U64("evict_failed", t->evict_failed), KV_F64("load_seconds", t->load_seconds),
        KV_F64("load_max_seconds", t->load_max_seconds), KV_F64("evict_seconds", t->evict_seconds),
        KV_F64("write_seconds", t->write_seconds));
}

void pcd_reply_stats(msgpack_packer *pk, const pcd_server *srv, int64_t now)
{
    const pcd_counters *k = &srv->loop.counters;
    stats_ctx x = {srv, pcd_memory_parts_of(srv)};
    MAP(pk, KV_STR("version", PC_VERSION_STRING),
        KV_U64("uptime_seconds", (uint64_t)(now - srv->started_at)),
        KV_U64("models", srv->models.count), KV_U64("models_bytes", x.m.weights),
        KV_U64("connections", srv->loop.nconns),
        KV_U64("connections_total", k->connections_total),
        KV_U64("connections_rejected", k->connections_rejected),
        KV_U64("connections_closed_idle", k->connections_closed_idle),
        KV_U64("connections_closed_error", k->connections_closed_error),
        KV_U64("requests", k->requests), KV_U64("notifications", k->notifications),
        KV_U64("errors", k->errors), KV_U64("labels", k->labels), KV_U64("predicts", k->predicts),
        KV_U64("auto_promotions", k->auto_promotions),
        KV_U64("bytes_in", k->bytes_in), KV_U64("bytes_out", k->bytes_out),
        KV_U64("snapshots_written", k->snapshots_written),
        KV_U64("snapshots_failed", k->snapshots_failed),
        KV_BOOL("snapshot_running", srv->snap.pid != 0),
        KV_SUB("journal", pack_journal, srv), KV_SUB("log", pack_log, srv),
        KV_SUB("bounds", pack_bounds, &x), KV_SUB("rest", pack_rest, srv),
        KV_SUB("errors_by_code", pack_errors_by_code, k->errors_by_code),
        KV_SUB("join", pack_join_totals, srv));
}

/* ---- the small ones ------------------------------------------------------ */

void pcd_reply_learned(msgpack_packer *pk, uint64_t examples, uint64_t mistakes, uint64_t updates,
                       const char *position)
{
    MAP(pk, KV_U64("examples", examples), KV_U64("mistakes", mistakes),
        KV_U64("updates", updates), KV_STR("position", position));
}

void pcd_reply_saved(msgpack_packer *pk, uint64_t written)
{
    MAP(pk, KV_U64("written", written));
}

void pcd_reply_done(msgpack_packer *pk, const char *what, const char *name, const char *position)
{
    MAP(pk, KV_STR(what, name), KV_STR("position", position));
}

void pcd_reply_dropped(msgpack_packer *pk, const char *name, uint64_t removed,
                       const char *position)
{
    MAP(pk, KV_STR("dropped", name), KV_U64("snapshots_removed", removed),
        KV_STR("position", position));
}
