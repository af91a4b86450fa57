/* listen.c - the `listen:` section: TCP addresses and Unix socket paths with their modes,
 * the rights each grants without a token, and TLS for TCP (docs/security.md).
 *
 * Addresses are checked for form only (host:port, [v6]:port, port range), never resolved: a
 * --check-config run must not depend on DNS, and binding is the daemon's job at start.  A listed
 * key replaces the default list; `listen: {tcp: []}` turns TCP off but keeps the default socket.
 */
#include "daemon/config/internal.h"
#include "proto/proto.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

/* Checks "host:port" / "[v6]:port" without resolving anything (no DNS at --check-config time).
 * Returns NULL when valid, else what is wrong. */
const char *pcd_tcp_problem(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (!colon)
        return "it has no ':port'";
    size_t hlen = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hlen < 2 || s[hlen - 1] != ']')
            return "a bracketed IPv6 address must be followed by ]:port";
        char v6[64];
        struct in6_addr a;
        if (hlen - 2 >= sizeof v6)
            return "the IPv6 address is too long";
        memcpy(v6, s + 1, hlen - 2);
        v6[hlen - 2] = 0;
        if (inet_pton(AF_INET6, v6, &a) != 1)
            return "the part in brackets is not an IPv6 address";
    } else {
        if (hlen == 0)
            return "the host is empty (use 0.0.0.0 for every IPv4 address, [::] for IPv6)";
        for (size_t i = 0; i < hlen; i++) {
            char ch = s[i];
            if (ch == ':')
                return "IPv6 addresses go in brackets ([::1]:7411)";
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '-' || ch == '_'))
                return "the host has a character that is not allowed in a host name or address";
        }
    }
    const char *p = colon + 1;
    size_t plen = strlen(p);
    unsigned long port = 0;
    if (plen == 0 || plen > 5 || strspn(p, "0123456789") != plen)
        return "the port is not a number";
    port = strtoul(p, NULL, 10);
    if (port < 1 || port > 65535)
        return "the port must be in [1, 65535]";
    return NULL;
}

const char *pcd_tcp_split(const char *spec, char *host, size_t hostlen)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || (size_t)(colon - spec) >= hostlen)
        return NULL;
    size_t hl = (size_t)(colon - spec);
    memcpy(host, spec, hl);
    host[hl] = 0;
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    return colon + 1;
}

void pcd_free_tcp(pcd_config *c)
{
    for (size_t i = 0; c->tcp_access && i < c->ntcp; i++) {
        free(c->tcp_access[i].tls_cert);
        free(c->tcp_access[i].tls_key);
        free(c->tcp_access[i].tls_client_ca);
    }
    free(c->tcp_access);
    c->tcp_access = NULL;
    pcd_free_strings(c->tcp, c->ntcp);
    c->tcp = NULL;
    c->ntcp = 0;
}

void pcd_free_unix(pcd_config *c)
{
    pcd_free_strings(c->unix_paths, c->nunix);
    free(c->unix_modes);
    free(c->unix_rights);
    c->unix_paths = NULL;
    c->unix_modes = NULL;
    c->unix_rights = NULL;
    c->nunix = 0;
}

static int read_rights(pcd_yctx *y, const yaml_node_t *n, const char *key, unsigned *out)
{
    size_t idx;
    if (pcd_yget_choice(y, n, key, pcp_right_names, &idx))
        return -1;
    *out = (unsigned)idx;
    return 0;
}

/* tls: {cert, key, client_ca, client_cert}: the files are checked when the
 * daemon starts (OpenSSL reads them), not here. */
static int read_tls(pcd_yctx *y, const yaml_node_t *n, pcd_access *a)
{
    static const char *const keys[] = {"cert", "key", "client_ca", "client_cert"};
    static const char *const client_modes[] = {"optional", "require", NULL};
    yaml_node_t *v[4];
    if (pcd_ybind(y, n, "listen.tcp.tls", keys, 4, v, NULL))
        return -1;
    if (!v[0] || !v[1])
        return pcd_yfail(y, n, "listen.tcp.tls", "needs both cert and key (PEM files)");
    if (pcd_yget_string(y, v[0], "listen.tcp.tls.cert", 4000, &a->tls_cert) ||
        pcd_yget_string(y, v[1], "listen.tcp.tls.key", 4000, &a->tls_key) ||
        (v[2] && pcd_yget_string(y, v[2], "listen.tcp.tls.client_ca", 4000, &a->tls_client_ca)))
        return -1;
    if (v[3]) {
        size_t idx;
        if (pcd_yget_choice(y, v[3], "listen.tcp.tls.client_cert", client_modes, &idx))
            return -1;
        if (!v[2])
            return pcd_yfail(y, v[3], "listen.tcp.tls.client_cert",
                             "needs client_ca: the CA that client certificates must chain to");
        a->tls_client_required = idx == 1;
    }
    return 0;
}

/* An entry: "host:port", or {address, rights, tls}. */
static int read_tcp_entry(pcd_yctx *y, const yaml_node_t *n, pcd_config *c, char **addr,
                          pcd_access *a)
{
    static const char *const keys[] = {"address", "rights", "tls"};
    yaml_node_t *v[3];
    a->rights = c->tcp_rights_default;
    if (n->type != YAML_MAPPING_NODE)
        return pcd_yget_string(y, n, "listen.tcp", 300, addr);
    if (pcd_ybind(y, n, "listen.tcp", keys, 3, v, NULL))
        return -1;
    if (!v[0])
        return pcd_yfail(y, n, "listen.tcp", "an entry given as a mapping needs an address");
    if (pcd_yget_string(y, v[0], "listen.tcp.address", 300, addr))
        return -1;
    if (v[1] && read_rights(y, v[1], "listen.tcp.rights", &a->rights))
        return -1;
    return v[2] ? read_tls(y, v[2], a) : 0;
}

static int read_tcp(pcd_yctx *y, const yaml_node_t *n, pcd_config *c)
{
    const yaml_node_item_t *items;
    size_t count;
    if (pcd_yget_seq(y, n, "listen.tcp", PCD_LISTENERS_MAX, &items, &count))
        return -1;
    pcd_free_tcp(c);
    if (count && (!(c->tcp = calloc(count, sizeof *c->tcp)) ||
                  !(c->tcp_access = calloc(count, sizeof *c->tcp_access))))
        return pcd_yfail(y, n, "listen.tcp", "out of memory");
    for (size_t i = 0; i < count; i++) {
        const yaml_node_t *in = pcd_ynode(y, items[i]);
        char *addr = NULL;
        int rc = read_tcp_entry(y, in, c, &addr, &c->tcp_access[c->ntcp]);
        if (addr) /* the address is read first: with it, the entry owns what was read */
            c->tcp[c->ntcp++] = addr;
        if (rc)
            return -1;
        const char *why = pcd_tcp_problem(addr);
        if (why)
            return pcd_yfail(y, in, "listen.tcp",
                             "'%.80s' is not host:port: %s (examples: 127.0.0.1:7411, [::1]:7411, "
                             "localhost:7411)", addr, why);
        for (size_t j = 0; j + 1 < c->ntcp; j++)
            if (!strcmp(c->tcp[j], addr))
                return pcd_yfail(y, in, "listen.tcp", "'%.80s' is listed twice", addr);
    }
    return 0;
}

/* Permission bits, always read as octal ("0660", 0660, 660 and 0o660 are the same). */
static int read_mode(pcd_yctx *y, const yaml_node_t *n, const char *key, unsigned *out)
{
    size_t len;
    const char *s = pcd_yscalar(n, &len);
    if (s && len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
        s += 2, len -= 2;
    if (s && !pcd_yis_null(n) && len >= 1 && len <= 4 && strspn(s, "01234567") == len) {
        unsigned long v = strtoul(s, NULL, 8);
        if (v <= 0777) {
            *out = (unsigned)v;
            return 0;
        }
    }
    return pcd_yfail(y, n, key, "expected an octal permission mode from 0 to 0777 such as \"0660\", "
                                "got %s%.20s%s", s ? "'" : "", s ? s : pcd_ytype(n), s ? "'" : "");
}

static int read_unix_entry(pcd_yctx *y, const yaml_node_t *n, pcd_config *c)
{
    static const char *const keys[] = {"path", "mode", "rights"};
    const char *key = "listen.unix";
    yaml_node_t *v[3], *k[3];
    const yaml_node_t *pathn = n;
    unsigned mode = c->unix_mode, rights = c->unix_rights_default;
    if (n->type == YAML_MAPPING_NODE) {
        if (pcd_ybind(y, n, key, keys, 3, v, k))
            return -1;
        if (!v[0])
            return pcd_yfail(y, n, key, "an entry given as a mapping needs a path");
        if (v[1] && read_mode(y, v[1], "listen.unix.mode", &mode))
            return -1;
        if (v[2] && read_rights(y, v[2], "listen.unix.rights", &rights))
            return -1;
        pathn = v[0];
        key = "listen.unix.path";
    }
    char *path;
    if (pcd_yget_string(y, pathn, key, PCD_UNIX_PATH_MAX, &path))
        return -1;
    for (size_t j = 0; j < c->nunix; j++)
        if (!strcmp(c->unix_paths[j], path)) {
            free(path);
            return pcd_yfail(y, pathn, key, "'%.80s' is listed twice", c->unix_paths[j]);
        }
    c->unix_paths[c->nunix] = path;
    c->unix_rights[c->nunix] = rights;
    c->unix_modes[c->nunix++] = mode;
    return 0;
}

static int read_unix(pcd_yctx *y, const yaml_node_t *n, pcd_config *c)
{
    const yaml_node_item_t *items;
    size_t count;
    if (pcd_yget_seq(y, n, "listen.unix", PCD_LISTENERS_MAX, &items, &count))
        return -1;
    pcd_free_unix(c);
    if (count && (!(c->unix_paths = calloc(count, sizeof *c->unix_paths)) ||
                  !(c->unix_modes = calloc(count, sizeof *c->unix_modes)) ||
                  !(c->unix_rights = calloc(count, sizeof *c->unix_rights))))
        return pcd_yfail(y, n, "listen.unix", "out of memory");
    for (size_t i = 0; i < count; i++)
        if (read_unix_entry(y, pcd_ynode(y, items[i]), c))
            return -1;
    return 0;
}

int pcd_listen_parse(pcd_yctx *y, const yaml_node_t *at, const yaml_node_t *map, pcd_config *c)
{
    static const char *const keys[] = {"tcp", "unix", "unix_mode", "tcp_rights", "unix_rights"};
    yaml_node_t *v[5];
    if (pcd_ybind(y, map, "listen", keys, 5, v, NULL))
        return -1;
    /* The defaults of entries first, whatever the order: the entries of
     * a list read next take them, and so do the default listeners when no
     * list is given. */
    const struct {
        const yaml_node_t *node;
        const char *key;
        int (*read)(pcd_yctx *y, const yaml_node_t *n, const char *key, unsigned *out);
        unsigned *value;
    } defaults[] = {
        {v[2], "listen.unix_mode", read_mode, &c->unix_mode},
        {v[3], "listen.tcp_rights", read_rights, &c->tcp_rights_default},
        {v[4], "listen.unix_rights", read_rights, &c->unix_rights_default},
    };
    for (size_t d = 0; d < sizeof defaults / sizeof *defaults; d++)
        if (defaults[d].node && defaults[d].read(y, defaults[d].node, defaults[d].key,
                                                 defaults[d].value))
            return -1;
    if (!v[0])
        for (size_t i = 0; i < c->ntcp; i++)
            c->tcp_access[i].rights = c->tcp_rights_default;
    if (!v[1])
        for (size_t i = 0; i < c->nunix; i++) {
            c->unix_modes[i] = c->unix_mode;
            c->unix_rights[i] = c->unix_rights_default;
        }
    if (v[0] && read_tcp(y, v[0], c))
        return -1;
    if (v[1] && read_unix(y, v[1], c))
        return -1;
    if (c->ntcp + c->nunix == 0)
        return pcd_yfail(y, at, "listen", "no listener is left: give at least one tcp address or "
                                          "unix path, or the daemon could never be reached");
    return 0;
}

void pcd_listen_dump(const pcd_config *c, FILE *out)
{
    fprintf(out, "listen:\n  tcp_rights: %s\n  unix_rights: %s\n  tcp:%s\n",
            pcp_right_name(c->tcp_rights_default), pcp_right_name(c->unix_rights_default),
            c->ntcp ? "" : " []");
    for (size_t i = 0; i < c->ntcp; i++) {
        const pcd_access *a = &c->tcp_access[i];
        fputs("    - {address: ", out);
        pcd_ydump_str(out, c->tcp[i]);
        fprintf(out, ", rights: %s", pcp_right_name(a->rights));
        if (a->tls_cert) {
            fputs(", tls: {cert: ", out);
            pcd_ydump_str(out, a->tls_cert);
            fputs(", key: ", out);
            pcd_ydump_str(out, a->tls_key);
            if (a->tls_client_ca) {
                fputs(", client_ca: ", out);
                pcd_ydump_str(out, a->tls_client_ca);
                fprintf(out, ", client_cert: %s", a->tls_client_required ? "require" : "optional");
            }
            fputs("}", out);
        }
        fputs("}\n", out);
    }
    fprintf(out, "  unix_mode: \"%04o\"\n  unix:%s\n", c->unix_mode, c->nunix ? "" : " []");
    for (size_t i = 0; i < c->nunix; i++) {
        fputs("    - {path: ", out);
        pcd_ydump_str(out, c->unix_paths[i]);
        fprintf(out, ", mode: \"%04o\", rights: %s}\n", c->unix_modes[i],
                pcp_right_name(c->unix_rights[i]));
    }
}
