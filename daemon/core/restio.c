/* restio.c - models at rest moved between memory and disk off the loop (see
 * restio.h).
 *
 * Two threads, as the journal's (journal/threads.c, after Redis's bio.c),
 * each with its queue: the loop queues jobs, the writer writes snapshots
 * and the loader reads them, each in order, and they hand them back
 * through one wake pipe, and the loop applies them.  The writes waiting
 * together at the head of their queue are written as one batch
 * (pcd_snapshot_write_batch: one round of syncs for all), as the journal
 * groups its commits.  Loads have a thread of their own because a write
 * mostly waits for the disk's syncs: behind a batch in one queue, a load
 * of a fraction of a millisecond waited milliseconds, and every request
 * behind it with it (bench_zipf).  A model's load still comes after its
 * own write: queued while that write is pending, it waits on the write job
 * (`then`) and the writer queues it once the file is written.  A job names
 * its model by name, id and generation: the threads never touch the
 * registry.
 *
 * Ownership: a job is the loop's but for the fields marked "the thread's",
 * which a thread fills between taking the job from its queue and putting it
 * on `done` (both under mu).  An eviction hands the model's parts (its
 * pc_model, names, pending events, challengers) to its write job: from
 * then on only the writer touches them (serializes them, frees them once
 * written); a write that fails gives them back to the loop, which puts them
 * back in place.  The waiting clients are the loop's alone. */
#include "daemon/core/restio.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/base/wake.h"
#include "daemon/core/budget.h"
#include "daemon/core/persist.h"
#include "daemon/store/snapshot.h"
#include "lib/grow.h"

/* The writes that may wait at a time, and their bytes: past either an
 * eviction writes in the loop, which slows the requests that evict instead
 * of letting the queue's memory grow without bound.  The bytes are the
 * bound; the count is large enough that a writer behind in a burst of
 * small models does not send evictions back to the loop (bench_zipf: 64
 * did, now that the writer also encodes them). */
#define RESTIO_QUEUE_MAX 512
#define RESTIO_QUEUE_BYTES (64u << 20)

enum job_kind { JOB_LOAD, JOB_WRITE };

typedef struct job {
    enum job_kind kind;
    char *name;
    uint64_t id, generation;  /* the entry, and the generation read or written */
    /* a write: what its snapshot records */
    uint64_t lsn, log_ms, log_seq, changes;
    unsigned keep;
    size_t weight;            /* what the model weighed in memory: held until written */
    /* the thread's, until the job is on `done` */
    pcd_model parts;          /* a load's decoded model; a write's model, handed over by
                                 the loop, serialized by the writer and freed once
                                 written (kept for the loop when the write fails) */
    uint8_t *bytes;           /* a write's serialized parts */
    size_t len;
    pcd_snap_disk disk;       /* a write's: in, the oldest generation on disk; out, what it left */
    int rc;
    char why[300];
    double seconds;
    /* the loop's: a load's waiting clients, in the order they came (NULL: gone) */
    pcd_client **waiters;
    size_t nwaiters, cap;
    /* under mu: a write's load queued while it was pending, and whether the
     * writer has done it (a load asked for then goes straight to its queue) */
    struct job *then;
    bool written;
    struct job *next;         /* in a queue or done (under mu) */
    struct job *next_queued;  /* the loop's list of every job not yet applied */
} job;

struct pcd_restio {
    pcd_server *srv;
    pcd_loaded_fn loaded;
    char *dir;
    pthread_t thread[2];         /* by job_kind: the loader, the writer */
    int nthreads;                /* started */
    pthread_mutex_t mu;
    pthread_cond_t cv[2], idle;  /* by job_kind: work for that thread; a thread has none */
    job *todo[2], **todo_tail[2]; /* under mu, by job_kind */
    job *done, **done_tail;      /* under mu */
    bool busy[2], stop;          /* under mu */
    pcd_wake wake;
    bool started;
    job *queued;                 /* the loop's: every job not yet applied */
    job *finishing;              /* the loop's: the load whose waiters are told */
};

static void job_free(job *j)
{
    pcd_model_parts_free(&j->parts);
    free(j->bytes);
    free(j->waiters);
    free(j->name);
    free(j);
}

/* Runs the n jobs taken together: one load, or up to PCD_SNAP_BATCH_MAX
 * writes synced as one batch (their fsyncs share the filesystem's commits,
 * the directory is synced once), each timed as the batch's share. */
static void run_jobs(const pcd_restio *r, job **js, size_t n)
{
    double t0 = pcd_monotonic();
    if (js[0]->kind == JOB_LOAD) {
        job *j = js[0];
        pcd_test_delay("PCD_TEST_LOAD_DELAY_MS");
        j->rc = pcd_persist_read(r->dir, j->name, j->generation, &j->parts, j->why, sizeof j->why);
        j->seconds = pcd_monotonic() - t0;
        return;
    }
    /* serialized here rather than in the loop: an eviction costs the loop
     * only the handing over of its model's parts (bench_zipf: 0.1 ms of
     * the loop's time an eviction was this encoding) */
    pcd_test_delay("PCD_TEST_WRITE_DELAY_MS");
    pcd_snap_job w[PCD_SNAP_BATCH_MAX];
    job *written[PCD_SNAP_BATCH_MAX];
    size_t m = 0;
    int64_t now = pcd_now();
    for (size_t i = 0; i < n; i++) {
        job *j = js[i];
        j->seconds = 0;
        if (pcd_model_serialize(&j->parts, &j->bytes, &j->len, j->why, sizeof j->why) != 0) {
            j->rc = -1; /* the loop puts the parts back in memory */
            continue;
        }
        written[m] = j;
        w[m++] = (pcd_snap_job){j->name, j->generation, now, j->lsn, j->log_ms, j->log_seq,
                                j->bytes, j->len, j->keep, &j->disk, j->why, sizeof j->why,
                                true, 0, -1};
    }
    if (m > 0)
        pcd_snapshot_write_batch(r->dir, w, m);
    double each = (pcd_monotonic() - t0) / (double)n;
    for (size_t i = 0; i < m; i++) {
        job *j = written[i];
        j->rc = w[i].rc;
        j->seconds = each;
        if (w[i].rc > 0) /* written and durable; an old generation could not be removed */
            pcd_warn("snapshot of model %s: %s", j->name, j->why);
        if (w[i].rc >= 0) { /* on disk: the memory goes now, not when the loop next looks */
            pcd_model_parts_free(&j->parts);
            free(j->bytes);
            j->bytes = NULL;
        }
    }
}

/* Appends j to queue k (under mu) and tells the threads. */
static void push(pcd_restio *r, enum job_kind k, job *j)
{
    j->next = NULL;
    *r->todo_tail[k] = j;
    r->todo_tail[k] = &j->next;
    /* only the thread it is for: waking both made each job two context
     * switches (bench_zipf: the loader's time was half switching) */
    pthread_cond_signal(&r->cv[k]);
}

/* One thread's life: the jobs of queue k, a load alone or the writes at its
 * head together, in their order, until stop finds the queue empty. */
static void serve(pcd_restio *r, enum job_kind k)
{
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->todo[k] && !r->stop) {
            pthread_cond_broadcast(&r->idle);
            pthread_cond_wait(&r->cv[k], &r->mu);
        }
        if (!r->todo[k]) /* stop, with nothing left to do */
            break;
        job *js[PCD_SNAP_BATCH_MAX];
        size_t n = 0;
        do {
            job *j = r->todo[k];
            if (!(r->todo[k] = j->next))
                r->todo_tail[k] = &r->todo[k];
            js[n++] = j;
        } while (k == JOB_WRITE && r->todo[k] && n < PCD_SNAP_BATCH_MAX);
        r->busy[k] = true;
        pthread_mutex_unlock(&r->mu);
        run_jobs(r, js, n);
        pthread_mutex_lock(&r->mu);
        r->busy[k] = false;
        for (size_t i = 0; i < n; i++) {
            job *j = js[i];
            j->written = k == JOB_WRITE;
            if (j->then) /* its model's load: the file is there now */
                push(r, JOB_LOAD, j->then);
            j->then = NULL;
            j->next = NULL;
            *r->done_tail = j;
            r->done_tail = &j->next;
        }
        pcd_wake_up(&r->wake);
    }
    pthread_cond_broadcast(&r->idle);
    pthread_mutex_unlock(&r->mu);
}

static void *loader_main(void *arg)
{
    serve(arg, JOB_LOAD);
    return NULL;
}

static void *writer_main(void *arg)
{
    serve(arg, JOB_WRITE);
    return NULL;
}

static void unqueue(pcd_restio *r, job *j)
{
    for (job **p = &r->queued; *p; p = &(*p)->next_queued)
        if (*p == j) {
            *p = j->next_queued;
            return;
        }
}

void pcd_restio_count_load(pcd_server *srv, pcd_model *e, double seconds)
{
    e->loads++;
    e->used = ++srv->models.clock;
    srv->rest.loads++;
    srv->rest.load_seconds += seconds;
    if (seconds > srv->rest.load_max_seconds)
        srv->rest.load_max_seconds = seconds;
    pcd_latency_add(&srv->rest.load_time, seconds);
    pcd_debug("model %s loaded from rest in %.3f ms", e->name, seconds * 1e3);
}

/* Write job j's parts back in place in e, still changed (its write failed,
 * or was taken back before it began), as if just used: others go to rest
 * before it again. */
static void put_back(pcd_server *srv, pcd_model *e, job *j)
{
    char why[300];
    if (pcd_persist_install(srv, e, &j->parts, why, sizeof why) != 0) {
        /* out of memory as well: the journal keeps its records (its position
         * was not taken), and a start replays them onto its last snapshot;
         * until then its load fails (the generation was not written) */
        pcd_error("model %s could not be put back in memory: %s; restart the daemon to recover "
                  "it from its last snapshot and the journal",
                  e->name, why);
        return;
    }
    e->used = ++srv->models.clock;
}

/* A write done: the model's snapshot is taken (the journal may let its
 * records go), or, when it failed, the model is back in memory from its
 * bytes, still changed. */
static void finish_write(pcd_restio *r, job *j)
{
    pcd_server *srv = r->srv;
    srv->rest.writing--;
    srv->rest.writing_bytes -= j->weight;
    pcd_model *e = pcd_registry_find(&srv->models, j->name, strlen(j->name));
    if (!e || e->id != j->id) /* cannot happen: a request naming it waits for its load */
        return;
    e->writing = false;
    srv->rest.write_seconds += j->seconds;
    if (j->rc >= 0) {
        e->saved_changes = j->changes;
        e->saved_at = pcd_now();
        e->disk_oldest = j->rc == 0 ? j->disk.oldest : 0;
        pcd_registry_set_disk_bytes(&srv->models, e, j->disk.bytes);
        pcd_model_saved(e, j->lsn, j->keep);
        e->evictions++;
        srv->rest.evictions++;
        return;
    }
    srv->rest.evict_failed++;
    unsigned long long skipped;
    if (pcd_log_limit_ok(&srv->rest.fail_log, 1.0, &skipped))
        pcd_error("model %s stays in memory: its snapshot could not be written: %s", e->name,
                  j->why);
    put_back(srv, e, j);
}

/* A load done: the parts go in place when the entry is still the one that
 * rested in that generation, and its waiters go on, in order, before the
 * loop serves anyone else. */
static void finish_load(pcd_restio *r, job *j)
{
    pcd_server *srv = r->srv;
    pcd_model *e = pcd_registry_find(&srv->models, j->name, strlen(j->name));
    char why[300];
    if (j->rc == 0 && e && e->id == j->id && pcd_model_resting(e) && !e->writing &&
        e->generation == j->generation) {
        if (pcd_persist_install(srv, e, &j->parts, why, sizeof why) == 0)
            pcd_restio_count_load(srv, e, j->seconds);
        else
            pcd_error("cannot load model %s from rest: %s", j->name, why);
    } else if (j->rc != 0) {
        /* said by the waiters' requests, which load in the loop and answer
         * the error (and count it) */
        pcd_debug("model %s: its load off the loop failed: %s", j->name, j->why);
    }
    bool loaded = e && !pcd_model_resting(e);
    r->finishing = j;
    for (size_t i = 0; i < j->nwaiters; i++)
        if (j->waiters[i])
            r->loaded(j->waiters[i], loaded);
    r->finishing = NULL;
}

/* Takes the done jobs; with loads false, only the writes are applied and
 * the loads stay for the next wake (one byte is written for it). */
static void apply_done(pcd_restio *r, bool loads)
{
    pthread_mutex_lock(&r->mu);
    job *done = r->done;
    r->done = NULL;
    r->done_tail = &r->done;
    pthread_mutex_unlock(&r->mu);
    job *later = NULL, **later_tail = &later;
    while (done) {
        job *j = done, *next = j->next;
        done = next;
        if (j->kind == JOB_LOAD && !loads) {
            j->next = NULL;
            *later_tail = j;
            later_tail = &j->next;
            continue;
        }
        unqueue(r, j);
        if (j->kind == JOB_WRITE)
            finish_write(r, j);
        else
            finish_load(r, j);
        job_free(j);
    }
    if (later) {
        pthread_mutex_lock(&r->mu);
        *later_tail = r->done;
        if (!r->done)
            r->done_tail = later_tail;
        r->done = later;
        pthread_mutex_unlock(&r->mu);
        pcd_wake_up(&r->wake);
    }
}

static void on_wake(void *arg)
{
    apply_done(arg, true);
}

void pcd_restio_drain(pcd_server *srv)
{
    pcd_restio *r = srv->restio;
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    while (r->started && (r->todo[0] || r->todo[1] || r->busy[0] || r->busy[1]))
        pthread_cond_wait(&r->idle, &r->mu);
    pthread_mutex_unlock(&r->mu);
    apply_done(r, false);
}

int pcd_restio_start(pcd_server *srv, pcd_loaded_fn loaded, char *err, size_t errlen)
{
    pcd_restio *r = calloc(1, sizeof *r);
    if (!r || !(r->dir = strdup(srv->cfg.state_dir))) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->srv = srv;
    r->loaded = loaded;
    r->todo_tail[JOB_LOAD] = &r->todo[JOB_LOAD];
    r->todo_tail[JOB_WRITE] = &r->todo[JOB_WRITE];
    r->done_tail = &r->done;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv[JOB_LOAD], NULL);
    pthread_cond_init(&r->cv[JOB_WRITE], NULL);
    pthread_cond_init(&r->idle, NULL);
    srv->restio = r;
    int rc = 0;
    if (pcd_wake_open(&r->wake, srv->base, on_wake, r) != 0)
        snprintf(err, errlen, "the rest I/O thread's wake pipe: %s", strerror(errno));
    else if ((rc = pthread_create(&r->thread[JOB_LOAD], NULL, loader_main, r)) != 0 ||
             (r->nthreads = 1, rc = pthread_create(&r->thread[JOB_WRITE], NULL, writer_main, r)) != 0)
        snprintf(err, errlen, "the rest I/O threads: %s", strerror(rc));
    else
        return r->nthreads = 2, r->started = true, 0;
    r->started = r->nthreads > 0; /* the stop below ends the one that runs */
    pcd_restio_stop(srv);
    return -1;
}

void pcd_restio_stop(pcd_server *srv)
{
    pcd_restio *r = srv->restio;
    if (!r)
        return;
    if (r->started) {
        pcd_restio_drain(srv); /* the writes: durable, or their models back in memory */
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        pthread_cond_broadcast(&r->cv[JOB_LOAD]);
        pthread_cond_broadcast(&r->cv[JOB_WRITE]);
        pthread_mutex_unlock(&r->mu);
        for (int i = 0; i < r->nthreads; i++)
            pthread_join(r->thread[i], NULL);
    }
    pcd_wake_close(&r->wake);
    while (r->queued) { /* loads not applied (the drain applied every write) */
        job *j = r->queued;
        r->queued = j->next_queued;
        job_free(j);
    }
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv[JOB_LOAD]);
    pthread_cond_destroy(&r->cv[JOB_WRITE]);
    pthread_cond_destroy(&r->idle);
    free(r->dir);
    free(r);
    srv->restio = NULL;
}

/* The pending write of e (NULL: none): e->writing says there is one. */
static job *pending_write(const pcd_restio *r, const pcd_model *e)
{
    if (!e->writing)
        return NULL;
    for (job *j = r->queued; j; j = j->next_queued)
        if (j->kind == JOB_WRITE && j->id == e->id)
            return j;
    return NULL;
}

/* j into its queue; a load of a model whose write is pending (after) waits
 * for that write, unless the writer has done it already. */
static void enqueue(pcd_restio *r, job *j, job *after)
{
    j->next_queued = r->queued;
    r->queued = j;
    pthread_mutex_lock(&r->mu);
    if (after && !after->written)
        after->then = j;
    else
        push(r, j->kind, j);
    pthread_mutex_unlock(&r->mu);
}

bool pcd_restio_evict(pcd_server *srv, pcd_model *e)
{
    pcd_restio *r = srv->restio;
    if (!r || srv->rest.writing >= RESTIO_QUEUE_MAX || srv->rest.writing_bytes >= RESTIO_QUEUE_BYTES)
        return false;
    job *j = calloc(1, sizeof *j);
    if (!j || !(j->name = strdup(e->name))) {
        free(j);
        return false;
    }
    j->kind = JOB_WRITE;
    j->id = e->id;
    j->generation = ++e->generation; /* never reused, even if the write fails */
    j->lsn = e->lsn;
    j->log_ms = e->log_ms;
    j->log_seq = e->log_seq;
    j->changes = e->changes;
    j->keep = srv->cfg.snapshot_keep;
    j->disk.oldest = e->disk_oldest;
    /* it weighs what it weighed until written: a failed write brings it
     * back, and max_memory must not be passed by the models in the queue */
    j->weight = e->counted;
    srv->rest.writing++;
    srv->rest.writing_bytes += j->weight;
    e->writing = true;
    pcd_registry_rest(&srv->models, e, &j->parts); /* the writer's now */
    j->parts.name = j->name; /* its errors name it; the entry may go meanwhile */
    pcd_budget_recount(srv, e);
    enqueue(r, j, NULL);
    return true;
}

static bool add_waiter(job *j, pcd_client *c)
{
    if (!PC_GROW(j->waiters, j->cap, j->nwaiters, 4))
        return false;
    j->waiters[j->nwaiters++] = c;
    return true;
}

/* e's queued load (NULL: none); *ahead counts the loads nobody waits for. */
static job *queued_load(const pcd_restio *r, const pcd_model *e, size_t *ahead)
{
    *ahead = 0;
    for (job *j = r->queued; j; j = j->next_queued) {
        if (j->kind != JOB_LOAD)
            continue;
        if (j->id == e->id && j->generation == e->generation)
            return j;
        *ahead += j->nwaiters == 0;
    }
    return NULL;
}

/* A new load of e, queued, waited for by c (NULL: nobody yet). */
static bool queue_load(pcd_restio *r, pcd_model *e, pcd_client *c)
{
    job *j = calloc(1, sizeof *j);
    if (!j || !(j->name = strdup(e->name)) || (c && !add_waiter(j, c))) {
        if (j)
            job_free(j);
        return false;
    }
    j->kind = JOB_LOAD;
    j->id = e->id;
    j->generation = e->generation;
    enqueue(r, j, pending_write(r, e));
    return true;
}

bool pcd_restio_take_back(pcd_server *srv, pcd_model *e)
{
    pcd_restio *r = srv->restio;
    job *w = r ? pending_write(r, e) : NULL;
    if (!w || w->then) /* a load is chained to it: it waits for the write */
        return false;
    bool taken = false;
    pthread_mutex_lock(&r->mu);
    for (job **p = &r->todo[JOB_WRITE]; *p; p = &(*p)->next)
        if (*p == w) { /* still queued: the writer has not begun it */
            if (!(*p = w->next))
                r->todo_tail[JOB_WRITE] = p;
            taken = true;
            break;
        }
    pthread_mutex_unlock(&r->mu);
    if (!taken)
        return false;
    unqueue(r, w);
    srv->rest.writing--;
    srv->rest.writing_bytes -= w->weight;
    srv->rest.taken_back++;
    e->writing = false;
    put_back(srv, e, w);
    job_free(w);
    return !pcd_model_resting(e);
}

bool pcd_restio_wait(pcd_server *srv, pcd_model *e, pcd_client *c)
{
    pcd_restio *r = srv->restio;
    if (!r || pcd_restio_take_back(srv, e))
        return false;
    size_t ahead;
    job *j = queued_load(r, e, &ahead);
    return j ? add_waiter(j, c) : queue_load(r, e, c);
}

void pcd_restio_prefetch(pcd_server *srv, pcd_model *e)
{
    pcd_restio *r = srv->restio;
    size_t ahead;
    if (pcd_restio_take_back(srv, e))
        return;
    /* out of memory: the request loads it when it comes */
    if (r && !queued_load(r, e, &ahead) && ahead < PCD_RESTIO_AHEAD && queue_load(r, e, NULL))
        srv->rest.loads_ahead++;
}

void pcd_restio_forget(pcd_server *srv, pcd_client *c)
{
    pcd_restio *r = srv->restio;
    if (!r)
        return;
    for (job *j = r->queued; j; j = j->next_queued)
        for (size_t i = 0; i < j->nwaiters; i++)
            if (j->waiters[i] == c)
                j->waiters[i] = NULL;
    for (size_t i = 0; r->finishing && i < r->finishing->nwaiters; i++)
        if (r->finishing->waiters[i] == c)
            r->finishing->waiters[i] = NULL;
}
