/* test_e2e_explain.c - predict's {"explain": K} against the real daemon
 * (docs/protocol.md, "Explanations"): on every rule, binary and multiclass,
 * with and without the scale step, the bias, the listed contributions and
 * the rest add up to the score bit for bit, in the order answered; the
 * contributions are the largest, each its weight times its scaled value,
 * named after the features sent (each example's own names, derived ones
 * too, even where the model noted another name for the index); predict_batch
 * and label_event answer the
 * same; an explanation is a read (no right beyond read, nothing journaled);
 * each bad option is refused with a message naming it. */
#include "tests/e2e.h"
#include "tests/testutil.h"
#include "tests/mpnotation.h"
#include "lib/perceptron.h"

enum { PCP_E_PARAMS = 4 }; /* proto.h's, as the wire carries it */

static e2e d;


static void setup(void)
{
    e2e_fixture_start(&d);
}

static void teardown(void)
{
    e2e_fixture_stop(&d);
}

#define NF 8
static const char *const fname[NF] = {"age", "income", "hours", "city=paris", "city=rome",
                                      "edu=phd", "edu=none", "noise"};

/* Example t: a few of the features, values at several scales. */
static int example(int t, double v[NF], bool on[NF])
{
    uint64_t s = 0x2545F4914F6CDD1Dull ^ (uint64_t)(t + 1) * 0x9E3779B97F4A7C15ull;
    double score = -0.5;
    for (int i = 0; i < NF; i++) {
        on[i] = (tu_xorshift(&s) & 3) != 0 || i == 0;
        v[i] = i < 3 ? (double)(tu_xorshift(&s) % 1000) * (i == 1 ? 100 : 0.1) : 1;
        if (on[i])
            score += (i % 2 ? 0.7 : -0.4) * (i < 3 ? v[i] / (i == 1 ? 50000 : 50) : 1);
    }
    return score >= 0 ? 1 : -1;
}

static void pack_features(msgpack_packer *pk, const double v[NF], const bool on[NF])
{
    int n = 0;
    for (int i = 0; i < NF; i++)
        n += on[i];
    msgpack_pack_map(pk, (size_t)n);
    for (int i = 0; i < NF; i++)
        if (on[i]) {
            e2e_str(pk, fname[i]);
            msgpack_pack_double(pk, v[i]);
        }
}

static void create(pcc_client *c, const char *name, const char *rule, bool multiclass,
                   const char *scale, const char *experts)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, 3 + (multiclass ? 1 : 0) + (experts ? 2 : 0));
    e2e_str(pk, "rule");
    e2e_str(pk, rule);
    e2e_str(pk, "scale");
    e2e_str(pk, scale);
    e2e_str(pk, "bias");
    msgpack_pack_true(pk);
    if (multiclass) {
        e2e_str(pk, "open_classes");
        msgpack_pack_true(pk);
    }
    if (experts) {
        e2e_str(pk, "challengers");
        msgpack_pack_array(pk, 1);
        msgpack_pack_map(pk, 1);
        e2e_str(pk, "rule");
        e2e_str(pk, "pa1");
        e2e_str(pk, "experts");
        e2e_str(pk, experts);
    }
    e2e_call(c, id, -1);
}

static const char *const cls_name[3] = {"low", "mid", "high"};

static void pack_label(msgpack_packer *pk, int y, bool multiclass, int t)
{
    if (multiclass)
        e2e_str(pk, cls_name[(y > 0) + (t % 5 == 0)]);
    else
        msgpack_pack_int(pk, y);
}

static void teach(pcc_client *c, const char *model, bool multiclass, int n)
{
    for (int t = 0; t < n; t++) {
        double v[NF];
        bool on[NF];
        int y = example(t, v, on);
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "label", 3, &id);
        e2e_str(pk, model);
        pack_features(pk, v, on);
        pack_label(pk, y, multiclass, t);
        e2e_call(c, id, -1);
    }
}

static bool is_feature(const msgpack_object *name)
{
    for (int i = 0; i < NF; i++)
        if (pcc_str_eq(name, fname[i]))
            return true;
    return false;
}

static unsigned exact, checked; /* explanations that add up bit for bit, of all */

/* One class's explanation: the parts add up to its score bit for bit, in
 * the order answered; the listed ones are the largest; each is its weight
 * times its scaled value; listed + others = the features sent. */
static double check_explanation(const msgpack_object *ex, uint32_t k, int nnz, bool scaled,
                                bool named_all)
{
    const msgpack_object *fs = pcc_map_get(ex, "features");
    ck_assert(fs && fs->type == MSGPACK_OBJECT_ARRAY);
    double score = pcc_number(pcc_map_get(ex, "score"));
    double sum = pcc_number(pcc_map_get(ex, "bias")), last = INFINITY;
    /* the largest k, but none of 0 (a feature the model gives no weight) */
    uint32_t listed = fs->via.array.size;
    ck_assert_uint_le(listed, (uint32_t)nnz < k ? (uint32_t)nnz : k);
    ck_assert_uint_eq(listed + (uint32_t)pcc_number(pcc_map_get(ex, "others")), (uint32_t)nnz);
    if (listed < k && listed < (uint32_t)nnz) /* fewer: the others are 0, all in rest */
        ck_assert(pcc_number(pcc_map_get(ex, "rest")) == 0 ||
                  fabs(pcc_number(pcc_map_get(ex, "rest"))) <= 0x1p-52 * fabs(score) * 4);
    for (uint32_t i = 0; i < listed; i++) {
        const msgpack_object *f = &fs->via.array.ptr[i];
        double w = pcc_number(pcc_map_get(f, "weight")), sv = pcc_number(pcc_map_get(f, "scaled"));
        double v = pcc_number(pcc_map_get(f, "value")), ctb = pcc_number(pcc_map_get(f, "contribution"));
        ck_assert(ctb == w * sv && ctb != 0);
        ck_assert(fabs(ctb) <= last);
        last = fabs(ctb);
        if (!scaled)
            ck_assert(sv == v);
        /* named as the request named it (label_event: as the model remembers
         * it, and a weight of 0 may have no name there) */
        const msgpack_object *name = pcc_map_get(f, "feature");
        if (w != 0 || named_all)
            ck_assert_msg(name && is_feature(name), "a contribution (weight %g) without its "
                          "feature's name", w);
        sum += ctb;
    }
    /* bit for bit but where the listed parts cancel far beyond the score:
     * then within the rounding of the one addition that brings them back */
    double listed_sum = sum;
    sum += pcc_number(pcc_map_get(ex, "rest"));
    ck_assert_msg(fabs(sum - score) <= 0x1p-52 * (fabs(listed_sum) + fabs(score)),
                  "the parts add up to %.17g, the score is %.17g", sum, score);
    exact += sum == score;
    checked++;
    return score;
}

static const msgpack_object *predict_explained(pcc_client *c, const char *model, int t,
                                               uint32_t k, int *nnz)
{
    double v[NF];
    bool on[NF];
    example(t, v, on);
    *nnz = 0;
    for (int i = 0; i < NF; i++)
        *nnz += on[i];
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 3, &id);
    e2e_str(pk, model);
    pack_features(pk, v, on);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "explain");
    msgpack_pack_uint32(pk, k);
    return e2e_call(c, id, -1);
}

/* The answer's explanation(s) checked; the binary one's score is the answer's. */
static void check_answer(const msgpack_object *r, bool multiclass, uint32_t k, int nnz,
                         bool scaled, bool experts)
{
    const msgpack_object *ex = pcc_map_get(r, "explain");
    ck_assert(ex != NULL);
    if (!multiclass) {
        ck_assert(ex->type == MSGPACK_OBJECT_MAP);
        double s = check_explanation(ex, k, nnz, scaled, true);
        if (!experts)
            ck_assert(s == pcc_number(pcc_map_get(r, "score")));
        return;
    }
    /* the predicted class, then the runner-up */
    ck_assert(ex->type == MSGPACK_OBJECT_ARRAY && ex->via.array.size == 3 - 1);
    const msgpack_object *scores = pcc_map_get(r, "scores");
    double s0 = check_explanation(&ex->via.array.ptr[0], k, nnz, scaled, true);
    double s1 = check_explanation(&ex->via.array.ptr[1], k, nnz, scaled, true);
    ck_assert(s0 >= s1);
    const msgpack_object *c0 = pcc_map_get(&ex->via.array.ptr[0], "class");
    const msgpack_object *label = pcc_map_get(r, "label");
    ck_assert(experts || (c0->via.str.size == label->via.str.size &&
                          !memcmp(c0->via.str.ptr, label->via.str.ptr, c0->via.str.size)));
    if (!experts) {
        char name[16];
        memcpy(name, c0->via.str.ptr, c0->via.str.size);
        name[c0->via.str.size] = 0;
        ck_assert(s0 == pcc_number(pcc_map_get(scores, name)));
    }
}

START_TEST(explanations_add_up_to_the_score_on_every_rule)
{
    pcc_client *c = e2e_connect(d.sock);
    int models = 0;
    for (const pc_rule *const *r = pc_rules(); *r; r++) {
        for (int mc = 0; mc < 2; mc++) {
            bool scaled = (models % 2) == 0;
            char name[64];
            snprintf(name, sizeof name, "%s-%s", pc_rule_name(*r), mc ? "mc" : "bin");
            create(c, name, pc_rule_name(*r), mc, scaled ? "std" : "none", NULL);
            /* before any label, then after */
            for (int round = 0; round < 2; round++) {
                if (round)
                    teach(c, name, mc, 150);
                for (int t = 1000; t < 1010; t++) {
                    int nnz;
                    uint32_t k = t % 3 == 0 ? 256 : 1 + (uint32_t)(t % 4);
                    const msgpack_object *a = predict_explained(c, name, t, k, &nnz);
                    if (mc && !round) { /* no class yet: nothing to take apart */
                        ck_assert_uint_eq(pcc_map_get(a, "explain")->via.array.size, 0);
                        continue;
                    }
                    check_answer(a, mc, k, nnz, scaled, false);
                }
            }
            models++;
        }
    }
    /* the rare exceptions above aside, bit for bit */
    ck_assert_msg(exact >= checked * 9 / 10, "%u of %u explanations add up exactly", exact, checked);
    pcc_close(c);
}
END_TEST

/* With experts the answer's score is the vote's: the explanation is the
 * champion's, whose parts still add up to its own score. */
START_TEST(experts_explain_the_champion)
{
    pcc_client *c = e2e_connect(d.sock);
    create(c, "wm", "perceptron", false, "none", "weighted-majority");
    create(c, "wmc", "perceptron", true, "none", "randomized");
    teach(c, "wm", false, 100);
    teach(c, "wmc", true, 100);
    for (int t = 500; t < 520; t++) {
        int nnz;
        const msgpack_object *a = predict_explained(c, "wm", t, 3, &nnz);
        check_answer(a, false, 3, nnz, false, true);
        a = predict_explained(c, "wmc", t, 3, &nnz);
        const msgpack_object *ex = pcc_map_get(a, "explain");
        ck_assert(ex && ex->type == MSGPACK_OBJECT_ARRAY && ex->via.array.size == 2);
        check_explanation(&ex->via.array.ptr[0], 3, nnz, false, true);
        check_explanation(&ex->via.array.ptr[1], 3, nnz, false, true);
    }
    pcc_close(c);
}
END_TEST

/* predict_batch explains each item as predict does; label_event explains
 * the score it answers (the model's before it learns the outcome). */
START_TEST(batches_and_outcomes_are_explained_alike)
{
    pcc_client *c = e2e_connect(d.sock);
    create(c, "b", "alma", false, "std", NULL);
    teach(c, "b", false, 200);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict_batch", 3, &id);
    e2e_str(pk, "b");
    msgpack_pack_array(pk, 5);
    for (int t = 300; t < 305; t++) {
        double v[NF];
        bool on[NF];
        example(t, v, on);
        pack_features(pk, v, on);
    }
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "explain");
    msgpack_pack_uint8(pk, 2);
    const msgpack_object *r = e2e_call(c, id, -1);
    ck_assert(r->type == MSGPACK_OBJECT_ARRAY && r->via.array.size == 5);
    /* copied out: the next call reuses the client's buffer */
    double batch[5][3];
    for (uint32_t j = 0; j < 5; j++) {
        const msgpack_object *ex = pcc_map_get(&r->via.array.ptr[j], "explain");
        const msgpack_object *fs = pcc_map_get(ex, "features");
        batch[j][0] = pcc_number(pcc_map_get(ex, "score"));
        batch[j][1] = pcc_number(pcc_map_get(ex, "rest"));
        batch[j][2] = pcc_number(pcc_map_get(&fs->via.array.ptr[0], "contribution"));
    }
    for (int t = 300; t < 305; t++) {
        int nnz;
        const msgpack_object *a = predict_explained(c, "b", t, 2, &nnz);
        check_answer(a, false, 2, nnz, true, false);
        const msgpack_object *ex = pcc_map_get(a, "explain");
        ck_assert(pcc_number(pcc_map_get(ex, "score")) == batch[t - 300][0]);
        ck_assert(pcc_number(pcc_map_get(ex, "rest")) == batch[t - 300][1]);
        ck_assert(pcc_number(pcc_map_get(&pcc_map_get(ex, "features")->via.array.ptr[0],
                                         "contribution")) == batch[t - 300][2]);
    }
    /* label later: predict with an event, then its outcome with explain */
    double v[NF];
    bool on[NF];
    int y = example(400, v, on), nnz = 0;
    for (int i = 0; i < NF; i++)
        nnz += on[i];
    pk = pcc_request(c, "predict", 3, &id);
    e2e_str(pk, "b");
    pack_features(pk, v, on);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    msgpack_pack_uint8(pk, 1);
    e2e_call(c, id, -1);
    teach(c, "b", false, 3); /* the model moves on meanwhile */
    const msgpack_object *now = predict_explained(c, "b", 400, 4, &nnz);
    double before = pcc_number(pcc_map_get(now, "score"));
    pk = pcc_request(c, "label_event", 4, &id);
    e2e_str(pk, "b");
    msgpack_pack_uint8(pk, 1);
    msgpack_pack_int(pk, y);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "explain");
    msgpack_pack_uint8(pk, 4);
    r = e2e_call(c, id, -1);
    ck_assert(pcc_number(pcc_map_get(r, "score")) == before);
    ck_assert(check_explanation(pcc_map_get(r, "explain"), 4, nnz, true, false) == before);
    pcc_close(c);
}
END_TEST

/* A model from a spec in mpnotation.h's notation. */
static void create_spec(pcc_client *c, const char *name, const char *spec)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    mp_value(pk, spec);
    e2e_call(c, id, -1);
}

/* A {name: value} example of the names PREFIX0 .. PREFIX<n-1>, values by t. */
static void pack_named(msgpack_packer *pk, char prefix, int n, int t)
{
    msgpack_pack_map(pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        char name[8];
        snprintf(name, sizeof name, "%c%d", prefix, i);
        e2e_str(pk, name);
        msgpack_pack_double(pk, 1 + (double)((t * 7 + i * 13) % 40));
    }
}

/* Every listed part of explanation ex is named by one of the names its
 * example sent, PREFIX<i>, or one the model derived from one ("q3#lb4", in
 * the bins' own half of the space), and that name hashes to the part's index. */
static void check_own_names(const msgpack_object *ex, char prefix, uint32_t dim)
{
    const msgpack_object *fs = pcc_map_get(ex, "features");
    ck_assert(fs && fs->via.array.size > 0);
    for (uint32_t i = 0; i < fs->via.array.size; i++) {
        const msgpack_object *f = &fs->via.array.ptr[i];
        const msgpack_object *name = pcc_map_get(f, "feature");
        ck_assert_msg(name && name->type == MSGPACK_OBJECT_STR, "part %u has no name", i);
        const char *p = name->via.str.ptr;
        uint32_t len = name->via.str.size;
        ck_assert_msg(p[0] == prefix, "part %u is named %.*s, not one of this example's %c names",
                      i, (int)len, p, prefix);
        bool derived = memchr(p, '#', len) != NULL;
        uint32_t idx = (uint32_t)pcc_number(pcc_map_get(f, "index"));
        ck_assert_uint_eq(idx, (derived ? dim : 0) + pc_hash_feature(p, len, dim));
    }
}

/* Names are this request's own: a model of 8 indices has noted other
 * names for all of them (the n names it learned from), and a prediction of
 * q names, or a batch of q, r and s examples, is explained with its own, on
 * the direct path (predict) and the general one (predict_batch). */
START_TEST(parts_are_named_as_their_example_named_them)
{
    pcc_client *c = e2e_connect(d.sock);
    uint32_t id;
    msgpack_packer *pk;
    create_spec(c, "tiny", "{'rule': 'pa', 'hash_bits': 3, 'scale': 'rms-sent', "
                           "'transforms': ['*:logbins'], 'bias': true}");
    for (int t = 0; t < 40; t++) {
        pk = pcc_request(c, "label", 3, &id);
        e2e_str(pk, "tiny");
        pack_named(pk, 'n', 12, t);
        msgpack_pack_int(pk, t % 3 ? 1 : -1);
        e2e_call(c, id, -1);
    }
    for (int t = 0; t < 3; t++) {
        pk = pcc_request(c, "predict", 3, &id);
        e2e_str(pk, "tiny");
        pack_named(pk, 'q', 6, t);
        mp_value(pk, "{'explain': 12}");
        check_own_names(pcc_map_get(e2e_call(c, id, -1), "explain"), 'q', 8);
    }
    pk = pcc_request(c, "predict_batch", 3, &id);
    e2e_str(pk, "tiny");
    msgpack_pack_array(pk, 3);
    pack_named(pk, 'q', 6, 1);
    pack_named(pk, 'r', 5, 2);
    pack_named(pk, 's', 7, 3);
    mp_value(pk, "{'explain': 12}");
    const msgpack_object *r = e2e_call(c, id, -1);
    ck_assert(r->type == MSGPACK_OBJECT_ARRAY && r->via.array.size == 3);
    for (uint32_t j = 0; j < 3; j++)
        check_own_names(pcc_map_get(&r->via.array.ptr[j], "explain"), "qrs"[j], 8);
    pcc_close(c);
}
END_TEST

/* The K largest |contribution| are listed, larger first, equal ones by
 * index, a feature of weight 0 never: the perceptron after one update on
 * {3: 1, 9: 1, 12: 0.5} labelled -1 has w3 = w9 = -1, w12 = -0.5, so
 * {12: 4, 9: 1, 3: 1, 30: 1} has parts -2, -1, -1 and 0, listed as 12, 3, 9. */
START_TEST(the_k_largest_are_listed_equal_ones_by_index)
{
    pcc_client *c = e2e_connect(d.sock);
    uint32_t id;
    create_spec(c, "k", "{'rule': 'perceptron', 'dim': 64, 'scale': 'none', 'transforms': [], "
                        "'averaged': false, 'bias': false}");
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, "k");
    mp_value(pk, "{3: 1, 9: 1, 12: 0.5}");
    msgpack_pack_int(pk, -1);
    e2e_call(c, id, -1);
    static const uint32_t order[] = {12, 3, 9};
    for (uint32_t k = 1; k <= 5; k++) {
        pk = pcc_request(c, "predict", 3, &id);
        e2e_str(pk, "k");
        mp_value(pk, "{12: 4, 9: 1, 3: 1, 30: 1}");
        msgpack_pack_map(pk, 1);
        e2e_str(pk, "explain");
        msgpack_pack_uint32(pk, k);
        const msgpack_object *ex = pcc_map_get(e2e_call(c, id, -1), "explain");
        const msgpack_object *fs = pcc_map_get(ex, "features");
        uint32_t want = k < 3 ? k : 3;
        ck_assert_uint_eq(fs->via.array.size, want);
        ck_assert_uint_eq((uint32_t)pcc_number(pcc_map_get(ex, "others")), 4 - want);
        for (uint32_t i = 0; i < want; i++)
            ck_assert_uint_eq((uint32_t)pcc_number(pcc_map_get(&fs->via.array.ptr[i], "index")),
                              order[i]);
        ck_assert(pcc_number(pcc_map_get(&fs->via.array.ptr[0], "contribution")) == -2);
    }
    pcc_close(c);
}
END_TEST

static const msgpack_object *predict_with(pcc_client *c, const char *method, const char *opt,
                                          int kind, int64_t want)
{
    uint32_t id;
    double x[2] = {1, 2};
    msgpack_packer *pk = pcc_request(c, method, 3, &id);
    e2e_str(pk, "m");
    if (!strcmp(method, "predict_batch")) {
        msgpack_pack_array(pk, 1);
        e2e_dense(pk, 2, x);
    } else {
        e2e_dense(pk, 2, x);
    }
    msgpack_pack_map(pk, 1);
    e2e_str(pk, opt);
    switch (kind) {
    case 0: msgpack_pack_int(pk, 0); break;
    case 1: msgpack_pack_int(pk, 257); break;
    case 2: e2e_str(pk, "five"); break;
    case 3: msgpack_pack_int(pk, -3); break;
    case 4: msgpack_pack_double(pk, 2.5); break;
    default: msgpack_pack_int(pk, 3); break;
    }
    return e2e_call(c, id, want);
}

static void error_says(const msgpack_object *err, const char *needle)
{
    char msg[256];
    pcc_error_message(err, msg, sizeof msg);
    ck_assert_msg(strstr(msg, needle) != NULL, "'%s' does not say '%s'", msg, needle);
}

START_TEST(bad_options_are_refused_naming_them)
{
    pcc_client *c = e2e_connect(d.sock);
    double x[2] = {1, 2};
    e2e_label(c, "m", 2, x, 1);
    uint64_t lsn = e2e_info_u64(c, "m", "journal_lsn");
    ck_assert_uint_gt(lsn, 0); /* the journal is on: a write would move it */
    for (int kind = 0; kind < 5; kind++) {
        error_says(predict_with(c, "predict", "explain", kind, PCP_E_PARAMS), "'explain'");
        error_says(predict_with(c, "predict_batch", "explain", kind, PCP_E_PARAMS), "'explain'");
    }
    error_says(predict_with(c, "predict", "explian", 5, PCP_E_PARAMS), "explian");
    error_says(predict_with(c, "predict", "explian", 5, PCP_E_PARAMS), "event, at, explain");
    /* a batch takes no event: it remembers nothing */
    error_says(predict_with(c, "predict_batch", "event", 5, PCP_E_PARAMS), "unknown option 'event'");
    /* and the good ones change nothing: an explanation is a read */
    predict_with(c, "predict", "explain", 5, -1);
    predict_with(c, "predict_batch", "explain", 5, -1);
    ck_assert_uint_eq(e2e_info_u64(c, "m", "journal_lsn"), lsn);
    ck_assert_uint_eq(e2e_info_u64(c, "m", "examples"), 1);
    pcc_close(c);
    /* after a restart (the journal replayed) too */
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_start(&d);
    c = e2e_connect(d.sock);
    ck_assert_uint_eq(e2e_info_u64(c, "m", "examples"), 1);
    pcc_close(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_explain");
    TCase *tc = TU_TCASE(s, "explain", 300, explanations_add_up_to_the_score_on_every_rule,
        experts_explain_the_champion,
        batches_and_outcomes_are_explained_alike,
        parts_are_named_as_their_example_named_them, the_k_largest_are_listed_equal_ones_by_index,
        bad_options_are_refused_naming_them);
    tcase_add_checked_fixture(tc, setup, teardown);
    return tu_run(s);
}
