/* interactive.c - `perceptronctl` at a terminal (or `perceptronctl -i`): a
 * prompt that runs the same commands as the command line, as redis-cli
 * does, with line editing, history and completion from libedit (Debian's
 * libedit-dev, through its readline interface; no line editor of our own).
 *
 * A line is split into words by libedit's tokenizer (quotes and backslashes
 * as in sh), then run through the command table exactly as argv would be.
 * Tab completes a command name in first position, then model names (asked
 * of the daemon with `models` on each completion) and rule names.  History
 * lives in $PERCEPTRONCTL_HISTORY, else ~/.perceptronctl_history. */
#include "clients/ctl/ctl.h"

#include <stdlib.h>
#include <string.h>

#include <editline/readline.h>
#include <histedit.h>

#include "lib/perceptron.h"

/* Completion candidates of the current word, built once per Tab press. */
static char **cands;
static size_t ncands;
static const char *address;

static void cands_free(void)
{
    for (size_t i = 0; i < ncands; i++)
        free(cands[i]);
    free(cands);
    cands = NULL;
    ncands = 0;
}

static void cand_add(const char *s, size_t len)
{
    char **c = realloc(cands, (ncands + 1) * sizeof *c);
    if (!c)
        return;
    cands = c;
    if ((cands[ncands] = strndup(s, len)))
        ncands++;
}

/* The daemon's model names, from one `models` call on a short connection. */
static void add_models(void)
{
    pcc_client *c;
    char err[256], token[600];
    pcc_options o; /* the token and TLS settings every command uses */
    if (pcc_options_from_env(&o, token, sizeof token, err, sizeof err) != 0 ||
        pcc_connect_with(address, &o, &c, err, sizeof err) != 0)
        return;
    uint32_t id;
    pcc_request(c, "models", 0, &id);
    const msgpack_object *error, *res;
    if (pcc_call(c, id, &error, &res, err, sizeof err) == 0 && !error &&
        res->type == MSGPACK_OBJECT_ARRAY)
        for (uint32_t i = 0; i < res->via.array.size; i++) {
            const msgpack_object *n = &res->via.array.ptr[i];
            if (n->type == MSGPACK_OBJECT_STR)
                cand_add(n->via.str.ptr, n->via.str.size);
        }
    pcc_close(c);
}

/* readline's generator: the candidates starting with text, one per call. */
static char *generate(const char *text, int state)
{
    static size_t next;
    if (state == 0)
        next = 0;
    size_t len = strlen(text);
    while (next < ncands) {
        const char *c = cands[next++];
        if (strncmp(c, text, len) == 0)
            return strdup(c);
    }
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)end;
    cands_free();
    /* first word: a command; later: a model or a rule */
    bool first = strspn(rl_line_buffer, " \t") >= (size_t)start;
    if (first) {
        for (size_t i = 0; i < ctl_ncommands; i++)
            cand_add(ctl_commands[i].name, strlen(ctl_commands[i].name));
        static const char *const extra[] = {"help", "quit", "exit"};
        for (size_t i = 0; i < 3; i++)
            cand_add(extra[i], strlen(extra[i]));
    } else {
        add_models();
        for (const pc_rule *const *r = pc_rules(); *r; r++)
            cand_add(pc_rule_name(*r), strlen(pc_rule_name(*r)));
    }
    rl_attempted_completion_over = 1; /* no file names */
    return rl_completion_matches(text, generate);
}

static char *history_path(void)
{
    const char *p = getenv("PERCEPTRONCTL_HISTORY");
    if (p && *p)
        return strdup(p);
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    size_t n = strlen(home) + 32;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/.perceptronctl_history", home);
    return path;
}

int ctl_interactive(ctl_ctx *base, int (*run)(ctl_ctx *base, int argc, char **argv))
{
    address = base->address;
    rl_readline_name = "perceptronctl";
    rl_attempted_completion_function = complete;
    using_history();
    char *hist = history_path();
    if (hist)
        read_history(hist); /* none yet is fine */
    Tokenizer *tok = tok_init(NULL);
    if (!tok) {
        free(hist);
        fprintf(stderr, "perceptronctl: out of memory\n");
        return CTL_EXIT_IO;
    }
    char prompt[300];
    snprintf(prompt, sizeof prompt, "%s> ", base->address);
    printf("perceptronctl %s: commands as on the command line (help lists them), Tab "
           "completes, quit or Ctrl-D leaves.\n",
           PC_VERSION_STRING);
    int last = CTL_EXIT_OK;
    char *line;
    while ((line = readline(prompt)) != NULL) {
        int argc;
        const char **argv;
        tok_reset(tok);
        int t = tok_str(tok, line, &argc, &argv);
        if (t != 0) {
            fprintf(stderr, "perceptronctl: unmatched quote or trailing backslash\n");
        } else if (argc > 0) {
            add_history(line);
            if (strcmp(argv[0], "quit") == 0 || strcmp(argv[0], "exit") == 0) {
                free(line);
                break;
            }
            last = run(base, argc, (char **)argv);
            fflush(stdout);
        }
        free(line);
    }
    if (hist) {
        write_history(hist);
        free(hist);
    }
    tok_end(tok);
    cands_free();
    return last;
}
