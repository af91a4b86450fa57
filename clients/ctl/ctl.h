/* ctl.h - what perceptronctl's subcommands share: the command table entry,
 * the exit codes, option parsing common to every subcommand, the connection
 * and calls with error reporting, JSON output (json.c) and the little
 * formatting helpers for tables people read.
 *
 * Every subcommand is one function `int ctl_cmd_NAME(ctl_ctx *, int argc,
 * char **argv)` in clients/ctl/cmd_NAME.c, listed in main.c's table; argv[0]
 * is the subcommand's name.  It returns the process exit status.
 *
 * Ownership: ctl_ctx owns its connection (closed by main after the handler
 * returns).  Strings handed to ctl_table_add are copied.  The result objects
 * ctl_call returns live until the next read on the connection.
 */
#ifndef CTL_H
#define CTL_H

#include <getopt.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clients/pcclient.h"

/* Exit statuses: what a script may rely on (docs/perceptronctl.md). */
enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_DAEMON = 1, /* the daemon answered with an error (unknown model, bad spec...) */
    CTL_EXIT_USAGE = 2,  /* bad command line: nothing was sent */
    CTL_EXIT_IO = 3,     /* cannot connect, or the connection failed midway */
    CTL_EXIT_DATA = 4,   /* replay/predict: the data file cannot be read or does not parse */
};

/* ctl_parse's "parsed, go on" (every exit status is >= 0). */
#define CTL_CONTINUE (-1)

typedef struct ctl_ctx ctl_ctx;

typedef struct ctl_command {
    const char *name;
    int (*run)(ctl_ctx *ctx, int argc, char **argv);
    int min_args, max_args; /* positional arguments, checked by ctl_parse */
    const char *summary;    /* one line, for `perceptronctl --help` */
    const char *usage;      /* the synopsis after the command's name ("" if none) */
    const char *details;    /* more for `COMMAND --help` ("" if none) */
    const char *options;    /* the command's own option lines for --help ("" if none) */
} ctl_command;

struct ctl_ctx {
    const char *address;    /* -a, $PERCEPTROND_ADDRESS or PCC_DEFAULT_ADDRESS */
    bool json;              /* --json: one JSON document on stdout */
    const ctl_command *cmd; /* the running subcommand */
    pcc_client *client;     /* after ctl_connect */
    char **args;            /* positional arguments after ctl_parse */
    int nargs;
};

/* The table (main.c). */
extern const ctl_command ctl_commands[];
extern const size_t ctl_ncommands;

/* The interactive prompt (interactive.c): reads lines, runs each with
 * run(base, argc, argv) (argv[0] the command).  Returns the last status. */
int ctl_interactive(ctl_ctx *base, int (*run)(ctl_ctx *base, int argc, char **argv));

/* The lines of --help both `perceptronctl --help` and `COMMAND --help` print. */
#define CTL_HELP_ADDRESS                                                                          \
    "  -a, --address ADDR   unix:PATH, tcp:HOST:PORT, tls:HOST:PORT, PATH or HOST:PORT\n"         \
    "                       (default $PERCEPTROND_ADDRESS, else unix:" PCC_INSTALLED_PATH "\n"    \
    "                       if it exists, else " PCC_DEFAULT_ADDRESS ")\n"
#define CTL_HELP_EXIT                                                                             \
    "\nExit status: 0 ok, 1 the daemon answered an error, 2 usage error,\n"                       \
    "3 cannot connect or the connection failed, 4 data file unreadable or malformed.\n"

/* Prints `perceptronctl CMD` --help text to out. */
void ctl_help(const ctl_command *cmd, FILE *out);

/* ---- option parsing ---------------------------------------------------- */

/* Options every subcommand accepts, to end its longopts (before {0}). */
#define CTL_OPT_JSON 0x1001
#define CTL_COMMON_LONGOPTS                                                                      \
    {"address", required_argument, NULL, 'a'}, {"json", no_argument, NULL, CTL_OPT_JSON},         \
        {"help", no_argument, NULL, 'h'}

/* Called for each of the subcommand's own options; returns 0, or an exit
 * status after printing why (ctl_usage_error). */
typedef int (*ctl_opt_fn)(ctl_ctx *ctx, int opt, const char *arg, void *ud);

/* Parses argv (argv[0] = subcommand) with getopt_long; options may follow
 * positional arguments ("--" ends them).  Handles the common options, checks
 * the positional count against the table and sets ctx->args/nargs.  Returns
 * CTL_CONTINUE, or the exit status to return at once (0 after --help, 2 on a
 * usage error, already printed). */
int ctl_parse(ctl_ctx *ctx, int argc, char **argv, const char *shortopts,
              const struct option *longopts, ctl_opt_fn fn, void *ud);

/* The ctl_opt_fn of a command whose one option is a flag: sets *(bool *)ud. */
int ctl_opt_flag(ctl_ctx *ctx, int opt, const char *arg, void *ud);

/* Prints "perceptronctl CMD: <message>" and the synopsis on stderr; returns
 * CTL_EXIT_USAGE. */
int ctl_usage_error(const ctl_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict number parsing for option values: the whole string, in range. */
bool ctl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
bool ctl_parse_double(const char *s, double *out); /* finite only */

/* ---- talking to the daemon ------------------------------------------------ */

/* Connects to ctx->address.  Returns 0, or CTL_EXIT_IO after printing why. */
int ctl_connect(ctl_ctx *ctx);
/* Sends what is packed and waits for the response to msgid.  Returns 0 with
 * *result set; CTL_EXIT_DAEMON after reporting the daemon's error (stderr,
 * and with --json also {"error": {...}} on stdout); CTL_EXIT_IO after
 * reporting a broken connection. */
int ctl_call(ctl_ctx *ctx, uint32_t msgid, const msgpack_object **result);
/* The reporting halves of ctl_call, for handlers that read responses
 * themselves (pipelining).  `where` prefixes the message (may be NULL). */
int ctl_daemon_error(const ctl_ctx *ctx, const char *where, const msgpack_object *error);
int ctl_io_error(const ctl_ctx *ctx, const char *msg);
/* Any other failure: "perceptronctl CMD: message" on stderr. */
void ctl_errorf(const ctl_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Packs a C string. */
void ctl_pack_str(msgpack_packer *pk, const char *s);
/* A simple call: method(model) or method() when model is NULL. */
int ctl_call_simple(ctl_ctx *ctx, const char *method, const char *model,
                    const msgpack_object **result);
/* method(model, n): `rollback MODEL GENERATION`, `promote MODEL INDEX`. */
int ctl_call_model_u64(ctl_ctx *ctx, const char *method, const char *model, uint64_t n,
                       const msgpack_object **result);
/* For the commands whose --json output is the result as is.  ctl_answer:
 * ctl_call, then with --json prints the result and returns CTL_EXIT_OK; else
 * returns CTL_CONTINUE with *result set, for the caller's text (or ctl_call's
 * error status).  ctl_simple_command: the whole opening of a command with no
 * options of its own that makes one ctl_call_simple, method(args[0]) when
 * with_model, else method(): ctl_parse, the call, and the answer as
 * ctl_answer gives it. */
int ctl_answer(ctl_ctx *ctx, uint32_t msgid, const msgpack_object **result);
int ctl_simple_command(ctl_ctx *ctx, int argc, char **argv, const char *method, bool with_model,
                       const msgpack_object **result);

/* ---- JSON (json.c) --------------------------------------------------------- */

/* Writes o as JSON; indent < 0: on one line, else pretty with that indent. */
void ctl_json_write(FILE *f, const msgpack_object *o, int indent);
void ctl_json_string(FILE *f, const char *s, size_t n); /* escaped, invalid UTF-8 -> U+FFFD */
void ctl_json_number(FILE *f, double v);                /* shortest exact; NaN/Inf -> null */
/* --json output of a whole result: pretty, followed by a newline. */
void ctl_json_print(const msgpack_object *o);

/* A document the client builds itself: pack into doc->pk, then print. */
typedef struct ctl_doc {
    msgpack_sbuffer buf;
    msgpack_packer pk;
} ctl_doc;
void ctl_doc_init(ctl_doc *d);
void ctl_doc_print(ctl_doc *d); /* prints as JSON (ctl_json_print) and frees */
void ctl_doc_write(ctl_doc *d, FILE *f, int indent); /* ctl_json_write, no newline; frees */
void ctl_doc_kv_str(ctl_doc *d, const char *k, const char *v);
void ctl_doc_kv_u64(ctl_doc *d, const char *k, uint64_t v);
void ctl_doc_kv_double(ctl_doc *d, const char *k, double v);

/* ---- reading results --------------------------------------------------------- */

/* o as text for a table cell: numbers as integers when they are, booleans
 * as yes/no, strings as is, nil/absent (NULL) as "-".  Returns buf or a
 * constant. */
const char *ctl_text(const msgpack_object *o, char *buf, size_t len);
/* ctl_text(map[key]). */
const char *ctl_cell(const msgpack_object *map, const char *key, char *buf, size_t len);
uint64_t ctl_u64(const msgpack_object *map, const char *key); /* 0 when absent */
bool ctl_bool(const msgpack_object *map, const char *key);    /* false when absent */

/* ---- formatting for people ---------------------------------------------------- */

const char *ctl_fmt_rate(double rate, char *buf, size_t len);     /* "2.35%" or "-" (NaN) */
const char *ctl_fmt_duration(double secs, char *buf, size_t len); /* "3m 12s", "-" (NaN) */
const char *ctl_fmt_bytes(double bytes, char *buf, size_t len);   /* "1.2 MiB" */
const char *ctl_fmt_real(double v, char *buf, size_t len);        /* %.6g, "-" (NaN) */

/* A table with a header row; columns sized to their widest cell. */
typedef struct ctl_table {
    size_t ncols, nrows, cap;
    const char *const *head;
    const char *align; /* one 'l' or 'r' per column */
    char **cells;      /* nrows * ncols copies */
} ctl_table;
void ctl_table_init(ctl_table *t, size_t ncols, const char *const *head, const char *align);
/* Adds a row of ncols strings (copied; NULL prints as "-"). */
void ctl_table_add(ctl_table *t, const char *const *row);
void ctl_table_print(const ctl_table *t, FILE *out);
void ctl_table_free(ctl_table *t);

/* One rule's summary and parameter table (cmd_rules.c). */
struct pc_rule;
void ctl_rule_print(const struct pc_rule *r, FILE *out);

/* `top`'s call and table for ctx->args (cmd_top.c); names[i] names index i. */
int ctl_print_top(ctl_ctx *ctx, uint64_t k, const char *const *names, size_t nnames);

/* ---- the subcommands ------------------------------------------------------- */

int ctl_cmd_models(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_info(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_compare(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_promote(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_top(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_stats(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_save(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_create(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_drop(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_reset(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_ping(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_journal(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_watch(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_replay(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_predict(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_snapshots(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_rollback(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_export(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_import(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_copy(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_evaluate(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_rules(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_call(ctl_ctx *ctx, int argc, char **argv);
int ctl_cmd_label(ctl_ctx *ctx, int argc, char **argv);

#endif
