/* main.c - perceptronctl: the admin command of perceptrond.
 *
 * The subcommands as data (Redis's command table): name, handler, how many
 * positional arguments, a one-line summary, the synopsis, details and the
 * options.  ctl_parse checks the argument count from here, so handlers stay
 * short, and `--help` at every level is generated from the same rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/ctl/ctl.h"
#include "lib/perceptron.h"

#define SOURCE_OPTS                                                                                \
    "      --format F       libsvm, csv or jsonl (default: from the file's name: .csv, .tsv,\n"    \
    "                       .jsonl/.ndjson/.json, else libsvm)\n"                                  \
    "      --label-column C csv: the label's column: a header name, a number from 1,\n"            \
    "                       last (the default) or none (predict only)\n"                           \
    "      --header         csv: the first line names the columns; features are sent by\n"         \
    "                       name (hashed by the daemon) instead of by position\n"                  \
    "      --delimiter D    csv: the field separator (default ',', 'tab' for tabs)\n"              \
    "      --ignore COLS    csv: leave out these columns (names or numbers, comma-separated)\n"    \
    "      --categorical COLS\n"                                                                 \
    "                       csv: these columns' numbers are categories too (age=39)\n"          \
    "      --names FILE     libsvm: send indices named in FILE (\"INDEX NAME\" lines) by name\n" \
    "      --multiclass     labels are class names (default: when the model is multiclass)\n"      \
    "      --positive L     binary: label L is +1, every other label -1 (e.g. '>50K')\n"          \
    "  -w, --window N       requests in flight (1..65536, default 1024; lowered when the\n"        \
    "                       answers in flight could pass 56 KiB, e.g. many classes)\n"             \
    "      --progress, --no-progress\n"                                                            \
    "                       progress bar on stderr (default: when stderr is a terminal)\n"

#define SOURCE_DETAILS                                                                             \
    "FILE is libsvm/svmlight (LABEL INDEX:VALUE ..., '#' comments, qid ignored; binary\n"          \
    "labels +1/1 and -1/0), CSV (header optional; numeric columns are dense features by\n"         \
    "position, or named ones with --header; a text value is the category COLUMN=value,\n"         \
    "hashed) or JSON lines ({\"label\": .., \"features\": {..}} or flat objects; strings are\n" \
    "categories KEY=value).  '-' reads stdin.  Parse errors name the file, line, column.\n"

const ctl_command ctl_commands[] = {
    {"models", ctl_cmd_models, 0, 0, "List the models with their rule and mistake rates.", "",
     "--json prints the daemon's `models` result: an array of names.\n", ""},
    {"info", ctl_cmd_info, 1, 1, "Show a model's config, counts, rates, norms and snapshot.",
     "MODEL",
     "Rule, parameters, examples, mistakes, the mistake rate overall and over the recent\n"
     "window, updates, per-learner norms, biases and margins (where the rule has one),\n"
     "snapshot generation and age.\n",
     ""},
    {"compare", ctl_cmd_compare, 1, 1, "Show a model and its challengers side by side.", "MODEL",
     "Examples, mistakes, the mistake rate overall and over the recent window of the model\n"
     "(the champion) and each challenger, with two tests of each challenger against the\n"
     "champion: B/C counts the examples only the champion / only the challenger got wrong;\n"
     "BETTER is the sequential test at 95% confidence, valid however often you look (watch\n"
     "this one); ONE LOOK and P are McNemar's test, valid for one look at a fixed sample.\n",
     ""},
    {"promote", ctl_cmd_promote, 2, 2, "Make a challenger the model that answers predictions.",
     "MODEL INDEX",
     "Challenger INDEX (see compare) and the champion swap places; nothing learned is lost.\n",
     ""},
    {"top", ctl_cmd_top, 1, 2, "Show a model's largest weights with their feature names.",
     "MODEL [CLASS] [-n K] [--names FILE]",
     "Weights by decreasing magnitude; CLASS picks a multiclass model's class (required\n"
     "there).  Features sent by index, or whose name the daemon did not keep, show as\n"
     "#INDEX, or by their name in a libsvm names file.\n",
     "  -n, --count K        how many weights (1..10000, default 20)\n"
     "      --names FILE     names of feature indices: lines \"INDEX NAME\", or \"NAME\" for\n"
     "                       the index after the previous line's (1 first)\n"},
    {"stats", ctl_cmd_stats, 0, 0, "Show the daemon's counters.", "", "", ""},
    {"save", ctl_cmd_save, 0, 0, "Snapshot every changed model now and wait until written.", "",
     "", ""},
    {"create", ctl_cmd_create, 1, 1, "Create a model.",
     "NAME [--rule R] [--dim N | --hash-bits B] [--param K=V ...]\n"
     "       [--bias | --no-bias] [--averaged] [--batch] [--classes A,B,C] [--open-classes]\n"
     "       [--storage dense|sparse|auto] [--weights float64|float32] [--no-calibrate]\n"
     "       [--ttl S] [--default-label L] [--max-pending N] [--challenger RULE[+avg] ...]\n"
     "       [--scale none|max|std|rms|rms-sent] [--transform PATTERN:KIND ...]\n"
     "       [--cross A,B ...] [--max-crossed N] [--plain]\n"
     "       [--experts weighted-majority|randomized [--experts-eta E] [--experts-seed N]]\n"
     "       [--auto-promote [--promote-confidence C] [--promote-min-examples N]]\n"
     "       [--hints B [--hints-seed N]]",
     "Options not given take the daemon's model template.  Feature preparation (scale,\n"
     "transforms, crosses) runs in the daemon, for every client (docs/config.md).\n",
     "  -r, --rule R         the update rule (default: the template's)\n"
     "  -d, --dim N          weights per class\n"
     "  -b, --hash-bits B    dimension 2^B (for hashed feature names)\n"
     "  -p, --param K=V      a rule parameter; V is a number or a comma list (repeatable)\n"
     "      --bias, --no-bias\n"
     "                       learn a bias term (a constant feature), or not\n"
     "      --averaged, --no-averaged\n"
     "                       predict with the averaged weights, or not\n"
     "      --batch          batch mode for label_batch (perceptron)\n"
     "      --classes A,B,C  a multiclass model with these classes\n"
     "      --open-classes   multiclass: a label naming a new class adds it\n"
     "      --storage S      dense (default), sparse (only the weights touched) or auto\n"
     "      --weights W      float64 (default, exact) or float32 (dense arrays in half\n"
     "                       the memory, scores rounded: not bit-identical)\n"
     "      --calibrate, --no-calibrate\n"
     "                       learn the probability calibration, or not: predict then\n"
     "                       answers no probability, labels learn up to 1.5x faster\n"
     "      --ttl S          label later: seconds an event waits for its outcome (join.ttl)\n"
     "      --default-label L\n"
     "                       learned when an event's ttl passes (join.default_label)\n"
     "      --max-pending N  events remembered at most (join.max_pending)\n"
     "      --challenger RULE[+avg]\n"
     "                       a rule learning beside the model, +avg averaged (repeatable;\n"
     "                       see compare, promote)\n"
     "      --experts C      predict from the model and its challengers combined: C is\n"
     "                       weighted-majority or randomized (seed 001; none: the model)\n"
     "      --experts-eta E  the penalty per mistake, in (0, 0.5]; 0: the schedule\n"
     "                       min(1/2, sqrt(ln N / t)) (weighted-majority 0.1, randomized 0)\n"
     "      --experts-seed N randomized's draws (default: from the model's name)\n"
     "      --auto-promote   promote a challenger once the sequential test of compare finds\n"
     "                       it better (promote.auto; see docs/protocol.md)\n"
     "      --promote-confidence C\n"
     "                       that test's confidence (default 0.99)\n"
     "      --promote-min-examples N\n"
     "                       labels a challenger learns before it may be promoted (1000)\n"
     "      --hints B        label hints: predict answers ask, true with probability\n"
     "                       B / (B + |score|): whether a label is worth asking for\n"
     "                       (selective sampling; hints.b)\n"
     "      --hints-seed N   the hints' draws (default: from the model's name)\n"
     "      --scale S        online per-feature scaling: max (divide by the largest |value|\n"
     "                       seen), std (by the standard deviation), rms (by the root mean\n"
     "                       square, absent counting 0), rms-sent (rms, the bins left at 1;\n"
     "                       the template's) or none (perceptronctl rules)\n"
     "      --transform PATTERN:KIND\n"
     "                       for features whose name matches the glob PATTERN: log\n"
     "                       (sign(v) ln(1+|v|)), logbins (adds NAME#lbK, K half-octaves),\n"
     "                       bins=E1,E2,... (adds NAME#bK, K edges <= v), rangebins=N\n"
     "                       (adds NAME#rbK, N bins of the range learned; scale max);\n"
     "                       repeatable\n"
     "      --cross A,B      adds A_NAME*B_NAME = product for each feature named A... and\n"
     "                       each named B... (repeatable)\n"
     "      --max-crossed N  crossed features per example at most (default 256)\n"
     "      --plain          the rule as its paper states it: not averaged, no feature\n"
     "                       preparation (the default template averages and prepares)\n"},
    {"drop", ctl_cmd_drop, 1, 1, "Delete a model and its snapshots.", "MODEL", "", ""},
    {"snapshots", ctl_cmd_snapshots, 1, 1, "List a model's snapshot generations on disk.", "MODEL",
     "Newest first: generation, when it was written, the examples it had learned, its size.\n",
     ""},
    {"rollback", ctl_cmd_rollback, 2, 2, "Make a model what one of its snapshot generations holds.",
     "MODEL GENERATION",
     "What the model learned since is dropped (the journal keeps the rollback: it survives a\n"
     "crash).  `snapshots` lists the generations.\n",
     ""},
    {"export", ctl_cmd_export, 2, 2, "Write a model to a file (snapshot format, checksummed).",
     "MODEL FILE|-", "`import` reads the file back, on this daemon or another.\n", ""},
    {"import", ctl_cmd_import, 2, 2, "Create a model from a file `export` wrote.",
     "MODEL FILE|- [--replace]",
     "The daemon checks the file (magic, CRC, the model decodes) before anything changes.\n"
     "The request holds the whole file: files larger than the daemon's\n"
     "limits.max_message_bytes are refused.\n",
     "  -r, --replace        replace the model of that name if there is one\n"},
    {"copy", ctl_cmd_copy, 2, 2, "Copy a model under a new name.", "SOURCE NEW", "", ""},
    {"reset", ctl_cmd_reset, 1, 1, "Forget what a model learned; keep its config and classes.",
     "MODEL", "", ""},
    {"journal", ctl_cmd_journal, 1, 1, "Print or check the records of a journal segment file.",
     "FILE [--check]",
     "Reads a segment of the daemon's journal (state/journal/*.pcj) and prints each record:\n"
     "its LSN, offset, size and the request it holds as JSON.  No daemon is contacted.\n"
     "Damage ends the listing with the daemon's own verdict: a torn tail (what a crash\n"
     "mid-append leaves) or corruption, its offset and LSN, and how many intact records\n"
     "follow it (exit status 4).\n",
     "  -c, --check          print only the verdict, not the records\n"},
    {"ping", ctl_cmd_ping, 0, 0, "Check that the daemon answers; print the round trip.", "", "",
     ""},
    {"watch", ctl_cmd_watch, 1, 1, "Live view of a model, refreshed in the terminal.",
     "MODEL [-i SECONDS] [--count N]",
     "Examples, mistakes, updates, the mistake rate (overall, recent window, last\n"
     "interval) and the throughput since the last refresh.  Ctrl-C stops.  --json\n"
     "streams an array of frames, closed when the watch ends.\n",
     "  -i, --interval S     seconds between refreshes (0.05..86400, default 2)\n"
     "  -c, --count N        stop after N refreshes\n"},
    {"replay", ctl_cmd_replay, 2, 2, "Learn from a data file and print the progressive validation.",
     "MODEL FILE|- [--format libsvm|csv|jsonl] [--label-column C] [--multiclass]\n"
     "       [--report] [--curve FILE.png|FILE.svg]",
     "Sends every example as a pipelined `label` request and prints what the model did:\n"
     "examples, mistakes (each prediction made before its label was learned), mistake\n"
     "rate, updates, throughput.  A model that does not exist is created: multiclass\n"
     "(classes added as they come) with --multiclass or when a label among the file's\n"
     "first 1000 is not +1/-1, else binary from the daemon's template.  Ctrl-C stops\n"
     "sending and prints what was learned (exit status 130).\n" SOURCE_DETAILS,
     SOURCE_OPTS
     "      --report         also the evaluation report of the progressive predictions\n"
     "                       (as `evaluate` prints it; the log loss only for a binary model\n"
     "                       the replay creates, whose calibration it can follow exactly)\n"
     "      --curve F        draw the progressive mistake rate against the examples into\n"
     "                       F (.png or .svg) with gnuplot\n"},
    {"evaluate", ctl_cmd_evaluate, 2, 2, "Evaluate a model on a labelled test file (it does not learn).",
     "MODEL FILE|- [--format libsvm|csv|jsonl] [--label-column C] [--positive L]",
     "Sends every example as a pipelined `predict` request and prints accuracy, each\n"
     "class's precision, recall, F1 and support, their macro average, the confusion\n"
     "matrix (rows: true class), and for a binary model the ROC AUC of the score and the\n"
     "log loss of the calibrated probability `predict` returns (multiclass: the log loss\n"
     "of the probability of the true class).  --json: all of it as one document.\n"
     SOURCE_DETAILS,
     SOURCE_OPTS},
    {"predict", ctl_cmd_predict, 2, 4096, "Classify every example of a data file, or one example.",
     "MODEL FILE|- [--format libsvm|csv|jsonl] [--label-column C|none] [--header]\n"
     "       perceptronctl predict MODEL FEATURE[:VALUE]... [--explain K]",
     "Sends every example as a pipelined `predict` request and writes one line per\n"
     "example on stdout, in order: the predicted label, the score and the calibrated\n"
     "probability of that label, tab-separated.  A summary goes to stderr, with the\n"
     "mistakes against the file's labels when it has them (unlabelled lines are\n"
     "classified too).  The model does not learn.\n"
     "With features instead of a file (a name, hashed by the daemon, or an index; VALUE\n"
     "1 when left out), prints the label, the score and the calibrated probability.\n"
     SOURCE_DETAILS,
     SOURCE_OPTS
     "      --explain K      one example: also the K largest contributions of its features\n"
     "                       to the score (weight x value), the bias and the rest, which add\n"
     "                       up to the score (multiclass: the predicted class and the\n"
     "                       runner-up); --json prints the daemon's answer as it came\n"},
    {"label", ctl_cmd_label, 2, 4096, "Learn one example given on the command line.",
     "MODEL LABEL FEATURE[:VALUE]...",
     "Sends one `label` request: LABEL is 1/-1 (or 0) for a binary model, a class name\n"
     "for a multiclass one.  FEATURE is a name (hashed by the daemon) or an index; VALUE\n"
     "is 1 when left out.  Prints the prediction made before learning and its outcome.\n",
     ""},
    {"rules", ctl_cmd_rules, 0, 1, "List the update rules with their parameters.", "[RULE]",
     "Every rule with its summary, whether it can average or run in batch mode, and\n"
     "its parameters: kind, default, range (brackets inclusive, parentheses open) and\n"
     "meaning.  Read from the rule table this perceptronctl was built with (the\n"
     "daemon's); no daemon is contacted.  docs/algorithms.md says which rule suits\n"
     "which data.\n",
     ""},
    {"call", ctl_cmd_call, 1, 64, "Call any method with JSON arguments; print the result.",
     "METHOD [ARG...]",
     "Each ARG is one parameter, written as JSON ('{\"cheap\": 1}', 5, null, true); one\n"
     "that is not JSON is a string (so model names need no quotes; '\"1\"' is the\n"
     "string 1).  The result is printed as JSON.  Methods: docs/protocol.md.\n"
     "Example: perceptronctl call weights spam null 5\n",
     ""},
};
const size_t ctl_ncommands = sizeof ctl_commands / sizeof ctl_commands[0];

static void usage(FILE *out)
{
    fprintf(out, "Usage: perceptronctl [-a ADDRESS] [--json] COMMAND [ARGS...]\n"
                 "\nThe admin command of perceptrond.\n\nCommands:\n");
    for (size_t i = 0; i < ctl_ncommands; i++)
        fprintf(out, "  %-8s %s\n", ctl_commands[i].name, ctl_commands[i].summary);
    fprintf(out,
            "\nOptions (also accepted after the command):\n" CTL_HELP_ADDRESS
            "      --json           one JSON document on stdout instead of tables\n"
            "  -h, --help           this text; `perceptronctl COMMAND --help` for a command\n"
            "  -i, --interactive    the prompt (also when no command is given at a terminal)\n"
            "  -V, --version        the version\n"
            "\nEnvironment: PERCEPTROND_TOKEN or PERCEPTROND_TOKEN_FILE (a token sent with auth),\n"
            "PERCEPTROND_TLS_CA, PERCEPTROND_TLS_CERT, PERCEPTROND_TLS_KEY (tls: addresses).\n"
            CTL_HELP_EXIT);
}

static int usage_error(const char *fmt, const char *what)
{
    fprintf(stderr, "perceptronctl: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\nTry 'perceptronctl --help'.\n");
    return CTL_EXIT_USAGE;
}

static const ctl_command *find(const char *name)
{
    for (size_t i = 0; i < ctl_ncommands; i++)
        if (strcmp(ctl_commands[i].name, name) == 0)
            return &ctl_commands[i];
    return NULL;
}

/* One command line (argv[0] the command) with a fresh context: main's, and
 * each line of the interactive mode. */
static int run(ctl_ctx *base, int argc, char **argv)
{
    if (strcmp(argv[0], "help") == 0) {
        if (argc < 2) {
            usage(stdout);
            return CTL_EXIT_OK;
        }
        const ctl_command *c = find(argv[1]);
        if (!c)
            return usage_error("unknown command '%s'", argv[1]);
        ctl_help(c, stdout);
        return CTL_EXIT_OK;
    }
    ctl_ctx ctx = {.address = base->address, .json = base->json};
    ctx.cmd = find(argv[0]);
    if (!ctx.cmd)
        return usage_error("unknown command '%s'", argv[0]);
    int rc = ctx.cmd->run(&ctx, argc, argv);
    pcc_close(ctx.client);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"address", required_argument, NULL, 'a'}, {"json", no_argument, NULL, CTL_OPT_JSON},
        {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
        {"interactive", no_argument, NULL, 'i'},   {NULL, 0, NULL, 0},
    };
    ctl_ctx ctx = {.address = getenv("PERCEPTROND_ADDRESS")};
    bool interactive = false;
    /* the installed daemon's socket when there is one, else a daemon started
     * by hand in this directory */
    if (!ctx.address || !*ctx.address)
        ctx.address = access(PCC_INSTALLED_PATH, F_OK) == 0 ? "unix:" PCC_INSTALLED_PATH
                                                            : PCC_DEFAULT_ADDRESS;
    opterr = 0;
    int opt;
    /* '+': stop at the command; what follows is the command's. */
    while ((opt = getopt_long(argc, argv, "+:a:hVi", opts, NULL)) != -1) {
        switch (opt) {
        case 'a': ctx.address = optarg; break;
        case CTL_OPT_JSON: ctx.json = true; break;
        case 'h': usage(stdout); return CTL_EXIT_OK;
        case 'V': printf("perceptronctl %s\n", PC_VERSION_STRING); return CTL_EXIT_OK;
        case 'i': interactive = true; break;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    int rc;
    if (optind >= argc && (interactive || isatty(STDIN_FILENO)))
        rc = ctl_interactive(&ctx, run); /* no command at a terminal: the prompt */
    else if (optind >= argc)
        return usage_error("no command given%s", "");
    else
        rc = run(&ctx, argc - optind, argv + optind);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "perceptronctl: cannot write the output\n");
        if (rc == CTL_EXIT_OK)
            rc = CTL_EXIT_IO;
    }
    return rc;
}
