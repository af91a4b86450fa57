/* loader.c - models at rest loaded off the event loop (see loader.h).
 *
 * One thread, as the journal's (journal/threads.c, after Redis's bio.c):
 * the loop queues a job (a model's name, id and generation: the thread
 * never touches the registry), the thread reads and decodes that
 * generation (persist.c's pcd_persist_read) and hands the job back through
 * the wake pipe; the loop puts the parts in place if the model is still the
 * one that rested in that generation, else drops them.  One thread is
 * enough: a load is a file read and a decode, and the machine has two
 * cores, one of them the loop's.
 *
 * Ownership: a job is the loop's but for `parts`, `rc`, `why` and
 * `seconds`, which the thread fills between taking it from `todo` and
 * putting it on `done` (both under mu).  The waiting clients are the
 * loop's alone. */
#include "daemon/core/loader.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/persist.h"
#include "daemon/core/rest.h"

typedef struct load_job {
    char *name;
    uint64_t id, generation;  /* the entry and the generation it rested in */
    /* the thread's, until the job is on `done` */
    pcd_model parts;
    int rc;
    char why[300];
    double seconds;
    /* the loop's */
    pcd_client **waiters;     /* in the order they came; NULL: gone */
    size_t nwaiters, cap;
    struct load_job *next;    /* in todo or done (under mu) */
    struct load_job *next_inflight;
} load_job;

struct pcd_loader {
    pcd_server *srv;
    pcd_loaded_fn loaded;
    char *dir;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    load_job *todo, **todo_tail; /* under mu */
    load_job *done, **done_tail; /* under mu */
    bool stop;                   /* under mu */
    int wake[2];
    struct event *wake_ev;
    bool started;                /* the thread runs */
    load_job *inflight;          /* the loop's: every job not yet finished on the loop */
    load_job *finishing;         /* the loop's: the job whose waiters are being told */
};

static void job_free(load_job *j)
{
    pcd_model_parts_free(&j->parts);
    free(j->waiters);
    free(j->name);
    free(j);
}

/* Test hook (docs/persistence.md, "Test hooks"): PCD_TEST_LOAD_DELAY_MS=n
 * makes the loader's thread sleep n ms before each load, so that a test
 * can show other clients served while a load runs.  Unset: no effect. */
static void test_delay(void)
{
    const char *v = getenv("PCD_TEST_LOAD_DELAY_MS");
    long ms = v ? strtol(v, NULL, 10) : 0;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void *thread_main(void *arg)
{
    pcd_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->todo && !l->stop)
            pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop)
            break;
        load_job *j = l->todo;
        if (!(l->todo = j->next))
            l->todo_tail = &l->todo;
        pthread_mutex_unlock(&l->mu);

        test_delay();
        double t0 = pcd_monotonic();
        j->rc = pcd_persist_read(l->dir, j->name, j->generation, &j->parts, j->why, sizeof j->why);
        j->seconds = pcd_monotonic() - t0;

        pthread_mutex_lock(&l->mu);
        j->next = NULL;
        *l->done_tail = j;
        l->done_tail = &j->next;
        char one = 1;
        ssize_t w = write(l->wake[1], &one, 1); /* full pipe: a wake-up is pending anyway */
        (void)w;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* A finished job on the loop: the parts go in place when the entry is
 * still the one that rested in that generation, and its waiters go on, in
 * order, before the loop serves anyone else (so that no other request's
 * eviction can send the model back to rest before them). */
static void finish(pcd_loader *l, load_job *j)
{
    pcd_server *srv = l->srv;
    for (load_job **p = &l->inflight; *p; p = &(*p)->next_inflight)
        if (*p == j) {
            *p = j->next_inflight;
            break;
        }
    pcd_model *e = pcd_registry_find(&srv->models, j->name, strlen(j->name));
    bool loaded = false;
    char why[300];
    if (j->rc == 0 && e && e->id == j->id && pcd_model_resting(e) &&
        e->generation == j->generation) {
        if (pcd_persist_install(srv, e, &j->parts, why, sizeof why) == 0) {
            pcd_rest_loaded(srv, e, j->seconds);
            loaded = true;
        } else {
            pcd_error("cannot load model %s from rest: %s", j->name, why);
        }
    } else if (j->rc != 0) {
        /* told through the waiters' requests, which load in the loop and
         * answer the error (and count it) */
        pcd_debug("model %s: its load off the loop failed: %s", j->name, j->why);
    }
    l->finishing = j;
    for (size_t i = 0; i < j->nwaiters; i++)
        if (j->waiters[i])
            l->loaded(j->waiters[i], loaded || (e && !pcd_model_resting(e)));
    l->finishing = NULL;
    job_free(j);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    pcd_loader *l = arg;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    pthread_mutex_lock(&l->mu);
    load_job *done = l->done;
    l->done = NULL;
    l->done_tail = &l->done;
    pthread_mutex_unlock(&l->mu);
    while (done) {
        load_job *next = done->next;
        finish(l, done);
        done = next;
    }
}

int pcd_loader_start(pcd_server *srv, pcd_loaded_fn loaded, char *err, size_t errlen)
{
    pcd_loader *l = calloc(1, sizeof *l);
    if (!l || !(l->dir = strdup(srv->cfg.state_dir))) {
        free(l);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->srv = srv;
    l->loaded = loaded;
    l->todo_tail = &l->todo;
    l->done_tail = &l->done;
    l->wake[0] = l->wake[1] = -1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    srv->loader = l;
    int rc = 0;
    if (pipe2(l->wake, O_NONBLOCK | O_CLOEXEC) != 0 ||
        !(l->wake_ev = event_new(srv->base, l->wake[0], EV_READ | EV_PERSIST, on_wake, l)) ||
        event_add(l->wake_ev, NULL) != 0)
        snprintf(err, errlen, "the loader's wake pipe: %s", strerror(errno));
    else if ((rc = pthread_create(&l->thread, NULL, thread_main, l)) != 0)
        snprintf(err, errlen, "the loader's thread: %s", strerror(rc));
    else
        return l->started = true, 0;
    pcd_loader_stop(srv);
    return -1;
}

void pcd_loader_stop(pcd_server *srv)
{
    pcd_loader *l = srv->loader;
    if (!l)
        return;
    if (l->started) {
        pthread_mutex_lock(&l->mu);
        l->stop = true;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
    }
    if (l->wake_ev)
        event_free(l->wake_ev);
    /* every job is on inflight, whether queued, done or neither */
    while (l->inflight) {
        load_job *j = l->inflight;
        l->inflight = j->next_inflight;
        job_free(j);
    }
    for (int i = 0; i < 2; i++)
        if (l->wake[i] >= 0)
            close(l->wake[i]);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l->dir);
    free(l);
    srv->loader = NULL;
}

static bool add_waiter(load_job *j, pcd_client *c)
{
    if (j->nwaiters == j->cap) {
        size_t cap = j->cap ? 2 * j->cap : 4;
        pcd_client **w = realloc(j->waiters, cap * sizeof *w);
        if (!w)
            return false;
        j->waiters = w;
        j->cap = cap;
    }
    j->waiters[j->nwaiters++] = c;
    return true;
}

bool pcd_loader_wait(pcd_server *srv, pcd_model *e, pcd_client *c)
{
    pcd_loader *l = srv->loader;
    if (!l)
        return false;
    for (load_job *j = l->inflight; j; j = j->next_inflight)
        if (j->id == e->id && j->generation == e->generation)
            return add_waiter(j, c);
    load_job *j = calloc(1, sizeof *j);
    if (!j || !(j->name = strdup(e->name)) || !add_waiter(j, c)) {
        if (j)
            job_free(j);
        return false;
    }
    j->id = e->id;
    j->generation = e->generation;
    j->next_inflight = l->inflight;
    l->inflight = j;
    pthread_mutex_lock(&l->mu);
    *l->todo_tail = j;
    l->todo_tail = &j->next;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return true;
}

void pcd_loader_forget(pcd_server *srv, pcd_client *c)
{
    pcd_loader *l = srv->loader;
    if (!l)
        return;
    for (load_job *j = l->inflight; j; j = j->next_inflight)
        for (size_t i = 0; i < j->nwaiters; i++)
            if (j->waiters[i] == c)
                j->waiters[i] = NULL;
    for (size_t i = 0; l->finishing && i < l->finishing->nwaiters; i++)
        if (l->finishing->waiters[i] == c)
            l->finishing->waiters[i] = NULL;
}
