/* blocked.c - the one "client gone" path (see blocked.h). */
#include "daemon/core/blocked.h"

bool pcd_waits_register(pcd_server *srv, pcd_forget_fn forget)
{
    for (size_t i = 0; i < srv->nforget; i++)
        if (srv->forget[i] == forget)
            return true;
    if (srv->nforget == PCD_WAITS_MAX) {
        pcd_error("internal: more than %d modules clients can wait on", PCD_WAITS_MAX);
        return false;
    }
    srv->forget[srv->nforget++] = forget;
    return true;
}

void pcd_client_gone(pcd_server *srv, pcd_client *c)
{
    for (size_t i = 0; i < srv->nforget; i++)
        srv->forget[i](srv, c);
}
