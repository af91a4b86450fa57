/* internal.h - what the config*.c files share: a loaded YAML
 * document and typed readers over its nodes that fail with "path:line:col: key 'x': ...".
 *
 * Only the config files include this (it needs <yaml.h>; config.h does not, so the rest of the
 * daemon builds without libyaml's headers).  Every reader returns 0, or -1 after writing the
 * error; a reader never leaves anything allocated when it fails.
 */
#ifndef PCD_CONFIG_INTERNAL_H
#define PCD_CONFIG_INTERNAL_H

#include <yaml.h>

#include "daemon/config/config.h"

typedef struct pcd_yctx {
    yaml_document_t doc;
    const char *path;            /* for messages */
    char *err;
    size_t errlen;
} pcd_yctx;

/* Key paths are dotted ("models.spam.params.eta") and kept in buffers of this size. */
#define PCD_YKEY_MAX 192

#if defined(__GNUC__)
#define PCD_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PCD_PRINTF(a, b)
#endif

/* Writes "path:line:col: key 'key': <fmt>" (line and column of at, 1-based; "key ..." left out
 * when key is NULL or empty) and returns -1. */
int pcd_yfail(pcd_yctx *y, const yaml_node_t *at, const char *key, const char *fmt, ...) PCD_PRINTF(4, 5);
/* "where.name", or "name" when where is empty, into buf (truncated to PCD_YKEY_MAX). */
const char *pcd_ykey(char buf[PCD_YKEY_MAX], const char *where, const char *name);

yaml_node_t *pcd_ynode(pcd_yctx *y, int index);
/* "a list", "a mapping", "null", "a string", "a number"... for "expected X, got Y" messages. */
const char *pcd_ytype(const yaml_node_t *n);
bool pcd_yis_null(const yaml_node_t *n);
/* The scalar's bytes (NUL-terminated by libyaml) or NULL for a non-scalar. */
const char *pcd_yscalar(const yaml_node_t *n, size_t *len);

/* Scalar readers.  Numbers must be plain (unquoted) scalars. */
int pcd_yget_bool(pcd_yctx *y, const yaml_node_t *n, const char *key, bool *out);
int pcd_yget_uint(pcd_yctx *y, const yaml_node_t *n, const char *key, uint64_t min, uint64_t max,
                  uint64_t *out);
/* Bytes: an integer with an optional KiB, MiB or GiB suffix. */
int pcd_yget_size(pcd_yctx *y, const yaml_node_t *n, const char *key, uint64_t min, uint64_t max,
                  uint64_t *out);
/* A finite number in [min, max], or exactly 0 when zero_ok. */
int pcd_yget_real(pcd_yctx *y, const yaml_node_t *n, const char *key, double min, double max,
                  bool zero_ok, double *out);
/* A non-empty string of at most maxlen bytes without NUL; *out is a new malloc'd copy. */
int pcd_yget_string(pcd_yctx *y, const yaml_node_t *n, const char *key, size_t maxlen, char **out);
/* One of the NULL-terminated choices; *out is its index. */
int pcd_yget_choice(pcd_yctx *y, const yaml_node_t *n, const char *key, const char *const *choices,
                    size_t *out);

/* A list (null counts as empty) of at most max items. */
int pcd_yget_seq(pcd_yctx *y, const yaml_node_t *n, const char *key, size_t max,
                 const yaml_node_item_t **items, size_t *count);
/* A mapping (null counts as empty) whose keys are non-empty strings. */
int pcd_yget_map(pcd_yctx *y, const yaml_node_t *n, const char *key,
                 const yaml_node_pair_t **pairs, size_t *count);
/* A mapping whose keys are all in keys[0..nkeys): vals[i] (and knodes[i] if not NULL) receive the
 * value (key) node of keys[i], or NULL when absent.  Rejects unknown keys (suggesting the closest)
 * and duplicates.  where is the mapping's own key path ("" for the top level). */
int pcd_ybind(pcd_yctx *y, const yaml_node_t *map, const char *where, const char *const *keys,
              size_t nkeys, yaml_node_t **vals, yaml_node_t **knodes);

/* Rejects a document in which a node is reached twice (YAML aliases, *name): the tree stays a
 * tree, so no walk can loop (`&a [*a]`) or blow up exponentially (nested aliases). */
int pcd_ycheck_tree(pcd_yctx *y);

/* Writes s as a double-quoted YAML scalar. */
void pcd_ydump_str(FILE *out, const char *s);
/* Writes a number so that it reads back to the same double (%.17g, trimmed). */
void pcd_ydump_real(FILE *out, double v);

/* config/yaml.c, beside the readers that allocate them */
void pcd_free_strings(char **v, size_t n);   /* frees v[0..n) and v */

/* config/listen.c: the `listen:` mapping (key node at) into c's listener fields. */
/* config/listen.c: NULL when s is "host:port" / "[v6]:port" (not resolved), else what is wrong. */
const char *pcd_tcp_problem(const char *s);
/* Frees c->tcp and c->tcp_access (and what they own); zeroes ntcp. */
void pcd_free_tcp(pcd_config *c);
/* Frees c->unix_paths, unix_modes and unix_rights; zeroes nunix. */
void pcd_free_unix(pcd_config *c);
/* Writes the listen: section as YAML that reads back the same. */
void pcd_listen_dump(const pcd_config *c, FILE *out);
int pcd_listen_parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map, pcd_config *c);

/* config/model.c */
/* The mapping map (at key node at, path where) into d, keys left out taking the built-in
 * default (d's name stays), then builds the model once with pc_model_new to check it.  On
 * failure d may hold allocations: the caller frees it. */
int pcd_model_parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map, const char *where,
                    pcd_model_def *d);
/* The same for `template:`, whose keys left out take the default template's values
 * (pcp_spec_init_template). */
int pcd_template_parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map,
                       pcd_model_def *d);
/* The `models:` mapping into c->models (c->nmodels counts what is allocated, also on failure). */
int pcd_models_parse(pcd_yctx *y, const yaml_node_t *map, pcd_config *c);
void pcd_model_dump(const pcd_model_def *d, FILE *out, int indent);

#endif
