/* cmd_create.c - `perceptronctl create NAME [options]`: method `create` with
 * a spec map holding only the keys given on the command line (the daemon
 * fills the rest from its model template): rule, params, dim, hash_bits, bias,
 * averaged, mode, classes, open_classes, storage, weights, calibrate, scale, transforms,
 * crosses, max_crossed, join.ttl, join.default_label,
 * join.max_pending, challengers (a rule each, "+avg" for averaged) and experts,
 * experts.eta, experts.seed, promote.auto, promote.confidence, promote.min_examples.
 * Values are checked for syntax here;
 * ranges and rule parameters are checked by the daemon, which knows them. */
#include <stdlib.h>
#include <string.h>

#include "clients/ctl/ctl.h"
#include "lib/perceptron.h"

#define MAX_PARAMS 32  /* more than any rule declares (PC_PARAMS_MAX) */
#define MAX_LIST 64    /* values in one --param list (the daemon allows PC_PARAM_LIST_MAX) */

typedef struct param {
    char name[64];
    size_t n;
    double v[MAX_LIST];
    bool list; /* given with commas: sent as an array even with one value */
} param;

typedef struct spec {
    const char *rule;
    uint64_t dim, hash_bits;
    int bias, averaged, calibrate; /* -1: not given */
    bool batch, open_classes;
    char *classes;             /* the --classes argument, split when packed */
    const char *storage;       /* --storage, checked by the daemon */
    const char *weights;       /* --weights, checked by the daemon */
    param params[MAX_PARAMS];
    size_t nparams;
    uint64_t ttl, max_pending;  /* 0: not given */
    const char *default_label;
    const char *challengers[8]; /* "RULE" or "RULE+avg" */
    size_t nchallengers;
    const char *scale;          /* --scale, checked by the daemon */
    const char *transforms[PC_TRANSFORMS_MAX]; /* --transform, each parsed by the daemon */
    size_t ntransforms;
    const char *crosses[PC_CROSSES_MAX];       /* --cross */
    size_t ncrosses;
    uint64_t max_crossed;       /* 0: not given */
    bool plain;                 /* --plain: the rule as its paper states it */
    const char *experts;        /* --experts, checked by the daemon */
    double experts_eta;         /* --experts-eta; < 0: not given */
    int64_t experts_seed;       /* --experts-seed; < 0: not given */
    bool auto_promote;          /* --auto-promote */
    double confidence;          /* --promote-confidence; 0: not given */
    uint64_t min_examples;      /* --promote-min-examples; 0: not given */
    double hints_b;             /* --hints; 0: not given */
    int64_t hints_seed;         /* --hints-seed; < 0: not given */
} spec;

enum {
    OPT_BIAS = 0x100,
    OPT_NO_BIAS,
    OPT_AVERAGED,
    OPT_NO_AVERAGED,
    OPT_BATCH,
    OPT_CLASSES,
    OPT_OPEN,
    OPT_STORAGE,
    OPT_WEIGHTS,
    OPT_CALIBRATE,
    OPT_NO_CALIBRATE,
    OPT_TTL,
    OPT_DEFAULT_LABEL,
    OPT_MAX_PENDING,
    OPT_CHALLENGER,
    OPT_SCALE,
    OPT_TRANSFORM,
    OPT_CROSS,
    OPT_MAX_CROSSED,
    OPT_PLAIN,
    OPT_EXPERTS,
    OPT_EXPERTS_ETA,
    OPT_EXPERTS_SEED,
    OPT_HINTS,
    OPT_HINTS_SEED,
    OPT_AUTO_PROMOTE,
    OPT_PROMOTE_CONFIDENCE,
    OPT_PROMOTE_MIN_EXAMPLES
};

static int parse_param(ctl_ctx *ctx, spec *s, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof s->params[0].name)
        return ctl_usage_error(ctx, "--param wants NAME=VALUE, not '%s'", arg);
    if (s->nparams == MAX_PARAMS)
        return ctl_usage_error(ctx, "more than %d --param options", MAX_PARAMS);
    param *p = &s->params[s->nparams];
    memset(p, 0, sizeof *p);
    memcpy(p->name, arg, (size_t)(eq - arg));
    for (size_t i = 0; i < s->nparams; i++)
        if (strcmp(s->params[i].name, p->name) == 0)
            return ctl_usage_error(ctx, "parameter '%s' is given twice", p->name);
    char *copy = strdup(eq + 1);
    if (!copy)
        return ctl_usage_error(ctx, "out of memory");
    p->list = strchr(copy, ',') != NULL;
    int rc = 0;
    /* Split by hand: strtok would skip empty items, and "1,,2" is an error. */
    for (char *item = copy;;) {
        char *comma = strchr(item, ',');
        if (comma)
            *comma = 0;
        if (p->n == MAX_LIST) {
            rc = ctl_usage_error(ctx, "parameter '%s' has more than %d values", p->name, MAX_LIST);
            break;
        }
        if (!ctl_parse_double(item, &p->v[p->n])) {
            rc = ctl_usage_error(ctx, "parameter '%s': '%s' is not a finite number", p->name, item);
            break;
        }
        p->n++;
        if (!comma)
            break;
        item = comma + 1;
    }
    free(copy);
    if (rc == 0)
        s->nparams++;
    return rc;
}

static int on_opt(ctl_ctx *ctx, int opt, const char *arg, void *ud)
{
    spec *s = ud;
    switch (opt) {
    case 'r': s->rule = arg; return 0;
    case 'd':
        if (!ctl_parse_u64(arg, 1, UINT32_MAX, &s->dim))
            return ctl_usage_error(ctx, "--dim wants a positive integer, not '%s'", arg);
        return 0;
    case 'b':
        if (!ctl_parse_u64(arg, 1, 32, &s->hash_bits))
            return ctl_usage_error(ctx, "--hash-bits wants an integer in 1..32, not '%s'", arg);
        return 0;
    case 'p': return parse_param(ctx, s, arg);
    case OPT_BIAS: s->bias = 1; return 0;
    case OPT_NO_BIAS: s->bias = 0; return 0;
    case OPT_AVERAGED: s->averaged = 1; return 0;
    case OPT_NO_AVERAGED: s->averaged = 0; return 0;
    case OPT_BATCH: s->batch = true; return 0;
    case OPT_OPEN: s->open_classes = true; return 0;
    case OPT_CLASSES: s->classes = (char *)arg; return 0;
    case OPT_STORAGE: s->storage = arg; return 0;
    case OPT_WEIGHTS: s->weights = arg; return 0;
    case OPT_CALIBRATE: s->calibrate = 1; return 0;
    case OPT_NO_CALIBRATE: s->calibrate = 0; return 0;
    case OPT_TTL:
        if (!ctl_parse_u64(arg, 1, 100000000, &s->ttl))
            return ctl_usage_error(ctx, "--ttl wants seconds in 1..100000000, not '%s'", arg);
        return 0;
    case OPT_MAX_PENDING:
        if (!ctl_parse_u64(arg, 1, 100000000, &s->max_pending))
            return ctl_usage_error(ctx, "--max-pending wants an integer in 1..100000000, not '%s'",
                                   arg);
        return 0;
    case OPT_DEFAULT_LABEL: s->default_label = arg; return 0;
    case OPT_CHALLENGER:
        if (s->nchallengers == 8)
            return ctl_usage_error(ctx, "at most 8 --challenger options");
        s->challengers[s->nchallengers++] = arg;
        return 0;
    case OPT_SCALE: s->scale = arg; return 0;
    case OPT_PLAIN: s->plain = true; return 0;
    case OPT_EXPERTS: s->experts = arg; return 0;
    case OPT_EXPERTS_ETA:
        if (!ctl_parse_double(arg, &s->experts_eta) || s->experts_eta < 0)
            return ctl_usage_error(ctx, "--experts-eta wants a number in (0, 0.5] or 0, not '%s'",
                                   arg);
        return 0;
    case OPT_AUTO_PROMOTE: s->auto_promote = true; return 0;
    case OPT_PROMOTE_CONFIDENCE:
        if (!ctl_parse_double(arg, &s->confidence) || !(s->confidence > 0 && s->confidence < 1))
            return ctl_usage_error(ctx, "--promote-confidence wants a number in (0, 1), not '%s'",
                                   arg);
        return 0;
    case OPT_PROMOTE_MIN_EXAMPLES:
        if (!ctl_parse_u64(arg, 1, 1000000000000ull, &s->min_examples))
            return ctl_usage_error(ctx, "--promote-min-examples wants a positive integer, not '%s'",
                                   arg);
        return 0;
    case OPT_EXPERTS_SEED: {
        uint64_t seed;
        if (!ctl_parse_u64(arg, 0, INT64_MAX, &seed))
            return ctl_usage_error(ctx, "--experts-seed wants an integer, not '%s'", arg);
        s->experts_seed = (int64_t)seed;
        return 0;
    }
    case OPT_HINTS:
        if (!ctl_parse_double(arg, &s->hints_b) || !(s->hints_b > 0))
            return ctl_usage_error(ctx, "--hints wants the selective sampling parameter b > 0, "
                                   "e.g. 0.5, not '%s'", arg);
        return 0;
    case OPT_HINTS_SEED: {
        uint64_t seed;
        if (!ctl_parse_u64(arg, 1, INT64_MAX, &seed))
            return ctl_usage_error(ctx, "--hints-seed wants a positive integer, not '%s'", arg);
        s->hints_seed = (int64_t)seed;
        return 0;
    }
    case OPT_TRANSFORM:
        if (s->ntransforms == PC_TRANSFORMS_MAX)
            return ctl_usage_error(ctx, "at most %d --transform options", PC_TRANSFORMS_MAX);
        s->transforms[s->ntransforms++] = arg;
        return 0;
    case OPT_CROSS:
        if (s->ncrosses == PC_CROSSES_MAX)
            return ctl_usage_error(ctx, "at most %d --cross options", PC_CROSSES_MAX);
        s->crosses[s->ncrosses++] = arg;
        return 0;
    case OPT_MAX_CROSSED:
        if (!ctl_parse_u64(arg, 1, PC_CROSSED_MAX, &s->max_crossed))
            return ctl_usage_error(ctx, "--max-crossed wants an integer in 1..%d, not '%s'",
                                   PC_CROSSED_MAX, arg);
        return 0;
    default: return ctl_usage_error(ctx, "unknown option");
    }
}

/* --classes a,b,c: non-empty names; returns how many, or -1 after printing. */
static int count_classes(ctl_ctx *ctx, const char *list)
{
    int n = 0;
    for (const char *p = list;; n++) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len > PC_CLASS_NAME_MAX) {
            ctl_usage_error(ctx, "--classes: class names are 1 to %d bytes between commas: '%s'",
                            PC_CLASS_NAME_MAX, list);
            return -1;
        }
        if (!p[len])
            return n + 1;
        p += len + 1;
    }
}

static void pack_spec(msgpack_packer *pk, const spec *s, int nclasses)
{
    uint32_t n = (s->rule != NULL) + (s->nparams > 0) + (s->dim > 0) + (s->hash_bits > 0) +
                 (s->bias >= 0) + (s->averaged >= 0) + s->batch + (s->classes != NULL) +
                 s->open_classes + (s->storage != NULL) + (s->weights != NULL) + (s->calibrate >= 0) + (s->ttl > 0) + (s->max_pending > 0) +
                 (s->default_label != NULL) + (s->nchallengers > 0) + (s->scale != NULL) +
                 (s->ntransforms > 0) + (s->ncrosses > 0) + (s->max_crossed > 0) +
                 (s->experts != NULL) + (s->experts_eta >= 0) + (s->experts_seed >= 0) +
                 s->auto_promote + (s->confidence > 0) + (s->min_examples > 0) +
                 (s->hints_b > 0) + (s->hints_seed >= 0);
    if (s->plain) { /* averaged: false, scale: none, transforms: [], crosses: [] */
        n += 4;
        msgpack_pack_map(pk, n);
        ctl_pack_str(pk, "averaged");
        msgpack_pack_false(pk);
        ctl_pack_str(pk, "scale");
        ctl_pack_str(pk, "none");
        ctl_pack_str(pk, "transforms");
        msgpack_pack_array(pk, 0);
        ctl_pack_str(pk, "crosses");
        msgpack_pack_array(pk, 0);
    } else {
        msgpack_pack_map(pk, n);
    }
    if (s->scale) {
        ctl_pack_str(pk, "scale");
        ctl_pack_str(pk, s->scale);
    }
    if (s->ntransforms) {
        ctl_pack_str(pk, "transforms");
        msgpack_pack_array(pk, s->ntransforms);
        for (size_t i = 0; i < s->ntransforms; i++)
            ctl_pack_str(pk, s->transforms[i]);
    }
    if (s->ncrosses) {
        ctl_pack_str(pk, "crosses");
        msgpack_pack_array(pk, s->ncrosses);
        for (size_t i = 0; i < s->ncrosses; i++)
            ctl_pack_str(pk, s->crosses[i]);
    }
    if (s->max_crossed) {
        ctl_pack_str(pk, "max_crossed");
        msgpack_pack_uint64(pk, s->max_crossed);
    }
    if (s->experts) {
        ctl_pack_str(pk, "experts");
        ctl_pack_str(pk, s->experts);
    }
    if (s->experts_eta >= 0) {
        ctl_pack_str(pk, "experts.eta");
        msgpack_pack_double(pk, s->experts_eta);
    }
    if (s->experts_seed >= 0) {
        ctl_pack_str(pk, "experts.seed");
        msgpack_pack_uint64(pk, (uint64_t)s->experts_seed);
    }
    if (s->auto_promote) {
        ctl_pack_str(pk, "promote.auto");
        msgpack_pack_true(pk);
    }
    if (s->confidence > 0) {
        ctl_pack_str(pk, "promote.confidence");
        msgpack_pack_double(pk, s->confidence);
    }
    if (s->min_examples) {
        ctl_pack_str(pk, "promote.min_examples");
        msgpack_pack_uint64(pk, s->min_examples);
    }
    if (s->hints_b > 0) {
        ctl_pack_str(pk, "hints.b");
        msgpack_pack_double(pk, s->hints_b);
    }
    if (s->hints_seed >= 0) {
        ctl_pack_str(pk, "hints.seed");
        msgpack_pack_uint64(pk, (uint64_t)s->hints_seed);
    }
    if (s->ttl) {
        ctl_pack_str(pk, "join.ttl");
        msgpack_pack_uint64(pk, s->ttl);
    }
    if (s->max_pending) {
        ctl_pack_str(pk, "join.max_pending");
        msgpack_pack_uint64(pk, s->max_pending);
    }
    if (s->default_label) { /* the daemon reads "1", "-1" or a class name */
        ctl_pack_str(pk, "join.default_label");
        ctl_pack_str(pk, s->default_label);
    }
    if (s->nchallengers) {
        ctl_pack_str(pk, "challengers");
        msgpack_pack_array(pk, s->nchallengers);
        for (size_t i = 0; i < s->nchallengers; i++) {
            const char *c = s->challengers[i];
            size_t len = strlen(c);
            bool avg = len > 4 && strcmp(c + len - 4, "+avg") == 0;
            msgpack_pack_map(pk, avg ? 2 : 1);
            ctl_pack_str(pk, "rule");
            msgpack_pack_str(pk, avg ? len - 4 : len);
            msgpack_pack_str_body(pk, c, avg ? len - 4 : len);
            if (avg) {
                ctl_pack_str(pk, "averaged");
                msgpack_pack_true(pk);
            }
        }
    }
    if (s->rule) {
        ctl_pack_str(pk, "rule");
        ctl_pack_str(pk, s->rule);
    }
    if (s->nparams) {
        ctl_pack_str(pk, "params");
        msgpack_pack_map(pk, s->nparams);
        for (size_t i = 0; i < s->nparams; i++) {
            const param *p = &s->params[i];
            ctl_pack_str(pk, p->name);
            if (p->list)
                msgpack_pack_array(pk, p->n);
            for (size_t k = 0; k < p->n; k++)
                msgpack_pack_double(pk, p->v[k]);
        }
    }
    if (s->dim) {
        ctl_pack_str(pk, "dim");
        msgpack_pack_uint64(pk, s->dim);
    }
    if (s->hash_bits) {
        ctl_pack_str(pk, "hash_bits");
        msgpack_pack_uint64(pk, s->hash_bits);
    }
    if (s->bias >= 0) {
        ctl_pack_str(pk, "bias");
        s->bias ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    }
    if (s->averaged >= 0) {
        ctl_pack_str(pk, "averaged");
        s->averaged ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    }
    if (s->batch) {
        ctl_pack_str(pk, "mode");
        ctl_pack_str(pk, "batch");
    }
    if (s->classes) {
        ctl_pack_str(pk, "classes");
        msgpack_pack_array(pk, (size_t)nclasses);
        for (const char *p = s->classes;;) {
            size_t len = strcspn(p, ",");
            msgpack_pack_str(pk, len);
            msgpack_pack_str_body(pk, p, len);
            if (!p[len])
                break;
            p += len + 1;
        }
    }
    if (s->open_classes) {
        ctl_pack_str(pk, "open_classes");
        msgpack_pack_true(pk);
    }
    if (s->storage) {
        ctl_pack_str(pk, "storage");
        ctl_pack_str(pk, s->storage);
    }
    if (s->weights) {
        ctl_pack_str(pk, "weights");
        ctl_pack_str(pk, s->weights);
    }
    if (s->calibrate >= 0) {
        ctl_pack_str(pk, "calibrate");
        s->calibrate ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    }
}

/* `create --help [RULE]` (or --rule RULE --help): the command's help, then
 * the rule's parameters, or the rules' names, from the library's table. */
static bool rule_help(ctl_ctx *ctx, int argc, char **argv)
{
    bool help = false;
    const pc_rule *r = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            help = true;
        else if (!r && argv[i][0] != '-')
            r = pc_rule_find(argv[i]);
        else if (strncmp(argv[i], "--rule=", 7) == 0)
            r = pc_rule_find(argv[i] + 7);
    }
    if (!help)
        return false;
    ctl_help(ctx->cmd, stdout);
    if (r) {
        printf("\nRule ");
        ctl_rule_print(r, stdout);
        return true;
    }
    printf("\nRules (`perceptronctl create --help RULE` or `perceptronctl rules` for their "
           "parameters):\n ");
    for (const pc_rule *const *x = pc_rules(); *x; x++)
        printf(" %s", pc_rule_name(*x));
    printf("\n");
    return true;
}

int ctl_cmd_create(ctl_ctx *ctx, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"rule", required_argument, NULL, 'r'},
        {"dim", required_argument, NULL, 'd'},
        {"hash-bits", required_argument, NULL, 'b'},
        {"param", required_argument, NULL, 'p'},
        {"bias", no_argument, NULL, OPT_BIAS},
        {"no-bias", no_argument, NULL, OPT_NO_BIAS},
        {"averaged", no_argument, NULL, OPT_AVERAGED},
        {"no-averaged", no_argument, NULL, OPT_NO_AVERAGED},
        {"batch", no_argument, NULL, OPT_BATCH},
        {"classes", required_argument, NULL, OPT_CLASSES},
        {"open-classes", no_argument, NULL, OPT_OPEN},
        {"storage", required_argument, NULL, OPT_STORAGE},
        {"weights", required_argument, NULL, OPT_WEIGHTS},
        {"calibrate", no_argument, NULL, OPT_CALIBRATE},
        {"no-calibrate", no_argument, NULL, OPT_NO_CALIBRATE},
        {"ttl", required_argument, NULL, OPT_TTL},
        {"default-label", required_argument, NULL, OPT_DEFAULT_LABEL},
        {"max-pending", required_argument, NULL, OPT_MAX_PENDING},
        {"challenger", required_argument, NULL, OPT_CHALLENGER},
        {"scale", required_argument, NULL, OPT_SCALE},
        {"transform", required_argument, NULL, OPT_TRANSFORM},
        {"cross", required_argument, NULL, OPT_CROSS},
        {"max-crossed", required_argument, NULL, OPT_MAX_CROSSED},
        {"plain", no_argument, NULL, OPT_PLAIN},
        {"experts", required_argument, NULL, OPT_EXPERTS},
        {"experts-eta", required_argument, NULL, OPT_EXPERTS_ETA},
        {"experts-seed", required_argument, NULL, OPT_EXPERTS_SEED},
        {"auto-promote", no_argument, NULL, OPT_AUTO_PROMOTE},
        {"promote-confidence", required_argument, NULL, OPT_PROMOTE_CONFIDENCE},
        {"promote-min-examples", required_argument, NULL, OPT_PROMOTE_MIN_EXAMPLES},
        {"hints", required_argument, NULL, OPT_HINTS},
        {"hints-seed", required_argument, NULL, OPT_HINTS_SEED},
        CTL_COMMON_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    if (rule_help(ctx, argc, argv))
        return CTL_EXIT_OK;
    static spec s; /* static: the params table is large for a stack frame */
    memset(&s, 0, sizeof s);
    s.bias = s.averaged = s.calibrate = -1;
    s.experts_eta = -1;
    s.experts_seed = -1;
    s.hints_seed = -1;
    int rc = ctl_parse(ctx, argc, argv, "r:d:b:p:", longopts, on_opt, &s);
    if (rc != CTL_CONTINUE)
        return rc;
    if (s.dim && s.hash_bits)
        return ctl_usage_error(ctx, "give --dim or --hash-bits, not both");
    if (s.plain && (s.averaged >= 0 || s.scale || s.ntransforms || s.ncrosses))
        return ctl_usage_error(ctx, "--plain is the rule without averaging or feature preparation: "
                                    "give it without --averaged, --scale, --transform, --cross");
    int nclasses = 0;
    if (s.classes && (nclasses = count_classes(ctx, s.classes)) < 0)
        return CTL_EXIT_USAGE;
    if ((rc = ctl_connect(ctx)))
        return rc;
    uint32_t id;
    msgpack_packer *pk = pcc_request(ctx->client, "create", 2, &id);
    ctl_pack_str(pk, ctx->args[0]);
    pack_spec(pk, &s, nclasses);
    const msgpack_object *res;
    if ((rc = ctl_answer(ctx, id, &res)) != CTL_CONTINUE)
        return rc;
    printf("created %s\n", ctx->args[0]);
    return CTL_EXIT_OK;
}
