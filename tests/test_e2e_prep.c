/* test_e2e_prep.c - feature preparation through the real daemon: a spec
 * given in the config and the same spec given to `create` make the same
 * model; info shows it; weights answer each feature's scale; a kill -9 and
 * a restart (snapshot, then the journal's records replayed through the name
 * step and the scale step again) give back the model bit for bit; bad specs
 * are refused with a message naming the key.  (Replicas: test_e2e_redis.c,
 * prepared_models_replicate_bit_identically.) */
#include "lib/perceptron.h"
#include "tests/e2e.h"
#include "tests/testutil.h"
#include "tests/mpnotation.h"

#include <math.h>

#define SPEC "{'rule': 'pa', 'averaged': true, 'hash_bits': 18, 'scale': 'max', " \
             "'transforms': ['inc*:log', 'age:bins=30,50', 'h*:rangebins=5'], "         \
             "'crosses': ['job=,sex='], 'max_crossed': 8}"

/* label (y != 0) or predict example t of a census-like stream: numbers at
 * their own scales and categories, by name; returns the score. */
static double census(pcc_client *c, const char *model, int t, int y)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, y ? "label" : "predict", y ? 3 : 2, &id);
    e2e_str(pk, model);
    uint64_t s = (uint64_t)t * 0x9E3779B97F4A7C15ull + 3;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    static const char *const jobs[] = {"job=clerk", "job=nurse", "job=smith", "job=cook"};
    msgpack_pack_map(pk, 5);
    e2e_str(pk, "age");
    msgpack_pack_double(pk, (double)(17 + s % 70));
    e2e_str(pk, "income");
    msgpack_pack_double(pk, (double)((s >> 8) % 100000));
    e2e_str(pk, "hours");
    msgpack_pack_double(pk, (double)(1 + (s >> 20) % 80));
    e2e_str(pk, jobs[(s >> 30) % 4]);
    msgpack_pack_double(pk, 1);
    e2e_str(pk, (s >> 33) & 1 ? "sex=F" : "sex=M");
    msgpack_pack_double(pk, 1);
    if (y)
        msgpack_pack_int(pk, y);
    return pcc_number(pcc_map_get(e2e_call(c, id, -1), "score"));
}

static int truth(int t)
{
    uint64_t s = (uint64_t)t * 0x9E3779B97F4A7C15ull + 3;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (17 + s % 70 > 40) != ((s >> 33) & 1) ? 1 : -1;
}

static const msgpack_object *create(pcc_client *c, const char *name, const char *spec,
                                    int64_t want_code)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    mp_value(pk, spec);
    return e2e_call(c, id, want_code);
}

static void digest(pcc_client *c, const char *model, char *out)
{
    e2e_info_digest(c, model, out, 32);
}

/* Model m (digest want) comes back bit for bit after a kill -9, everything
 * in the journal only (the restart replays it through the name and scale
 * steps: a probe scores the same bits), and from a snapshot after a clean
 * stop; other (may be NULL, digest want_other) too.  Returns the client of
 * the daemon left running. */
static pcc_client *survives_restarts(e2e *d, pcc_client *c, const char *m, const char *want,
                                     const char *other, const char *want_other)
{
    double probe = census(c, m, 5000, 0);
    pcc_close(c);
    e2e_kill9(d);
    for (int round = 0; round < 2; round++) {
        e2e_start(d);
        c = e2e_connect(d->sock);
        char again[32];
        digest(c, m, again);
        ck_assert_str_eq(again, want);
        if (other) {
            digest(c, other, again);
            ck_assert_str_eq(again, want_other);
        }
        if (round == 1)
            break;
        double after = census(c, m, 5000, 0);
        ck_assert_msg(memcmp(&probe, &after, sizeof probe) == 0, "%.17g != %.17g", probe, after);
        e2e_admin(c, "save", NULL, -1);
        pcc_close(c);
        ck_assert_int_eq(e2e_stop(d), 0);
    }
    return c;
}

START_TEST(config_and_create_make_one_model_that_survives_kill9)
{
    e2e d;
    e2e_init(&d, "snapshot: {interval: 0}\njournal: {fsync: always}\n"
                 "models:\n  conf: {rule: pa, averaged: true, hash_bits: 18, scale: max,\n"
                 "         transforms: ['inc*:log', 'age:bins=30,50', 'h*:rangebins=5'],\n"
                 "         crosses: ['job=,sex='], max_crossed: 8}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    create(c, "made", SPEC, -1);
    for (int t = 0; t < 300; t++) {
        double a = census(c, "conf", t, truth(t)), b = census(c, "made", t, truth(t));
        ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "example %d: %.17g != %.17g", t, a, b);
    }
    char dc[32], dm[32];
    digest(c, "conf", dc);
    digest(c, "made", dm);
    ck_assert_str_eq(dc, dm);
    /* info shows the preparation as the texts that make it */
    const msgpack_object *info = e2e_admin(c, "info", "made", -1);
    const msgpack_object *sc = pcc_map_get(info, "scale"), *tr = pcc_map_get(info, "transforms"),
                         *cr = pcc_map_get(info, "crosses");
    ck_assert(sc && sc->type == MSGPACK_OBJECT_STR && sc->via.str.size == 3 &&
              memcmp(sc->via.str.ptr, "max", 3) == 0);
    ck_assert(tr && tr->type == MSGPACK_OBJECT_ARRAY && tr->via.array.size == 3);
    ck_assert(tr->via.array.ptr[1].via.str.size == 14 &&
              memcmp(tr->via.array.ptr[1].via.str.ptr, "age:bins=30,50", 14) == 0);
    ck_assert(cr && cr->type == MSGPACK_OBJECT_ARRAY && cr->via.array.size == 1);
    ck_assert_uint_eq(e2e_info_u64(c, "made", "max_crossed"), 8);
    /* weights: the scale beside each weight; age's is the largest age sent */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "weights", 2, &id);
    e2e_str(pk, "made");
    msgpack_pack_uint32(pk, 200);
    const msgpack_object *w = e2e_call(c, id, -1);
    bool saw_age = false, saw_bin = false, saw_cross = false;
    double max_age = 0;
    for (int t = 0; t < 300; t++) {
        uint64_t s = (uint64_t)t * 0x9E3779B97F4A7C15ull + 3;
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        max_age = fmax(max_age, (double)(17 + s % 70));
    }
    for (uint32_t i = 0; i < w->via.array.size; i++) {
        const msgpack_object *f = pcc_map_get(&w->via.array.ptr[i], "feature");
        if (f && f->type == MSGPACK_OBJECT_STR && f->via.str.size == 3 &&
            memcmp(f->via.str.ptr, "age", 3) == 0) {
            saw_age = true;
            ck_assert_double_eq(pcc_number(pcc_map_get(&w->via.array.ptr[i], "scale")), max_age);
        }
        /* derived features go by the names they are hashed from */
        char name[64];
        snprintf(name, sizeof name, "%.*s", f && f->type == MSGPACK_OBJECT_STR ? (int)f->via.str.size : 0,
                 f && f->type == MSGPACK_OBJECT_STR ? f->via.str.ptr : "");
        uint32_t idx = (uint32_t)pcc_number(pcc_map_get(&w->via.array.ptr[i], "index"));
        if (!strncmp(name, "age#b", 5) || !strncmp(name, "hours#rb", 8) || strstr(name, "*sex=")) {
            ck_assert_uint_eq(idx, pc_hash_feature(name, strlen(name), 1u << 18));
            saw_bin |= name[0] != 'j';
            saw_cross |= name[0] == 'j';
        }
    }
    ck_assert_msg(saw_age && saw_bin && saw_cross, "weights lists age %d, a bin %d, a cross %d",
                  saw_age, saw_bin, saw_cross);
    c = survives_restarts(&d, c, "made", dm, "conf", dc);
    e2e_down(&d, c);
}
END_TEST

START_TEST(bad_specs_name_the_key)
{
    e2e d;
    pcc_client *c = e2e_up(&d);
    struct {
        const char *spec, *says;
    } bad[] = {
        {"{'transforms': ['age:sqrt']}", "'transforms'"},
        {"{'transforms': ['age:sqrt']}", "unknown transform"},
        {"{'transforms': ['age:bins=5,1']}", "strictly increasing"},
        {"{'transforms': [7]}", "must be a string"},
        {"{'transforms': 'age:log'}", "'transforms'"},
        {"{'crosses': ['a,b,c']}", "'crosses'"},
        {"{'crosses': ['a,b,c']}", "not more"},
        {"{'scale': 'minmax'}", "'scale'"},
        {"{'max_crossed': 0}", "'max_crossed'"},
        {"{'max_crossed': 5000}", "'max_crossed'"},
        {"{'scale': 'max', 'mode': 'batch'}", "mode: batch"},
        {"{'transforms': ['a:log', 'b:log', 'c:log', 'd:log', 'e:log', 'f:log', 'g:log', "
         "'h:log', 'i:log']}", "at most 8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char msg[300];
        pcc_error_message(create(c, "x", bad[i].spec, 10), msg, sizeof msg);
        ck_assert_msg(strstr(msg, bad[i].says), "%s: %s", bad[i].spec, msg);
    }
    ck_assert(!e2e_admin(c, "models", NULL, -1)->via.array.size);
    e2e_down(&d, c);
}
END_TEST

static bool info_is(pcc_client *c, const char *model, const char *key, const char *want)
{
    const msgpack_object *v = pcc_map_get(e2e_admin(c, "info", model, -1), key);
    return v && v->type == MSGPACK_OBJECT_STR && v->via.str.size == strlen(want) &&
           memcmp(v->via.str.ptr, want, strlen(want)) == 0;
}

static bool info_bool(pcc_client *c, const char *model, const char *key)
{
    const msgpack_object *v = pcc_map_get(e2e_admin(c, "info", model, -1), key);
    return v && v->type == MSGPACK_OBJECT_BOOLEAN && v->via.boolean;
}

/* The default template (no template in the config; the comment keeps
 * e2e_write_config from pinning the plain one): what auto_create and a
 * create without those keys get; averaged only where the rule can average. */
START_TEST(the_default_template)
{
    e2e d;
    e2e_init(&d, "# no template: the default template\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    census(c, "auto", 1, 1); /* created on its first label */
    ck_assert(info_is(c, "auto", "rule", "pa") && info_bool(c, "auto", "averaged"));
    ck_assert(info_is(c, "auto", "scale", "rms-sent"));
    ck_assert_uint_eq(e2e_info_u64(c, "auto", "dim"), 1u << 19);
    const msgpack_object *tr = pcc_map_get(e2e_admin(c, "info", "auto", -1), "transforms");
    ck_assert(tr && tr->via.array.size == 1 && tr->via.array.ptr[0].via.str.size == 9 &&
              memcmp(tr->via.array.ptr[0].via.str.ptr, "*:logbins", 9) == 0);
    create(c, "alma", "{'rule': 'alma'}", -1); /* alma cannot average: not averaged */
    ck_assert(info_is(c, "alma", "scale", "rms-sent") && !info_bool(c, "alma", "averaged"));
    char msg[300];
    pcc_error_message(create(c, "x", "{'rule': 'alma', 'averaged': true}", 10), msg, sizeof msg);
    ck_assert_msg(strstr(msg, "additive"), "%s", msg);
    create(c, "plain", "{'rule': 'perceptron', 'averaged': false, 'scale': 'none', 'transforms': []}",
           -1);
    ck_assert(info_is(c, "plain", "scale", "none") && !info_bool(c, "plain", "averaged"));
    e2e_down(&d, c);
}
END_TEST

/* scale: rms-sent through the daemon: the bins hashed past dim and left at
 * 1, the features sent divided by their rms (weights shows both), the model
 * bit for bit after a kill -9 (the journal replayed through the name step
 * and the scale step) and after a snapshot. */
START_TEST(rms_sent_keeps_bins_apart_across_restarts)
{
    e2e d;
    e2e_init(&d, "snapshot: {interval: 0}\njournal: {fsync: always}\n");
    e2e_start(&d);
    pcc_client *c = e2e_connect(d.sock);
    create(c, "rs", "{'rule': 'pa', 'averaged': true, 'hash_bits': 12, 'scale': 'rms-sent', "
                    "'transforms': ['age:logbins', 'hours:bins=20,40']}", -1);
    const uint32_t dim = 1u << 12;
    double sq_age = 0;
    for (int t = 0; t < 200; t++) {
        census(c, "rs", t, truth(t));
        uint64_t s = (uint64_t)t * 0x9E3779B97F4A7C15ull + 3;
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        sq_age += (double)(17 + s % 70) * (double)(17 + s % 70);
    }
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "weights", 2, &id);
    e2e_str(pk, "rs");
    msgpack_pack_uint32(pk, 500);
    const msgpack_object *w = e2e_call(c, id, -1);
    int bins = 0;
    bool saw_age = false;
    for (uint32_t i = 0; i < w->via.array.size; i++) {
        const msgpack_object *e = &w->via.array.ptr[i], *f = pcc_map_get(e, "feature");
        char name[64];
        snprintf(name, sizeof name, "%.*s", f && f->type == MSGPACK_OBJECT_STR ? (int)f->via.str.size : 0,
                 f && f->type == MSGPACK_OBJECT_STR ? f->via.str.ptr : "");
        uint32_t idx = (uint32_t)pcc_number(pcc_map_get(e, "index"));
        double scale = pcc_number(pcc_map_get(e, "scale"));
        if (strstr(name, "#")) {
            ck_assert_msg(idx == dim + pc_hash_feature(name, strlen(name), dim), "%s at %u", name, idx);
            ck_assert_double_eq(scale, 1);
            bins++;
        } else {
            ck_assert_msg(idx < dim, "%s at %u", name, idx);
        }
        if (!strcmp(name, "age")) {
            saw_age = true;
            tu_near(scale, sqrt(sq_age / 200));
        }
    }
    ck_assert_msg(saw_age && bins > 5, "weights lists age %d, %d bins", saw_age, bins);
    char before[32];
    digest(c, "rs", before);
    c = survives_restarts(&d, c, "rs", before, NULL, NULL);
    e2e_down(&d, c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_prep");
    TU_TCASE(s, "prep", 240, config_and_create_make_one_model_that_survives_kill9,
        bad_specs_name_the_key, the_default_template, rms_sent_keeps_bins_apart_across_restarts);
    return tu_run(s);
}
