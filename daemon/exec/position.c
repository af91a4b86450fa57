/* position.c - a write's place in its model's log, in its answer (see
 * position.h).  Whoever keeps the log says where the write being run goes
 * (server.h, write_position): the journal's next LSN, since run() appends
 * the write as one record right after its handler, or the entry the shared
 * log is applying. */
#include "daemon/exec/position.h"

const char *pcd_req_position(const pcd_req *r, char *buf)
{
    const pcd_server *srv = r->srv;
    pcp_position p;
    if (!srv->write_position || !srv->write_position(srv, &p))
        return NULL;
    pcp_position_format(buf, p);
    return buf;
}

void pcd_pack_position(pcd_req *r)
{
    char buf[PCP_POSITION_MAX];
    const char *s = pcd_req_position(r, buf);
    pcp_pack_str(r->pk, "position");
    if (s)
        pcp_pack_str(r->pk, s);
    else
        msgpack_pack_nil(r->pk);
}
