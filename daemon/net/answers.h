/* answers.h - a connection's answers that may not leave yet (answers.c).
 *
 * Answers leave a connection in the order of its requests.  Three things can
 * hold them back, all kept here, the one queue of a connection's waits:
 * - the journal (fsync always): the answers packed in `out` up to a mark
 *   acknowledge records that leave only once synced up to the mark's LSN;
 *   what follows the last mark waits behind it;
 * - the shared log: a write's answer comes when its entry is applied, maybe
 *   after later answers were packed; it holds a place (a slot) in a queue,
 *   and every answer packed meanwhile queues behind it;
 * - a request whose answer comes later and that stops the connection's
 *   reading until then (a `save` while a snapshot job runs, a sliced
 *   `weights` scan): the wait slot, one at most, queued as the log's are.
 * No connection, socket or loop in it: serve.c and conn.c decide when to
 * look. */
#ifndef PCD_ANSWERS_H
#define PCD_ANSWERS_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pcd_answer {
    struct pcd_answer *next;
    bool done;                 /* filled (a delivery, or an answer packed behind a slot) */
    msgpack_sbuffer buf;
} pcd_answer;

typedef struct pcd_answers {
    struct pcd_answers_mark { uint64_t lsn; size_t end; } *marks; /* over out, in order */
    size_t nmarks, markcap;
    pcd_answer *head, *tail;   /* the slots and what queues behind them */
    /* The wait slot, in the queue while `waiting`: a node of its own, so
     * holding it cannot fail for want of memory (the request it answers
     * has already been taken). */
    pcd_answer wait;
    bool waiting;
} pcd_answers;

/* out[0..end) waits until the journal has synced up to lsn.  false when out
 * of memory (nothing held). */
bool pcd_answers_mark(pcd_answers *a, uint64_t lsn, size_t end);
/* How much of out (out_size bytes) may leave now that records up to durable
 * are synced: the marks it covers are dropped and the others shifted. */
size_t pcd_answers_releasable(pcd_answers *a, uint64_t durable, size_t out_size);
/* Whether answers wait for the journal. */
static inline bool pcd_answers_wait_journal(const pcd_answers *a) { return a->nmarks > 0; }
/* Forgets the journal's marks (the answers they held are dropped by the caller). */
static inline void pcd_answers_unmark(pcd_answers *a) { a->nmarks = 0; }
/* Whether a slot is still held: read while not waiting, one of the
 * shared log's (a filled wait slot leaves at once unless one is ahead). */
static inline bool pcd_answers_wait_log(const pcd_answers *a) { return a->head != NULL; }
/* Whether the wait slot is held and not filled: nothing more is read. */
static inline bool pcd_answers_waiting(const pcd_answers *a) { return a->waiting; }

/* Holds the place of an answer the shared log brings later (NULL when out of
 * memory). */
pcd_answer *pcd_answers_hold(pcd_answers *a);
/* Holds the wait slot (not held already: nothing is read while it is). */
void pcd_answers_hold_wait(pcd_answers *a);
/* Packs len bytes of an answer behind the last slot.  0, or -1 when out of
 * memory. */
int pcd_answers_write_behind(pcd_answers *a, const char *buf, size_t len);
/* Packs len bytes of an answer: into out when no slot is held (inline: every
 * answer passes here), else behind the last slot. */
static inline int pcd_answers_write(pcd_answers *a, msgpack_sbuffer *out, const char *buf,
                                    size_t len)
{
    return a->head ? pcd_answers_write_behind(a, buf, len) : msgpack_sbuffer_write(out, buf, len);
}
/* Fills slot with one whole answer; the answers now at the head of the
 * queue move to out, in order. */
void pcd_answers_fill(pcd_answers *a, pcd_answer *slot, const char *bytes, size_t len,
                      msgpack_sbuffer *out);
/* Fills the wait slot (len 0: a notification's, no answer) as
 * pcd_answers_fill does a log's slot. */
void pcd_answers_fill_wait(pcd_answers *a, const char *bytes, size_t len, msgpack_sbuffer *out);
void pcd_answers_free(pcd_answers *a);

#endif
