/* server.c - a pcd_server in memory for the fuzz targets that dispatch
 * (server.h). */
#include "tests/fuzz/server.h"

#include <string.h>

#include "daemon/core/models.h"
#include "daemon/exec/auth.h"
#include "daemon/exec/request.h"
#include "tests/direct_check.h"
#include "tests/fuzz/fuzz.h"

void fz_server_setup(pcd_server *srv)
{
    memset(srv, 0, sizeof *srv);
    pcd_config_default(&srv->cfg);
    free(srv->cfg.state_dir); /* create and drop look at the state directory */
    srv->cfg.state_dir = strdup(fz_tmpdir());
    srv->cfg.journal_enabled = false;
    srv->cfg.auto_create = true;
    srv->cfg.template_model.cfg.dim = 1024; /* not 2^20: an auto-created model per input */
    pcp_limits_default(&srv->limits);
    FZ_ASSERT(srv->cfg.state_dir && msgpack_zone_init(&srv->loop.zone, 65536),
              "out of memory setting up");
    /* The tokens `auth` checks (request.dict holds them). */
    static const char tokens[] = "reader read " FZ_TOKEN_READ "\nboss admin " FZ_TOKEN_ADMIN "\n";
    fz_write_file(fz_tmpdir(), "tokens", (const uint8_t *)tokens, sizeof tokens - 1);
    char path[512], err[600];
    snprintf(path, sizeof path, "%s/tokens", fz_tmpdir());
    free(srv->cfg.tokens_file);
    srv->cfg.tokens_file = strdup(path);
    FZ_ASSERT(srv->cfg.tokens_file && pcd_auth_load(&srv->cfg, &srv->auth, err, sizeof err) == 0 &&
                  srv->auth,
              "loading the tokens: %s", err);
}

void fz_server_begin(pcd_server *srv)
{
    memset(&srv->models, 0, sizeof srv->models); /* ids start again at 1 */
    memset(&srv->loop.counters, 0, sizeof srv->loop.counters);
    FZ_ASSERT(pcd_registry_init(&srv->models) == 0, "out of memory setting up");
    /* The two models the seeds name: "m" binary, "c" multiclass (a b c). */
    static const char *const classes[] = {"a", "b", "c"};
    for (int k = 0; k < 2; k++) {
        pc_model_config cfg;
        pc_model_config_default(&cfg, DC_DIM);
        if (k) {
            cfg.multiclass = true;
            cfg.classes = classes;
            cfg.nclasses = 3;
        }
        pcp_error err;
        FZ_ASSERT(pcd_model_create(srv, k ? "c" : "m", &cfg, &err), "%s", err.msg);
    }
}

void fz_server_end(pcd_server *srv)
{
    pcd_registry_free(&srv->models);
    /* The scratch arrays go too: each input grows them again, under the
     * memory limit, whatever the inputs before it needed. */
    pcd_req_scratch_free(srv);
    msgpack_zone_clear(&srv->loop.zone);
}

bool fz_is_save(pcd_server *srv, const msgpack_object *msg, void *ud)
{
    (void)srv;
    (void)ud;
    pcp_message m;
    pcp_error err;
    return pcp_message_parse(msg, &m, &err) == PCP_OK && m.method->id == PCP_M_SAVE;
}
