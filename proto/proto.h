/* proto.h - the wire protocol of perceptrond: MessagePack-RPC bytes <-> plain C.
 *
 * The only header of proto/ the daemon includes.  The layer has no sockets, no
 * clock, no globals that change and never logs: every function returns a
 * pcp_code and, on failure, a message in a pcp_error that can be sent to the
 * client as is (it names the key, the limit and its value).  docs/protocol.md
 * is the client author's view of the same contract.
 *
 * The life of a request:
 *   1. pcp_scan() on the bytes received so far, until it says one object is
 *      complete (every size, count and depth checked before anything allocates);
 *   2. pcp_unpack() of exactly those bytes into a msgpack_object (msgpack-c);
 *   3. pcp_message_parse() of the envelope: request or notification, msgid,
 *      method (through the method table) and the number of params;
 *   4. the handler reads its params with pcp_param_str(), pcp_features(),
 *      pcp_label(), pcp_batch(), pcp_model_spec();
 *   5. the answer is packed with pcp_pack_response_ok() + a result, or
 *      pcp_pack_response_error().
 * predict, label and their batches, nearly all of the traffic, first try the
 * direct path: pcp_direct_message() and pcp_direct_example() (or
 * pcp_direct_batch() and pcp_direct_item()) read them in one pass over the
 * bytes, or decline and leave them to steps 1-4.
 *
 * Ownership: nothing here allocates except pcp_features() (into the caller's
 * pc_svec, freed with pc_svec_free), pcp_unpack() (into the caller's zone) and
 * pcp_model_spec() (class names, freed with pcp_classes_free).  Pointers into
 * msgpack objects (names, labels, params) are borrowed: they live as long as
 * the zone and the byte buffer the object was unpacked from.
 */
#ifndef PERCEPTROND_PROTO_H
#define PERCEPTROND_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <msgpack.h>

#include "lib/perceptron.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

/* Wire error codes: the "code" of an error response.  Stable: clients switch
 * on them.  docs/protocol.md has the table. */
typedef enum pcp_code {
    PCP_OK = 0,
    PCP_E_PARSE = 1,     /* malformed msgpack: the stream cannot be resynchronised, connection closed */
    PCP_E_REQUEST = 2,   /* not a msgpack-rpc request/notification */
    PCP_E_METHOD = 3,    /* unknown method */
    PCP_E_PARAMS = 4,    /* wrong number or types of params */
    PCP_E_MODEL = 5,     /* unknown model (or an invalid model name) */
    PCP_E_FEATURES = 6,  /* bad features: non-finite, wrong types, out of range index */
    PCP_E_LABEL = 7,     /* bad label, unknown class */
    PCP_E_LIMIT = 8,     /* a limit exceeded (the message names the limit and its value) */
    PCP_E_EXISTS = 9,    /* model exists */
    PCP_E_SPEC = 10,     /* invalid model spec / parameters */
    PCP_E_INTERNAL = 11, /* out of memory, I/O: the request may be retried */
    PCP_E_BUSY = 12,     /* e.g. save in progress */
    PCP_E_DENIED = 13,   /* the connection lacks the right the method needs (`auth` first) */
    PCP_E_AUTH = 14,     /* `auth`: the token matches none (the connection keeps its listener's rights) */
    PCP_E_EVENT_UNKNOWN = 15, /* label_event: no event of that id was predicted (or long forgotten) */
    PCP_E_EVENT_EXPIRED = 16, /* label_event: the event's ttl passed (or it was evicted) first */
    PCP_E_EVENT_DONE = 17,    /* label_event: the event was labelled already */
    PCP_E_BEHIND = 18,        /* predict {"after"}: not applied here within limits.after_wait_ms */
} pcp_code;

#define PCP_CODE_COUNT 19

typedef struct pcp_error {
    pcp_code code;
    char msg[256];
} pcp_error;

/* Short stable name of a code ("parse", "limit", ...), "unknown" otherwise. */
const char *pcp_code_name(pcp_code c);

/* The wire code of a libperceptron status, the one mapping of them: PC_OK is
 * PCP_OK, PC_ENOMEM PCP_E_INTERNAL, PC_ELIMIT PCP_E_LIMIT; the others say the
 * input was refused, which is `refused` in the caller's terms (PCP_E_LABEL
 * for a label, PCP_E_SPEC for a model definition). */
pcp_code pcp_status_code(pc_status st, pcp_code refused);

/* Sets err (which may be NULL) to code and a printf-style message, truncated to
 * fit; returns code so that `return pcp_error_set(...)` reads naturally. */
pcp_code pcp_error_set(pcp_error *err, pcp_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes a printable, quoted excerpt of the bytes s[0..len) into out (cap > 8
 * bytes, always NUL-terminated): non-printable bytes as \xNN, at most about 40
 * bytes of s, "..." when cut.  For naming client-supplied strings in messages. */
const char *pcp_quote(char *out, size_t cap, const char *s, size_t len);

/* "an integer", "a string", ... : the type of o, for messages. */
const char *pcp_type_name(const msgpack_object *o);

/* ---- limits ------------------------------------------------------------ */

/* Every resource a client controls is bounded.  The defaults leave room for
 * large examples and batches; the ceilings are what the code can honour at all. */
typedef struct pcp_limits {
    size_t max_message;     /* bytes in one msgpack object (default 1 MiB) */
    uint32_t max_features;  /* features per example (default 100000) */
    uint32_t max_depth;     /* nesting depth of arrays/maps (default 16) */
    uint32_t max_batch;     /* examples per batch request (default 100000) */
} pcp_limits;

#define PCP_DEFAULT_MAX_MESSAGE (1u << 20)
#define PCP_DEFAULT_MAX_FEATURES 100000u
#define PCP_DEFAULT_MAX_DEPTH 16u
#define PCP_DEFAULT_MAX_BATCH 100000u

/* Ceilings.  Messages: msgpack-c sizes are 32-bit and the unpacker may need 24
 * bytes of memory per message byte (an array of one-byte elements), so 1 GiB is
 * already far more than any sane request.  Depth: msgpack-c's unpacker has a
 * fixed stack of 32 containers (MSGPACK_EMBED_STACK_SIZE) and fails beyond. */
#define PCP_MAX_MESSAGE_CEILING (1u << 30)
#define PCP_MIN_MESSAGE 64u
#define PCP_MAX_DEPTH_CEILING 32u
#define PCP_MIN_DEPTH 3u   /* [0, id, "predict", ["m", {features}]] nests 3 deep */

void pcp_limits_default(pcp_limits *l);
/* For config loaders: PCP_E_LIMIT naming the first limit outside its range
 * (max_message in [PCP_MIN_MESSAGE, PCP_MAX_MESSAGE_CEILING], max_depth in
 * [PCP_MIN_DEPTH, PCP_MAX_DEPTH_CEILING], max_features and max_batch >= 1).
 * pcp_scan clamps what it is given to the ceilings anyway. */
pcp_code pcp_limits_check(const pcp_limits *l, pcp_error *err);

/* ---- framing: bounded pre-scan ------------------------------------------ */

/* Resumable state of pcp_scan over one object.  Zero-initialise it (or
 * memset 0) to start; pcp_scan resets it itself after a complete object. */
typedef struct pcp_scan_state {
    size_t off;            /* bytes of the object accounted for (may exceed what arrived: a string's body) */
    uint64_t pending;      /* objects announced by headers but not started yet, each >= 1 byte */
    uint64_t examined;     /* bytes read for this object, re-reads of split headers included
                              (kept after a complete object until the next call) */
    uint32_t depth;        /* containers open */
    bool started, failed;
    uint64_t left[PCP_MAX_DEPTH_CEILING]; /* objects still to come in each open container */
} pcp_scan_state;

/* Bounded pre-scan of ONE msgpack object at buf[0..n).
 * Returns 1: a complete object of *len bytes starts at buf (bytes after it, a
 * pipelined next request, are not looked at); the state is reset for the next
 * object, which starts at buf + *len.  0: need more bytes; nothing seen so far
 * exceeds the limits; call again with the object's bytes from its first byte
 * and a larger n (the state holds offsets only, so the buffer may move).
 * -1: malformed (PCP_E_PARSE) or over a limit (PCP_E_LIMIT), err says which;
 * the stream cannot be resynchronised and later calls return -1 too.
 *
 * Checks: depth <= max_depth; size <= max_message; and every array/map/str/
 * bin/ext count or length fits in what is left of max_message, counting one
 * byte at least for every element still announced (an array of N needs N
 * bytes, a map 2N).  So msgpack-c, handed a scanned object of L bytes, never
 * allocates more than 24 L bytes (+ zone chunk rounding), and a 5-byte header
 * like `dd ff ff ff ff` (msgpack-c issue #1013, ~96 GB) is refused at once.
 * While 0 is returned, n never exceeds max_message + 4, so the caller's buffer
 * is bounded too.  Never allocates.  Resumes where it stopped: the total work
 * over all calls is O(final n) (at most 5 bytes of a split header are re-read
 * per call); st->examined counts it.  lim NULL means the defaults; limits above
 * the ceilings are clamped to them. */
int pcp_scan(pcp_scan_state *st, const uint8_t *buf, size_t n, const pcp_limits *lim,
             size_t *len, pcp_error *err);

/* Unpacks exactly buf[0..len) (a span pcp_scan accepted) with msgpack-c into o,
 * allocating from the caller's zone.  Strings in o point into buf: keep buf and
 * the zone while o is used.  PCP_E_PARSE if the bytes are not one object,
 * PCP_E_INTERNAL when the zone is out of memory. */
pcp_code pcp_unpack(const uint8_t *buf, size_t len, msgpack_zone *z, msgpack_object *o,
                    pcp_error *err);

/* ---- methods ------------------------------------------------------------ */

typedef enum pcp_method_id {
    PCP_M_PREDICT, PCP_M_LABEL, PCP_M_PREDICT_BATCH, PCP_M_LABEL_BATCH, PCP_M_MODELS,
    PCP_M_INFO, PCP_M_WEIGHTS, PCP_M_CREATE, PCP_M_DROP, PCP_M_RESET, PCP_M_SAVE, PCP_M_STATS,
    PCP_M_PING, PCP_M_AUTH, PCP_M_LABEL_EVENT, PCP_M_COMPARE, PCP_M_PROMOTE, PCP_M_SNAPSHOTS,
    PCP_M_ROLLBACK, PCP_M_EXPORT, PCP_M_IMPORT, PCP_M_COPY,
    PCP_M_COUNT
} pcp_method_id;

/* What a method is and may do: one bit each, read by everyone who decides. */
enum {
    PCP_F_DIRECT = 1 << 0,  /* proto/direct.c may read it straight from its bytes */
    PCP_F_BATCH = 1 << 1,   /* params[1] is an array of examples */
    PCP_F_LEARNS = 1 << 2,  /* carries labels and updates a model */
    PCP_F_CREATES = 1 << 3, /* may create its model when unknown (the daemon's auto_create) */
    PCP_F_ADMIN = 1 << 4,   /* changes which models exist or writes to disk */
    PCP_F_WRITES = 1 << 5,  /* changes durable state: what a journal must record */
    PCP_F_OPEN = 1 << 6,    /* needs no right at all (ping, auth) */
    PCP_F_OPT_WRITES = 1 << 7, /* writes when its options name an event (predict {"event": ID}) */
};

/* Whether a call of m with nparams params changes durable state (PCP_F_WRITES,
 * or PCP_F_OPT_WRITES with an options map that holds "event"): the one test
 * of it.  options: the call's options map, or NULL when the caller has not
 * decoded it (the direct path, which reads no options but {"event": ID}):
 * then options given count as writing. */
bool pcp_method_writes(const pcp_method_id id, uint32_t nparams, const msgpack_object *options);

/* Rights, in increasing order: a connection holding one holds those below it.
 * A method needs the right its flags say (pcp_method_right); a connection has
 * its listener's, raised by `auth` with a token (docs/security.md). */
typedef enum pcp_right {
    PCP_R_NONE = 0,  /* only the OPEN methods: ping, auth */
    PCP_R_READ = 1,  /* predict, models, info, weights, stats */
    PCP_R_LEARN = 2, /* and the LEARNS methods: label, label_batch */
    PCP_R_ADMIN = 3, /* and the ADMIN methods: create, drop, reset, save */
    PCP_RIGHT_COUNT
} pcp_right;

/* One method, declared as data (Redis's command table): the one place a
 * method is described.  The arity is checked once by pcp_message_parse, so
 * handlers can index params without counting. */
typedef struct pcp_method {
    const char *name;
    pcp_method_id id;
    uint8_t min_params, max_params;
    unsigned flags;           /* PCP_F_* */
    const char *params_doc;   /* e.g. "model, features" */
    const char *result_doc;   /* e.g. "{label, score, scores?}" */
} pcp_method;

/* The table, indexed by pcp_method_id. */
extern const pcp_method pcp_methods[PCP_M_COUNT];

/* The method named name[0..len) (not NUL-terminated), or NULL. */
const pcp_method *pcp_method_find(const char *name, size_t len);

/* The right a call of m with nparams params needs, from its flags: OPEN
 * none; ADMIN, or WRITES without LEARNS, admin; LEARNS, or a call that
 * writes by its options (predict with an event), learn; any other read. */
pcp_right pcp_method_right(const pcp_method *m, uint32_t nparams, const msgpack_object *options);
/* "none", "read", "learn", "admin"; pcp_right_find gives -1 for other words. */
const char *pcp_right_name(pcp_right r);
int pcp_right_find(const char *name);
/* The words above, NULL-terminated, in pcp_right order (config choices). */
extern const char *const pcp_right_names[];

/* ---- the envelope -------------------------------------------------------- */

/* [0, msgid, method, params] or [2, method, params].  params points at the
 * nparams elements of the params array (borrowed from the object). */
typedef struct pcp_message {
    bool notification;
    bool has_msgid;
    uint32_t msgid;
    const pcp_method *method;
    const msgpack_object *params;
    uint32_t nparams;
} pcp_message;

/* Parses the envelope and checks the arity against the method table.  On error
 * m->notification, m->has_msgid and m->msgid are still valid: when has_msgid is
 * true the caller can answer [1, msgid, error, nil]; a notification's error has
 * no one to go to.  Codes: PCP_E_REQUEST (not an array, bad type tag, msgid not
 * an integer in [0, 2^32-1], wrong element count, method not a string, params
 * not an array), PCP_E_METHOD (unknown method), PCP_E_PARAMS (arity). */
pcp_code pcp_message_parse(const msgpack_object *o, pcp_message *m, pcp_error *err);

/* Typed access to params.  i is 0-based; what names the param in messages
 * ("model", "class").  Type errors are PCP_E_PARAMS naming the param. */
pcp_code pcp_param_str(const pcp_message *m, uint32_t i, const char *what, const char **s,
                       size_t *len, pcp_error *err);
pcp_code pcp_param_uint(const pcp_message *m, uint32_t i, const char *what, uint64_t max,
                        uint64_t *v, pcp_error *err);

/* Model names become file names: 1..PCP_MODEL_NAME_MAX bytes of [A-Za-z0-9_.-],
 * not starting with '.'.  Checks a params element: PCP_E_PARAMS when it is not a
 * string, PCP_E_MODEL when the name is not valid (it cannot name a model). */
#define PCP_MODEL_NAME_MAX 64
pcp_code pcp_model_name(const msgpack_object *o, const char **name, size_t *len, pcp_error *err);
/* The rule itself, the one the daemon, its config and its snapshot files use:
 * true when name[0..len) may name a model.  PCP_MODEL_NAME_RULE words it. */
bool pcp_model_name_valid(const char *name, size_t len);
#define PCP_MODEL_NAME_RULE "use 1 to 64 of A-Z a-z 0-9 _ . - (not starting with '.')"

/* ---- features and labels -------------------------------------------------- */

/* Called for each string feature of a valid example, with its index. */
typedef void (*pcp_name_cb)(void *ud, uint32_t idx, const char *name, size_t len, double value);

/* Where a valid example's features are, so that their names can be
 * reported afterwards (pcp_names_report) and only for the examples whose
 * names are wanted: the general path's object, or the direct path's bytes
 * of it (depth: the nesting the direct path read it at); all NULL when no
 * key was a name. */
typedef struct pcp_names_at {
    const msgpack_object *obj;
    const uint8_t *start, *end;
    uint32_t depth;
} pcp_names_at;

/* Features -> normalized pc_svec for the model nm was set for (its dim, and
 * its feature preparation's name step: pc_namer).  Encodings:
 *   map   {name: value}: str keys through the name step (hashed with
 *         pc_hash_feature, or transformed and crossed), non-negative
 *         integer keys are indices;
 *   pairs [[name, value], ...] with the same keys;
 *   dense [v0, v1, ...]: index = position.
 * Values: integers or floats, finite.  Entries (before duplicates are summed)
 * <= lim->max_features (PCP_E_LIMIT), indices < dim.  Duplicates are summed and
 * zeros dropped (pc_svec_normalize).  *names (may be NULL) says where the
 * names are once the whole example is valid (pcp_names_report), and is empty
 * otherwise or when no key is a name.  x is cleared first and left empty on
 * error; it is reused across calls (free with pc_svec_free). */
pcp_code pcp_features(const msgpack_object *o, pc_namer *nm, const pcp_limits *lim, pc_svec *x,
                      pcp_names_at *names, pcp_error *err);
/* on_name for each string feature of o, features pcp_features accepted,
 * with its index in dim (pcp_names_report's walk of the general path's
 * object). */
void pcp_feature_names(const msgpack_object *o, uint32_t dim, pcp_name_cb on_name, void *ud);

/* Labels: binary models take 1/-1 (an integer, or a float exactly +-1) or
 * true/false; multiclass models a str of 1..PC_CLASS_NAME_MAX bytes without NUL
 * (l->cls points into the msgpack object, not copied).  Whether the class
 * exists is the model's business (pc_model_label). */
pcp_code pcp_label(const msgpack_object *o, bool multiclass, pc_label *l, pcp_error *err);

/* A batch param: an array of at most lim->max_batch items (PCP_E_LIMIT).  For
 * label_batch (labelled) each item must be a 2-element array [features, label]
 * (PCP_E_PARAMS naming the item); for predict_batch items are features.  On
 * success *items points at the *n items.  The features and labels themselves
 * are checked by pcp_features / pcp_label as the caller goes. */
pcp_code pcp_batch(const msgpack_object *o, bool labelled, const pcp_limits *lim,
                   const msgpack_object **items, uint32_t *n, pcp_error *err);

/* ---- the direct path for predict, label and their batches --------------- */

/* A predict or label message read straight from its bytes, up to the model's
 * name (a scalar as msgpack-c would unpack it: a string points into the
 * bytes); the rest is read by pcp_direct_example once the model is known. */
#define PCP_DIRECT_OPTIONS_MAX 4 /* entries of predict's options the direct path reads */
typedef struct pcp_direct {
    const pcp_method *method;  /* predict, label, predict_batch or label_batch */
    bool notification;
    uint32_t msgid;            /* requests only */
    msgpack_object model;      /* params[0]: any scalar (the handler checks it) */
    uint32_t nparams;          /* min_params, or one more: predict's options */
    const uint8_t *options;    /* where the bytes after the example start (pcp_direct_example):
                                  predict's options map, when it has one */
    /* predict's options map as pcp_direct_example read it (nil: none): up to
     * PCP_DIRECT_OPTIONS_MAX entries of a string key and a scalar value, in
     * option_kv; strings point into the bytes */
    msgpack_object opts;
    msgpack_object_kv option_kv[PCP_DIRECT_OPTIONS_MAX];
    const uint8_t *start, *features, *end; /* the message, params[1], the bytes' end */
} pcp_direct;

/* True when buf[0..n) starts with a predict, label, predict_batch or
 * label_batch request or notification (the envelope and params count right for
 * the method, within lim) whose first param is a scalar: *d is filled.  False for anything else: take the
 * general path.  Reads only buf[0..n), allocates nothing, reports no error. */
bool pcp_direct_message(const uint8_t *buf, size_t n, const pcp_limits *lim, pcp_direct *d);

/* The rest of d for the model nm was set for: true when the message is
 * complete within lim, its features are of a shape pcp_features reads
 * (elements scalars, or pairs of scalars) and valid, and, for label, the label
 * is a scalar; predict's options must be a map of at most
 * PCP_DIRECT_OPTIONS_MAX string keys with scalar values, read into d->opts
 * (anything else declines: the handler words what is wrong with them).  Then x holds the
 * features normalized, exactly as pcp_features would read them, *names
 * where their names are (may be NULL; pcp_names_report reports them as
 * pcp_features would), *label is the label (label only) and *len the
 * message's size.  False, with x cleared and *names empty, for anything
 * else, including bytes still to arrive. */
bool pcp_direct_example(pcp_direct *d, pc_namer *nm, const pcp_limits *lim, pc_svec *x,
                        msgpack_object *label, pcp_names_at *names, size_t *len);
/* Predict's options map, read ahead of its example into d->opts as
 * pcp_direct_example reads it (which reads it again): for a caller that must
 * know them before the example's names are hashed (an explanation keeps the
 * names of the one pass that hashes them).  The example is walked, not
 * hashed.  False (d->opts nil) when the message has no options or they are
 * not of the shape the direct path reads. */
bool pcp_direct_options(pcp_direct *d, const pcp_limits *lim);
/* on_name for each string feature of the example at (either path's), with
 * its index in dim; nothing for an empty at. */
void pcp_names_report(const pcp_names_at *at, uint32_t dim, const pcp_limits *lim,
                      pcp_name_cb on_name, void *ud);

/* label_event(model, ID, label), exactly three params: true when the ID and
 * the label are scalars and the message ends after them (*len its size);
 * false for anything else (options included: the general path's). */
bool pcp_direct_scalars(const pcp_direct *d, msgpack_object *id, msgpack_object *label,
                        size_t *len);

/* predict_batch and label_batch: pcp_direct_batch reads the batch's header,
 * true with *n its items (at most lim->max_batch, and no more than the bytes
 * that follow, so *n may size scratch).  Then pcp_direct_item, n times, reads
 * the next item (features, or [features, label] for label_batch) as
 * pcp_direct_example reads an example, advancing d->features; after the last
 * one the message's size is d->features - d->start.  False from either: take
 * the general path. */
bool pcp_direct_batch(pcp_direct *d, const pcp_limits *lim, uint32_t *n);
bool pcp_direct_item(pcp_direct *d, pc_namer *nm, const pcp_limits *lim, pc_svec *x,
                     msgpack_object *label, pcp_names_at *names);

/* ---- model specs -------------------------------------------------------- */

/* A model spec is the same set of keys wherever it is written: the `create`
 * request's map (pcp_model_spec) and the config's `template:` and `models:`
 * entries (daemon/config/model.c).  pcp_spec_keys is the one list of them,
 * with each key's kind and range; a front end converts its own node (msgpack
 * object, YAML node) into a value of the key's kind, checked against that
 * kind and range with its own wording, and hands it to the functions below,
 * which are the only code that fills a spec and validates what depends on more
 * than one value.  Their messages do not name the key: each front end names it
 * in its own format.  spec_keys.c. */
typedef enum pcp_spec_key {
    PCP_SPEC_RULE, PCP_SPEC_PARAMS, PCP_SPEC_DIM, PCP_SPEC_HASH_BITS, PCP_SPEC_BIAS,
    PCP_SPEC_BIAS_VALUE, PCP_SPEC_AVERAGED, PCP_SPEC_MODE, PCP_SPEC_CLASSES,
    PCP_SPEC_OPEN_CLASSES, PCP_SPEC_STORAGE, PCP_SPEC_WEIGHTS, PCP_SPEC_CALIBRATE, PCP_SPEC_JOIN_TTL,
    PCP_SPEC_SCALE, PCP_SPEC_TRANSFORMS, PCP_SPEC_CROSSES, PCP_SPEC_MAX_CROSSED,
    PCP_SPEC_JOIN_DEFAULT_LABEL, PCP_SPEC_JOIN_MAX_PENDING, PCP_SPEC_JOIN_MAX_BYTES,
    PCP_SPEC_CHALLENGERS, PCP_SPEC_EXPERTS, PCP_SPEC_EXPERTS_ETA, PCP_SPEC_EXPERTS_SEED,
    PCP_SPEC_PROMOTE_AUTO, PCP_SPEC_PROMOTE_CONFIDENCE, PCP_SPEC_PROMOTE_MIN_EXAMPLES,
    PCP_SPEC_HINTS_B, PCP_SPEC_HINTS_SEED,
    PCP_SPEC_NKEYS
} pcp_spec_key;

typedef enum pcp_spec_kind {
    PCP_KIND_RULE,     /* a rule name, converted with pc_rule_find: value.rule */
    PCP_KIND_PARAMS,   /* a map name -> number or list of numbers: pcp_spec_param per entry */
    PCP_KIND_UINT,     /* an integer in [min, max]: value.u */
    PCP_KIND_BOOL,     /* value.b */
    PCP_KIND_REAL,     /* a finite number: value.d */
    PCP_KIND_CHOICE,   /* one of choices: value.u is its index */
    PCP_KIND_CLASSES,  /* a list of class names: pcp_spec_classes, then pcp_spec_class each */
    PCP_KIND_LABEL,    /* a label as text ("1", "-1" or a class name): value.str */
    PCP_KIND_TEXTS,    /* a list of strings (transforms, crosses): pcp_spec_texts, then
                          pcp_spec_text each */
    PCP_KIND_CHALLENGERS, /* a list of specs (rule, params, averaged, bias, bias_value):
                             each parsed as a spec, then pcp_spec_challenger */
} pcp_spec_kind;

typedef struct pcp_spec_keyinfo {
    const char *name;
    pcp_spec_kind kind;
    uint64_t min, max;           /* PCP_KIND_UINT */
    const char *const *choices;  /* PCP_KIND_CHOICE: NULL-terminated */
    const char *want;            /* what is accepted, for messages: "true or false" */
} pcp_spec_keyinfo;

extern const pcp_spec_keyinfo pcp_spec_keys[PCP_SPEC_NKEYS];

/* The dimension of a spec that gives neither dim nor hash_bits is 2^this. */
#define PCP_SPEC_DEFAULT_HASH_BITS 20u
/* The default template's rule, transform and dimension (pcp_spec_init_template):
 * 2^19 for the features sent and 2^19 for their bins (scale: rms-sent keeps
 * them apart), the weights of one 2^20 space. */
#define PCP_TEMPLATE_RULE "pa"
#define PCP_TEMPLATE_SCALE PC_SCALE_RMS_SENT
#define PCP_TEMPLATE_TRANSFORM "*:logbins"
#define PCP_TEMPLATE_HASH_BITS 19u

typedef union pcp_spec_value {
    const pc_rule *rule;
    uint64_t u;
    bool b;
    double d;
    struct { const char *s; size_t len; } str;
} pcp_spec_value;

/* How a model joins predictions made with an event id to outcomes that come
 * later (docs/label-later.md): the join.* keys of a spec. */
typedef struct pcp_join_config {
    uint64_t ttl;          /* seconds an event waits for its outcome */
    uint64_t max_pending;  /* events remembered at most: beyond, the oldest expire */
    uint64_t max_bytes;    /* bytes of remembered events at most: likewise */
    bool has_default;      /* learn default_label when the ttl passes without an outcome */
    char default_label[PC_CLASS_NAME_MAX + 1]; /* "1"/"-1" (binary) or a class name */
    /* label hints (selective sampling, docs/algorithms.md "Label hints"): */
    double hints_b;        /* ask for a label with probability b / (b + |score|); 0: off */
    uint64_t hints_seed;   /* the draws' seed; 0: derived from the model's name when created */
} pcp_join_config;

/* A challenger: a rule that learns beside the model (the champion) from every
 * label it learns, without answering predictions.  c holds what the
 * challenger's spec gave (given[] says which); the rest is the champion's. */
#define PCP_CHALLENGERS_MAX 8
typedef struct pcp_challenger {
    pc_model_config c;
    bool given[PCP_SPEC_NKEYS];
} pcp_challenger;

/* How a model uses its challengers beyond `compare`: predict answered by its
 * champion alone, or by seed 001's weighted majority (WMA) or randomized
 * weighted majority (RWMA) over the champion and its challengers
 * (docs/algorithms.md, "Experts"); and whether a challenger the always-valid
 * test finds better is promoted without an operator (promote.*). */
typedef enum pcp_experts_mode {
    PCP_EXPERTS_NONE, PCP_EXPERTS_WMA, PCP_EXPERTS_RWMA
} pcp_experts_mode;
extern const char *const pcp_experts_names[]; /* "none", "weighted-majority", "randomized" */
typedef struct pcp_experts_config {
    pcp_experts_mode mode;
    double eta;      /* the penalty: weights shrink by (1 - eta) per mistake; 0: the schedule
                        eta_t = min(1/2, sqrt(ln N / t)) (seed 001, section 2) */
    uint64_t seed;   /* RWMA's draws: a pure function of (seed, round) */
    bool seed_given; /* experts.seed was given; else the model's name sets seed when it is
                        created (pcd_model_extras): models of one spec draw apart */
    bool auto_promote;      /* promote.auto */
    double confidence;      /* promote.confidence, in (0, 1) */
    uint64_t min_examples;  /* promote.min_examples: labels a challenger learned first */
} pcp_experts_config;
#define PCP_PROMOTE_DEFAULT_CONFIDENCE 0.99
#define PCP_PROMOTE_DEFAULT_MIN_EXAMPLES 1000u
#define PCP_EXPERTS_DEFAULT_ETA 0.1 /* weighted-majority (docs/evaluation.md, "Experts"); randomized: 0, the schedule */

#define PCP_JOIN_DEFAULT_TTL 3600u
#define PCP_JOIN_DEFAULT_MAX_PENDING 1000000u
#define PCP_JOIN_DEFAULT_MAX_BYTES (256u << 20)
void pcp_join_config_default(pcp_join_config *j);

/* A spec under construction. */
typedef struct pcp_spec {
    pc_model_config c;
    char **classes;        /* NULL-terminated, owned; NULL when none were given */
    size_t nclasses, room; /* names held, and the count pcp_spec_classes made room for */
    unsigned hash_bits;    /* what set c.dim, 0 when dim did */
    bool given[PCP_SPEC_NKEYS];
    pcp_join_config join;  /* the join.* keys */
    pcp_challenger challengers[PCP_CHALLENGERS_MAX];
    size_t nchallengers;
    pcp_experts_config experts; /* the experts.* keys */
} pcp_spec;

/* The built-in default: pc_model_config_default with dim 2^PCP_SPEC_DEFAULT_HASH_BITS
 * (the keys a config's model or a challenger leaves out). */
void pcp_spec_init(pcp_spec *s);
/* The default template (what auto_create and `create` take for the keys they
 * leave out, unless the config's template says otherwise), chosen by
 * measuring the evaluation suite (docs/evaluation.md; why: docs/algorithms.md,
 * "The default template"): PCP_TEMPLATE_RULE, averaged, each feature sent
 * divided by its root mean square (scale rms-sent), every named number also
 * binned by half-octaves (PCP_TEMPLATE_TRANSFORM), the bins left at 1,
 * dimension 2^PCP_TEMPLATE_HASH_BITS; the rest as pcp_spec_init. */
void pcp_spec_init_template(pcp_spec *s);
void pcp_spec_free(pcp_spec *s);
/* "perceptron, pa, ...": the rules a rule name may be, for messages. */
const char *pcp_rule_names(char *buf, size_t cap);

/* Applies one value of a scalar kind (rule, uint, bool, real, choice) to key k,
 * in range as the table says.  The rule first: it resets the parameters to its
 * defaults, and pcp_spec_param needs it.  Refuses dim with hash_bits (the
 * message suits the later of the two); a key given twice is the front end's
 * to refuse, as only it can say where. */
pcp_code pcp_spec_set(pcp_spec *s, pcp_spec_key k, pcp_spec_value v, pcp_error *err);
/* One entry of params, checked by the rule (pc_params_set); *st (may be NULL)
 * is its status, PC_ENOTFOUND when the rule has no such parameter. */
pcp_code pcp_spec_param(pcp_spec *s, const char *name, const double *v, size_t n, pc_status *st,
                        pcp_error *err);
/* classes: n names follow (at most PC_CLASSES_MAX), each with pcp_spec_class
 * (1 to PC_CLASS_NAME_MAX bytes, no NUL, not listed twice; i is its index). */
pcp_code pcp_spec_classes(pcp_spec *s, size_t n, pcp_error *err);
pcp_code pcp_spec_class(pcp_spec *s, size_t i, const char *name, size_t len, pcp_error *err);
/* transforms or crosses: n strings follow (at most PC_TRANSFORMS_MAX or
 * PC_CROSSES_MAX; a later list replaces an earlier one), each with
 * pcp_spec_text, which parses it (pc_transform_parse, pc_cross_parse). */
pcp_code pcp_spec_texts(pcp_spec *s, pcp_spec_key k, size_t n, pcp_error *err);
pcp_code pcp_spec_text(pcp_spec *s, pcp_spec_key k, size_t i, const char *text, size_t len,
                       pcp_error *err);
/* Adds the challenger whose own spec (a map parsed by the front end into
 * sub, finished) is sub: it must give `rule` and only rule, params, averaged,
 * bias and bias_value (the rest is the champion's); at most
 * PCP_CHALLENGERS_MAX.  pcp_challenger_config is the challenger's whole
 * config beside a champion's. */
pcp_code pcp_spec_challenger(pcp_spec *s, const pcp_spec *sub, pcp_error *err);
void pcp_challenger_config(const pc_model_config *champion, const pcp_challenger *ch,
                           pc_model_config *out);
/* What only the whole spec shows (a multiclass model needs classes or
 * open_classes, a binary model's join.default_label is 1 or -1); points c at
 * the classes.  On failure *blame is the key to name (PCP_SPEC_CLASSES or
 * PCP_SPEC_JOIN_DEFAULT_LABEL).  pc_model_new finishes the validation
 * (averaged with a non-additive rule, batch mode, bias_value 0, ...). */
pcp_code pcp_spec_finish(pcp_spec *s, pcp_spec_key *blame, pcp_error *err);

/* A model spec map for `create` (the keys above).  Keys may come in any
 * order; unknown or repeated keys are errors.  Fills c starting from base
 * (the daemon's template: the keys the map leaves out keep its values, and
 * its classes unless the map gives classes), or from pcp_spec_init when base
 * is NULL; class names are copied into a new NULL-terminated array
 * *classes (free with pcp_classes_free; NULL when there are none) and
 * c->classes points at them.  Every error is PCP_E_SPEC (or PCP_E_INTERNAL)
 * and names the key; on error c and *classes are untouched. */
pcp_code pcp_model_spec(const msgpack_object *map, const pc_model_config *base,
                        pc_model_config *c, char ***classes, pcp_error *err);
void pcp_classes_free(char **classes);
/* The same with the whole spec, join.* keys included, into *out (free with
 * pcp_spec_free unless its classes are taken over).  With a base (the
 * template), the keys the map leaves out keep the base's values, and the
 * join settings, challengers and experts out held on entry are kept unless
 * given. */
pcp_code pcp_model_spec_full(const msgpack_object *map, const pc_model_config *base,
                             pcp_spec *out, pcp_error *err);

/* ---- encoding ------------------------------------------------------------ */

/* msgpack-c packers report write failures through their callback's return
 * value only; these functions return nothing, so the callback's owner records
 * a failure (out of memory in the output buffer) and drops the connection. */

/* [0, msgid, method, [...]]: the caller packs the nparams params next (a
 * request the daemon writes itself: what its journal replays). */
void pcp_pack_request(msgpack_packer *pk, uint32_t msgid, const char *method, uint32_t nparams);
/* [1, msgid, nil, ...]: the caller packs the result object next. */
void pcp_pack_response_ok(msgpack_packer *pk, uint32_t msgid);
/* [1, msgid, {"code": int, "message": str}, nil] */
void pcp_pack_response_error(msgpack_packer *pk, uint32_t msgid, const pcp_error *err);
/* A string.  Inline: a literal's length is known where it is packed (the
 * keys of every answer), and a fixstr's header and body go to the packer's
 * writer in one call, not two (predict + label_event pack nine keys). */
static inline void pcp_pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    if (n < 32) {
        char b[32];
        b[0] = (char)(0xa0 | n);
        memcpy(b + 1, s, n);
        pk->callback(pk->data, b, n + 1);
        return;
    }
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}
/* predict: {label, score, scores?}: label is 1/-1 (binary) or the class name
 * (nil when a multiclass model has no class yet); scores, class -> score, is
 * packed for multiclass models when scores is not NULL (one per class, as
 * filled by pc_model_predict).  extra: the entries the caller packs after
 * these (the daemon's explain). */
void pcp_pack_prediction(msgpack_packer *pk, const pc_model *m, const pc_prediction *p,
                         const double *scores, uint32_t extra);
/* A predicted label alone: 1/-1, the class name, or nil (no class yet). */
void pcp_pack_label(msgpack_packer *pk, const pc_model *m, const pc_prediction *p);
/* label: {predicted, score, mistake, updated}, the prediction made before
 * the update; extra: the entries the caller packs after these (the daemon's
 * position). */
void pcp_pack_outcome(msgpack_packer *pk, const pc_model *m, const pc_outcome *o, uint32_t extra);

/* ---- Positions (position.c) ------------------------------------------------
 * A write's place in its model's log: "MS-SEQ", a Redis stream entry ID (the
 * shared log), or "LSN", a journal record's number (one daemon).  A client
 * keeps it as an opaque string and sends it back as predict's "after". */
typedef struct pcp_position {
    bool entry;       /* "MS-SEQ" (else "LSN", in seq) */
    uint64_t ms, seq;
} pcp_position;
#define PCP_POSITION_MAX 48 /* "MS-SEQ" of two 20-digit numbers, and the NUL */
/* buf (PCP_POSITION_MAX bytes) gets p's string; its length. */
size_t pcp_position_format(char *buf, pcp_position p);
/* s[0..len) as a position: digits, or digits '-' digits, each at most 2^64 - 1. */
bool pcp_position_parse(const char *s, size_t len, pcp_position *p);

#ifdef __cplusplus
}
#endif
#endif
