/* test_e2e_challengers.c - challengers on the real daemon: every label the
 * model learns (label, label_batch, label_event, a default label on
 * eviction) trains each challenger in the same order, so each is
 * bit-identical to an independent model fed the same stream; `compare`'s
 * McNemar figures agree exactly with the mistake counts and find the
 * averaged perceptron better than the plain one on a noisy stream; `promote`
 * swaps without losing state, and all of it survives kill -9 and restarts. */
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
    static const char *const twins[][2] = {{"t_perceptron", "perceptron"}, {"t_pa", "pa"},
                                           {"t_avg", "perceptron"}, {"t_romma", "romma"}};
    for (int i = 0; i < 4; i++) {
        pk = pcc_request(c, "create", 2, &id);
        e2e_str(pk, twins[i][0]);
        msgpack_pack_map(pk, i == 2 ? 3 : 2);
        e2e_str(pk, "rule");
        e2e_str(pk, twins[i][1]);
        e2e_str(pk, "hash_bits");
        msgpack_pack_uint8(pk, 4);
        if (i == 2) {
            e2e_str(pk, "averaged");
            msgpack_pack_true(pk);
        }
        e2e_call(c, id, -1);
    }
}

static const char *const twin_names[] = {"t_perceptron", "t_pa", "t_avg", "t_romma"};

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
/* champ predicts x under event ev; then its outcome y comes (both succeed) */
static void predict_event(pcc_client *c, uint64_t ev, const double x[DIM])
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 3, &id);
    e2e_str(pk, "champ");
    e2e_dense(pk, DIM, x);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, "event");
    msgpack_pack_uint64(pk, ev);
    e2e_call(c, id, -1);
}

static void label_event(pcc_client *c, uint64_t ev, int y)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label_event", 3, &id);
    e2e_str(pk, "champ");
    msgpack_pack_uint64(pk, ev);
    msgpack_pack_int(pk, y);
    e2e_call(c, id, -1);
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
        predict_event(c, i + k, x);
    }
    for (int k = 2; k >= 0; k--) {
        double x[DIM];
        int y;
        example(i + (uint64_t)k, x, &y);
        label_event(c, i + (uint64_t)k, y);
        label_twins(c, i + (uint64_t)k, y);
    }
    i += 3;
    /* six events with max_pending 4: the first two learn the default -1 */
    for (uint64_t k = 0; k < 6; k++) {
        double x[DIM];
        int y;
        example(i + k, x, &y);
        predict_event(c, i + k, x);
        if (k >= 4)
            label_twins(c, i + k - 4, -1);
    }
    /* and the four still waiting are labelled */
    for (uint64_t k = 2; k < 6; k++) {
        double x[DIM];
        int y;
        example(i + k, x, &y);
        label_event(c, i + k, y);
        label_twins(c, i + k, y);
    }
    return i + 6;
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
    e2e_init(&d, "journal: {enabled: true, fsync: always}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    create_all(c);
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
    e2e_init(&d, "journal: {enabled: true, fsync: always}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    create_all(c);
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

int main(void)
{
    Suite *s = suite_create("e2e_challengers");
    TU_TCASE(s, "challengers", 120, challengers_learn_every_label_in_order,
        compare_finds_the_better_rule, promote_swaps_without_losing_state);
    return tu_run(s);
}
