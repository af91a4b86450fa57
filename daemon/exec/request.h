/* request.h - one request's context, shared by both dispatch paths, and
 * the decoding of its params that handlers have in common: the model it
 * names and its examples.  (dispatch.h runs requests; this only reads them.) */
#ifndef PCD_REQUEST_H
#define PCD_REQUEST_H

#include "daemon/core/server.h"

/* One request on its way through a handler. */
typedef struct pcd_req {
    pcd_server *srv;
    pcd_client *client;        /* who asked (its rights); NULL: a replay.  Only save blocks it */
    const pcp_method *method;  /* its row: name, arity, PCP_F_* flags */
    uint32_t msgid;            /* requests only */
    bool notification;
    msgpack_packer *pk;        /* discards for notifications */
    pcp_error err;             /* set by a handler that fails */
    const uint8_t *raw;        /* the message's bytes, raw[0..len): what a journal records */
    size_t len;
    const uint8_t *more;       /* and after them more[0..more_len) when a handler set it (a */
    size_t more_len;           /* predict's options rewritten, join.c): else more_len is 0 */
    const pcp_message *msg;    /* the decoded envelope; NULL on the direct path */
    /* The examples of a DIRECT method, once decoded (the direct path decodes
     * them before the handler runs, the general path in the handler): */
    bool decoded;
    pcd_model *model;
    uint32_t n;                /* examples in srv->loop.xs (and srv->loop.ys for label_batch) */
    msgpack_object label;      /* label's label */
    uint32_t nparams;          /* params given (both paths) */
    const msgpack_object *options; /* predict's options map read by the direct path, or NULL; */
    size_t options_at;         /* where it starts in raw */
    msgpack_object event;      /* label_event's ID read by the direct path */
    bool keep_names;           /* its examples' names kept as they are read (an explanation's) */
    char name[PCP_MODEL_NAME_MAX + 1]; /* params[0] as pcd_req_name read it */
    /* A handler whose request is not what replay should redo (rollback,
     * copy: they read files or other models) points raw/len here at the
     * request that is (an import of the bytes it installed); run() frees it
     * once the write is journaled. */
    uint8_t *rewritten;
} pcd_req;

/* Packs a response's head, `[1, msgid, nil, ` : the handler packs the result
 * after it.  Only once nothing can fail (a response is never half written). */
static inline void pcd_req_ok(pcd_req *r) { pcp_pack_response_ok(r->pk, r->msgid); }
/* Sets r->err to code and a printf-style message; returns code. */
int pcd_req_fail(pcd_req *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The readers a method's row in dispatch.c runs before its handler. */
/* r->name: params[0], a valid model name (the model may not exist: the
 * lifecycle methods read files, or make it).  pcd_req_name_at reads
 * params[i] into out[PCP_MODEL_NAME_MAX + 1], what naming it in the error. */
int pcd_req_name(pcd_req *r);
int pcd_req_name_at(pcd_req *r, uint32_t i, const char *what, char *out);
/* r->model: the model named by params[0].  A valid unknown name gets a new
 * model from the template when the method may create (PCP_F_CREATES) and
 * auto_create is on.  Nothing to do when r->decoded. */
int pcd_req_model(pcd_req *r);
/* predict and label on the general path: r->model and srv->loop.xs[0] (and
 * r->label).  Nothing to do when r->decoded. */
int pcd_req_example(pcd_req *r);
/* The batches on the general path: r->model, srv->loop.xs[0..r->n) (and srv->loop.ys
 * for label_batch), every example checked before anything is learned.
 * Nothing to do when r->decoded. */
int pcd_req_batch(pcd_req *r);
/* The same from the bytes proto's direct path read, r->model being known:
 * true with r->len the message's size, false to decline. */
bool pcd_req_direct(pcd_req *r, pcp_direct *d);
/* Notes in r->model the feature names of the r->n examples read: those
 * whose outcome (outcomes[j].updated) changed the model, or all of them
 * when outcomes is NULL or challengers learn beside it (one of them may be
 * promoted with weights the champion never had). */
void pcd_req_note_names(pcd_req *r, const pc_outcome *outcomes);
/* Reports example j's feature names (of those read by this request), the
 * names of the features the model derives from them too, to on_name: those
 * kept as the examples were read (r->keep_names; else none).  The names
 * are valid during the call only. */
typedef void (*pcd_name_fn)(void *ud, uint32_t idx, const char *name, size_t len);
void pcd_req_names(pcd_req *r, uint32_t j, pcd_name_fn on_name, void *ud);
/* The scratch arrays for n examples (k scores), in srv; false when out of memory. */
bool pcd_req_scratch(pcd_server *srv, size_t n, size_t k);
/* Frees the scratch arrays pcd_req_scratch grew (at teardown). */
void pcd_req_scratch_free(pcd_server *srv);

#endif
