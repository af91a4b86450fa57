/* stream.h - the pipelined loop `replay` and `predict` share: read examples
 * from a data file (dataset.h), send them as `label` or `predict` requests
 * with up to `window` in flight, read and check every response in order,
 * draw a progress bar on stderr when it is a terminal.
 *
 * The loop prints nothing on stdout: each response goes to the caller's
 * callback, and the outcome (counts, time, the first error) comes back in a
 * ctl_stream_result for the caller to print as a table or JSON.
 */
#ifndef CTL_STREAM_H
#define CTL_STREAM_H

#include "clients/ctl/ctl.h"
#include "clients/ctl/dataset.h"

typedef struct ctl_stream_opts {
    pcc_ds_options ds;
    bool format_set;   /* --format given; else from the file's name (pcc_ds_format_of) */
    uint64_t window;   /* requests in flight, 1..65536 */
    int progress;      /* -1: when stderr is a terminal, 0 never, 1 always */
    bool multiclass;   /* --multiclass: send labels as strings */
    const char *positive; /* --positive L: label L is +1, any other -1 (binary) */
    const char *names;    /* --names FILE: libsvm indices sent as these names (hashed) */
} ctl_stream_opts;

/* The options both commands take (longopts entries and short letters). */
#define CTL_STREAM_SHORTOPTS "w:"
/* clang-format off */
#define CTL_STREAM_LONGOPTS                                                                        \
    {"format", required_argument, NULL, 0x2001},                                                   \
    {"label-column", required_argument, NULL, 0x2002},                                             \
    {"header", no_argument, NULL, 0x2003},                                                         \
    {"delimiter", required_argument, NULL, 0x2004},                                                \
    {"multiclass", no_argument, NULL, 0x2005},                                                     \
    {"window", required_argument, NULL, 'w'},                                                      \
    {"progress", no_argument, NULL, 0x2006},                                                       \
    {"no-progress", no_argument, NULL, 0x2007},                                                    \
    {"ignore", required_argument, NULL, 0x2008},                                                   \
    {"positive", required_argument, NULL, 0x2009},                                                 \
    {"categorical", required_argument, NULL, 0x200a},                                              \
    {"names", required_argument, NULL, 0x200b}
/* clang-format on */

void ctl_stream_defaults(ctl_stream_opts *o);
/* ctl_opt_fn for the options above (ud: ctl_stream_opts). */
int ctl_stream_opt(ctl_ctx *ctx, int opt, const char *arg, void *ud);
/* ctl_parse for a command whose options are the ones above (with o's
 * defaults, ctl_stream_defaults). */
int ctl_stream_parse(ctl_ctx *ctx, int argc, char **argv, ctl_stream_opts *o);

/* One answered example: its line, its label in the file (NULL without one)
 * and binary value (0 when not binary), and the daemon's result.
 * after_error: an earlier example failed; this answer was already in flight
 * (replay still counts it, as the daemon learned it; predict drops it, so
 * that its output has no gap in the middle). */
typedef struct ctl_stream_item {
    uint64_t line;
    const char *label;
    int y;
    const msgpack_object *result;
    bool after_error;
} ctl_stream_item;

/* Returns 0 to go on, or an exit status to stop (after printing why). */
typedef int (*ctl_stream_fn)(void *ud, const ctl_stream_item *item);

typedef struct ctl_stream_result {
    uint64_t sent, answered; /* answered: without an error (what the daemon did) */
    bool interrupted;        /* stopped by Ctrl-C (SIGINT) or SIGTERM; status 130 */
    double seconds;        /* from the first request to the last response */
    int status;            /* exit status: 0, 1 daemon error, 3 I/O, 4 data */
    int64_t error_code;    /* the daemon's code when status is 1, else -1 */
    char error[1024];      /* the first error, "" when none (also printed on stderr) */
    /* --positive: the labels sent, how many it matched, and the first other
     * labels (for ctl_stream_warn: a --positive that never matches makes every
     * example -1, silently) */
    uint64_t labels, positives;
    char others[4][64];
    size_t nothers;
    /* multiclass predict (ctl_stream_note_class): labels that are none of the
     * model's classes, and the first of them */
    uint64_t unknown;
    char unknown_names[4][64];
    size_t nunknown;
} ctl_stream_result;

/* r's first error as {"code": the daemon's code or null (a data or I/O
 * error, not the daemon's), "message": r->error}, for --json documents. */
void ctl_stream_pack_error(msgpack_packer *pk, const ctl_stream_result *r);

/* What the stream needs to know of the model (from `info`). */
typedef struct ctl_model_kind {
    bool exists, multiclass, open_classes;
    bool uncalibrated;     /* created with calibrate: false: predict answers no probability */
    size_t longest_class;  /* bytes of the longest class name */
    size_t scores_bytes;   /* packed size of a `scores` map of every class */
} ctl_model_kind;

/* Asks `info` about model (connecting first when ctx is not connected yet,
 * ctl_connect).  Returns 0, or CTL_EXIT_IO after printing why;
 * with must_exist (predict, evaluate), CTL_EXIT_DAEMON after reporting the
 * daemon's answer (ctl_daemon_error) when the model is not there. */
int ctl_model_probe(ctl_ctx *ctx, const char *model, bool must_exist, ctl_model_kind *k);

/* Before a replay into a model that does not exist: creates it multiclass
 * (open classes) when --multiclass is given or, without --positive, when a
 * label among the file's first 1000 examples is not binary (stdin is not
 * read ahead: --multiclass says it there); a binary model is left to the
 * daemon's auto-create from its template.  Updates k.  Returns 0 or an exit
 * status after printing why. */
int ctl_stream_prepare(ctl_ctx *ctx, const char *model, const char *path,
                       const ctl_stream_opts *o, ctl_model_kind *k);

/* The label an example is sent and evaluated with under --positive: +1 /
 * -1, or ex->y without it. */
int ctl_stream_y(const ctl_stream_opts *o, const pcc_ds_example *ex);

/* Streams path into method ("label" sends labels; "predict" does not) on
 * ctx->client (connected).  multiclass: labels as strings.  Stops at the
 * first error after reading every response already in flight.  The window
 * is lowered when the answers in flight could exceed what the daemon buffers
 * for a client before it stops reading (see stream.c).  Ctrl-C (or SIGTERM)
 * stops sending: the answers in flight are read and counted, and the result
 * says interrupted (a second Ctrl-C quits at once). */
void ctl_stream_run(ctl_ctx *ctx, const char *method, const char *model, const char *path,
                    const ctl_stream_opts *o, const ctl_model_kind *k, bool multiclass,
                    ctl_stream_fn fn, void *ud, ctl_stream_result *res);

/* A multiclass predict's answer (its `scores` map) and the example's label:
 * counts a label that is none of the model's classes. */
void ctl_stream_note_class(ctl_stream_result *r, const msgpack_object *answer, const char *label);
/* Prints on stderr what the labels say about the run: a --positive that
 * matched none of them (with the labels it met), labels the model has never
 * learned.  what: "replay" or "evaluate", for the message. */
void ctl_stream_warn(const ctl_stream_opts *o, const ctl_stream_result *r, const char *what);

#endif
