/* methods.c - the method table and the names of the wire error codes.
 *
 * Methods are data (Redis's command table): name, arity and flags (PCP_F_*),
 * one line each; the direct path, the daemon's dispatcher, auto-create and
 * whoever records writes all read these rows.  pcp_message_parse checks the arity once,
 * so handlers index their params without counting, and docs/protocol.md is
 * written from this table.  Designated initialisers tie each line to its enum
 * value; the _Static_assert catches a method added to the enum but not here.
 */
#include "proto/proto.h"

#include <string.h>

/* Short names for the rows below only. */
#define DIRECT PCP_F_DIRECT
#define BATCH PCP_F_BATCH
#define LEARNS PCP_F_LEARNS
#define CREATES PCP_F_CREATES
#define ADMIN PCP_F_ADMIN
#define WRITES PCP_F_WRITES
#define OPEN PCP_F_OPEN
#define OPT_WRITES PCP_F_OPT_WRITES

const pcp_method pcp_methods[] = {
    /* With options {"event": id} it remembers the example: a write (journaled). */
    [PCP_M_PREDICT] = {"predict", PCP_M_PREDICT, 2, 3, DIRECT | OPT_WRITES,
                       "model, features, {event?, explain?, after?}?",
                       "{label, score, scores?, explain?, position? (with event)}"},
    [PCP_M_LABEL] = {"label", PCP_M_LABEL, 3, 3, DIRECT | LEARNS | CREATES | WRITES,
                     "model, features, label", "{predicted, score, mistake, updated, position}"},
    [PCP_M_PREDICT_BATCH] = {"predict_batch", PCP_M_PREDICT_BATCH, 2, 3, DIRECT | BATCH,
                             "model, [features, ...], {explain?, after?}?",
                             "[{label, score, scores?, explain?}, ...]"},
    [PCP_M_LABEL_BATCH] = {"label_batch", PCP_M_LABEL_BATCH, 2, 2,
                           DIRECT | BATCH | LEARNS | CREATES | WRITES,
                           "model, [[features, label], ...]",
                           "{examples, mistakes, updates, position}"},
    [PCP_M_MODELS] = {"models", PCP_M_MODELS, 0, 0, 0, "", "[name, ...]"},
    [PCP_M_INFO] = {"info", PCP_M_INFO, 1, 1, 0, "model", "{config and stats}"},
    [PCP_M_WEIGHTS] = {"weights", PCP_M_WEIGHTS, 1, 3, 0,
                       "model, class?, top_k?", "[[feature, weight], ...] largest |weight| first"},
    [PCP_M_CREATE] = {"create", PCP_M_CREATE, 1, 2, ADMIN | WRITES, "model, spec?", "\"ok\""},
    [PCP_M_DROP] = {"drop", PCP_M_DROP, 1, 1, ADMIN | WRITES, "model", "\"ok\""},
    [PCP_M_RESET] = {"reset", PCP_M_RESET, 1, 1, ADMIN | WRITES, "model", "\"ok\""},
    [PCP_M_SAVE] = {"save", PCP_M_SAVE, 0, 0, ADMIN, "", "snapshot written"},
    [PCP_M_STATS] = {"stats", PCP_M_STATS, 0, 0, 0, "", "{server counters}"},
    [PCP_M_PING] = {"ping", PCP_M_PING, 0, 0, OPEN, "", "\"pong\""},
    [PCP_M_AUTH] = {"auth", PCP_M_AUTH, 1, 1, OPEN, "token", "{name, rights}"},
    /* DIRECT: the plain form's two scalars are read from the bytes (pcp_direct_scalars) */
    [PCP_M_LABEL_EVENT] = {"label_event", PCP_M_LABEL_EVENT, 3, 4, DIRECT | LEARNS | WRITES,
                           "model, event, label (nil: forget), {expire?, explain?}?",
                           "{served, predicted, score, mistake, updated, delay, explain?, position}"},
    [PCP_M_COMPARE] = {"compare", PCP_M_COMPARE, 1, 1, 0, "model",
                       "{champion, challengers: [{..., mcnemar}]}"},
    [PCP_M_PROMOTE] = {"promote", PCP_M_PROMOTE, 2, 2, ADMIN | WRITES, "model, challenger index",
                       "{promoted, model}"},
    /* the lifecycle (daemon/exec/lifecycle.c); rollback and copy are journaled
     * as the import of the bytes they installed, so replay needs no file */
    [PCP_M_SNAPSHOTS] = {"snapshots", PCP_M_SNAPSHOTS, 1, 1, ADMIN, "model",
                         "[{generation, written_at, examples, bytes}, ...] newest first"},
    [PCP_M_ROLLBACK] = {"rollback", PCP_M_ROLLBACK, 2, 2, ADMIN | WRITES, "model, generation",
                        "{rolled_back, generation, examples}"},
    [PCP_M_EXPORT] = {"export", PCP_M_EXPORT, 1, 1, ADMIN, "model",
                      "bin: the model as a snapshot file"},
    [PCP_M_IMPORT] = {"import", PCP_M_IMPORT, 2, 3, ADMIN | WRITES, "model, bytes, replace?",
                      "{imported, examples}"},
    [PCP_M_COPY] = {"copy", PCP_M_COPY, 2, 2, ADMIN | WRITES, "model (the new name), source",
                    "{copied, source, examples}"},
};
#undef DIRECT
#undef BATCH
#undef LEARNS
#undef CREATES
#undef ADMIN
#undef WRITES
#undef OPEN
#undef OPT_WRITES
_Static_assert(sizeof pcp_methods / sizeof pcp_methods[0] == PCP_M_COUNT,
               "pcp_methods must have one entry per pcp_method_id");

const pcp_method *pcp_method_find(const char *name, size_t len)
{
    /* A score of short names: a linear scan beats any index, the first
     * byte compared before anything is measured (label_event is 16th). */
    for (size_t i = 0; len && i < PCP_M_COUNT; i++) {
        const pcp_method *m = &pcp_methods[i];
        if (m->name[0] == name[0] && strlen(m->name) == len && memcmp(m->name, name, len) == 0)
            return m;
    }
    return NULL;
}

/* Whether an options map names an event: the one key that makes predict a
 * write ({"explain": K} and the other read options leave it a read). */
static bool names_event(const msgpack_object *o)
{
    if (o->type != MSGPACK_OBJECT_MAP)
        return false;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == 5 &&
            memcmp(k->via.str.ptr, "event", 5) == 0)
            return true;
    }
    return false;
}

static bool writes(const pcp_method *m, uint32_t nparams, const msgpack_object *options)
{
    return (m->flags & PCP_F_WRITES) ||
           ((m->flags & PCP_F_OPT_WRITES) && nparams > m->min_params &&
            (!options || names_event(options)));
}

bool pcp_method_writes(const pcp_method_id id, uint32_t nparams, const msgpack_object *options)
{
    return writes(&pcp_methods[id], nparams, options);
}

pcp_right pcp_method_right(const pcp_method *m, uint32_t nparams, const msgpack_object *options)
{
    if (m->flags & PCP_F_OPEN)
        return PCP_R_NONE;
    /* A change of durable state that is not a learning step is
     * administrative even when its row forgot ADMIN: a new method is safe by
     * default, never open to read-only clients by omission. */
    if ((m->flags & PCP_F_ADMIN) || ((m->flags & PCP_F_WRITES) && !(m->flags & PCP_F_LEARNS)))
        return PCP_R_ADMIN;
    /* a learning step, or a call that makes a model learn later (predict
     * with an event: its OPT_WRITES options) */
    if ((m->flags & PCP_F_LEARNS) || writes(m, nparams, options))
        return PCP_R_LEARN;
    return PCP_R_READ;
}

const char *const pcp_right_names[] = {
    [PCP_R_NONE] = "none", [PCP_R_READ] = "read", [PCP_R_LEARN] = "learn",
    [PCP_R_ADMIN] = "admin", [PCP_RIGHT_COUNT] = NULL,
};

const char *pcp_right_name(pcp_right r)
{
    return (unsigned)r < PCP_RIGHT_COUNT ? pcp_right_names[r] : "unknown";
}

int pcp_right_find(const char *name)
{
    for (int i = 0; i < PCP_RIGHT_COUNT; i++)
        if (!strcmp(pcp_right_names[i], name))
            return i;
    return -1;
}

static const char *const code_names[] = {
    [PCP_OK] = "ok",
    [PCP_E_PARSE] = "parse",
    [PCP_E_REQUEST] = "request",
    [PCP_E_METHOD] = "method",
    [PCP_E_PARAMS] = "params",
    [PCP_E_MODEL] = "model",
    [PCP_E_FEATURES] = "features",
    [PCP_E_LABEL] = "label",
    [PCP_E_LIMIT] = "limit",
    [PCP_E_EXISTS] = "exists",
    [PCP_E_SPEC] = "spec",
    [PCP_E_INTERNAL] = "internal",
    [PCP_E_BUSY] = "busy",
    [PCP_E_DENIED] = "denied",
    [PCP_E_AUTH] = "auth",
    [PCP_E_EVENT_UNKNOWN] = "event_unknown",
    [PCP_E_EVENT_EXPIRED] = "event_expired",
    [PCP_E_EVENT_DONE] = "event_done",
    [PCP_E_BEHIND] = "behind",
};
_Static_assert(sizeof code_names / sizeof code_names[0] == PCP_CODE_COUNT,
               "code_names must name every pcp_code");

const char *pcp_code_name(pcp_code c)
{
    if ((unsigned)c < PCP_CODE_COUNT && code_names[c])
        return code_names[c];
    return "unknown";
}

pcp_code pcp_status_code(pc_status st, pcp_code refused)
{
    switch (st) {
    case PC_OK: return PCP_OK;
    case PC_ENOMEM: return PCP_E_INTERNAL;
    case PC_ELIMIT: return PCP_E_LIMIT;
    default: return refused;
    }
}
