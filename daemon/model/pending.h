/* pending.h - the events of one model that wait for their outcome (label later).
 *
 * `predict` with {"event": ID} remembers the example it was asked about, exactly
 * (hashed indices and the doubles the client sent, as the model saw them), and
 * the prediction it served; `label_event` finds it by ID and the model learns
 * from it as `label` would have.  This is only the store: a hash table by ID
 * and a first-in first-out list (the oldest event expires first), bounded in
 * events and bytes, with the figures `info` reports, and its snapshot bytes.
 * Who decides when an event expires and what it learns is exec/join.c (live
 * requests and the journal's records) and expiry.c (the ttl, on the loop).
 *
 * An event that was labelled or expired leaves a small tombstone (its ID and
 * how it ended) for a while, so that a late or repeated label gets a distinct
 * error instead of "unknown".  Tombstones learn nothing and are never
 * journaled: whether one is still there changes an error message only.
 */
#ifndef PCD_PENDING_H
#define PCD_PENDING_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/perceptron.h"
#include "proto/proto.h"

#define PCD_EVENT_ID_MAX 128      /* bytes of a string ID */
#define PCD_DELAY_BUCKETS 40      /* join delays: bucket k holds [2^k, 2^(k+1)) ms (0: < 2 ms) */

enum { PCD_EV_PENDING, PCD_EV_LABELLED, PCD_EV_EXPIRED };
/* What an event's prediction said of its label (hints.h): none without hints. */
enum { PCD_HINT_NONE, PCD_HINT_ASKED, PCD_HINT_UNASKED };

/* One remembered event (tombstones keep the header and the ID only). */
typedef struct pcd_event {
    struct pcd_event *prev, *next; /* the pending list or the tombstones, oldest first */
    int64_t at_ms;                /* when predicted (tombstones: when it ended), unix ms */
    double norm2, score;          /* the example's squared norm; the served score */
    uint32_t nnz;
    int32_t served;               /* binary: +1/-1; multiclass: class index, -1 for none */
    uint8_t state;                /* PCD_EV_* */
    uint8_t hint;                 /* the served prediction's hint: PCD_HINT_* */
    uint8_t idtype;               /* 0: string, 1: integer (8 bytes, two's complement) */
    uint8_t idlen;
    uint8_t id[];                 /* idlen bytes, then (aligned) nnz doubles and nnz indices */
} pcd_event;

typedef struct pcd_join_stats {
    uint64_t events;          /* predictions remembered */
    uint64_t joined;          /* outcomes joined to their event (label_event with a label) */
    uint64_t served_mistakes; /* of those, where the served prediction was wrong */
    uint64_t expired;         /* events whose ttl passed without an outcome */
    uint64_t defaulted;       /* expired or evicted events that learned the default label */
    uint64_t evicted;         /* the oldest, forgotten beyond max_pending / max_bytes */
    uint64_t forgotten;       /* label_event with a nil label: dropped unlearned */
    uint64_t unknown, duplicate, late; /* outcomes refused: no such event, labelled already, expired */
    uint64_t delay_sum_ms, delay_max_ms;
    uint64_t delay[PCD_DELAY_BUCKETS];
    /* label hints (hints.h): labels learned while hints were on, of which
     * the rule asked for (its draw at that state), the progressive mistakes
     * on all of them and on the asked ones, and outcomes of events served
     * with ask: false */
    uint64_t hint_labels, hint_asked, hint_mistakes, hint_asked_mistakes, hint_unasked_outcomes;
} pcd_join_stats;

typedef struct pcd_pending {
    pcp_join_config cfg;
    uint32_t *hashes;             /* by ID: the table (pending.c), nslots of each */
    pcd_event **slots;
    size_t nslots, count;         /* count: pending events and tombstones in the table */
    pcd_event *head, *tail;       /* pending, oldest first */
    pcd_event *dead_head, *dead_tail; /* tombstones, oldest first */
    size_t npending, ndead;
    size_t bytes;                 /* of the pending events (allocations + their table slots):
                                     what join.max_bytes bounds */
    size_t dead_bytes;            /* the same of the tombstones */
    pcd_join_stats st;
    /* predictions this daemon answered with a hint, and with ask: true, since
     * it started (reads: neither journaled nor kept in snapshots) */
    uint64_t hint_predictions, hint_asked_predictions;
} pcd_pending;

/* All that p holds (its events, tombstones and itself): what max_memory
 * counts of it (budget.c). */
size_t pcd_pending_held_bytes(const pcd_pending *p);

/* An event ID as a client sends it: a string of 1..PCD_EVENT_ID_MAX bytes or
 * an integer.  buf holds an integer's bytes; the ID points into it or into
 * the object. */
typedef struct pcd_event_id {
    uint8_t type, len;
    const uint8_t *bytes;
} pcd_event_id;
bool pcd_event_id_read(const msgpack_object *o, pcd_event_id *id, uint8_t buf[8]);
void pcd_event_id_pack(msgpack_packer *pk, const pcd_event *ev);

/* A new, empty store (NULL when out of memory). */
pcd_pending *pcd_pending_new(const pcp_join_config *cfg);
void pcd_pending_free(pcd_pending *p);

/* The event (pending or tombstone) of that ID, or NULL. */
pcd_event *pcd_pending_find(const pcd_pending *p, const pcd_event_id *id);
/* Starts loading the part of the table where id would be, so that a
 * find or add of it soon after waits less (a hint: no effect otherwise). */
void pcd_pending_prefetch(const pcd_pending *p, const pcd_event_id *id);
/* Remembers x and the served prediction under id (which must not be pending;
 * a tombstone of it is replaced).  NULL when out of memory. */
pcd_event *pcd_pending_add(pcd_pending *p, const pcd_event_id *id, int64_t at_ms, const pc_svec *x,
                           const pc_prediction *served, bool multiclass);
/* The event's example, as a view (no copy) the model can learn from. */
void pcd_event_example(const pcd_event *ev, pc_svec *x);
/* Ends a pending event (PCD_EV_LABELLED or PCD_EV_EXPIRED) at now_ms (the
 * oldest tombstones beyond join.max_pending of them are forgotten): its
 * example is freed and a tombstone stays (or nothing, out of memory). */
void pcd_pending_end(pcd_pending *p, pcd_event *ev, uint8_t how, int64_t now_ms);
/* The oldest pending event when over max_pending or max_bytes, else NULL. */
pcd_event *pcd_pending_over(const pcd_pending *p);
/* Forgets tombstones older than the ttl or beyond max_pending of them. */
void pcd_pending_prune(pcd_pending *p, int64_t now_ms);
/* Records a join's delay in the distribution. */
void pcd_pending_delay(pcd_pending *p, int64_t delay_ms);
/* The q-quantile (0..1) of the join delays, in ms (a bucket's upper bound). */
double pcd_pending_delay_quantile(const pcd_pending *p, double q);
/* Drops every event and tombstone (reset): the figures stay. */
void pcd_pending_clear(pcd_pending *p);

/* Snapshot bytes, a section that starts "PCJ1" and says its length: appended
 * to *buf (grown, *len and *cap updated); false when out of memory.  Parsed
 * back into a new store from b[0..len), *used the section's bytes: NULL when
 * malformed (why says where) or out of memory.  pcd_pending_present tells
 * whether b starts with such a section. */
bool pcd_pending_append(const pcd_pending *p, uint8_t **buf, size_t *len, size_t *cap);
bool pcd_pending_present(const uint8_t *b, size_t len);
pcd_pending *pcd_pending_parse(const uint8_t *b, size_t len, size_t *used, char *why,
                               size_t whylen);

#endif
