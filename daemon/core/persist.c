/* persist.c - models on disk: restore at start, snapshots while serving, the
 * final save at exit.  Whoever waits for a save is a pcd_client, answered
 * through its unblock callback: this file knows nothing of connections.
 *
 * Snapshots never stall the event loop: like Redis's BGSAVE, the daemon forks
 * and the child encodes and writes every changed model from its copy-on-write
 * image, while the parent goes on serving.  The parent only records, per
 * model, which `changes` count the child captured; when the child exits with
 * success those counts become the saved ones.  A model changed during the
 * write stays dirty and is written by the next job.  At exit there is nothing
 * left to serve, so the final save runs in-process.
 */
#define _GNU_SOURCE /* close_range */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/base/statedir.h"
#include "daemon/core/budget.h"
#include "daemon/core/models.h"
#include "daemon/core/persist.h"
#include "daemon/core/server.h"
#include "daemon/store/snapshot.h"

static void warn_cb(void *ud, const char *msg)
{
    (void)ud;
    pcd_warn("restore: %s", msg);
}

/* Decodes a generation that passed its CRC; a model that does not decode
 * (or holds NaN weights) sends the reader on to the previous generation. */
static int accept_model(void *ud, const uint8_t *buf, size_t len, uint64_t generation, char *why,
                        size_t whylen)
{
    (void)generation;
    return pcd_model_deserialize(ud, buf, len, why, whylen);
}

/* Reads the newest of gens[0..n) (name's generations on disk, newest
 * first) that is intact and decodes into tmp (info: its header).  0, or -1
 * with why set. */
static int read_one(pcd_server *srv, const char *name, const uint64_t *gens, size_t n,
                    pcd_model *tmp, pcd_snap_info *info, char *why, size_t whylen)
{
    uint8_t *buf;
    size_t len;
    if (pcd_snapshot_read_gens(srv->cfg.state_dir, name, gens, n, accept_model, tmp, &buf, &len,
                               info, warn_cb, NULL, why, whylen) != 0)
        return -1;
    free(buf);
    return 0;
}

/* What an entry knows of its snapshots on disk: the newest's header (info,
 * the one read) and the journal positions of the older generations kept,
 * from their heads, so that the journal keeps what a fall back to one of
 * them would replay, across restarts too (durability.c's pruning). */
static void entry_on_disk(pcd_server *srv, pcd_model *e, const pcd_snap_entry *f,
                          const pcd_snap_info *info)
{
    unsigned keep = srv->cfg.snapshot_keep;
    for (size_t k = f->n < keep ? f->n : keep; k-- > 1;) {
        pcd_snap_info old = {0};
        char why[300];
        if (f->gens[k] < info->generation &&
            pcd_snapshot_peek(srv->cfg.state_dir, f->name, f->gens[k], &old, why, sizeof why) == 0)
            pcd_model_saved(e, old.journal_lsn, keep);
        pcd_snap_info_free(&old);
    }
    e->generation = info->generation;
    e->disk_oldest = f->gens[f->n - 1];
    /* its file's size, should it go to rest unchanged */
    pcd_registry_set_disk_bytes(&srv->models, e, info->file_bytes);
    e->saved_at = info->written_at;
    e->lsn = info->journal_lsn; /* replay continues after it */
    e->log_ms = info->stream_ms; /* and the shared log is read after this entry */
    e->log_seq = info->stream_seq;
    pcd_model_saved(e, info->journal_lsn, keep);
}

/* With limits.resident_max on, a model enters at rest: its newest file's
 * head is read for its positions, nothing else, and the file is read whole
 * when a request (or a journal record past it) names the model.  1 when the
 * head does not read (the caller reads the whole file, as without
 * resident_max), 0, or -1 with err. */
static int enter_resting(pcd_server *srv, const pcd_snap_entry *f, char *err, size_t errlen)
{
    pcd_snap_info info = {0};
    char why[300];
    if (pcd_snapshot_peek(srv->cfg.state_dir, f->name, f->gens[0], &info, why, sizeof why) != 0) {
        pcd_warn("restore: model %s: %s; reading its snapshots whole", f->name, why);
        return 1;
    }
    pcd_model *e = pcd_registry_add_resting(&srv->models, f->name);
    if (!e) {
        pcd_snap_info_free(&info);
        snprintf(err, errlen, "out of memory restoring model %s", f->name);
        return -1;
    }
    entry_on_disk(srv, e, f, &info);
    pcd_budget_recount(srv, e); /* its entry weighs */
    pcd_snap_info_free(&info);
    return 0;
}

/* Restores one model's newest snapshot that is intact and decodes. */
static int restore_one(pcd_server *srv, const pcd_snap_entry *f, char *err, size_t errlen)
{
    pcd_snap_info info = {0};
    char why[300];
    pcd_model tmp = {0};
    const char *name = f->name;
    if (read_one(srv, name, f->gens, f->n, &tmp, &info, why, sizeof why) != 0) {
        snprintf(err, errlen,
                 "model %s: %s; refusing to start without it (move its files out of %s to start "
                 "without this model)",
                 name, why, srv->cfg.state_dir);
        pcd_snap_info_free(&info);
        return -1;
    }
    pcd_model *e = pcd_registry_add_parts(&srv->models, name, &tmp);
    if (!e) {
        pcd_snap_info_free(&info);
        snprintf(err, errlen, "out of memory restoring model %s", name);
        return -1;
    }
    pcd_budget_recount(srv, e);
    entry_on_disk(srv, e, f, &info);
    pc_stats st;
    pc_model_stats(e->model, &st);
    pcd_info("restored model %s (%s, generation %llu, %llu examples, %llu mistakes)", name,
             pc_rule_name(pc_model_config_of(e->model)->rule), (unsigned long long)info.generation,
             (unsigned long long)st.examples, (unsigned long long)st.mistakes);
    pcd_snap_info_free(&info);
    return 0;
}

int pcd_persist_read(const char *dir, const char *name, uint64_t generation, pcd_model *parts,
                     char *err, size_t errlen)
{
    /* Only the generation it was put to rest with, by its file name (no
     * listing of the state directory, whose size grows with the models): an
     * older one would lose what the journal may have pruned since. */
    uint8_t *buf;
    size_t len;
    int rc = pcd_snapshot_read_generation(dir, name, generation, &buf, &len, NULL, err, errlen);
    if (rc == 0) {
        rc = pcd_model_deserialize(parts, buf, len, err, errlen);
        free(buf);
    }
    return rc;
}

int pcd_persist_install(pcd_server *srv, pcd_model *e, pcd_model *parts, char *err, size_t errlen)
{
    if (pcd_registry_wake(&srv->models, e, parts) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pcd_budget_recount(srv, e);
    return 0;
}

int pcd_persist_load(pcd_server *srv, pcd_model *e, char *err, size_t errlen)
{
    pcd_model tmp = {0};
    if (pcd_persist_read(srv->cfg.state_dir, e->name, e->generation, &tmp, err, errlen) != 0)
        return -1;
    return pcd_persist_install(srv, e, &tmp, err, errlen);
}

int pcd_persist_restore(pcd_server *srv, char *err, size_t errlen)
{
    if (pcd_state_dir_prepare(srv->cfg.state_dir, err, errlen) != 0)
        return -1;
    pcd_snap_entry *files;
    size_t n, resting = 0;
    if (pcd_snapshot_index(srv->cfg.state_dir, &files, &n, err, errlen) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!pcp_model_name_valid(files[i].name, strlen(files[i].name))) {
            pcd_warn("ignoring snapshot files of '%s': not a valid model name", files[i].name);
            continue;
        }
        rc = srv->cfg.resident_max ? enter_resting(srv, &files[i], err, errlen) : 1;
        if (rc == 0)
            resting++;
        else if (rc > 0)
            rc = restore_one(srv, &files[i], err, errlen);
    }
    pcd_snapshot_index_free(files, n);
    if (rc != 0)
        return -1;
    if (resting)
        pcd_info("%zu models entered at rest (limits.resident_max: %u): each is read when a "
                 "request names it", resting, srv->cfg.resident_max);
    /* Models of the config that have no snapshot yet start empty; a snapshot
     * wins over the config, which only says how to create the model. */
    for (size_t i = 0; i < srv->cfg.nmodels; i++) {
        const pcd_model_def *d = &srv->cfg.models[i];
        pcd_model *e = pcd_registry_find(&srv->models, d->name, strlen(d->name));
        if (e) {
            if (e->model && pc_model_config_of(e->model)->rule != d->cfg.rule)
                pcd_warn("model %s: the config says rule %s but its snapshot has %s; keeping the "
                         "snapshot (drop the model to apply the config)",
                         d->name, pc_rule_name(d->cfg.rule),
                         pc_rule_name(pc_model_config_of(e->model)->rule));
            continue;
        }
        pcp_error perr;
        if (!(e = pcd_model_create(srv, d->name, &d->cfg, &perr)) ||
            pcd_model_extras(e, &d->join, d->challengers, d->nchallengers, &d->experts, &perr)) {
            snprintf(err, errlen, "model %s: %s", d->name, perr.msg);
            return -1;
        }
    }
    return 0;
}

/* What writing one model came to.  The child fills these in memory shared with
 * the parent (MAP_SHARED), so the parent learns per model what is on disk even
 * when a job writes some models and fails others. */
enum { RES_NONE, RES_WRITTEN, RES_FAILED }; /* NONE: not reached (the child died) */
struct pcd_snapresult {
    uint8_t state;
    uint64_t oldest; /* the oldest generation left on disk (0: not known) */
    uint64_t bytes;  /* the file's size */
    char why[191];
};

/* Writes the listed models now, in this process (the child, or at exit);
 * res[i] says how model i fared.  Returns the number of failures. */
static int write_models(pcd_server *srv, pcd_model **list, const uint64_t *gens, size_t n,
                        struct pcd_snapresult *res)
{
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t *buf = NULL;
        size_t len;
        char err[300];
        pcd_snap_disk disk = {.oldest = list[i]->disk_oldest};
        int rc = pcd_model_serialize(list[i], &buf, &len, err, sizeof err);
        if (rc == 0)
            rc = pcd_snapshot_write(srv->cfg.state_dir, list[i]->name, gens[i], pcd_now(),
                                    list[i]->lsn, list[i]->log_ms, list[i]->log_seq, buf, len,
                                    srv->cfg.snapshot_keep, &disk, err, sizeof err);
        res[i].oldest = rc == 0 ? disk.oldest : 0;
        res[i].bytes = disk.bytes;
        if (rc < 0) {
            pcd_error("snapshot of model %s failed: %s", list[i]->name, err);
            failures++;
            snprintf(res[i].why, sizeof res[i].why, "%.190s", err);
        } else if (rc > 0) { /* written and durable; old generations remain */
            pcd_warn("snapshot of model %s: %s", list[i]->name, err);
        }
        if (rc >= 0 && srv->on_snapshot)
            srv->on_snapshot(srv, list[i], buf, len);
        res[i].state = rc < 0 ? RES_FAILED : RES_WRITTEN;
        free(buf);
    }
    return failures;
}

static void job_clear(pcd_snapjob *j)
{
    if (j->results)
        munmap(j->results, j->n * sizeof *j->results);
    j->results = NULL;
    for (size_t i = 0; i < j->n; i++)
        free(j->names[i]);
    free(j->names);
    free(j->generations);
    free(j->ids);
    j->names = NULL;
    j->generations = NULL;
    j->ids = NULL;
    j->n = 0;
    j->pid = 0;
}

static void answer(pcd_waiter *w, bool ok, const char *msg, uint64_t written)
{
    while (w) {
        pcd_waiter *next = w->next;
        if (w->client)
            w->client->unblock(w->client, w->msgid, w->notification, ok, msg, written);
        free(w);
        w = next;
    }
}

/* Forks a child that writes every dirty model.  0 = started, 1 = nothing to
 * do, -1 = failed (err). */
static int start_job(pcd_server *srv, char *err, size_t errlen)
{
    /* a resting model is never dirty: the resident ones, in no order */
    size_t n;
    pcd_model **all = pcd_registry_resident_list(&srv->models, &n);
    if (!all) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (pcd_model_dirty(all[i]))
            all[k++] = all[i];
    if (k == 0) {
        free(all);
        return 1;
    }
    pcd_snapjob *j = &srv->snap;
    j->names = calloc(k, sizeof *j->names);
    j->generations = calloc(k, sizeof *j->generations);
    j->ids = calloc(k, sizeof *j->ids);
    if (!j->names || !j->generations || !j->ids) {
        free(all);
        job_clear(j);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < k; i++) {
        j->names[i] = strdup(all[i]->name);
        j->generations[i] = all[i]->generation + 1;
        j->ids[i] = all[i]->id;
        all[i]->generation++; /* never reuse a number, even if this job fails */
        all[i]->saving_changes = all[i]->changes;
        all[i]->saving_lsn = all[i]->lsn;
        all[i]->saving_job = j->serial + 1; /* the serial this job takes below */
        if (!j->names[i]) {
            j->n = i;
            free(all);
            job_clear(j);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    j->n = k;
    void *shared = mmap(NULL, k * sizeof *j->results, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0); /* zeroed: RES_NONE */
    if (shared == MAP_FAILED) {
        snprintf(err, errlen, "mmap: %s", strerror(errno));
        free(all);
        job_clear(j);
        return -1;
    }
    j->results = shared;
    j->serial++;
    j->started = pcd_monotonic();
    pid_t parent = getpid();
    pid_t pid = fork();
    /* The only pause serving sees: fork() copying the page tables. */
    j->fork_seconds = pcd_monotonic() - j->started;
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        free(all);
        job_clear(j);
        return -1;
    }
    if (pid == 0) {
        /* The child: only write(2)-level work, then _exit without running the
         * parent's atexit handlers or flushing its stdio.  It dies with the
         * parent: an orphan still writing would share the state directory
         * with the next daemon.  If the parent died before prctl, getppid()
         * already names another process. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
            _exit(1);
        /* Nothing of the parent's but stderr (the log): a copy of a client's
         * socket would keep it open after the daemon closed it, and a copy of
         * a listener would accept connections nobody serves once the daemon
         * is gone.  The child opens the files it writes itself. */
        if (close_range(3, ~0U, 0) != 0) /* kernels before 5.9 */
            for (int fd = 3; fd < 1024; fd++)
                close(fd);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        pcd_test_delay("PCD_TEST_SNAPSHOT_DELAY_MS");
        int failures = write_models(srv, all, j->generations, k, j->results);
        free(all); /* the rest is the parent's, gone with the process; this is the child's own */
        _exit(failures ? 1 : 0);
    }
    free(all);
    j->pid = pid;
    pcd_debug("snapshot child %d writing %zu models", (int)pid, k);
    return 0;
}

int pcd_persist_save(pcd_server *srv, pcd_client *waiter, uint32_t msgid, bool notification,
                     char *err, size_t errlen)
{
    pcd_snapjob *j = &srv->snap;
    pcd_waiter *w = NULL;
    if (waiter) {
        w = calloc(1, sizeof *w);
        if (!w) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        w->client = waiter;
        w->msgid = msgid;
        w->notification = notification;
    }
    if (j->pid) {
        /* The running child has an older image: queue for the next job. */
        j->again = true;
        if (w) {
            w->next = j->next_waiters;
            j->next_waiters = w;
        }
        return w ? 1 : 0;
    }
    int r = start_job(srv, err, errlen);
    if (r != 0) {
        free(w);
        if (r < 0)
            pcd_error("cannot start a snapshot: %s", err);
        return r < 0 ? -1 : 0;
    }
    if (w) {
        w->next = j->waiters;
        j->waiters = w;
    }
    return w ? 1 : 0;
}

void pcd_persist_child_exited(pcd_server *srv, pid_t pid, int status)
{
    pcd_snapjob *j = &srv->snap;
    if (pid != j->pid)
        return;
    double secs = pcd_monotonic() - j->started;
    uint64_t written = 0, failed = 0;
    char names[160] = "", why[200] = "";
    size_t nl = 0;
    for (size_t i = 0; i < j->n; i++) {
        pcd_model *e = pcd_registry_find(&srv->models, j->names[i], strlen(j->names[i]));
        if (!e || e->id != j->ids[i]) {
            /* Dropped while being written: remove what the child wrote.  A
             * model re-created under the name since then keeps its own files
             * (all of a higher generation, see pcd_model_create). */
            char err[300];
            int rc = e ? pcd_snapshot_remove_generation(srv->cfg.state_dir, j->names[i],
                                                        j->generations[i], err, sizeof err)
                       : pcd_snapshot_remove(srv->cfg.state_dir, j->names[i], err, sizeof err);
            if (rc < 0) {
                srv->models.strays = true;
                pcd_error("model %s was dropped during a snapshot, but what the snapshot wrote "
                          "remains: %s", j->names[i], err);
            }
            continue;
        }
        /* Per model: what the child wrote is saved even if others failed. */
        const struct pcd_snapresult *r = &j->results[i];
        if (e->generation != j->generations[i]) {
            /* Written anew since the fork (put to rest: core/rest.c evicts a
             * model the child holds when no other can go), with everything
             * the child's image has and more: what the child wrote stays on
             * disk as an older generation, and the entry keeps its own
             * positions, not the child's older ones. */
            written += r->state == RES_WRITTEN;
            continue;
        }
        if (r->state == RES_WRITTEN) {
            e->disk_oldest = r->oldest;
            pcd_registry_set_disk_bytes(&srv->models, e, r->bytes);
            e->saved_changes = e->saving_changes;
            pcd_model_saved(e, e->saving_lsn, srv->cfg.snapshot_keep);
            e->saved_at = pcd_now();
            written++;
            continue;
        }
        if (failed++ == 0)
            snprintf(why, sizeof why, "%s",
                     r->state == RES_FAILED ? r->why : "the snapshot child died before writing it");
        int k = snprintf(names + nl, sizeof names - nl, "%s%s", nl ? ", " : "", j->names[i]);
        nl = k < 0 || (size_t)k >= sizeof names - nl ? sizeof names - 1 : nl + (size_t)k;
    }
    srv->loop.counters.snapshots_written += written;
    srv->loop.counters.snapshots_failed += failed;
    if (written)
        pcd_info("snapshot of %llu models written in %.3f s (serving paused %.2f ms for fork)",
                 (unsigned long long)written, secs, j->fork_seconds * 1e3);
    if (!WIFEXITED(status))
        pcd_error("snapshot child %d killed by signal %d", (int)pid, WTERMSIG(status));
    char msg[512] = ""; /* names and why, and the words around them */
    if (failed) {
        pcd_error("snapshot: %llu models not written (%s): they stay dirty and will be retried",
                  (unsigned long long)failed, names);
        snprintf(msg, sizeof msg, "snapshot failed for model%s %s (%s%s); %llu other model%s written",
                 failed > 1 ? "s" : "", names, failed > 1 ? "first: " : "", why,
                 (unsigned long long)written, written == 1 ? "" : "s");
    }
    pcd_waiter *waiters = j->waiters;
    j->waiters = NULL;
    job_clear(j);
    answer(waiters, failed == 0, msg, written);
    if (j->again && !srv->stopping) {
        j->again = false;
        pcd_waiter *next = j->next_waiters;
        j->next_waiters = NULL;
        char err[200];
        int r = start_job(srv, err, sizeof err);
        if (r == 0)
            j->waiters = next;
        else
            answer(next, r > 0, err, 0);
    }
}

void pcd_persist_forget(pcd_server *srv, pcd_client *c)
{
    for (pcd_waiter *w = srv->snap.waiters; w; w = w->next)
        if (w->client == c)
            w->client = NULL;
    for (pcd_waiter *w = srv->snap.next_waiters; w; w = w->next)
        if (w->client == c)
            w->client = NULL;
}

/* Writes list[0..k) now, in this process (at exit, or a model put to rest),
 * each as a new generation; those written are saved.  The number of
 * failures; err gets the first one's reason. */
static int write_now(pcd_server *srv, pcd_model **list, size_t k, char *err, size_t errlen)
{
    uint64_t *gens = calloc(k ? k : 1, sizeof *gens);
    struct pcd_snapresult *res = calloc(k ? k : 1, sizeof *res);
    int failures = gens && res ? 0 : 1;
    if (errlen)
        snprintf(err, errlen, "%s", failures ? "out of memory" : "");
    if (gens && res) {
        for (size_t i = 0; i < k; i++)
            gens[i] = ++list[i]->generation;
        failures = write_models(srv, list, gens, k, res);
        for (size_t i = 0; i < k; i++)
            if (res[i].state == RES_WRITTEN) {
                list[i]->disk_oldest = res[i].oldest;
                pcd_registry_set_disk_bytes(&srv->models, list[i], res[i].bytes);
                list[i]->saved_changes = list[i]->changes;
                list[i]->saved_at = pcd_now();
                pcd_model_saved(list[i], list[i]->lsn, srv->cfg.snapshot_keep);
            } else if (errlen && !err[0]) {
                snprintf(err, errlen, "%s", res[i].why);
            }
    }
    free(res);
    free(gens);
    return failures;
}

int pcd_persist_final(pcd_server *srv)
{
    if (srv->snap.pid) {
        int status;
        pid_t pid = srv->snap.pid;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        pcd_persist_child_exited(srv, pid, status);
    }
    answer(srv->snap.next_waiters, false, "the daemon is stopping", 0);
    srv->snap.next_waiters = NULL;
    size_t n;
    pcd_model **all = pcd_registry_resident_list(&srv->models, &n); /* as start_job */
    if (!all)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (pcd_model_dirty(all[i]))
            all[k++] = all[i];
    int failures = write_now(srv, all, k, NULL, 0);
    if (k)
        pcd_info("final snapshot: %zu models written, %d failed", k - (size_t)failures, failures);
    free(all);
    return failures ? -1 : 0;
}

int pcd_persist_write(pcd_server *srv, pcd_model *e, char *err, size_t errlen)
{
    return write_now(srv, &e, 1, err, errlen) ? -1 : 0;
}
