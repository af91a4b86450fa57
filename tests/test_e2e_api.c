/* test_e2e_api.c - the real daemon over real sockets: every method, every
 * rule, multiclass, pipelining, notifications, TCP and Unix. */
#include "tests/e2e.h"
#include "tests/testutil.h"

#include "lib/perceptron.h"

static e2e d;

static void setup(void)
{
    e2e_init(&d, "limits: {idle_timeout: 30}\n");
    e2e_start(&d);
}

static void teardown(void)
{
    ck_assert_int_eq(e2e_stop(&d), 0);
    e2e_cleanup(&d);
}

/* A separable 2-d stream: y = sign(x0 - x1) with a margin. */
static void example(int t, double x[2], int *y)
{
    double a = (double)((t * 37) % 17) / 17.0 * 2 - 1, b = (double)((t * 53) % 19) / 19.0 * 2 - 1;
    if (fabs(a - b) < 0.2)
        a += a >= b ? 0.3 : -0.3;
    x[0] = a;
    x[1] = b;
    *y = a - b >= 0 ? 1 : -1;
}

START_TEST(every_rule_learns_over_both_transports)
{
    const pc_rule *r = pc_rules()[_i];
    const char *name = pc_rule_name(r);
    char model[80];
    snprintf(model, sizeof model, "m-%s", name);
    pcc_client *u = e2e_connect(d.sock), *t = e2e_connect(d.tcp);
    e2e_create(u, model, name, 2, !pc_rule_has_own_bias(r));
    /* label over the Unix socket, predict over TCP */
    uint64_t mistakes_late = 0;
    for (int i = 0; i < 400; i++) {
        double x[2];
        int y;
        example(i, x, &y);
        const msgpack_object *res = e2e_label(u, model, 2, x, y);
        const msgpack_object *p = pcc_map_get(res, "predicted");
        ck_assert(p && (pcc_number(p) == 1 || pcc_number(p) == -1));
        ck_assert(pcc_map_get(res, "mistake") && pcc_map_get(res, "updated"));
        ck_assert(isfinite(pcc_number(pcc_map_get(res, "score"))));
        const msgpack_object *mk = pcc_map_get(res, "mistake");
        if (i >= 300)
            mistakes_late += mk->via.boolean;
    }
    ck_assert_msg(mistakes_late <= 50, "%s: %llu mistakes in the last 100 of a separable stream",
                  name, (unsigned long long)mistakes_late);
    ck_assert_uint_eq(e2e_info_u64(t, model, "examples"), 400);
    double x[2] = {0.9, -0.9};
    double s = e2e_score(t, model, 2, x);
    ck_assert(isfinite(s));
    /* label_batch and predict_batch */
    uint32_t id;
    msgpack_packer *pk = pcc_request(t, "label_batch", 2, &id);
    e2e_str(pk, model);
    msgpack_pack_array(pk, 10);
    for (int i = 0; i < 10; i++) {
        int y;
        example(1000 + i, x, &y);
        msgpack_pack_array(pk, 2);
        e2e_dense(pk, 2, x);
        msgpack_pack_int(pk, y);
    }
    const msgpack_object *b = e2e_call(t, id, -1);
    ck_assert(pcc_number(pcc_map_get(b, "examples")) == 10);
    ck_assert(pcc_number(pcc_map_get(b, "mistakes")) <= 10);
    pk = pcc_request(t, "predict_batch", 2, &id);
    e2e_str(pk, model);
    msgpack_pack_array(pk, 3);
    for (int i = 0; i < 3; i++)
        e2e_dense(pk, 2, (double[]){1, i});
    b = e2e_call(t, id, -1);
    ck_assert(b->type == MSGPACK_OBJECT_ARRAY && b->via.array.size == 3);
    ck_assert(pcc_map_get(&b->via.array.ptr[0], "label") != NULL);
    ck_assert_uint_eq(e2e_info_u64(u, model, "examples"), 410);
    pcc_close(u);
    pcc_close(t);
}
END_TEST

static const msgpack_object *label_cls(pcc_client *c, const char *model, const char *feat,
                                       const char *cls)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label", 3, &id);
    e2e_str(pk, model);
    msgpack_pack_map(pk, 1);
    e2e_str(pk, feat);
    msgpack_pack_double(pk, 1.0);
    e2e_str(pk, cls);
    return e2e_call(c, id, -1);
}

START_TEST(multiclass_with_classes_added_at_runtime)
{
    pcc_client *c = e2e_connect(d.sock);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "colors");
    msgpack_pack_map(pk, 3);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "hash_bits");
    msgpack_pack_uint8(pk, 16);
    e2e_str(pk, "open_classes");
    msgpack_pack_true(pk);
    e2e_call(c, id, -1);
    static const char *words[] = {"sky", "grass", "blood", "sea", "leaf", "fire"};
    static const char *cls[] = {"blue", "green", "red", "blue", "green", "red"};
    for (int pass = 0; pass < 5; pass++)
        for (int i = 0; i < 6; i++)
            label_cls(c, "colors", words[i], cls[i]);
    /* after a few passes every word predicts its class */
    for (int i = 0; i < 6; i++) {
        pk = pcc_request(c, "predict", 2, &id);
        e2e_str(pk, "colors");
        msgpack_pack_map(pk, 1);
        e2e_str(pk, words[i]);
        msgpack_pack_double(pk, 1.0);
        const msgpack_object *r = e2e_call(c, id, -1);
        ck_assert_msg(pcc_str_eq(pcc_map_get(r, "label"), cls[i]), "word %s", words[i]);
        const msgpack_object *scores = pcc_map_get(r, "scores");
        ck_assert(scores && scores->type == MSGPACK_OBJECT_MAP && scores->via.map.size == 3);
    }
    const msgpack_object *info = e2e_admin(c, "info", "colors", -1);
    const msgpack_object *classes = pcc_map_get(info, "classes");
    ck_assert(classes && classes->via.array.size == 3);
    /* weights of class "red" name the features that were hashed */
    pk = pcc_request(c, "weights", 3, &id);
    e2e_str(pk, "colors");
    e2e_str(pk, "red");
    msgpack_pack_uint8(pk, 2);
    const msgpack_object *w = e2e_call(c, id, -1);
    ck_assert(w->type == MSGPACK_OBJECT_ARRAY && w->via.array.size == 2);
    const msgpack_object *f0 = pcc_map_get(&w->via.array.ptr[0], "feature");
    ck_assert(pcc_str_eq(f0, "blood") || pcc_str_eq(f0, "fire"));
    ck_assert(pcc_number(pcc_map_get(&w->via.array.ptr[0], "weight")) > 0);
    pcc_close(c);
}
END_TEST

/* method(model, {names[0]: 1, ...}[, y | {"event": y}]): the answer. */
static const msgpack_object *named(pcc_client *c, const char *method, const char *model,
                                   const char *const *names, int n, int y, bool event)
{
    uint32_t id;
    bool learns = strcmp(method, "label") == 0;
    msgpack_packer *pk = pcc_request(c, method, learns || event ? 3 : 2, &id);
    e2e_str(pk, model);
    msgpack_pack_map(pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        e2e_str(pk, names[i]);
        msgpack_pack_double(pk, 1.0);
    }
    if (event) {
        msgpack_pack_map(pk, 1);
        e2e_str(pk, "event");
        msgpack_pack_int(pk, y);
    } else if (learns) {
        msgpack_pack_int(pk, y);
    }
    return e2e_call(c, id, -1);
}

static uint64_t names_known(pcc_client *c, const char *model)
{
    return (uint64_t)pcc_number(pcc_map_get(e2e_admin(c, "info", model, -1), "feature_names"));
}

/* A model keeps the names of the features of examples that changed it (the
 * only indices `weights` can show), and of predictions remembered under an
 * event (their label may come), not of plain predictions or of labels it
 * already got right; with challengers, of every label (a challenger may
 * update where the champion did not, and be promoted).  Both paths: the
 * first label creates the model (the general path's), the rest are plain. */
START_TEST(feature_names_are_kept_for_examples_that_change_the_model)
{
    pcc_client *c = e2e_connect(d.sock);
    /* perceptron from zero: the first label is a mistake (score 0) */
    named(c, "label", "nm", (const char *[]){"a"}, 1, 1, false);
    ck_assert_uint_eq(names_known(c, "nm"), 1);
    /* right (score 1 > 0): "b" changes nothing and is not kept */
    const msgpack_object *r = named(c, "label", "nm", (const char *[]){"a", "b"}, 2, 1, false);
    ck_assert(!pcc_map_get(r, "updated") || !pcc_map_get(r, "updated")->via.boolean);
    ck_assert_uint_eq(names_known(c, "nm"), 1);
    named(c, "predict", "nm", (const char *[]){"c"}, 1, 0, false);
    ck_assert_uint_eq(names_known(c, "nm"), 1);
    /* a mistake (score 0 for y = -1 is one): "d" is kept */
    named(c, "label", "nm", (const char *[]){"d"}, 1, -1, false);
    ck_assert_uint_eq(names_known(c, "nm"), 2);
    /* label_batch: only the example that updates */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "label_batch", 2, &id);
    e2e_str(pk, "nm");
    msgpack_pack_array(pk, 2);
    msgpack_pack_array(pk, 2); /* right: a = 1 */
    msgpack_pack_map(pk, 2);
    e2e_str(pk, "a");
    msgpack_pack_double(pk, 1);
    e2e_str(pk, "e");
    msgpack_pack_double(pk, 1);
    msgpack_pack_int(pk, 1);
    msgpack_pack_array(pk, 2); /* wrong: d = -1, so f with -d scores -1 for y = 1 */
    msgpack_pack_map(pk, 2);
    e2e_str(pk, "d");
    msgpack_pack_double(pk, 1);
    e2e_str(pk, "f");
    msgpack_pack_double(pk, 1);
    msgpack_pack_int(pk, 1);
    r = e2e_call(c, id, -1);
    ck_assert_int_eq((int)pcc_number(pcc_map_get(r, "updates")), 1);
    ck_assert_uint_eq(names_known(c, "nm"), 3);
    pk = pcc_request(c, "weights", 2, &id);
    e2e_str(pk, "nm");
    msgpack_pack_uint8(pk, 10);
    r = e2e_call(c, id, -1);
    ck_assert_uint_eq(r->via.array.size, 2); /* a and f (d is back to 0, e never moved) */
    for (uint32_t i = 0; i < r->via.array.size; i++) {
        const msgpack_object *f = pcc_map_get(&r->via.array.ptr[i], "feature");
        ck_assert(pcc_str_eq(f, "a") || pcc_str_eq(f, "f"));
    }
    /* with challengers every label's names are kept */
    e2e_create_with_challenger(c, "nc");
    named(c, "label", "nc", (const char *[]){"a"}, 1, 1, false);
    named(c, "label", "nc", (const char *[]){"a", "b"}, 2, 1, false);
    ck_assert_uint_eq(names_known(c, "nc"), 2);
    pcc_close(c);
}
END_TEST

/* The same for a prediction remembered under an event: kept at once. */
START_TEST(feature_names_of_a_remembered_prediction_are_kept)
{
    pcc_client *c = e2e_connect(d.sock);
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, "ev");
    msgpack_pack_map(pk, 2);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "join.max_pending");
    msgpack_pack_uint8(pk, 8);
    e2e_call(c, id, -1);
    named(c, "predict", "ev", (const char *[]){"p"}, 1, 0, false);
    ck_assert_uint_eq(names_known(c, "ev"), 0);
    named(c, "predict", "ev", (const char *[]){"q", "r"}, 2, 7, true);
    ck_assert_uint_eq(names_known(c, "ev"), 2);
    pcc_close(c);
}
END_TEST

START_TEST(admin_methods)
{
    pcc_client *c = e2e_connect(d.sock);
    const msgpack_object *r = e2e_admin(c, "ping", NULL, -1);
    ck_assert(pcc_str_eq(r, "pong"));
    e2e_create(c, "a", "pa1", 8, true);
    e2e_create(c, "b", "perceptron", 8, true);
    r = e2e_admin(c, "models", NULL, -1);
    ck_assert(r->type == MSGPACK_OBJECT_ARRAY && r->via.array.size == 2);
    ck_assert(pcc_str_eq(&r->via.array.ptr[0], "a") && pcc_str_eq(&r->via.array.ptr[1], "b"));
    /* create an existing model: PCP_E_EXISTS (9) */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 1, &id);
    e2e_str(pk, "a");
    e2e_call(c, id, 9);
    e2e_label(c, "a", 2, (double[]){1, 2}, 1);
    e2e_label(c, "a", 2, (double[]){-1, -2}, -1);
    r = e2e_admin(c, "info", "a", -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "rule"), "pa1"));
    ck_assert(pcc_number(pcc_map_get(r, "examples")) == 2);
    ck_assert(pcc_map_get(pcc_map_get(r, "params"), "C") != NULL);
    ck_assert(pcc_map_get(r, "recent") && pcc_map_get(r, "snapshot") && pcc_map_get(r, "learners"));
    /* save writes the changed models */
    r = e2e_admin(c, "save", NULL, -1);
    ck_assert(pcc_number(pcc_map_get(r, "written")) == 2);
    r = e2e_admin(c, "save", NULL, -1);
    ck_assert(pcc_number(pcc_map_get(r, "written")) == 0);
    r = e2e_admin(c, "info", "a", -1);
    ck_assert(pcc_number(pcc_map_get(pcc_map_get(r, "snapshot"), "generation")) >= 1);
    /* reset forgets, drop removes */
    e2e_admin(c, "reset", "a", -1);
    ck_assert_uint_eq(e2e_info_u64(c, "a", "examples"), 0);
    r = e2e_admin(c, "drop", "b", -1);
    ck_assert(pcc_number(pcc_map_get(r, "snapshots_removed")) >= 1);
    e2e_admin(c, "info", "b", 5);
    r = e2e_admin(c, "stats", NULL, -1);
    ck_assert(pcc_number(pcc_map_get(r, "models")) == 1);
    ck_assert(pcc_number(pcc_map_get(r, "labels")) == 2);
    ck_assert(pcc_number(pcc_map_get(r, "connections")) == 1);
    pcc_close(c);
}
END_TEST

START_TEST(ten_thousand_pipelined_requests_answered_in_order)
{
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "p", "perceptron", 4, true);
    uint32_t first = 0, id;
    for (int i = 0; i < 10000; i++) {
        msgpack_packer *pk = pcc_request(c, i % 2 ? "predict" : "label", i % 2 ? 2 : 3, &id);
        if (i == 0)
            first = id;
        e2e_str(pk, "p");
        e2e_dense(pk, 3, (double[]){(double)(i % 7), 1, -1});
        if (i % 2 == 0)
            msgpack_pack_int(pk, i % 3 ? 1 : -1);
    }
    char err[256];
    ck_assert(pcc_flush(c, err, sizeof err) == 0);
    for (int i = 0; i < 10000; i++) {
        uint32_t got;
        const msgpack_object *error, *result;
        ck_assert_msg(pcc_read(c, &got, &error, &result, 10000, err, sizeof err) == 0, "%s", err);
        ck_assert_uint_eq(got, first + (uint32_t)i);
        ck_assert(error == NULL);
    }
    ck_assert_uint_eq(e2e_info_u64(c, "p", "examples"), 5000);
    pcc_close(c);
}
END_TEST

START_TEST(notification_flood)
{
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "n", "perceptron", 16, true);
    char err[256];
    for (int i = 0; i < 100000; i++) {
        msgpack_packer *pk = pcc_notify(c, "label", 3);
        e2e_str(pk, "n");
        e2e_dense(pk, 2, (double[]){(double)(i % 5) - 2, 1});
        msgpack_pack_int(pk, i % 5 >= 2 ? 1 : -1);
        if (i % 1000 == 999)
            ck_assert(pcc_flush(c, err, sizeof err) == 0);
    }
    /* a bad notification gets no answer and changes nothing */
    msgpack_packer *pk = pcc_notify(c, "label", 3);
    e2e_str(pk, "n");
    e2e_str(pk, "not features");
    msgpack_pack_int(pk, 1);
    e2e_admin(c, "ping", NULL, -1); /* in order: every notification before it is done */
    ck_assert_uint_eq(e2e_info_u64(c, "n", "examples"), 100000);
    const msgpack_object *r = e2e_admin(c, "stats", NULL, -1);
    ck_assert(pcc_number(pcc_map_get(r, "notifications")) == 100001);
    pcc_close(c);
}
END_TEST

START_TEST(models_are_created_on_first_label)
{
    pcc_client *c = e2e_connect(d.sock); /* auto_create needs the admin right */
    e2e_label(c, "fresh", 2, (double[]){1, 1}, 1);
    const msgpack_object *r = e2e_admin(c, "info", "fresh", -1);
    ck_assert(pcc_str_eq(pcc_map_get(r, "rule"), "perceptron"));
    ck_assert(pcc_number(pcc_map_get(r, "dim")) == 1 << 19); /* the built-in template's */
    /* predict does not create */
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
    e2e_str(pk, "other");
    e2e_dense(pk, 1, (double[]){1});
    e2e_call(c, id, 5);
    pcc_close(c);
}
END_TEST

/* A label whose bytes arrive in pieces (half of it, then the rest a beat
 * later, then one byte at a time) is learned exactly as one sent whole: the
 * daemon frames it with the resumable scanner and reads it when complete. */
static void pack_label(msgpack_sbuffer *sb, uint32_t msgid, const char *model, int t)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    double x[2];
    int y;
    example(t, x, &y);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint32(&pk, msgid);
    e2e_str(&pk, "label");
    msgpack_pack_array(&pk, 3);
    e2e_str(&pk, model);
    msgpack_pack_map(&pk, 2); /* {"a": x0, 7: x1}: a name and an index */
    e2e_str(&pk, "a");
    msgpack_pack_double(&pk, x[0]);
    msgpack_pack_uint8(&pk, 7);
    msgpack_pack_double(&pk, x[1]);
    msgpack_pack_int(&pk, y);
}

START_TEST(labels_arriving_in_pieces_learn_as_whole_ones)
{
    pcc_client *c = e2e_connect(d.sock);
    e2e_create(c, "whole", "pa", 16, true);
    e2e_create(c, "pieces", "pa", 16, true);
    char err[256];
    for (int t = 0; t < 40; t++) {
        msgpack_sbuffer a, b;
        msgpack_sbuffer_init(&a);
        msgpack_sbuffer_init(&b);
        pack_label(&a, 2 * (uint32_t)t, "whole", t);
        pack_label(&b, 2 * (uint32_t)t + 1, "pieces", t);
        pcc_raw(c, a.data, a.size);
        if (t % 2 == 0) { /* half now, the rest later */
            pcc_raw(c, b.data, b.size / 2);
            ck_assert(pcc_flush(c, err, sizeof err) == 0);
            e2e_sleep_ms(5);
            pcc_raw(c, b.data + b.size / 2, b.size - b.size / 2);
        } else { /* a byte at a time */
            ck_assert(pcc_flush(c, err, sizeof err) == 0);
            for (size_t i = 0; i < b.size; i++) {
                pcc_raw(c, b.data + i, 1);
                ck_assert(pcc_flush(c, err, sizeof err) == 0);
                if (i % 8 == 0)
                    e2e_sleep_ms(1);
            }
        }
        ck_assert(pcc_flush(c, err, sizeof err) == 0);
        for (uint32_t k = 0; k < 2; k++) {
            uint32_t got;
            const msgpack_object *error, *result;
            ck_assert_msg(pcc_read(c, &got, &error, &result, 10000, err, sizeof err) == 0, "%s", err);
            ck_assert_uint_eq(got, 2 * (uint32_t)t + k);
            ck_assert(error == NULL);
        }
        msgpack_sbuffer_destroy(&a);
        msgpack_sbuffer_destroy(&b);
    }
    ck_assert_uint_eq(e2e_info_u64(c, "pieces", "examples"), 40);
    ck_assert_uint_eq(e2e_info_u64(c, "whole", "updates"), e2e_info_u64(c, "pieces", "updates"));
    uint32_t id;
    double s[2];
    for (int m = 0; m < 2; m++) {
        msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
        e2e_str(pk, m ? "pieces" : "whole");
        msgpack_pack_map(pk, 2);
        e2e_str(pk, "a");
        msgpack_pack_double(pk, 0.25);
        msgpack_pack_uint8(pk, 7);
        msgpack_pack_double(pk, -0.5);
        s[m] = pcc_number(pcc_map_get(e2e_call(c, id, -1), "score"));
    }
    ck_assert_msg(s[0] == s[1] && s[0] != 0, "scores %.17g and %.17g", s[0], s[1]);
    pcc_close(c);
}
END_TEST

/* The daemon's CPU time (user + system) in clock ticks, from /proc. */
static long cpu_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* fields after the command name */
    ck_assert_ptr_nonnull(p);
    long utime = 0, stime = 0;
    /* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime,
                            &stime), 2);
    return utime + stime;
}

/* busy_poll_us (50 by default) spins only right after input: an idle
 * daemon, even one that just served a burst, sleeps. */
/* create(name, {rule: perceptron, dim: 4, calibrate: cal[, classes: [a, b]]}) */
static void create_cal(pcc_client *c, const char *name, bool cal, bool multiclass)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "create", 2, &id);
    e2e_str(pk, name);
    msgpack_pack_map(pk, 3 + multiclass);
    e2e_str(pk, "rule");
    e2e_str(pk, "perceptron");
    e2e_str(pk, "dim");
    msgpack_pack_uint32(pk, 4);
    e2e_str(pk, "calibrate");
    cal ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    if (multiclass) {
        e2e_str(pk, "classes");
        msgpack_pack_array(pk, 2);
        e2e_str(pk, "a");
        e2e_str(pk, "b");
    }
    e2e_call(c, id, -1);
}

/* The keys of a predict answer for model, checked against want (NULL-ended). */
static void predict_keys(pcc_client *c, const char *model, const char *const *want)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "predict", 2, &id);
    e2e_str(pk, model);
    e2e_dense(pk, 2, (double[]){0.5, -0.5});
    const msgpack_object *r = e2e_call(c, id, -1);
    size_t n = 0;
    while (want[n])
        ck_assert_msg(pcc_map_get(r, want[n++]) != NULL, "%s: no %s", model, want[n - 1]);
    ck_assert_msg(r->type == MSGPACK_OBJECT_MAP && r->via.map.size == n, "%s: %u keys, want %zu",
                  model, r->via.map.size, n);
    /* predict_batch answers the same maps */
    pk = pcc_request(c, "predict_batch", 2, &id);
    e2e_str(pk, model);
    msgpack_pack_array(pk, 1);
    e2e_dense(pk, 2, (double[]){0.5, -0.5});
    r = e2e_call(c, id, -1);
    ck_assert(r->type == MSGPACK_OBJECT_ARRAY && r->via.array.size == 1);
    ck_assert_uint_eq(r->via.array.ptr[0].via.map.size, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(pcc_map_get(&r->via.array.ptr[0], want[i]), "%s batch: no %s", model, want[i]);
}

static bool info_calibrate(pcc_client *c, const char *model)
{
    const msgpack_object *v = pcc_map_get(e2e_admin(c, "info", model, -1), "calibrate");
    ck_assert_msg(v && v->type == MSGPACK_OBJECT_BOOLEAN, "info of %s has no calibrate", model);
    return v->via.boolean;
}

/* calibrate: false over the wire: predict answers carry no probability
 * (binary) or probabilities (multiclass), info says so, the models learn as
 * the calibrated one does, and a restart (snapshot) keeps the flag. */
START_TEST(calibrate_false_answers_no_probability_and_survives_a_restart)
{
    pcc_client *c = e2e_connect(d.sock);
    create_cal(c, "cal", true, false);
    create_cal(c, "fast", false, false);
    create_cal(c, "mfast", false, true);
    for (int i = 0; i < 100; i++) {
        double x[2];
        int y;
        example(i, x, &y);
        const msgpack_object *a = e2e_label(c, "cal", 2, x, y);
        double sa = pcc_number(pcc_map_get(a, "score"));
        const msgpack_object *b = e2e_label(c, "fast", 2, x, y);
        ck_assert(sa == pcc_number(pcc_map_get(b, "score"))); /* the same learning */
        uint32_t id;
        msgpack_packer *pk = pcc_request(c, "label", 3, &id);
        e2e_str(pk, "mfast");
        e2e_dense(pk, 2, x);
        e2e_str(pk, y > 0 ? "a" : "b");
        e2e_call(c, id, -1);
    }
    static const char *const with[] = {"label", "score", "probability", NULL};
    static const char *const without[] = {"label", "score", NULL};
    static const char *const mwithout[] = {"label", "score", "scores", NULL};
    for (int run = 0; run < 2; run++) {
        predict_keys(c, "cal", with);
        predict_keys(c, "fast", without);
        predict_keys(c, "mfast", mwithout);
        ck_assert(info_calibrate(c, "cal"));
        ck_assert(!info_calibrate(c, "fast") && !info_calibrate(c, "mfast"));
        ck_assert_uint_eq(e2e_info_u64(c, "fast", "examples"), 100);
        ck_assert_uint_eq(e2e_info_u64(c, "mfast", "examples"), 100);
        if (run)
            break;
        pcc_close(c);
        ck_assert_int_eq(e2e_stop(&d), 0); /* the final snapshot is written on SIGTERM */
        e2e_start(&d);
        c = e2e_connect(d.tcp);
    }
    pcc_close(c);
}
END_TEST

START_TEST(an_idle_daemon_does_not_spin)
{
    pcc_client *c = e2e_connect(d.sock);
    for (int t = 0; t < 2000; t++) {
        double x[2];
        int y;
        example(t, x, &y);
        e2e_label(c, "idle", 2, x, y);
    }
    e2e_sleep_ms(100);
    long before = cpu_ticks(d.pid);
    e2e_sleep_ms(1000);
    long spent = cpu_ticks(d.pid) - before;
    /* One tick is 10 ms; a spinning daemon would spend 100. */
    ck_assert_msg(spent <= 5, "an idle daemon used %ld ticks of CPU in 1 s", spent);
    pcc_close(c);
}
END_TEST

int main(void)
{
    int n = 0;
    while (pc_rules()[n])
        n++;
    Suite *s = suite_create("e2e_api");
    TCase *tc = tcase_create("api");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, every_rule_learns_over_both_transports, 0, n);
    tcase_add_test(tc, multiclass_with_classes_added_at_runtime);
    tcase_add_test(tc, admin_methods);
    tcase_add_test(tc, feature_names_are_kept_for_examples_that_change_the_model);
    tcase_add_test(tc, feature_names_of_a_remembered_prediction_are_kept);
    tcase_add_test(tc, ten_thousand_pipelined_requests_answered_in_order);
    tcase_add_test(tc, notification_flood);
    tcase_add_test(tc, models_are_created_on_first_label);
    tcase_add_test(tc, labels_arriving_in_pieces_learn_as_whole_ones);
    tcase_add_test(tc, an_idle_daemon_does_not_spin);
    tcase_add_test(tc, calibrate_false_answers_no_probability_and_survives_a_restart);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
