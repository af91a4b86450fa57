/* config.h - perceptrond's configuration: a YAML file (libyaml) read into a plain struct.
 *
 * The daemon reads everything it is told from one pcd_config.  pcd_config_load() starts from the
 * built-in defaults, overlays the file and validates it completely (every model definition is
 * built once with pc_model_new and freed), so `perceptrond --check-config` rejects exactly what
 * the daemon would.  Errors name the file, line, column and key, say what is wrong and what is
 * accepted.  docs/config.md lists every key; conf/perceptrond.yaml shows them with their defaults.
 *
 * Ownership: a pcd_config owns every string and array it points to; pcd_config_free() releases
 * them all and leaves the struct zeroed (so freeing twice is harmless).  Nothing here logs.
 */
#ifndef PCD_CONFIG_H
#define PCD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/perceptron.h"
#include "proto/proto.h"

/* A model as the config defines it.  The template has name == NULL and is otherwise a model
 * definition like any other; a definition that leaves a key out gets the built-in default
 * (perceptron, hash_bits 20, bias true, bias_value 1, not averaged, online, binary). */
typedef struct pcd_model_def {
    char *name;                  /* owned; valid per pcp_model_name_valid; NULL for the template */
    pc_model_config cfg;         /* cfg.classes points at classes below (cfg.nclasses == nclasses) */
    char **classes; size_t nclasses; /* owned, NUL-terminated names; multiclass models only */
    unsigned hash_bits;          /* how dim was given: log2(dim) for `hash_bits`, 0 for `dim` */
    pcp_join_config join;        /* the join.* keys (label later) */
    pcp_challenger challengers[PCP_CHALLENGERS_MAX]; /* rules learning beside it */
    size_t nchallengers;
    pcp_experts_config experts;  /* the experts.* keys: how predict uses the challengers */
} pcd_model_def;

/* What a listener lets its clients do, and (TCP only) its TLS: see docs/security.md. */
typedef struct pcd_access {
    unsigned rights;                   /* pcp_right granted without a token */
    char *tls_cert, *tls_key;          /* PEM files; both NULL: plain TCP; owned */
    char *tls_client_ca;               /* PEM CA bundle that client certificates must chain to; owned */
    bool tls_client_required;          /* refuse clients without a certificate (client_ca given) */
} pcd_access;

typedef struct pcd_config {
    char **tcp; size_t ntcp;           /* "host:port" listeners; default {"127.0.0.1:7411"} */
    pcd_access *tcp_access;            /* tcp_access[i]: rights and TLS of tcp[i] */
    char **unix_paths; size_t nunix;   /* default {"perceptrond.sock"} (relative to the working dir) */
    unsigned *unix_modes;              /* unix_modes[i]: permission bits of unix_paths[i] */
    unsigned *unix_rights;             /* unix_rights[i]: pcp_right granted on unix_paths[i] */
    unsigned unix_mode;                /* listen.unix_mode: the mode of entries that give none; 0660 */
    unsigned tcp_rights_default;       /* listen.tcp_rights: of entries that give none; learn */
    unsigned unix_rights_default;      /* listen.unix_rights: of entries that give none; admin */
    char *tokens_file;                 /* auth.tokens_file: "NAME RIGHTS TOKEN" lines; "" = none */
    char *tokens_credential;           /* auth.tokens_credential: a file in $CREDENTIALS_DIRECTORY */
    char *metrics_listen;              /* metrics.listen: "host:port" of the HTTP endpoint; "" = off */
    char *state_dir;                   /* default "state" */
    double snapshot_interval;          /* seconds, default 30; 0 = only on save and exit */
    unsigned snapshot_keep;            /* generations kept, default 3, range 1..100 */
    bool journal_enabled;              /* journal every acknowledged change; default true */
    char *journal_fsync;               /* "no" | "everysec" (default) | "always" */
    char *journal_dir;                 /* default "journal"; relative paths are inside state_dir */
    size_t journal_segment_bytes;      /* a new segment past this size; default 64 MiB */
    char *journal_on_corrupt;          /* "stop" (default) | "truncate" */
    char *log_backend;                 /* "none" (default: the local journal) | "redis" */
    char *log_address;                 /* "unix:/path" | "tcp:host:port"; required with redis */
    char *log_prefix;                  /* stream keys are <prefix>{<model>}; default "pcd:" */
    char *log_replica;                 /* this daemon's name in Redis; "": <hostname>:<state_dir> */
    char *log_password_file;           /* "PASSWORD" or "USER PASSWORD" for AUTH (redislog/auth.h) */
    char *log_password_credential;     /* the same from a systemd credential of that name */
    unsigned log_wait_replicas;        /* WAIT for this many Redis replicas before answering; 0 */
    unsigned log_wait_timeout_ms;      /* WAIT's timeout; 1000 */
    bool log_cluster;                  /* log.address is a node of a Redis Cluster; false */
    char **log_models; size_t nlog_models; /* fnmatch patterns of the models served; none = all */
    unsigned max_connections;          /* default 1024 */
    size_t max_message_bytes;          /* default 1 MiB; range 1 KiB .. 256 MiB */
    uint32_t max_features;             /* default 100000 */
    uint32_t max_depth;                /* default 16, range 3..32 (proto's ceiling) */
    uint32_t max_batch;                /* default 100000 */
    double idle_timeout;               /* seconds, default 300; 0 = none */
    size_t max_output_bytes;           /* pending output per connection before we stop reading it; 8 MiB */
    unsigned resident_max;             /* models in memory at once, the others at rest on
                                          disk (core/rest.c); 0 (default): all in memory */
    unsigned max_models;               /* models at once (create, auto-create); default 1000 */
    size_t max_memory;                 /* models + connection buffers; 0 = no bound; default
                                          pcd_config_memory_default() */
    size_t max_input_bytes;            /* input buffers of all connections together; 256 MiB */
    double message_timeout;            /* seconds a started message may take to arrive whole; 10, 0 = none */
    unsigned turn_us;                  /* microseconds of requests per connection per turn; 200 */
    unsigned after_wait_ms;            /* predict {"after"}: how long a replica may wait to apply it; 5000 */
    char *log_level;                   /* "debug"|"info"|"warning"|"error", default "info" */
    bool auto_create;                  /* create unknown models on first `label` from the template */
    unsigned busy_poll_us;             /* keep polling this long after input before sleeping; 50 */
    pcd_model_def template_model;      /* default: perceptron, hash_bits 20, bias true */
    pcd_model_def *models; size_t nmodels; /* in file order; names unique */
} pcd_config;

/* journal.fsync's words, in the order of pcd_fsync_mode (daemon/journal/journal.h), NULL-terminated. */
extern const char *const pcd_fsync_names[];

#define PCD_LOG_PATTERNS_MAX 1024       /* log.models entries */

/* Limits on what a config may ask for (docs/config.md gives the reasons). */
#define PCD_LISTENERS_MAX 64            /* per kind (tcp, unix) */
#define PCD_UNIX_PATH_MAX 107           /* sun_path holds 108 bytes with the NUL */

/* Fills c with the built-in default (loopback TCP, a Unix socket and ./state in the working
 * directory, no models).  c need not be initialised; its old contents are overwritten, not freed.
 * Aborts on out-of-memory (a handful of short strings at start-up). */
/* max_memory's default: half the memory of the machine or of the daemon's
 * cgroup, whichever is less, in whole MiB. */
size_t pcd_config_memory_default(void);
void pcd_config_default(pcd_config *c);

/* Loads path over the defaults.  c need not be initialised; its old contents are overwritten, not
 * freed.  Returns 0 with c filled, or -1 with err holding
 * "path:line:col: key 'x': what is wrong and what is accepted" (err is always NUL-terminated when
 * errlen > 0) and c zeroed.  An empty file (or one with only comments) gives the defaults. */
int pcd_config_load(const char *path, pcd_config *c, char *err, size_t errlen);

/* Frees everything c owns and zeroes it.  Accepts NULL and a zeroed struct. */
void pcd_config_free(pcd_config *c);

/* Prints the effective configuration as YAML that pcd_config_load reads back to the same values
 * (for --check-config and the docs).  Derived parameters (NaN) are shown as comments. */
void pcd_config_dump(const pcd_config *c, FILE *out);

/* Splits a "host:port" or "[v6]:port" address (the form listen.tcp and metrics.listen check)
 * for binding: its host, brackets off, into host; returns the port's text, or NULL when there is
 * no ':', the host is empty or does not fit in hostlen. */
const char *pcd_tcp_split(const char *spec, char *host, size_t hostlen);

/* Model definitions outside a config (the template for auto-created models, `create`). */
void pcd_model_def_default(pcd_model_def *d);   /* built-in default, name NULL; allocates nothing */
void pcd_template_def_default(pcd_model_def *d); /* the default template (pcp_spec_init_template) */
/* Deep copy of src named name (NULL keeps src's name).  Returns 0, or -1 on out-of-memory with
 * dst zeroed.  dst is overwritten, not freed. */
int pcd_model_def_copy(pcd_model_def *dst, const pcd_model_def *src, const char *name);
void pcd_model_def_free(pcd_model_def *d);      /* frees what d owns and zeroes it; NULL ok */

#endif
