/* answers.c - a connection's answers that may not leave yet (see answers.h). */
#include "daemon/net/answers.h"

#include <stdlib.h>

#include "lib/grow.h"

bool pcd_answers_mark(pcd_answers *a, uint64_t lsn, size_t end)
{
    if (!PC_GROW(a->marks, a->markcap, a->nmarks, 4))
        return false;
    a->marks[a->nmarks++] = (struct pcd_answers_mark){lsn, end};
    return true;
}

size_t pcd_answers_releasable(pcd_answers *a, uint64_t durable, size_t out_size)
{
    if (!a->nmarks)
        return out_size;
    size_t k = 0;
    while (k < a->nmarks && a->marks[k].lsn <= durable)
        k++;
    if (k == a->nmarks) {
        a->nmarks = 0;
        return out_size;
    }
    size_t n = k ? a->marks[k - 1].end : 0;
    for (size_t i = k; i < a->nmarks; i++)
        a->marks[i - k] = (struct pcd_answers_mark){a->marks[i].lsn, a->marks[i].end - n};
    a->nmarks -= k;
    return n;
}

static void enqueue(pcd_answers *a, pcd_answer *s)
{
    if (a->tail)
        a->tail->next = s;
    else
        a->head = s;
    a->tail = s;
}

/* A node leaves the queue: the wait slot is made ready for the next wait,
 * the others freed. */
static void release(pcd_answers *a, pcd_answer *s)
{
    msgpack_sbuffer_destroy(&s->buf);
    if (s == &a->wait)
        *s = (pcd_answer){0};
    else
        free(s);
}

pcd_answer *pcd_answers_hold(pcd_answers *a)
{
    pcd_answer *s = calloc(1, sizeof *s);
    if (s)
        enqueue(a, s);
    return s;
}

void pcd_answers_hold_wait(pcd_answers *a)
{
    a->wait = (pcd_answer){0};
    a->waiting = true;
    enqueue(a, &a->wait);
}

int pcd_answers_write_behind(pcd_answers *a, const char *buf, size_t len)
{
    if (!a->tail->done) { /* behind a slot still empty: an answer of its own, filled */
        pcd_answer *s = calloc(1, sizeof *s);
        if (!s)
            return -1;
        s->done = true;
        a->tail->next = s;
        a->tail = s;
    }
    return msgpack_sbuffer_write(&a->tail->buf, buf, len);
}

void pcd_answers_fill(pcd_answers *a, pcd_answer *slot, const char *bytes, size_t len,
                      msgpack_sbuffer *out)
{
    if (len && msgpack_sbuffer_write(&slot->buf, bytes, len) != 0)
        slot->buf.size = 0; /* out of memory: the client sees a missing answer */
    slot->done = true;
    while (a->head && a->head->done) {
        pcd_answer *s = a->head;
        a->head = s->next;
        if (!a->head)
            a->tail = NULL;
        if (s->buf.size)
            msgpack_sbuffer_write(out, s->buf.data, s->buf.size);
        release(a, s);
    }
}

void pcd_answers_fill_wait(pcd_answers *a, const char *bytes, size_t len, msgpack_sbuffer *out)
{
    a->waiting = false;
    pcd_answers_fill(a, &a->wait, bytes, len, out);
}

void pcd_answers_free(pcd_answers *a)
{
    while (a->head) {
        pcd_answer *s = a->head;
        a->head = s->next;
        release(a, s);
    }
    a->tail = NULL;
    a->waiting = false;
    free(a->marks);
    a->marks = NULL;
    a->nmarks = a->markcap = 0;
}
