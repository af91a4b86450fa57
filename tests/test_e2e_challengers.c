/* test_e2e_challengers.c - challengers on the real daemon: every label the
 * model learns (label, label_batch, label_event, a default label on
 * eviction) trains each challenger in the same order, so each is
 * bit-identical to an independent model fed the same stream; `compare`'s
 * McNemar figures agree exactly with the mistake counts and find the
 * averaged perceptron better than the plain one on a noisy stream; `promote`
 * swaps without losing state, and all of it survives kill -9 and restarts.
 * Experts (weighted-majority and randomized, binary and multiclass) answer
 * from their twins' predictions, learn from label_event as from label, draw
 * under their own model's seed and keep their state across restarts. */
#include "tests/e2e.h"
#include "tests/testutil.h"

#include <math.h>

#define DIM E2E_DIM

enum { PCP_E_PARAMS = 4, PCP_E_SPEC = 10 };

static void example(uint64_t i, double x[DIM], int *y)
{
    e2e_example(i, 5, true, x, y);
}

static void spec_rule(msgpack_packer *pk, const char *rule, bool averaged)
{
    msgpack_pack_map(pk, averaged ? 2 : 1);
    e2e_str(pk, "rule");
    e2e_str(pk, rule);
    if (averaged) {
        e2e_str(pk, "averaged");
        msgpack_pack_true(pk);
    }
}

static const char *const classes[] = {"a", "b", "c"};

/* "classes": ["a", "b", "c"] */
static void pack_classes(msgpack_packer *pk)
{
    e2e_str(pk, "classes");
    msgpack_pack_array(pk, 3);
    for (int k = 0; k < 3; k++)
        e2e_str(pk, classes[k]);
}

/* The twins (names[0..4)): perceptron, pa, averaged perceptron and romma
 * alone, multiclass with classes or binary. */
static void create_twins(pcc_client *c, const char *const names[4], bool multiclass)
{
    static const char *const rules[] = {"perceptron", "pa", "perceptron", "romma"};
    for (int i = 0; i < 4; i++) {
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "create", 2, &id);
        e2e_str(pk, names[i]);
        msgpack_pack_map(pk, 2 + (i == 2) + multiclass);
        e2e_str(pk, "rule");
        e2e_str(pk, rules[i]);
        e2e_str(pk, "hash_bits");
        msgpack_pack_uint8(pk, 4);
        if (i == 2) {
            e2e_str(pk, "averaged");
            msgpack_pack_true(pk);
        }
        if (multiclass)
            pack_classes(pk);
        e2e_call(c, id, -1);
    }
}

static const char *const twin_names[] = {"t_perceptron", "t_pa", "t_avg", "t_romma"};

/* "champ": perceptron with challengers pa, averaged perceptron, romma, and
 * max_pending 4 with default label -1; twins: the same rules alone. */
static void create_all(pcc_client *c)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "champ");
    msgpack_pack_map(pk, 5);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint8(pk, 4);
    e2e_str(pk, "join.max_pending");
    msgpack_pack_uint8(pk, 4);
    e2e_str(pk, "join.default_label");
    msgpack_pack_int(pk, -1);
    e2e_str(pk, "challengers");
    msgpack_pack_array(pk, 3);
    spec_rule(pk, "pa", false);
    spec_rule(pk, "perceptron", true);
    spec_rule(pk, "romma", false);
    e2e_call(c, id, -1);
    create_twins(c, twin_names, false);
}

static void label_twins(pcc_client *c, uint64_t i, int y)
{
    double x[DIM];
    int ignored;
    example(i, x, &ignored);
    for (int t = 0; t < 4; t++)
        e2e_label(c, twin_names[t], DIM, x, y);
}

/* The stream: plain labels, a batch, events labelled out of order, and
 * events evicted with the default label.  Returns the next example index. */
/* model predicts x under event ev; then its outcome y comes (both succeed,
 * their answers returned) */
static const msgpack_object *predict_event(pcc_client *c, const char *model, uint64_t ev,
                                           const double x[DIM])
{
    uint32_t id;
    e2e_pack_event(e2e_request_x(c, "predict", 3, model, x, &id), (int64_t)ev);
    return e2e_call(c, id, -1);
}

static const msgpack_object *label_event(pcc_client *c, const char *model, uint64_t ev, int y)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label_event", 3, &id);
    e2e_str(pk, model);
    msgpack_pack_uint64(pk, ev);
    msgpack_pack_int(pk, y);
    return e2e_call(c, id, -1);
}

static uint64_t feed(pcc_client *c, uint64_t from)
{
    uint64_t i = from;
    for (; i < from + 150; i++) { /* label */
        double x[DIM];
        int y;
        example(i, x, &y);
        e2e_label(c, "champ", DIM, x, y);
        label_twins(c, i, y);
    }
    uint32_t id; /* label_batch of 20 */
    msgpack_packer *pk = pcc_request(c, "label_batch", 2, &id);
    e2e_str(pk, "champ");
    msgpack_pack_array(pk, 20);
    for (uint64_t k = 0; k < 20; k++) {
        double x[DIM];
        int y;
        example(i + k, x, &y);
        msgpack_pack_array(pk, 2);
        e2e_dense(pk, DIM, x);
        msgpack_pack_int(pk, y);
    }
    e2e_call(c, id, -1);
    for (uint64_t k = 0; k < 20; k++) {
        double x[DIM];
        int y;
        example(i + k, x, &y);
        label_twins(c, i + k, y);
    }
    i += 20;
    /* three events, labelled in reverse order */
    for (uint64_t k = 0; k < 3; k++) {
        double x[DIM];
        int y;
        example(i + k, x, &y);
        predict_event(c, "champ", i + k, x);
    }
    for (int k = 2; k >= 0; k--) {
        double x[DIM];
        int y;
        example(i + (uint64_t)k, x, &y);
        label_event(c, "champ", i + (uint64_t)k, y);
        label_twins(c, i + (uint64_t)k, y);
    }
    i += 3;
    /* six events with max_pending 4: the first two learn the default -1 */
    for (uint64_t k = 0; k < 6; k++) {
        double x[DIM];
        int y;
        example(i + k, x, &y);
        predict_event(c, "champ", i + k, x);
        if (k >= 4)
            label_twins(c, i + k - 4, -1);
    }
    /* and the four still waiting are labelled */
    for (uint64_t k = 2; k < 6; k++) {
        double x[DIM];
        int y;
        example(i + k, x, &y);
        label_event(c, "champ", i + k, y);
        label_twins(c, i + k, y);
    }
    return i + 6;
}

/* A daemon journaling every write (fsync always), and a client of it. */
static pcc_client *up_journaled(e2e *d)
{
    e2e_init(d, "journal: {enabled: true, fsync: always}\n");
    e2e_start(d);
    return e2e_connect(d->sock);
}

/* The same, with create_all's models. */
static pcc_client *up_with_twins(e2e *d)
{
    pcc_client *c = up_journaled(d);
    create_all(c);
    return c;
}

static void copy_str(const msgpack_object *o, char *out, size_t cap)
{
    ck_assert(o && o->type == MSGPACK_OBJECT_STR && o->via.str.size < cap);
    memcpy(out, o->via.str.ptr, o->via.str.size);
    out[o->via.str.size] = 0;
}

typedef struct learner {
    char rule[32], digest[24];
    uint64_t examples, mistakes, b, c;
    bool significant;
    char better[16], sequential[16];
    double log_lr;
} learner;

/* compare: [0] the champion, [1..n] the challengers; returns n. */
static size_t compare(pcc_client *c, const char *model, learner *out)
{
    const msgpack_object *r = e2e_admin(c, "compare", model, -1);
    const msgpack_object *ch = pcc_map_get(r, "challengers");
    ck_assert(ch && ch->type == MSGPACK_OBJECT_ARRAY && ch->via.array.size <= 3);
    const msgpack_object *all[4] = {pcc_map_get(r, "champion")};
    for (uint32_t i = 0; i < ch->via.array.size; i++)
        all[i + 1] = &ch->via.array.ptr[i];
    for (uint32_t i = 0; i <= ch->via.array.size; i++) {
        learner *l = &out[i];
        memset(l, 0, sizeof *l);
        copy_str(pcc_map_get(all[i], "rule"), l->rule, sizeof l->rule);
        copy_str(pcc_map_get(all[i], "digest"), l->digest, sizeof l->digest);
        l->examples = (uint64_t)pcc_number(pcc_map_get(all[i], "examples"));
        l->mistakes = (uint64_t)pcc_number(pcc_map_get(all[i], "mistakes"));
        if (i) {
            ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(all[i], "index")), i - 1);
            l->b = (uint64_t)pcc_number(pcc_map_get(all[i], "champion_only_wrong"));
            l->c = (uint64_t)pcc_number(pcc_map_get(all[i], "challenger_only_wrong"));
            l->significant = pcc_map_get(all[i], "significant")->via.boolean;
            const msgpack_object *b = pcc_map_get(all[i], "better");
            if (b->type == MSGPACK_OBJECT_STR)
                copy_str(b, l->better, sizeof l->better);
            const msgpack_object *s = pcc_map_get(all[i], "sequential_better");
            if (s->type == MSGPACK_OBJECT_STR)
                copy_str(s, l->sequential, sizeof l->sequential);
            l->log_lr = pcc_number(pcc_map_get(all[i], "sequential_log_lr"));
        }
    }
    return ch->via.array.size;
}

START_TEST(challengers_learn_every_label_in_order)
{
    e2e d;
    pcc_client *c = up_with_twins(&d);
    uint64_t i = feed(c, 0);
    i = feed(c, i);
    learner l[4];
    ck_assert_uint_eq(compare(c, "champ", l), 3);
    for (int k = 0; k < 4; k++) {
        char td[24];
        e2e_info_digest(c, twin_names[k], td, sizeof td);
        ck_assert_msg(strcmp(l[k].digest, td) == 0, "learner %d (%s) differs from its twin", k,
                      l[k].rule);
        ck_assert_uint_eq(l[k].examples, e2e_info_u64(c, twin_names[k], "examples"));
        ck_assert_uint_eq(l[k].examples, 2 * (150 + 20 + 3 + 2 + 4));
    }
    /* McNemar's counts are exactly the difference of the mistakes */
    for (int k = 1; k < 4; k++)
        ck_assert_int_eq((int64_t)l[0].mistakes - (int64_t)l[k].mistakes,
                         (int64_t)l[k].b - (int64_t)l[k].c);
    /* kill -9: the journal brings all of them back */
    e2e_kill9(&d);
    pcc_close(c);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    learner after[4];
    ck_assert_uint_eq(compare(c, "champ", after), 3);
    for (int k = 0; k < 4; k++) {
        ck_assert_str_eq(after[k].digest, l[k].digest);
        ck_assert_uint_eq(after[k].b, l[k].b);
        ck_assert_uint_eq(after[k].c, l[k].c);
    }
    e2e_down(&d, c);
}
END_TEST

/* On a noisy stream the averaged perceptron makes fewer mistakes than the
 * plain one, and enough fewer for McNemar's test. */
START_TEST(compare_finds_the_better_rule)
{
    e2e d;
    pcc_client *c = e2e_up(&d);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "m");
    msgpack_pack_map(pk, 3);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint8(pk, 4);
    e2e_str(pk, "challengers");
    msgpack_pack_array(pk, 1);
    spec_rule(pk, "perceptron", true);
    e2e_call(c, id, -1);
    for (uint64_t i = 0; i < 3000; i++) {
        double x[DIM];
        int y;
        example(i, x, &y);
        e2e_label(c, "m", DIM, x, y);
    }
    learner l[4];
    compare(c, "m", l);
    ck_assert_uint_eq(l[1].examples, 3000);
    ck_assert_msg(l[1].mistakes < l[0].mistakes, "averaged %llu vs plain %llu",
                  (unsigned long long)l[1].mistakes, (unsigned long long)l[0].mistakes);
    ck_assert(l[1].b > l[1].c);
    ck_assert(l[1].significant);
    ck_assert_str_eq(l[1].better, "challenger");
    /* the always-valid test agrees, from the same counts */
    ck_assert_str_eq(l[1].sequential, "challenger");
    double b = (double)l[1].b, c2 = (double)l[1].c; /* ln B(b+1, c+1) + (b+c) ln 2 */
    ck_assert_double_eq_tol(l[1].log_lr,
                            lgamma(b + 1) + lgamma(c2 + 1) - lgamma(b + c2 + 2) + (b + c2) * log(2),
                            1e-9);
    ck_assert_double_gt(l[1].log_lr, log(20));
    e2e_down(&d, c);
}
END_TEST

START_TEST(promote_swaps_without_losing_state)
{
    e2e d;
    pcc_client *c = up_with_twins(&d);
    uint64_t i = feed(c, 0);
    learner before[4];
    compare(c, "champ", before);
    /* errors first */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "promote", 2, &id);
    e2e_str(pk, "champ");
    msgpack_pack_uint8(pk, 3);
    e2e_call(c, id, PCP_E_PARAMS);
    pk = pcc_request(c, "promote", 2, &id);
    e2e_str(pk, "t_pa");
    msgpack_pack_uint8(pk, 0);
    e2e_call(c, id, PCP_E_PARAMS);
    pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "bad");
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "challengers");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint8(pk, 3);
    e2e_call(c, id, PCP_E_SPEC);
    pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "bad");
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "challengers");
    msgpack_pack_array(pk, 1);
    spec_rule(pk, "nosuchrule", false);
    e2e_call(c, id, PCP_E_SPEC);
    /* promote pa (index 0) */
    pk = pcc_request(c, "promote", 2, &id);
    e2e_str(pk, "champ");
    msgpack_pack_uint8(pk, 0);
    e2e_call(c, id, -1);
    learner after[4];
    compare(c, "champ", after);
    ck_assert_str_eq(after[0].rule, "pa");
    ck_assert_str_eq(after[0].digest, before[1].digest);
    ck_assert_str_eq(after[1].rule, "perceptron");
    ck_assert_str_eq(after[1].digest, before[0].digest);
    ck_assert_uint_eq(after[1].b, before[1].c);
    ck_assert_uint_eq(after[1].c, before[1].b);
    ck_assert_uint_eq(after[2].b + after[2].c, 0); /* the others start again */
    /* predictions are now pa's */
    double x[DIM] = {0.3, -1, 0.5, 2, -0.25, 1};
    ck_assert(e2e_score(c, "champ", DIM, x) == e2e_score(c, "t_pa", DIM, x));
    /* learning goes on for all of them, then a restart from the journal */
    feed(c, i);
    e2e_kill9(&d);
    pcc_close(c);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    compare(c, "champ", after);
    ck_assert_str_eq(after[0].rule, "pa");
    static const int twin_of[4] = {1, 0, 2, 3}; /* learner k of champ is twin twin_of[k] */
    for (int k = 0; k < 4; k++) {
        char td[24];
        e2e_info_digest(c, twin_names[twin_of[k]], td, sizeof td);
        ck_assert_str_eq(after[k].digest, td);
    }
    /* and from a snapshot */
    e2e_admin(c, "save", NULL, -1);
    pcc_close(c);
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    learner again[4];
    compare(c, "champ", again);
    for (int k = 0; k < 4; k++)
        ck_assert_str_eq(again[k].digest, after[k].digest);
    e2e_down(&d, c);
}
END_TEST

/* ---- experts ---------------------------------------------------------------
 * "ex" (weighted-majority, eta 0.5) and "rx" (randomized, seed 7) combine a
 * perceptron with challengers pa, averaged perceptron and romma: the same
 * rules as the twins, fed the same labels, so every expert's own prediction
 * is its twin's. */

/* name: a perceptron with the first nchallengers of pa, averaged perceptron
 * and romma, combined as how says; eta > 0: experts.eta, seed >= 0:
 * experts.seed (else the name's); multiclass with classes or binary. */
static void create_experts(pcc_client *c, const char *name, const char *how, int64_t want,
                           double eta, int64_t seed, int nchallengers, bool multiclass)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, 4 + (eta > 0) + (seed >= 0) + multiclass);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint8(pk, 4);
    e2e_str(pk, "experts");
    e2e_str(pk, how);
    if (eta > 0) {
        e2e_str(pk, "experts.eta");
        msgpack_pack_double(pk, eta);
    }
    if (seed >= 0) {
        e2e_str(pk, "experts.seed");
        msgpack_pack_uint64(pk, (uint64_t)seed);
    }
    if (multiclass)
        pack_classes(pk);
    e2e_str(pk, "challengers");
    msgpack_pack_array(pk, (size_t)nchallengers);
    static const char *const rules[] = {"pa", "perceptron", "romma"};
    for (int i = 0; i < nchallengers; i++)
        spec_rule(pk, rules[i], i == 1);
    e2e_call(c, id, want);
}

typedef struct answer {
    int label;    /* binary */
    char cls[8];  /* multiclass: the class ("" when binary) */
    double score;
    int64_t expert; /* -1: nil */
} answer;

static bool same_label(const answer *a, const answer *b)
{
    return a->label == b->label && strcmp(a->cls, b->cls) == 0;
}

static answer predict_answer(pcc_client *c, const char *model, const double x[DIM])
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
    e2e_str(pk, model);
    e2e_dense(pk, DIM, x);
    const msgpack_object *r = e2e_call(c, id, -1);
    const msgpack_object *e = pcc_map_get(r, "expert"), *label = pcc_map_get(r, "label");
    answer a = {.score = pcc_number(pcc_map_get(r, "score")), .expert = -1};
    if (label->type == MSGPACK_OBJECT_STR)
        copy_str(label, a.cls, sizeof a.cls);
    else
        a.label = (int)pcc_number(label);
    if (e && e->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        a.expert = (int64_t)e->via.u64;
    return a;
}

typedef struct experts_state {
    uint64_t rounds, mistakes, best, wrong[4];
    double bound, weight[4];
} experts_state;

static void experts_of(pcc_client *c, const char *model, experts_state *out)
{
    const msgpack_object *x = pcc_map_get(e2e_admin(c, "compare", model, -1), "experts");
    ck_assert(x && x->type == MSGPACK_OBJECT_MAP);
    out->rounds = (uint64_t)pcc_number(pcc_map_get(x, "rounds"));
    out->mistakes = (uint64_t)pcc_number(pcc_map_get(x, "mistakes"));
    out->best = (uint64_t)pcc_number(pcc_map_get(x, "best_expert_mistakes"));
    const msgpack_object *b = pcc_map_get(x, "bound");
    out->bound = b->type == MSGPACK_OBJECT_NIL ? NAN : pcc_number(b);
    const msgpack_object *all = pcc_map_get(x, "experts");
    ck_assert_uint_eq(all->via.array.size, 4);
    for (int i = 0; i < 4; i++) {
        out->wrong[i] = (uint64_t)pcc_number(pcc_map_get(&all->via.array.ptr[i], "mistakes"));
        out->weight[i] = pcc_number(pcc_map_get(&all->via.array.ptr[i], "weight"));
    }
}

/* The twins' answers for x into twin[], and the weights model's experts
 * have now into w[]: 0.5^m_i (eta 1/2), normalised, as compare says. */
static void twin_weights(pcc_client *c, const char *model, const char *const twins[4],
                         const double x[DIM], answer twin[4], double w[4])
{
    experts_state s;
    experts_of(c, model, &s);
    double sum = 0;
    for (int i = 0; i < 4; i++) {
        twin[i] = predict_answer(c, twins[i], x);
        sum += w[i] = pow(0.5, (double)(s.wrong[i] - s.best));
    }
    for (int i = 0; i < 4; i++) {
        w[i] /= sum;
        ck_assert_double_eq_tol(s.weight[i], w[i], 1e-12);
    }
}

/* A randomized model's answer for x: the prediction of the expert it names. */
static void check_draw(pcc_client *c, const char *model, const double x[DIM],
                       const answer twin[4])
{
    answer r = predict_answer(c, model, x);
    ck_assert(r.expert >= 0 && r.expert < 4);
    ck_assert(same_label(&r, &twin[r.expert]));
    ck_assert(r.score == twin[r.expert].score);
}

/* Checks ex's and rx's answers for x against the twins' own predictions:
 * ex the weighted vote, rx the expert it names. */
static void check_answers(pcc_client *c, const double x[DIM])
{
    answer twin[4];
    double w[4], vote = 0;
    twin_weights(c, "ex", twin_names, x, twin, w);
    for (int i = 0; i < 4; i++)
        vote += w[i] * twin[i].label;
    answer a = predict_answer(c, "ex", x);
    ck_assert_int_eq(a.expert, -1);
    ck_assert_double_eq_tol(a.score, vote, 1e-12);
    ck_assert_int_eq(a.label, vote > 0 ? 1 : vote < 0 ? -1 : twin[0].label);
    check_draw(c, "rx", x, twin);
}

/* Restarts d after kill -9 (how 0: the journal's replay) or a save and a
 * clean stop (1: the snapshots); c's connection is closed, the new one
 * returned. */
static pcc_client *restart(e2e *d, pcc_client *c, int how)
{
    if (how == 0) {
        e2e_kill9(d);
        pcc_close(c);
    } else {
        e2e_admin(c, "save", NULL, -1);
        pcc_close(c);
        ck_assert_int_eq(e2e_stop(d), 0);
    }
    e2e_start(d);
    return e2e_connect(d->sock);
}

/* After a restart: model's experts are as s was (every field), and answer
 * probe as a did. */
static void experts_as_before(pcc_client *c, const char *model, const experts_state *s,
                              const double probe[DIM], const answer *a)
{
    experts_state again;
    experts_of(c, model, &again);
    ck_assert_uint_eq(again.rounds, s->rounds);
    ck_assert_uint_eq(again.mistakes, s->mistakes);
    ck_assert_uint_eq(again.best, s->best);
    ck_assert(memcmp(again.wrong, s->wrong, sizeof again.wrong) == 0);
    ck_assert(memcmp(again.weight, s->weight, sizeof again.weight) == 0);
    ck_assert(again.bound == s->bound || (isnan(again.bound) && isnan(s->bound)));
    answer b = predict_answer(c, model, probe);
    ck_assert(same_label(&b, a) && b.score == a->score && b.expert == a->expert);
}

/* models' experts (s[], as now) and their answers to probe are the same
 * after kill -9 (the journal's replay) and after a snapshot; returns the
 * client of the restarted daemon. */
static pcc_client *survive_restarts(e2e *d, pcc_client *c, const char *const models[2],
                                    const experts_state s[2], const double probe[DIM])
{
    answer a[2] = {predict_answer(c, models[0], probe), predict_answer(c, models[1], probe)};
    for (int how = 0; how < 2; how++) {
        c = restart(d, c, how);
        for (int m = 0; m < 2; m++)
            experts_as_before(c, models[m], &s[m], probe, &a[m]);
    }
    return c;
}

START_TEST(experts_answer_from_every_rule_and_survive_restarts)
{
    e2e d;
    pcc_client *c = up_with_twins(&d);
    create_experts(c, "ex", "weighted-majority", -1, 0.5, -1, 3, false);
    create_experts(c, "rx", "randomized", -1, 0, 7, 3, false);
    /* refused: no challengers, eta past 1/2, an unknown combination */
    create_experts(c, "bad", "weighted-majority", PCP_E_SPEC, 0.5, -1, 0, false);
    create_experts(c, "bad", "weighted-majority", PCP_E_SPEC, 0.7, -1, 3, false);
    create_experts(c, "bad", "majority", PCP_E_SPEC, 0.5, -1, 3, false);
    const double probe[DIM] = {0.3, -1, 0.5, 2, -0.25, 1};
    uint64_t mistakes[2] = {0, 0};
    for (uint64_t i = 0; i < 400; i++) {
        double x[DIM];
        int y;
        example(i, x, &y);
        if (i % 50 == 0)
            check_answers(c, x);
        /* the label's answer is the experts' (predicted before learning) */
        answer before = predict_answer(c, "ex", x);
        const msgpack_object *o = e2e_label(c, "ex", DIM, x, y);
        ck_assert_int_eq((int)pcc_number(pcc_map_get(o, "predicted")), before.label);
        mistakes[0] += pcc_map_get(o, "mistake")->via.boolean;
        o = e2e_label(c, "rx", DIM, x, y);
        mistakes[1] += pcc_map_get(o, "mistake")->via.boolean;
        for (int k = 0; k < 4; k++)
            e2e_label(c, twin_names[k], DIM, x, y);
    }
    experts_state s[2];
    experts_of(c, "ex", &s[0]);
    experts_of(c, "rx", &s[1]);
    for (int m = 0; m < 2; m++) {
        ck_assert_uint_eq(s[m].rounds, 400);
        ck_assert_uint_eq(s[m].mistakes, mistakes[m]);
        /* each expert's mistakes are its twin's */
        for (int k = 0; k < 4; k++)
            ck_assert_uint_eq(s[m].wrong[k], e2e_info_u64(c, twin_names[k], "mistakes"));
    }
    /* seed 001's bound for WMA at eta 1/2: 3 m* + 4 ln 4 */
    ck_assert_double_eq_tol(s[0].bound, 3.0 * (double)s[0].best + 4 * log(4), 1e-9);
    ck_assert_uint_le(s[0].mistakes, (uint64_t)s[0].bound);
    ck_assert(isnan(s[1].bound)); /* the schedule: no fixed-eta bound */
    check_answers(c, probe);
    static const char *const models[2] = {"ex", "rx"};
    c = survive_restarts(&d, c, models, s, probe);
    answer a = predict_answer(c, "ex", probe);
    /* promote: the experts trade places, the combination is unchanged */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "promote", 2, &id);
    e2e_str(pk, "ex");
    msgpack_pack_uint8(pk, 0);
    e2e_call(c, id, -1);
    experts_state p;
    experts_of(c, "ex", &p);
    ck_assert_uint_eq(p.wrong[0], s[0].wrong[1]);
    ck_assert_uint_eq(p.wrong[1], s[0].wrong[0]);
    answer b = predict_answer(c, "ex", probe);
    ck_assert(b.label == a.label && b.score == a.score);
    e2e_down(&d, c);
}
END_TEST

/* ---- multiclass experts ----------------------------------------------------
 * "mex" (weighted-majority, eta 0.5) and "mrx" (randomized, the name's seed)
 * over classes a, b, c, beside multiclass twins: the vote is per class. */

static const char *const class_twins[] = {"m_perceptron", "m_pa", "m_avg", "m_romma"};

/* Example i's class: the largest of three linear scores of its features,
 * every tenth moved to the next class (noise). */
static int class_example(uint64_t i, double x[DIM])
{
    static const double w[3][DIM] = {{1, -1, 0.5, 0, 0, 0.5}, {-1, 0.5, 0, 1, 0.5, 0},
                                     {0, 0.5, -1, -0.5, 1, 0}};
    int ignored, best = 0;
    example(i, x, &ignored);
    double top = -INFINITY;
    for (int k = 0; k < 3; k++) {
        double score = 0;
        for (int j = 0; j < DIM; j++)
            score += w[k][j] * x[j];
        if (score > top) {
            top = score;
            best = k;
        }
    }
    return i % 10 == 3 ? (best + 1) % 3 : best;
}

static const msgpack_object *label_class(pcc_client *c, const char *model, const double x[DIM],
                                         int cls)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, model);
    e2e_dense(pk, DIM, x);
    e2e_str(pk, classes[cls]);
    return e2e_call(c, id, -1);
}

static int class_index(const char *cls)
{
    for (int k = 0; k < 3; k++)
        if (strcmp(cls, classes[k]) == 0)
            return k;
    ck_abort_msg("no class %s", cls);
    return -1;
}

/* Checks mex's and mrx's answers for x against the twins': mex the class
 * with the most weight, a tie going to the lowest-numbered expert's class,
 * scored by its share of the weight; mrx the expert it names. */
static void check_class_answers(pcc_client *c, const double x[DIM])
{
    answer twin[4];
    double w[4], vote[3] = {0};
    twin_weights(c, "mex", class_twins, x, twin, w);
    for (int i = 0; i < 4; i++)
        vote[class_index(twin[i].cls)] += w[i];
    int best = class_index(twin[0].cls);
    for (int i = 1; i < 4; i++)
        if (vote[class_index(twin[i].cls)] > vote[best])
            best = class_index(twin[i].cls);
    answer a = predict_answer(c, "mex", x);
    ck_assert_int_eq(a.expert, -1);
    ck_assert_str_eq(a.cls, classes[best]);
    ck_assert_double_eq_tol(a.score, vote[best], 1e-12);
    check_draw(c, "mrx", x, twin);
}

START_TEST(multiclass_experts_vote_per_class_and_survive_restarts)
{
    e2e d;
    pcc_client *c = up_journaled(&d);
    create_twins(c, class_twins, true);
    create_experts(c, "mex", "weighted-majority", -1, 0.5, -1, 3, true);
    create_experts(c, "mrx", "randomized", -1, 0, -1, 3, true);
    static const char *const models[2] = {"mex", "mrx"};
    uint64_t mistakes[2] = {0, 0};
    for (uint64_t i = 0; i < 400; i++) {
        double x[DIM];
        int y = class_example(i, x);
        if (i < 20 || i % 50 == 0) /* early, while the weights are close */
            check_class_answers(c, x);
        for (int m = 0; m < 2; m++) {
            /* the label's answer is the experts' (predicted before learning) */
            answer before = predict_answer(c, models[m], x);
            const msgpack_object *o = label_class(c, models[m], x, y);
            ck_assert(pcc_str_eq(pcc_map_get(o, "predicted"), before.cls));
            bool wrong = pcc_map_get(o, "mistake")->via.boolean;
            ck_assert(wrong == (class_index(before.cls) != y));
            mistakes[m] += wrong;
        }
        for (int k = 0; k < 4; k++)
            label_class(c, class_twins[k], x, y);
    }
    experts_state s[2];
    for (int m = 0; m < 2; m++) {
        experts_of(c, models[m], &s[m]);
        ck_assert_uint_eq(s[m].rounds, 400);
        ck_assert_uint_eq(s[m].mistakes, mistakes[m]);
        for (int k = 0; k < 4; k++)
            ck_assert_uint_eq(s[m].wrong[k], e2e_info_u64(c, class_twins[k], "mistakes"));
    }
    ck_assert_uint_gt(s[0].mistakes, 0);
    ck_assert_uint_le(s[0].mistakes, (uint64_t)(3.0 * (double)s[0].best + 4 * log(4)));
    const double probe[DIM] = {0.3, -1, 0.5, 2, -0.25, 1};
    check_class_answers(c, probe);
    c = survive_restarts(&d, c, models, s, probe);
    e2e_down(&d, c);
}
END_TEST

/* ---- experts and label later ----------------------------------------------
 * "ev" (weighted-majority) and "rv" (randomized) learn every label through
 * predict with an event and label_event, "evl" and "rvl" (the same specs)
 * through label, in the same order: the experts' rounds, mistakes and
 * weights are the same after every step, and after kill -9 and a snapshot.
 * rv and rvl are given one seed: their names would give two. */

/* model's and twin's experts, the same in every field */
static void same_experts(pcc_client *c, const char *model, const char *twin)
{
    experts_state a, b;
    experts_of(c, model, &a);
    experts_of(c, twin, &b);
    ck_assert_uint_eq(a.rounds, b.rounds);
    ck_assert_uint_eq(a.mistakes, b.mistakes);
    ck_assert(memcmp(a.wrong, b.wrong, sizeof a.wrong) == 0);
    ck_assert(memcmp(a.weight, b.weight, sizeof a.weight) == 0);
}

/* The outcome y of event ev (x) to model, and y to twin by label: the two
 * answers' predicted (the experts' now) agree; and, labelled at once, the
 * served mistake is label's. */
static void outcome(pcc_client *c, const char *model, const char *twin, uint64_t ev,
                    const double x[DIM], int y, bool at_once)
{
    const msgpack_object *o = label_event(c, model, ev, y);
    int predicted = (int)pcc_number(pcc_map_get(o, "predicted"));
    int served = (int)pcc_number(pcc_map_get(o, "served"));
    bool mistake = pcc_map_get(o, "mistake")->via.boolean;
    o = e2e_label(c, twin, DIM, x, y);
    ck_assert_int_eq(predicted, (int)pcc_number(pcc_map_get(o, "predicted")));
    if (at_once) {
        ck_assert_int_eq(served, predicted);
        ck_assert(mistake == pcc_map_get(o, "mistake")->via.boolean);
    }
}

START_TEST(experts_learn_from_label_event_as_from_label)
{
    e2e d;
    pcc_client *c = up_journaled(&d);
    static const char *const by_event[2] = {"ev", "rv"}, *const by_label[2] = {"evl", "rvl"};
    static const char *const combination[2] = {"weighted-majority", "randomized"};
    for (int m = 0; m < 2; m++) /* each pair one spec */
        for (int twin = 0; twin < 2; twin++)
            create_experts(c, twin ? by_label[m] : by_event[m], combination[m], -1, m ? 0 : 0.5,
                           m ? 7 : -1, 3, false);
    for (uint64_t i = 0; i < 300; i += 3) {
        double x[3][DIM];
        int y[3];
        for (int k = 0; k < 3; k++)
            example(i + (uint64_t)k, x[k], &y[k]);
        for (int m = 0; m < 2; m++) {
            /* one event labelled at once, two more labelled in reverse order */
            const msgpack_object *p = predict_event(c, by_event[m], i, x[0]);
            ck_assert(pcc_map_get(p, "expert") != NULL);
            outcome(c, by_event[m], by_label[m], i, x[0], y[0], true);
            predict_event(c, by_event[m], i + 1, x[1]);
            predict_event(c, by_event[m], i + 2, x[2]);
            outcome(c, by_event[m], by_label[m], i + 2, x[2], y[2], false);
            outcome(c, by_event[m], by_label[m], i + 1, x[1], y[1], false);
            same_experts(c, by_event[m], by_label[m]);
        }
    }
    experts_state s[2];
    const double probe[DIM] = {0.3, -1, 0.5, 2, -0.25, 1};
    for (int m = 0; m < 2; m++) {
        experts_of(c, by_event[m], &s[m]);
        ck_assert_uint_eq(s[m].rounds, 300);
        ck_assert_uint_gt(s[m].mistakes, 0);
    }
    c = survive_restarts(&d, c, by_event, s, probe);
    for (int m = 0; m < 2; m++)
        same_experts(c, by_event[m], by_label[m]);
    e2e_down(&d, c);
}
END_TEST

/* experts.seed left out: the model's name's.  "ra" and "rb", one spec, draw
 * apart; "ra" dropped and created again draws as before; the seeds survive
 * kill -9 (the journal) and a snapshot; a seed given ("rc") wins. */
static uint64_t seed_of(pcc_client *c, const char *model)
{
    const msgpack_object *x = pcc_map_get(e2e_admin(c, "info", model, -1), "experts");
    ck_assert(x && x->type == MSGPACK_OBJECT_MAP);
    const msgpack_object *seed = pcc_map_get(x, "seed");
    ck_assert(seed && seed->type == MSGPACK_OBJECT_POSITIVE_INTEGER);
    return seed->via.u64;
}

enum { ROUNDS = 40 };

/* The experts model follows for probe in each of ROUNDS labels. */
static void draws(pcc_client *c, const char *model, const double probe[DIM], int64_t *out)
{
    for (uint64_t i = 0; i < ROUNDS; i++) {
        out[i] = predict_answer(c, model, probe).expert;
        double x[DIM];
        int y;
        example(i, x, &y);
        e2e_label(c, model, DIM, x, y);
    }
}

START_TEST(experts_draw_under_their_models_seed)
{
    e2e d;
    pcc_client *c = up_journaled(&d);
    create_experts(c, "ra", "randomized", -1, 0, -1, 3, false);
    create_experts(c, "rb", "randomized", -1, 0, -1, 3, false);
    create_experts(c, "rc", "randomized", -1, 0, 7, 3, false);
    const double probe[DIM] = {0.3, -1, 0.5, 2, -0.25, 1};
    int64_t a[ROUNDS], b[ROUNDS], again[ROUNDS];
    draws(c, "ra", probe, a);
    draws(c, "rb", probe, b);
    uint64_t seeds[3] = {seed_of(c, "ra"), seed_of(c, "rb"), seed_of(c, "rc")};
    ck_assert_uint_ne(seeds[0], seeds[1]);
    ck_assert_uint_eq(seeds[2], 7);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    e2e_admin(c, "drop", "ra", -1);
    create_experts(c, "ra", "randomized", -1, 0, -1, 3, false);
    ck_assert_uint_eq(seed_of(c, "ra"), seeds[0]);
    draws(c, "ra", probe, again);
    ck_assert(memcmp(a, again, sizeof a) == 0);
    answer before = predict_answer(c, "rb", probe);
    for (int how = 0; how < 2; how++) {
        c = restart(&d, c, how);
        ck_assert_uint_eq(seed_of(c, "ra"), seeds[0]);
        ck_assert_uint_eq(seed_of(c, "rb"), seeds[1]);
        ck_assert_uint_eq(seed_of(c, "rc"), seeds[2]);
        ck_assert_int_eq(predict_answer(c, "rb", probe).expert, before.expert);
    }
    e2e_down(&d, c);
}
END_TEST

/* promote.auto: "m" (the plain perceptron, challenger the averaged one)
 * promotes it once the sequential test finds it better at 0.95 and it has
 * learned 500 labels; "slow" (min_examples 100000) never does; the twins
 * show that nothing was lost, and the journal's replay promotes at the same
 * label. */
static void create_auto(pcc_client *c, const char *name, unsigned min_examples)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, 6);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint8(pk, 4);
    e2e_str(pk, "challengers");
    msgpack_pack_array(pk, 1);
    spec_rule(pk, "perceptron", true);
    e2e_str(pk, "promote.auto");
    msgpack_pack_true(pk);
    e2e_str(pk, "promote.confidence");
    msgpack_pack_double(pk, 0.95);
    e2e_str(pk, "promote.min_examples");
    msgpack_pack_uint32(pk, min_examples);
    e2e_call(c, id, -1);
}

static uint64_t promotions(pcc_client *c, const char *model)
{
    const msgpack_object *a = pcc_map_get(e2e_admin(c, "compare", model, -1), "auto_promote");
    ck_assert(a && a->type == MSGPACK_OBJECT_MAP);
    return (uint64_t)pcc_number(pcc_map_get(a, "promotions"));
}

START_TEST(auto_promotion_is_logged_counted_and_replayed)
{
    e2e d;
    pcc_client *c = up_journaled(&d);
    create_all(c); /* the twins t_perceptron and t_avg */
    create_auto(c, "m", 500);
    create_auto(c, "slow", 100000);
    /* refused: promote.auto without challengers, a confidence of 1 */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "bad");
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "promote.auto");
    msgpack_pack_true(pk);
    e2e_call(c, id, PCP_E_SPEC);
    pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "bad");
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "promote.confidence");
    msgpack_pack_double(pk, 1);
    e2e_call(c, id, PCP_E_SPEC);
    uint64_t promoted_at = 0;
    for (uint64_t i = 0; i < 3000; i++) {
        double x[DIM];
        int y;
        example(i, x, &y);
        e2e_label(c, "m", DIM, x, y);
        e2e_label(c, "slow", DIM, x, y);
        e2e_label(c, "t_perceptron", DIM, x, y);
        e2e_label(c, "t_avg", DIM, x, y);
        if (!promoted_at && i % 10 == 9 && promotions(c, "m"))
            promoted_at = i + 1;
    }
    ck_assert_msg(promoted_at >= 500, "promoted after %llu labels", (unsigned long long)promoted_at);
    learner l[4];
    for (int restart = 0; restart < 2; restart++) {
        ck_assert_uint_eq(compare(c, "m", l), 1);
        ck_assert_uint_eq(promotions(c, "m"), 1);
        char td[24];
        e2e_info_digest(c, "t_avg", td, sizeof td);
        ck_assert_str_eq(l[0].digest, td); /* the averaged perceptron serves */
        e2e_info_digest(c, "t_perceptron", td, sizeof td);
        ck_assert_str_eq(l[1].digest, td);
        ck_assert_uint_eq(promotions(c, "slow"), 0);
        compare(c, "slow", l);
        ck_assert_str_eq(l[0].digest, td); /* still the plain one */
        const msgpack_object *st = e2e_admin(c, "stats", NULL, -1);
        ck_assert_uint_eq((uint64_t)pcc_number(pcc_map_get(st, "auto_promotions")), 1);
        if (restart == 0) { /* kill -9: the journal's replay promotes again, at the same label */
            ck_assert(e2e_log_has(&d, "promoted automatically"));
            e2e_kill9(&d);
            pcc_close(c);
            e2e_start(&d);
            c = e2e_connect(d.sock);
        }
    }
    e2e_down(&d, c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_challengers");
    TU_TCASE(s, "challengers", 120, challengers_learn_every_label_in_order,
        compare_finds_the_better_rule, promote_swaps_without_losing_state,
        experts_answer_from_every_rule_and_survive_restarts,
        multiclass_experts_vote_per_class_and_survive_restarts,
        experts_learn_from_label_event_as_from_label,
        experts_draw_under_their_models_seed, auto_promotion_is_logged_counted_and_replayed);
    return tu_run(s);
}
