/* test_daemon.c - daemon/ parts that need no socket: every method of proto's
 * table has a handler, the reply maps are whole msgpack objects (a map
 * header with a wrong count would leave bytes over, or want more), and the
 * snapshot sections of pending events and challengers come back exactly,
 * the pending events' ID table finds every ID through churn,
 * while every truncation or damaged byte of them is refused or read safely,
 * and the feature name map keeps, serialises and sizes its names. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "daemon/exec/dispatch.h"
#include "daemon/exec/replies.h"
#include "daemon/model/challengers.h"
#include "daemon/model/pending.h"
#include "daemon/net/answers.h"
#include "lib/bytes.h"
#include "tests/testutil.h"

START_TEST(every_method_has_a_handler)
{
    ck_assert(pcd_dispatch_complete());
}
END_TEST

/* The packed bytes are exactly one object. */
static void ck_one_object(const msgpack_sbuffer *sb)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    ck_assert_int_eq(msgpack_unpack_next(&u, sb->data, sb->size, &off), MSGPACK_UNPACK_SUCCESS);
    ck_assert_uint_eq(off, sb->size);
    msgpack_unpacked_destroy(&u);
}

/* A registry holding one model "m" of the default config, dim 16 (into *cfg). */
static pcd_model *registry_of_m(pcd_registry *r, pc_model_config *cfg)
{
    ck_assert_int_eq(pcd_registry_init(r), 0);
    pc_model_config_default(cfg, 16);
    pc_model *m;
    pc_error perr;
    ck_assert_int_eq(pc_model_new(cfg, &m, &perr), PC_OK);
    pcd_model *e = pcd_registry_add(r, "m", m);
    ck_assert_ptr_nonnull(e);
    return e;
}

START_TEST(reply_maps_are_whole)
{
    pcd_registry r;
    pc_model_config cfg;
    pcd_model *e = registry_of_m(&r, &cfg);
    pcd_names_note(&e->names, 3, "three", 5);
    pcp_join_config jc;
    pcp_join_config_default(&jc);
    e->pending = pcd_pending_new(&jc);
    pcp_challenger ch = {.c = cfg};
    ch.given[PCP_SPEC_RULE] = true;
    pcp_error err;
    ck_assert_int_eq(pcd_challengers_create(&e->challengers, e->model, &ch, 1, NULL, &err), PCP_OK);
    pcd_server srv = {0};
    srv.loop.counters.errors_by_code[PCP_E_LIMIT] = 2;
    uint32_t idx[2] = {3, 5};
    double w[2] = {1.5, -0.5};
    for (int which = 0; which < 8; which++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        switch (which) {
        case 0: pcd_reply_info(&pk, e, 100); break;
        case 1: pcd_reply_stats(&pk, &srv, 100); break;
        case 2: pcd_reply_weights(&pk, e, idx, w, 2); break;
        case 3: pcd_reply_models(&pk, &e, 1); break;
        case 4: pcd_reply_learned(&pk, 3, 2, 1, "7"); break;
        case 5: pcd_reply_dropped(&pk, "m", 2, NULL); break;
        case 6: pcd_reply_compare(&pk, e); break;
        default: pcd_reply_done(&pk, "created", "m", "1-2"); break;
        }
        ck_one_object(&sb);
        msgpack_sbuffer_destroy(&sb);
    }
    pcd_registry_free(&r);
}
END_TEST

/* A name from the wire is bytes with a length and may hold a NUL: "m\0..."
 * is not "m".  The lookup compared with strncmp, which stops at the NUL, then
 * read the stored name at the wire name's length, past the end of "m"
 * (found by the request fuzz target; this name falls in m's bucket, so the
 * comparison runs). */
START_TEST(registry_find_takes_the_whole_name)
{
    pcd_registry r;
    pc_model_config cfg;
    pcd_model *e = registry_of_m(&r, &cfg);
    ck_assert_ptr_eq(pcd_registry_find(&r, "m", 1), e);
    ck_assert_ptr_null(pcd_registry_find(&r, "m\0\xcc\xe3\xa3", 5));
    ck_assert_ptr_null(pcd_registry_find(&r, "m\0", 2));
    ck_assert_ptr_null(pcd_registry_find(&r, "", 0));
    pcd_registry_free(&r);
}
END_TEST

static void add_event(pcd_pending *p, uint8_t type, const char *id, uint32_t n, int64_t at)
{
    uint8_t buf[8];
    pcd_event_id eid = {type, type ? 8 : (uint8_t)strlen(id), (const uint8_t *)id};
    if (type) {
        memset(buf, 0, 8);
        buf[0] = (uint8_t)id[0];
        eid.bytes = buf;
    }
    pc_svec x;
    pc_svec_init(&x);
    for (uint32_t k = 0; k < n; k++) /* exact doubles the join must not round */
        ck_assert_int_eq(pc_svec_push(&x, 7 * k + 1, 1.0 / 3.0 + k * 1e-17), PC_OK);
    x.norm2 = 0.123456789012345678;
    pc_prediction pr = {.y = -1, .cls = -1, .score = -0.25};
    ck_assert_ptr_nonnull(pcd_pending_add(p, &eid, at, &x, &pr, false));
    pc_svec_free(&x);
}

/* The ID table through churn: IDs added, ended (tombstones), re-used after
 * their tombstone, and tombstones pruned (removals, which shift the entries
 * after them back), while it grows from 64 slots to thousands; after every
 * step a sample of IDs, and at checkpoints every ID, is found in exactly
 * the state a plain array says, and the table counts what it holds. */
static pcd_event_id churn_id(uint32_t i, uint8_t buf[16])
{
    if (i % 3 == 0) { /* a string ID */
        int n = snprintf((char *)buf, 16, "s%u", i);
        return (pcd_event_id){0, (uint8_t)n, buf};
    }
    pc_put_u64(buf, (uint64_t)i * 0x9E3779B97F4A7C15ull);
    return (pcd_event_id){1, 8, buf};
}

static void churn_check(const pcd_pending *p, uint32_t i, const int8_t *state)
{
    uint8_t buf[16];
    pcd_event_id id = churn_id(i, buf);
    const pcd_event *e = pcd_pending_find(p, &id);
    if (state[i] < 0) {
        ck_assert_ptr_null(e);
    } else {
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(e->state, state[i]);
        ck_assert_uint_eq(e->idlen, id.len);
        ck_assert(memcmp(e->id, id.bytes, id.len) == 0);
    }
}

START_TEST(pending_table_finds_every_id_through_churn)
{
    enum { IDS = 6000, STEPS = 60000 };
    pcp_join_config jc;
    pcp_join_config_default(&jc);
    jc.ttl = 1; /* tombstones older than 1000 steps are pruned */
    jc.max_pending = 1000000;
    pcd_pending *p = pcd_pending_new(&jc);
    ck_assert_ptr_nonnull(p);
    int8_t *state = malloc(IDS);
    int64_t *ended = calloc(IDS, sizeof *ended);
    memset(state, -1, IDS);
    uint64_t rng = 12345;
    pc_svec x;
    pc_svec_init(&x);
    ck_assert_int_eq(pc_svec_push(&x, 3, 0.5), PC_OK);
    pc_prediction pr = {.y = 1, .cls = -1, .score = 0.5};
    size_t most = 0;
    for (int64_t t = 1; t <= STEPS; t++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        uint32_t i = (uint32_t)(rng >> 20) % IDS;
        uint8_t buf[16];
        pcd_event_id id = churn_id(i, buf);
        if (state[i] != PCD_EV_PENDING) { /* new, or after its tombstone */
            ck_assert_ptr_nonnull(pcd_pending_add(p, &id, t, &x, &pr, false));
            state[i] = PCD_EV_PENDING;
        } else {
            uint8_t how = rng & 1 ? PCD_EV_LABELLED : PCD_EV_EXPIRED;
            pcd_pending_end(p, pcd_pending_find(p, &id), how, t);
            state[i] = (int8_t)how;
            ended[i] = t;
        }
        if (t % 97 == 0) {
            pcd_pending_prune(p, t);
            for (uint32_t k = 0; k < IDS; k++)
                if (state[k] > PCD_EV_PENDING && t - ended[k] >= 1000)
                    state[k] = -1;
        }
        size_t held = 0;
        for (uint32_t k = 0; k < IDS; k++)
            held += state[k] >= 0;
        ck_assert_uint_eq(p->count, held);
        ck_assert_uint_eq(p->count, p->npending + p->ndead);
        most = held > most ? held : most;
        for (uint32_t k = i; k < IDS && k < i + 8; k++)
            churn_check(p, k, state);
        if (t % 5000 == 0)
            for (uint32_t k = 0; k < IDS; k++)
                churn_check(p, k, state);
    }
    ck_assert_uint_gt(most, 2000); /* the table grew several times */
    ck_assert_uint_ge(p->nslots * 3, p->count * 4);
    pc_svec_free(&x);
    free(state);
    free(ended);
    pcd_pending_free(p);
}
END_TEST

/* Tombstones stay within join.max_pending as events end, without the
 * expiry sweep: with the shared Redis log nothing sweeps, and they grew
 * without bound (and counted against max_memory until every write was
 * refused).  Their bytes go with them. */
START_TEST(tombstones_stay_within_max_pending_as_events_end)
{
    pcp_join_config jc;
    pcp_join_config_default(&jc);
    jc.max_pending = 3;
    pcd_pending *p = pcd_pending_new(&jc);
    const char *ids[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        add_event(p, 0, ids[i], 2, 1000 + i);
    size_t one = 0;
    for (int i = 0; i < 5; i++) {
        pcd_event_id id = {0, 1, (const uint8_t *)ids[i]};
        pcd_pending_end(p, pcd_pending_find(p, &id), PCD_EV_LABELLED, 2000 + i);
        if (i == 0)
            one = p->dead_bytes;
        ck_assert_uint_eq(p->ndead, i < 3 ? (size_t)i + 1 : 3);
        ck_assert_uint_eq(p->dead_bytes, p->ndead * one);
    }
    /* the two oldest are forgotten: unknown now; the three newest are tombstones */
    for (int i = 0; i < 5; i++) {
        pcd_event_id id = {0, 1, (const uint8_t *)ids[i]};
        const pcd_event *ev = pcd_pending_find(p, &id);
        ck_assert(i < 2 ? ev == NULL : ev && ev->state == PCD_EV_LABELLED);
    }
    ck_assert_uint_eq(p->npending, 0);
    ck_assert_uint_eq(p->bytes, 0);
    pcd_pending_free(p);
}
END_TEST

/* The PCJ1 bytes of what a PCJ2 section holds without hints (the hints'
 * settings, the events' hint bytes and the five hint counts left out): how
 * a snapshot of before label hints looks.  Test code: the layout is
 * pending.c's, read field by field. */
static size_t as_pcj1(const uint8_t *b, size_t len, uint8_t *out)
{
    size_t i = 12, o = 12;
#define COPY(n) (memcpy(out + o, b + i, (n)), o += (n), i += (n))
    COPY(24 + 1);            /* ttl, max_pending, max_bytes, has_default */
    COPY(1 + (size_t)b[i]);  /* the default label */
    i += 16;                 /* hints_b, hints_seed */
    uint32_t n = pc_get_u32(b + i) - 5; /* the hint counts are the last five */
    pc_put_u32(out + o, n);
    o += 4, i += 4;
    COPY(8 * (size_t)n);
    i += 40;
    uint64_t np = pc_get_u64(b + i);
    COPY(8);
    for (uint64_t e = 0; e < np; e++) {
        uint32_t nnz = pc_get_u32(b + i + 24);
        COPY(32);            /* at, norm2, score, nnz, served */
        ck_assert_uint_eq(b[i], 0); /* no hint: PCD_HINT_NONE */
        i++;
        COPY(2 + (size_t)b[i + 1] + 12 * (size_t)nnz); /* id type and length, id, values, indices */
    }
    COPY(len - i);           /* the tombstones */
#undef COPY
    memcpy(out, "PCJ1", 4);
    pc_put_u64(out + 4, o - 12);
    return o;
}

START_TEST(pending_events_round_trip_and_damage_is_refused)
{
    pcp_join_config jc;
    pcp_join_config_default(&jc);
    jc.ttl = 60;
    jc.has_default = true;
    strcpy(jc.default_label, "-1");
    pcd_pending *p = pcd_pending_new(&jc);
    add_event(p, 0, "first", 32, 1000);
    add_event(p, 1, "\x07", 0, 1001);
    add_event(p, 0, "third", 3, 1002);
    pcd_event_id id = {0, 5, (const uint8_t *)"third"};
    pcd_pending_end(p, pcd_pending_find(p, &id), PCD_EV_LABELLED, 1005);
    pcd_pending_delay(p, 5);
    p->st.unknown = 4;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    ck_assert(pcd_pending_append(p, &buf, &len, &cap));
    /* The bytes of this fixed set (PCJ2), and without the hints' fields the
     * bytes the hand-written writer made before pc_writer and label hints
     * (PCJ1: length and XXH3 of them): snapshots written then load now. */
    ck_assert_uint_eq(len, 1015);
    uint8_t old[1015];
    size_t olen = as_pcj1(buf, len, old);
    ck_assert_uint_eq(olen, 957);
    ck_assert_uint_eq(XXH3_64bits(old, olen), 0xbead97db38b3dc30u);
    char why[128];
    size_t used;
    pcd_pending *v1 = pcd_pending_parse(old, olen, &used, why, sizeof why);
    ck_assert_msg(v1 != NULL, "%s", why);
    ck_assert_uint_eq(used, olen);
    ck_assert_uint_eq(v1->npending, 2);
    ck_assert(memcmp(&v1->cfg, &p->cfg, sizeof v1->cfg) == 0);
    pcd_pending_free(v1);
    pcd_pending *q = pcd_pending_parse(buf, len, &used, why, sizeof why);
    ck_assert_msg(q != NULL, "%s", why);
    ck_assert_uint_eq(used, len);
    ck_assert_uint_eq(q->npending, 2);
    ck_assert_uint_eq(q->ndead, 1);
    ck_assert_uint_eq(q->bytes, p->bytes);
    ck_assert(memcmp(&q->st, &p->st, sizeof q->st) == 0);
    ck_assert(memcmp(&q->cfg, &p->cfg, sizeof q->cfg) == 0);
    pcd_event_id first = {0, 5, (const uint8_t *)"first"};
    pc_svec a, b;
    pcd_event_example(pcd_pending_find(p, &first), &a);
    pcd_event_example(pcd_pending_find(q, &first), &b);
    ck_assert_uint_eq(a.n, 32);
    ck_assert_uint_eq(b.n, 32);
    ck_assert(memcmp(a.val, b.val, 32 * sizeof *a.val) == 0 && memcmp(a.idx, b.idx, 32 * 4) == 0);
    ck_assert(memcmp(&a.norm2, &b.norm2, sizeof a.norm2) == 0);
    ck_assert_int_eq(pcd_pending_find(q, &id)->state, PCD_EV_LABELLED);
    ck_assert_int_eq(q->head->at_ms, 1000);
    pcd_pending_free(q);
    for (size_t cut = 0; cut < len; cut++) /* every truncation is refused */
        ck_assert_ptr_null(pcd_pending_parse(buf, cut, &used, why, sizeof why));
    for (size_t i = 0; i < len; i++) { /* a damaged byte is refused or read safely */
        for (int bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (uint8_t)(1u << bit);
            pcd_pending_free(pcd_pending_parse(buf, len, &used, why, sizeof why));
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    free(buf);
    pcd_pending_free(p);
}
END_TEST

START_TEST(challengers_round_trip_and_damage_is_refused)
{
    pc_model_config cfg;
    pc_model_config_default(&cfg, 8);
    pc_model *m;
    pc_error perr;
    ck_assert_int_eq(pc_model_new(&cfg, &m, &perr), PC_OK);
    pcd_model e = {.model = m};
    pcp_challenger ch[2] = {{.c = cfg}, {.c = cfg}};
    ch[1].c.rule = pc_rule_find("pa");
    pc_params_default(ch[1].c.rule, &ch[1].c.params);
    pcp_error err;
    ck_assert_int_eq(pcd_challengers_create(&e.challengers, e.model, ch, 2, NULL, &err), PCP_OK);
    pc_svec x;
    pc_svec_init(&x);
    ck_assert_int_eq(pc_svec_push(&x, 1, 0.5), PC_OK);
    pc_label y = {.y = 1};
    pc_outcome o = {.mistake = true};
    pcd_challengers_learn(e.challengers, &x, &y, &o, NULL);
    pc_svec_free(&x);
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    ck_assert(pcd_challengers_append(e.challengers, &buf, &len, &cap));
    /* the section byte for byte, as it has been written since it was made:
     * "PCC1", u64 length of the rest, u32 count, then per challenger u64 b,
     * u64 c, u64 length and its pc_model_encode bytes */
    ck_assert(len >= 16 && memcmp(buf, "PCC1", 4) == 0);
    ck_assert_uint_eq(pc_get_u64(buf + 4), len - 12);
    ck_assert_uint_eq(pc_get_u32(buf + 12), 2);
    size_t at = 16;
    for (size_t i = 0; i < 2; i++) {
        uint8_t *enc;
        size_t mlen;
        ck_assert_int_eq(pc_model_encode(e.challengers->ch[i].model, &enc, &mlen, &perr), PC_OK);
        ck_assert_uint_eq(pc_get_u64(buf + at), e.challengers->ch[i].b);
        ck_assert_uint_eq(pc_get_u64(buf + at + 8), e.challengers->ch[i].c);
        ck_assert_uint_eq(pc_get_u64(buf + at + 16), mlen);
        ck_assert(at + 24 + mlen <= len && memcmp(buf + at + 24, enc, mlen) == 0);
        at += 24 + mlen;
        free(enc);
    }
    ck_assert_uint_eq(at, len);
    char why[128];
    size_t used;
    pcd_challengers *back = pcd_challengers_parse(buf, len, &used, why, sizeof why);
    ck_assert_msg(back != NULL, "%s", why);
    ck_assert_uint_eq(used, len);
    ck_assert_uint_eq(back->n, 2);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_uint_eq(pcd_digest(back->ch[i].model), pcd_digest(e.challengers->ch[i].model));
        ck_assert_uint_eq(back->ch[i].b, e.challengers->ch[i].b);
        ck_assert_uint_eq(back->ch[i].c, e.challengers->ch[i].c);
    }
    pcd_challengers_free(back);
    for (size_t cut = 0; cut < len; cut++)
        ck_assert_ptr_null(pcd_challengers_parse(buf, cut, &used, why, sizeof why));
    for (size_t i = 0; i < len; i++) {
        buf[i] ^= 0x10;
        pcd_challengers_free(pcd_challengers_parse(buf, len, &used, why, sizeof why));
        buf[i] ^= 0x10;
    }
    double chi2, pv;
    pcd_mcnemar(10, 0, &chi2, &pv); /* (|10 - 0| - 1)^2 / 10 = 8.1 */
    ck_assert_double_eq_tol(chi2, 8.1, 1e-12);
    ck_assert_double_eq_tol(pv, 0.0044259, 1e-6);
    pcd_mcnemar(3, 3, &chi2, &pv);
    ck_assert_double_eq(chi2, 0);
    ck_assert_double_eq(pv, 1);
    free(buf);
    pcd_challengers_free(e.challengers);
    pc_model_free(m);
}
END_TEST

/* Through several table and arena growths: every name kept (the first for
 * an index), long ones refused, the serialised form read back to the same
 * map, and the memory near what the names take. */
START_TEST(feature_names_grow_round_trip_and_stay_compact)
{
    pcd_names n, back;
    pcd_names_init(&n);
    pcd_names_init(&back);
    char name[300];
    for (uint32_t i = 0; i < 20000; i++) {
        int len = snprintf(name, sizeof name, "w%u", i);
        pcd_names_note(&n, i * 37, name, (size_t)len);
        pcd_names_note(&n, i * 37, "other", 5); /* the first name stays */
    }
    memset(name, 'x', 256);
    pcd_names_note(&n, 5, name, 256); /* longer than PCD_NAME_LEN_MAX */
    ck_assert_uint_eq(n.count, 20000);
    ck_assert_ptr_null(pcd_names_get(&n, 5));
    ck_assert_ptr_null(pcd_names_get(&n, UINT32_MAX));
    for (uint32_t i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "w%u", i);
        ck_assert_str_eq(pcd_names_get(&n, i * 37), name);
    }
    /* 32768 slots of 8 bytes and an arena of 128 KiB for ~129 KB of names */
    ck_assert_uint_le(pcd_names_bytes(&n), 32768 * 8 + 131072);
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    ck_assert(pcd_names_append(&n, &buf, &len, &cap));
    ck_assert(pcd_names_parse(&back, buf, len));
    ck_assert_uint_eq(back.count, 20000);
    for (uint32_t i = 0; i < 20000; i += 7)
        ck_assert_str_eq(pcd_names_get(&back, i * 37), pcd_names_get(&n, i * 37));
    ck_assert(!pcd_names_parse(&back, buf, len - 1)); /* truncated */
    free(buf);
    pcd_names_free(&n);
    pcd_names_free(&back);
}
END_TEST

/* Noting an example's names together (what the request path does) keeps
 * exactly what noting them one by one keeps: the first name of an index
 * wins, within a batch too, across the table's growth mid-batch. */
START_TEST(feature_names_noted_together_as_one_by_one)
{
    pcd_names one, all;
    pcd_names_init(&one);
    pcd_names_init(&all);
    static char names[3000][12];
    pcd_name_ref refs[3000];
    for (uint32_t k = 0; k < 3000; k++) {
        int len = snprintf(names[k], sizeof names[k], "n%u", k);
        /* indices repeat (k and k + 1000 share one): the earlier name stays */
        refs[k] = (pcd_name_ref){(k % 1000) * 7919u, (uint32_t)len, names[k]};
        pcd_names_note(&one, refs[k].idx, refs[k].name, refs[k].len);
    }
    pcd_names_note_all(&all, refs, 0); /* nothing: an empty map stays empty */
    ck_assert_uint_eq(all.count, 0);
    /* Two batches of 1500: the first repeats indices within itself, and the
     * map grows from empty to 2048 slots during it. */
    pcd_names_note_all(&all, refs, 1500);
    pcd_names_note_all(&all, refs + 1500, 1500);
    ck_assert_uint_eq(all.count, 1000);
    ck_assert_uint_eq(one.count, 1000);
    for (uint32_t k = 0; k < 1000; k++) {
        ck_assert_str_eq(pcd_names_get(&all, k * 7919u), names[k]);
        ck_assert_str_eq(pcd_names_get(&one, k * 7919u), names[k]);
    }
    uint8_t *a = NULL, *b = NULL;
    size_t alen = 0, acap = 0, blen = 0, bcap = 0;
    ck_assert(pcd_names_append(&one, &a, &alen, &acap));
    ck_assert(pcd_names_append(&all, &b, &blen, &bcap));
    ck_assert_uint_eq(alen, blen);
    ck_assert_mem_eq(a, b, alen); /* the same snapshot bytes */
    free(a);
    free(b);
    pcd_names_free(&one);
    pcd_names_free(&all);
}
END_TEST

/* The always-valid test of `compare` on hand-computed figures, then by
 * simulation (issue 27): two rules wrong with probability 0.2 each,
 * independently, over 20,000 labels, looked at after every label, 1,000
 * runs: McNemar (p < 0.05) calls one "better" at some look in about 38 % of
 * runs; the mixture SPRT at 95 % confidence must stay under 5 %.  Then its
 * power: error rates 0.20 against 0.15, the median labels to detection. */
static uint64_t sim_state;
static double sim_uniform(void)
{
    sim_state += 0x9E3779B97F4A7C15ull; /* splitmix64 */
    uint64_t z = sim_state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

/* Labels until the test says "challenger better" (returns the label) or
 * `labels` pass (returns 0); *mcnemar_said: McNemar said so at some look. */
static uint64_t monitor(double champion_err, double challenger_err, uint64_t labels,
                        bool *mcnemar_said)
{
    uint64_t b = 0, c = 0;
    double threshold = -log(1 - PCD_MSPRT_CONFIDENCE);
    *mcnemar_said = false;
    for (uint64_t t = 1; t <= labels; t++) {
        bool champ = sim_uniform() < champion_err, chall = sim_uniform() < challenger_err;
        if (champ == chall)
            continue;
        b += champ, c += chall;
        double chi2, p;
        pcd_mcnemar(b, c, &chi2, &p);
        *mcnemar_said |= p < 0.05 && b > c;
        if (b > c && pcd_msprt_log_lr(b, c) >= threshold)
            return t;
    }
    return 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

START_TEST(the_sequential_test_holds_its_level_when_watched)
{
    /* ln L = ln B(b+1, c+1) + (b+c) ln 2: b = 10, c = 0 gives ln(2^10 / 11) */
    ck_assert_double_eq_tol(pcd_msprt_log_lr(10, 0), log(1024.0 / 11), 1e-12);
    /* b = c = 1: B(2, 2) * 4 = 4/6 */
    ck_assert_double_eq_tol(pcd_msprt_log_lr(1, 1), log(4.0 / 6), 1e-12);
    ck_assert_double_eq(pcd_msprt_log_lr(0, 0), 0);
    ck_assert_double_eq_tol(pcd_msprt_log_lr(3, 7), pcd_msprt_log_lr(7, 3), 1e-12);
    sim_state = 29;
    int runs = 1000, msprt_false = 0, mcnemar_false = 0;
    for (int r = 0; r < runs; r++) {
        bool said;
        msprt_false += monitor(0.2, 0.2, 20000, &said) != 0;
        mcnemar_false += said;
    }
    static uint64_t when[1000];
    int detected = 0;
    for (int r = 0; r < runs; r++) {
        bool said;
        uint64_t t = monitor(0.2, 0.15, 20000, &said);
        when[r] = t ? t : UINT64_MAX;
        detected += t != 0;
    }
    qsort(when, (size_t)runs, sizeof *when, cmp_u64);
    fprintf(stderr, "watched after every label, 20,000 labels, 1,000 runs of equal rules: "
            "'challenger better' from McNemar in %.1f %% of runs, from the sequential test in "
            "%.1f %%; error rates 0.20 against 0.15: detected in %.1f %% of runs, median %llu "
            "labels\n", 100.0 * mcnemar_false / runs, 100.0 * msprt_false / runs,
            100.0 * detected / runs, (unsigned long long)when[runs / 2]);
    ck_assert_int_le(msprt_false, 50);   /* its level, however often looked at */
    ck_assert_int_ge(mcnemar_false, 150); /* what it replaces: far past its 5 % */
    ck_assert_int_ge(detected, 950);
}
END_TEST

/* A connection's held answers (net/answers.c), by hand: journal marks
 * release out's bytes up to the last mark a sync covers; the shared log's
 * slots release answers in the order their places were held, with answers
 * packed meanwhile queued behind them. */
START_TEST(held_answers_leave_in_order)
{
    pcd_answers a = {0};
    msgpack_sbuffer out;
    msgpack_sbuffer_init(&out);
    ck_assert_uint_eq(pcd_answers_releasable(&a, 0, 10), 10); /* nothing held */
    ck_assert(pcd_answers_mark(&a, 5, 4) && pcd_answers_mark(&a, 7, 9));
    ck_assert(pcd_answers_mark(&a, 9, 12) && pcd_answers_mark(&a, 12, 20));
    ck_assert(pcd_answers_mark(&a, 13, 21)); /* past the first capacity (4) */
    ck_assert_uint_eq(pcd_answers_releasable(&a, 4, 30), 0);
    ck_assert_uint_eq(pcd_answers_releasable(&a, 8, 30), 9); /* marks 5 and 7 */
    ck_assert_uint_eq(a.nmarks, 3);
    ck_assert_uint_eq(a.marks[0].end, 3); /* shifted by what left */
    ck_assert_uint_eq(pcd_answers_releasable(&a, 12, 21), 11);
    ck_assert_uint_eq(pcd_answers_releasable(&a, 100, 10), 10);
    ck_assert(!pcd_answers_wait_journal(&a));
    /* the log: A held, "b" packed behind it, C held, "d" behind C */
    ck_assert_int_eq(pcd_answers_write(&a, &out, "0", 1), 0); /* no slot: straight out */
    pcd_answer *sa = pcd_answers_hold(&a);
    ck_assert_int_eq(pcd_answers_write(&a, &out, "b", 1), 0);
    pcd_answer *sc = pcd_answers_hold(&a);
    ck_assert_int_eq(pcd_answers_write(&a, &out, "d", 1), 0);
    ck_assert_int_eq(pcd_answers_write(&a, &out, "e", 1), 0);
    pcd_answers_fill(&a, sc, "C", 1, &out); /* behind A: waits */
    ck_assert_uint_eq(out.size, 1);
    ck_assert(pcd_answers_wait_log(&a));
    pcd_answers_fill(&a, sa, "A", 1, &out);
    ck_assert_uint_eq(out.size, 6);
    ck_assert_int_eq(memcmp(out.data, "0AbCde", 6), 0);
    ck_assert(!pcd_answers_wait_log(&a));
    pcd_answers_hold(&a); /* freed with what is held */
    pcd_answers_free(&a);
    msgpack_sbuffer_destroy(&out);
}
END_TEST

/* The wait slot (a save or a scan the connection waits for) is a place in
 * the same queue: reading stops while it is empty, it leaves in its turn
 * behind the log's slots held before it, a notification's (no bytes) leaves
 * nothing, and it can be held again at once, several times over. */
START_TEST(a_wait_takes_its_place_in_the_one_queue)
{
    pcd_answers a = {0};
    msgpack_sbuffer out;
    msgpack_sbuffer_init(&out);
    pcd_answer *sa = pcd_answers_hold(&a); /* a write to the log */
    ck_assert_int_eq(pcd_answers_write(&a, &out, "b", 1), 0);
    pcd_answers_hold_wait(&a); /* then a save */
    ck_assert(pcd_answers_waiting(&a));
    pcd_answers_fill_wait(&a, "S", 1, &out); /* saved before the write came back */
    ck_assert(!pcd_answers_waiting(&a));
    ck_assert_uint_eq(out.size, 0); /* behind A */
    ck_assert(pcd_answers_wait_log(&a));
    pcd_answers_fill(&a, sa, "A", 1, &out);
    ck_assert_uint_eq(out.size, 3);
    ck_assert_int_eq(memcmp(out.data, "AbS", 3), 0);
    ck_assert(!pcd_answers_wait_log(&a));
    /* three waits in a row, nothing else held: each leaves when filled */
    static const char *const said[3] = {"x", NULL, "z"};
    for (int i = 0; i < 3; i++) {
        pcd_answers_hold_wait(&a);
        ck_assert(pcd_answers_waiting(&a) && pcd_answers_wait_log(&a));
        pcd_answers_fill_wait(&a, said[i], said[i] ? 1 : 0, &out);
        ck_assert(!pcd_answers_waiting(&a) && !pcd_answers_wait_log(&a));
    }
    ck_assert_uint_eq(out.size, 5);
    ck_assert_int_eq(memcmp(out.data, "AbSxz", 5), 0);
    /* freed while waiting behind a slot: nothing leaks, nothing freed twice */
    pcd_answers_hold(&a);
    pcd_answers_hold_wait(&a);
    ck_assert_int_eq(pcd_answers_write_behind(&a, "q", 1), 0);
    pcd_answers_free(&a);
    ck_assert(!pcd_answers_waiting(&a) && !pcd_answers_wait_log(&a));
    msgpack_sbuffer_destroy(&out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("daemon");
    /* the churn tests take seconds under ASan on a busy machine */
    TU_TCASE(s, "dispatch", 60, every_method_has_a_handler, held_answers_leave_in_order,
        a_wait_takes_its_place_in_the_one_queue,
        reply_maps_are_whole,
        registry_find_takes_the_whole_name, pending_events_round_trip_and_damage_is_refused,
        tombstones_stay_within_max_pending_as_events_end,
        pending_table_finds_every_id_through_churn, challengers_round_trip_and_damage_is_refused,
        the_sequential_test_holds_its_level_when_watched,
        feature_names_grow_round_trip_and_stay_compact, feature_names_noted_together_as_one_by_one);
    return tu_run(s);
}
