/* wake.h - a thread waking the event loop: one byte through a pipe whose
 * read end the loop watches (the journal's threads and the rest I/O thread
 * hand results back this way). */
#ifndef PCD_WAKE_H
#define PCD_WAKE_H

#include <event2/event.h>

typedef struct pcd_wake {
    int fd[2];               /* the pipe: fd[1] for threads, fd[0] the loop's */
    struct event *ev;        /* NULL: not open (a zeroed pcd_wake is closed) */
    void (*fn)(void *arg);   /* what the loop runs once woken */
    void *arg;
} pcd_wake;

/* Opens w on base: fn(arg) runs on the loop after any number of wake-ups,
 * the pipe drained first.  w must not move while open (the event points at
 * it).  0, or -1 with errno set and w left closed. */
int pcd_wake_open(pcd_wake *w, struct event_base *base, void (*fn)(void *arg), void *arg);
/* From any thread: fn runs on the loop soon.  Never blocks (a full pipe
 * means a wake-up is pending anyway). */
void pcd_wake_up(pcd_wake *w);
/* Frees w's event and closes its pipe; nothing when it is not open. */
void pcd_wake_close(pcd_wake *w);

#endif
