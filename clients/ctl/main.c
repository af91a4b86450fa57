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
    "      --format F       libsvm (default) or csv\n"                                             \
    "      --label-column C csv: the label's column: a header name, a number from 1,\n"            \
    "                       last (the default) or none (predict only)\n"                           \
    "      --header         csv: the first line names the columns; features are sent by\n"         \
    "                       name (hashed by the daemon) instead of by position\n"                  \
    "      --delimiter D    csv: the field separator (default ',', 'tab' for tabs)\n"              \
    "      --multiclass     labels are class names (default: when the model is multiclass)\n"      \
    "  -w, --window N       requests in flight (1..65536, default 1024; lowered when the\n"        \
    "                       answers in flight could pass 56 KiB, e.g. many classes)\n"             \
    "      --progress, --no-progress\n"                                                            \
    "                       progress bar on stderr (default: when stderr is a terminal)\n"

#define SOURCE_DETAILS                                                                             \
    "FILE is libsvm/svmlight (LABEL INDEX:VALUE ..., '#' comments, qid ignored; binary\n"          \
    "labels +1/1 and -1/0) or CSV (--format csv; header optional; numeric columns are\n"           \
    "dense features by position, or named ones with --header).  '-' reads stdin.\n"                \
    "Parse errors name the file, line and column.\n"

const ctl_command ctl_commands[] = {
    {"models", ctl_cmd_models, 0, 0, "List the models with their rule and mistake rates.", "",
     "--json prints the daemon's `models` result: an array of names.\n", ""},
    {"info", ctl_cmd_info, 1, 1, "Show a model's config, counts, rates, norms and snapshot.",
     "MODEL",
     "Rule, parameters, examples, mistakes, the mistake rate overall and over the recent\n"
     "window, updates, per-learner norms, biases and margins (where the rule has one),\n"
     "snapshot generation and age.\n",
     ""},
    {"top", ctl_cmd_top, 1, 2, "Show a model's largest weights with their feature names.",
     "MODEL [CLASS] [-n K]",
     "Weights by decreasing magnitude; CLASS picks a multiclass model's class.  Features\n"
     "sent by index, or whose name the daemon did not keep, show as #INDEX.\n",
     "  -n, --count K        how many weights (1..10000, default 20)\n"},
    {"stats", ctl_cmd_stats, 0, 0, "Show the daemon's counters.", "", "", ""},
    {"save", ctl_cmd_save, 0, 0, "Snapshot every changed model now and wait until written.", "",
     "", ""},
    {"create", ctl_cmd_create, 1, 1, "Create a model.",
     "NAME [--rule R] [--dim N | --hash-bits B] [--param K=V ...]\n"
     "       [--bias | --no-bias] [--averaged] [--batch] [--classes A,B,C] [--open-classes]",
     "Options not given take the daemon's model template.\n",
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
     "      --open-classes   multiclass: a label naming a new class adds it\n"},
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
    {"journal", ctl_cmd_journal, 1, 1, "Print the records of a journal segment file.", "FILE",
     "Reads a segment of the daemon's journal (state/journal/*.pcj) and prints each record:\n"
     "its LSN, offset, size and the request it holds as JSON.  No daemon is contacted.\n"
     "A torn or corrupt record ends the listing with its offset (exit status 4).\n",
     ""},
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
     "MODEL FILE|- [--format libsvm|csv] [--label-column C] [--header] [--multiclass]",
     "Sends every example as a pipelined `label` request and prints what the model did:\n"
     "examples, mistakes (each prediction made before its label was learned), mistake\n"
     "rate, updates, throughput.\n" SOURCE_DETAILS,
     SOURCE_OPTS},
    {"predict", ctl_cmd_predict, 2, 2, "Classify every example of a data file.",
     "MODEL FILE|- [--format libsvm|csv] [--label-column C|none] [--header]",
     "Sends every example as a pipelined `predict` request and writes one line per\n"
     "example on stdout, in order: the predicted label, a tab, the score.  A summary\n"
     "goes to stderr, with the mistakes against the file's labels when it has them.\n"
     "The model does not learn.\n" SOURCE_DETAILS,
     SOURCE_OPTS},
};
const size_t ctl_ncommands = sizeof ctl_commands / sizeof ctl_commands[0];

static void usage(FILE *out)
{
    fprintf(out, "Usage: perceptronctl [-a ADDRESS] [--json] COMMAND [ARGS...]\n"
                 "\nThe admin command of perceptrond.\n\nCommands:\n");
    for (size_t i = 0; i < ctl_ncommands; i++)
        fprintf(out, "  %-8s %s\n", ctl_commands[i].name, ctl_commands[i].summary);
    fprintf(out,
            "\nOptions (also accepted after the command):\n"
            "  -a, --address ADDR   unix:PATH, tcp:HOST:PORT, PATH or HOST:PORT\n"
            "                       (default $PERCEPTROND_ADDRESS, else unix:" PCC_INSTALLED_PATH "\n"
            "                       if it exists, else " PCC_DEFAULT_ADDRESS ")\n"
            "      --json           one JSON document on stdout instead of tables\n"
            "  -h, --help           this text; `perceptronctl COMMAND --help` for a command\n"
            "  -V, --version        the version\n"
            "\nExit status: 0 ok, 1 the daemon answered an error, 2 usage error,\n"
            "3 cannot connect or the connection failed, 4 data file unreadable or malformed.\n");
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

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"address", required_argument, NULL, 'a'}, {"json", no_argument, NULL, CTL_OPT_JSON},
        {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    ctl_ctx ctx = {.address = getenv("PERCEPTROND_ADDRESS")};
    /* the installed daemon's socket when there is one, else a daemon started
     * by hand in this directory */
    if (!ctx.address || !*ctx.address)
        ctx.address = access(PCC_INSTALLED_PATH, F_OK) == 0 ? "unix:" PCC_INSTALLED_PATH
                                                            : PCC_DEFAULT_ADDRESS;
    opterr = 0;
    int opt;
    /* '+': stop at the command; what follows is the command's. */
    while ((opt = getopt_long(argc, argv, "+:a:hV", opts, NULL)) != -1) {
        switch (opt) {
        case 'a': ctx.address = optarg; break;
        case CTL_OPT_JSON: ctx.json = true; break;
        case 'h': usage(stdout); return CTL_EXIT_OK;
        case 'V': printf("perceptronctl %s\n", PC_VERSION_STRING); return CTL_EXIT_OK;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("no command given%s", "");
    if (strcmp(argv[optind], "help") == 0) {
        if (optind + 1 >= argc) {
            usage(stdout);
            return CTL_EXIT_OK;
        }
        const ctl_command *c = find(argv[optind + 1]);
        if (!c)
            return usage_error("unknown command '%s'", argv[optind + 1]);
        ctl_help(c, stdout);
        return CTL_EXIT_OK;
    }
    ctx.cmd = find(argv[optind]);
    if (!ctx.cmd)
        return usage_error("unknown command '%s'", argv[optind]);
    int rc = ctx.cmd->run(&ctx, argc - optind, argv + optind);
    pcc_close(ctx.client);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "perceptronctl: cannot write the output\n");
        if (rc == CTL_EXIT_OK)
            rc = CTL_EXIT_IO;
    }
    return rc;
}
