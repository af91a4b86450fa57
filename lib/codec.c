/* codec.c - a whole model <-> bytes, for snapshots.
 *
 * Layout (little-endian; the version byte is FORMAT_VERSION below, raised on
 * every change of the bytes):
 *   "PCMODEL" u8 version
 *   rule name, then per declared parameter: u32 n, n f64
 *   u32 dim, u8 flags (bias, averaged, batch, multiclass, open_classes, sparse,
 *   auto, no calibration), (version 4) u8 weights (0 float64, 1 float32: the
 *   weight arrays' values are floats, still written as f64), f64 bias_value
 *   (version 5) feature preparation: u8 scale, u32 max_crossed, u8 transform
 *   count, each: pattern, u8 kind, u8 bins (rangebins), u8 edge count, the edges as f64; u8 cross
 *   count, each: prefix a, prefix b
 *   stats: u64 examples, mistakes, updates; recent window (PC_RECENT_WINDOW bytes), u32 pos
 *   u32 learner count, then per learner: class name (multiclass), u64 examples,
 *   u64 mistakes, u64 updates, the rule's own state, and (version 3) its
 *   probability calibration: f64 a, b, hzz, hz, h1, ms, inv, u64 n (lib/calib.h)
 *   (version 5, a scale) the scale statistics (lib/scaler.h; rms: then f64 examples)
 * A model without feature preparation is written as version 4, byte for byte
 * what builds before version 5 wrote, so they still read it. 
 * Floats are stored as their IEEE-754 bits, so a decoded model is bit-identical.
 * Every count is checked against the bytes left before it is used to allocate,
 * and a learned value that is NaN or infinite makes the data malformed; so
 * do weights past the bound learning keeps (the squared norm of a vector
 * within the double's range: lib/wvec.c), a norm or bias that is not finite
 * (lib/learner.c, below) and example values past 2^64 (anchors, kept
 * points, scale statistics), each refusal naming what it refused
 * (pc_reader.why).
 */
#include "lib/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char MAGIC[7] = {'P', 'C', 'M', 'O', 'D', 'E', 'L'};
#define FORMAT_VERSION 5 /* 2: winnow keeps its norm as a ddsum (hi, lo, err) and a recount count;
                            3: each learner's calibration follows its state;
                            4: a u8 after the flags, the weights' width (pc_weights);
                            5: feature preparation after bias_value, its state at the end */
#define PLAIN_VERSION 4  /* what a model without feature preparation is written as */
#define OLDEST_VERSION 2 /* still read: its models start with an empty calibration */

/* F_SPARSE and F_AUTO (the storage; neither: dense) came without a version
 * change: the bytes of the weights are the same in every storage, and a
 * build that predates them refuses the flags rather than misread them. */
/* F_NO_CALIB (calibrate: false) likewise: the calibration bytes are still
 * written (an empty calibration), and a snapshot without the flag, from any
 * build before it, means calibrate: true. */
enum { F_BIAS = 1, F_AVERAGED = 2, F_BATCH = 4, F_MULTICLASS = 8, F_OPEN = 16, F_SPARSE = 32,
       F_AUTO = 64, F_NO_CALIB = 128 };

static bool prepared(const pc_prep *p)
{
    return p->scale != PC_SCALE_NONE || pc_prep_names(p);
}

static void encode_prep(pc_writer *w, const pc_prep *p)
{
    pc_writer_u8(w, (uint8_t)p->scale);
    pc_writer_u32(w, p->max_crossed);
    pc_writer_u8(w, (uint8_t)p->ntransforms);
    for (uint32_t i = 0; i < p->ntransforms; i++) {
        const pc_transform *t = &p->transforms[i];
        pc_writer_str(w, t->pattern);
        pc_writer_u8(w, t->kind);
        pc_writer_u8(w, t->nbins);
        pc_writer_u8(w, t->nedges);
        for (uint32_t k = 0; k < t->nedges; k++)
            pc_writer_f64(w, t->edges[k]);
    }
    pc_writer_u8(w, (uint8_t)p->ncrosses);
    for (uint32_t i = 0; i < p->ncrosses; i++) {
        pc_writer_str(w, p->crosses[i].a);
        pc_writer_str(w, p->crosses[i].b);
    }
}

/* A string of 1..PC_PATTERN_MAX bytes into dst; false when malformed. */
static bool read_text(pc_reader *r, char *dst)
{
    char *s = pc_reader_str(r, PC_PATTERN_MAX);
    bool ok = s && s[0];
    if (ok)
        strcpy(dst, s);
    free(s);
    return ok;
}

/* Ranges are checked by pc_model_shell (check_prep), counts here, before
 * they index the arrays. */
static bool decode_prep(pc_reader *r, pc_prep *p)
{
    p->scale = (pc_scale)pc_reader_u8(r);
    p->max_crossed = pc_reader_u32(r);
    p->ntransforms = pc_reader_u8(r);
    if (p->ntransforms > PC_TRANSFORMS_MAX)
        return false;
    for (uint32_t i = 0; i < p->ntransforms; i++) {
        pc_transform *t = &p->transforms[i];
        if (!read_text(r, t->pattern))
            return false;
        t->kind = pc_reader_u8(r);
        t->nbins = pc_reader_u8(r);
        t->nedges = pc_reader_u8(r);
        if (t->nedges > PC_EDGES_MAX)
            return false;
        for (uint32_t k = 0; k < t->nedges; k++)
            t->edges[k] = pc_reader_f64(r);
    }
    p->ncrosses = pc_reader_u8(r);
    if (p->ncrosses > PC_CROSSES_MAX)
        return false;
    for (uint32_t i = 0; i < p->ncrosses; i++)
        if (!read_text(r, p->crosses[i].a) || !read_text(r, p->crosses[i].b))
            return false;
    return !r->failed;
}

pc_status pc_model_encode(const pc_model *m, uint8_t **buf, size_t *len, pc_error *err)
{
    pc_writer w = {0};
    const pc_model_config *c = &m->cfg;
    bool prep = prepared(&c->prep);
    pc_writer_bytes(&w, MAGIC, sizeof MAGIC);
    pc_writer_u8(&w, prep ? FORMAT_VERSION : PLAIN_VERSION);
    pc_writer_str(&w, c->rule->name);
    for (size_t i = 0; i < c->rule->nparams; i++) {
        pc_writer_u32(&w, (uint32_t)c->params.val[i].n);
        for (size_t k = 0; k < c->params.val[i].n; k++)
            pc_writer_f64(&w, c->params.val[i].v[k]);
    }
    pc_writer_u32(&w, c->dim);
    pc_writer_u8(&w, (uint8_t)((c->bias ? F_BIAS : 0) | (c->averaged ? F_AVERAGED : 0) |
                               (c->batch ? F_BATCH : 0) | (c->multiclass ? F_MULTICLASS : 0) |
                               (c->open_classes ? F_OPEN : 0) |
                               (c->storage == PC_STORAGE_SPARSE ? F_SPARSE : 0) |
                               (c->storage == PC_STORAGE_AUTO ? F_AUTO : 0) |
                               (c->calibrate ? 0 : F_NO_CALIB)));
    pc_writer_u8(&w, (uint8_t)c->weights);
    pc_writer_f64(&w, c->bias_value);
    if (prep)
        encode_prep(&w, &c->prep);
    pc_writer_u64(&w, m->stats.examples);
    pc_writer_u64(&w, m->stats.mistakes);
    pc_writer_u64(&w, m->stats.updates);
    pc_writer_bytes(&w, m->recent, sizeof m->recent);
    pc_writer_u32(&w, m->recent_pos);
    pc_writer_u32(&w, (uint32_t)m->ncls);
    pc_status st = PC_OK;
    for (size_t i = 0; i < m->ncls && st == PC_OK; i++) {
        if (c->multiclass)
            pc_writer_str(&w, m->names[i]);
        pc_writer_u64(&w, m->cls_examples[i]);
        pc_writer_u64(&w, m->cls_mistakes[i]);
        st = pc_learner_encode(&m->learners[i], &w);
        pc_calib_encode(&m->calib[i], &w);
    }
    if (prep)
        pc_scaler_encode(&m->scaler, &w);
    if (st == PC_OK && w.failed)
        st = PC_ENOMEM;
    if (st != PC_OK) {
        free(w.buf);
        snprintf(err->msg, sizeof err->msg, "cannot encode the model: %s", pc_status_name(st));
        return st;
    }
    *buf = w.buf;
    *len = w.len;
    return PC_OK;
}

/* Out of memory while reading a string: say so, rather than call good bytes
 * malformed (a restore would then skip an intact snapshot). */
static pc_status nomem(pc_error *err, const char *what)
{
    snprintf(err->msg, sizeof err->msg, "out of memory reading the model's %s", what);
    return PC_ENOMEM;
}

static pc_status bad(pc_error *err, const char *what)
{
    snprintf(err->msg, sizeof err->msg, "model data is malformed or truncated: %s", what);
    return PC_EFORMAT;
}

/* A value a check refused (r->why), named; else as bad(). */
static pc_status refused(pc_error *err, const pc_reader *r, const char *what)
{
    if (!r->why)
        return bad(err, what);
    snprintf(err->msg, sizeof err->msg, "model data refused: %s: %s", what, r->why);
    return PC_EFORMAT;
}

/* Reads the config part into c (rule resolved, params validated later by
 * pc_model_shell). */
static pc_status decode_config(pc_reader *r, pc_model_config *c, uint8_t *version,
                               pc_error *err)
{
    char magic[sizeof MAGIC];
    if (!pc_reader_bytes(r, magic, sizeof magic) || memcmp(magic, MAGIC, sizeof magic) != 0)
        return bad(err, "not a perceptrond model (bad magic)");
    *version = pc_reader_u8(r);
    if (*version < OLDEST_VERSION || *version > FORMAT_VERSION) {
        snprintf(err->msg, sizeof err->msg,
                 "model format version %u is not supported (this build reads versions %u to %u)",
                 *version, OLDEST_VERSION, FORMAT_VERSION);
        return PC_EFORMAT;
    }
    char *rule = pc_reader_str(r, 64);
    if (!rule)
        return r->nomem ? nomem(err, "rule name") : bad(err, "rule name");
    memset(c, 0, sizeof *c);
    c->rule = pc_rule_find(rule);
    if (!c->rule) {
        snprintf(err->msg, sizeof err->msg, "model uses rule '%s', which this build does not have",
                 rule);
        free(rule);
        return PC_ENOTFOUND;
    }
    free(rule);
    for (size_t i = 0; i < c->rule->nparams; i++) {
        uint32_t n = pc_reader_u32(r);
        if (n > PC_PARAM_LIST_MAX)
            return bad(err, "parameter list length");
        c->params.val[i].n = n;
        for (uint32_t k = 0; k < n; k++)
            c->params.val[i].v[k] = pc_reader_f64(r);
    }
    c->dim = pc_reader_u32(r);
    uint8_t f = pc_reader_u8(r);
    c->bias = f & F_BIAS;
    c->averaged = f & F_AVERAGED;
    c->batch = f & F_BATCH;
    c->multiclass = f & F_MULTICLASS;
    c->open_classes = f & F_OPEN;
    c->calibrate = !(f & F_NO_CALIB);
    c->storage = (f & F_SPARSE) ? PC_STORAGE_SPARSE : (f & F_AUTO) ? PC_STORAGE_AUTO
                                                                : PC_STORAGE_DENSE;
    uint8_t width = *version >= 4 ? pc_reader_u8(r) : PC_WEIGHTS_FLOAT64;
    c->weights = (pc_weights)width;
    c->bias_value = pc_reader_f64(r);
    if (r->failed)
        return bad(err, "config");
    if (*version >= 5 && !decode_prep(r, &c->prep))
        return r->nomem ? nomem(err, "feature preparation") : bad(err, "feature preparation");
    /* A flag this version does not know would be dropped on the next write:
     * the model would not be the one that was saved. */
    if ((f & ~(F_BIAS | F_AVERAGED | F_BATCH | F_MULTICLASS | F_OPEN | F_SPARSE | F_AUTO |
               F_NO_CALIB)) ||
        (f & F_SPARSE && f & F_AUTO) || width > PC_WEIGHTS_FLOAT32)
        return bad(err, "unknown flags");
    return PC_OK;
}

pc_status pc_model_decode(const uint8_t *buf, size_t len, pc_model **out, pc_error *err)
{
    pc_reader r = {.p = buf, .left = len};
    pc_model_config c;
    uint8_t version;
    err->msg[0] = 0;
    pc_status st = decode_config(&r, &c, &version, err);
    if (st != PC_OK)
        return st;
    pc_model *m;
    if ((st = pc_model_shell(&c, false, &m, err)) != PC_OK)
        return st;
    m->stats.examples = pc_reader_u64(&r);
    m->stats.mistakes = pc_reader_u64(&r);
    m->stats.updates = pc_reader_u64(&r);
    pc_reader_bytes(&r, m->recent, sizeof m->recent);
    m->recent_pos = pc_reader_u32(&r);
    uint32_t n = pc_reader_u32(&r);
    if (r.failed || m->recent_pos >= PC_RECENT_WINDOW ||
        (c.multiclass ? n > PC_CLASSES_MAX : n != 1)) {
        pc_model_free(m);
        return bad(err, "header");
    }
    /* Each learner takes at least 24 bytes: check before allocating n. */
    if (!pc_reader_need(&r, n, 24)) {
        pc_model_free(m);
        return bad(err, "learner count exceeds the data");
    }
    m->learners = calloc(n ? n : 1, sizeof *m->learners);
    m->names = calloc(n ? n : 1, sizeof *m->names);
    m->cls_examples = calloc(n ? n : 1, sizeof *m->cls_examples);
    m->cls_mistakes = calloc(n ? n : 1, sizeof *m->cls_mistakes);
    m->scores = calloc(n ? n : 1, sizeof *m->scores);
    m->calib = calloc(n ? n : 1, sizeof *m->calib);
    m->cap = n ? n : 1;
    if (!m->learners || !m->names || !m->cls_examples || !m->cls_mistakes || !m->scores ||
        !m->calib) {
        pc_model_free(m);
        snprintf(err->msg, sizeof err->msg, "out of memory restoring the model");
        return PC_ENOMEM;
    }
    pc_rule_ctx ctx;
    pc_model_rule_ctx(m, &ctx);
    /* The config was checked by pc_model_shell; what the learners hold must be
     * finite: a NaN weight would make every prediction NaN, silently. */
    r.nonfinite = false;
    for (uint32_t i = 0; i < n; i++) {
        char *name = NULL;
        if (c.multiclass) {
            name = pc_reader_str(&r, PC_CLASS_NAME_MAX);
            if (!name || !name[0] || pc_model_class_find(m, name, strlen(name)) >= 0) {
                free(name);
                pc_model_free(m);
                return r.nomem ? nomem(err, "class name") : bad(err, "class name");
            }
        }
        uint64_t ce = pc_reader_u64(&r), cm = pc_reader_u64(&r);
        st = pc_learner_decode(&m->learners[i], c.rule, &ctx, &r, err);
        if (st != PC_OK) {
            free(name);
            pc_model_free(m);
            return st;
        }
        if (version >= 3)
            pc_calib_decode(&m->calib[i], &r);
        m->names[i] = name;
        if (r.failed) {
            m->ncls = i + 1; /* learner i was decoded: pc_model_free frees it too */
            pc_model_free(m);
            return bad(err, "calibration");
        }
        m->cls_examples[i] = ce;
        m->cls_mistakes[i] = cm;
        m->ncls = i + 1;
        /* The bias feature's weight times its value is the bias `info`
         * reports and every score adds: finite, as the learner's own. */
        double b = m->add_bias ? pc_learner_weight(&m->learners[i], m->space) * c.bias_value : 0;
        if (!isfinite(b)) {
            pc_model_free(m);
            snprintf(err->msg, sizeof err->msg,
                     "model data refused: the bias (bias feature weight x bias_value) is not "
                     "finite");
            return PC_EFORMAT;
        }
    }
    if (version >= 5 && !pc_scaler_decode(&m->scaler, &r)) {
        pc_model_free(m);
        return r.nomem ? nomem(err, "feature scales") : refused(err, &r, "feature scales");
    }
    if (r.left != 0) {
        pc_model_free(m);
        return bad(err, "trailing bytes after the last learner");
    }
    if (r.nonfinite) {
        pc_model_free(m);
        snprintf(err->msg, sizeof err->msg,
                 "model data holds a weight or state value that is not finite (NaN or infinity)");
        return PC_EFORMAT;
    }
    *out = m;
    return PC_OK;
}
