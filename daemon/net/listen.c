/* listen.c - the listening sockets: TCP, Unix, or those systemd passes.
 *
 * With socket activation (LISTEN_FDS) the sockets come from systemd; each
 * takes the rights and TLS of the config entry with its address, or else the
 * default rights of its kind (listen.tcp_rights, listen.unix_rights).
 * Otherwise every `listen.tcp` and `listen.unix` entry is bound.  Failing to
 * bind any of them is fatal: an operator who configured a listener wants to
 * know it is not there.  Connections from Unix sockets are named by the
 * peer's uid and pid (SO_PEERCRED) in the logs.
 *
 * Out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM), accept fails at once
 * and again on the next turn of the loop, forever: the listeners pause for
 * 10 ms, doubling up to 1 s while it goes on, and the failure is logged once
 * every 10 s with how many failed meanwhile. */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/base/log.h"
#include "daemon/core/server.h"
#include "daemon/jobs/notify.h"
#include "daemon/net/serve.h"
#include "daemon/net/listen.h"
#include "daemon/net/tls.h"
#include "proto/proto.h"

static void on_accept(struct evconnlistener *el, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    pcd_listener *l = arg;
    (void)el;
    l->srv->loop.accept_pause_ms = 0; /* descriptors again: the next failure pauses briefly */
    char peer[64] = "unix";
    bool tcp = sa->sa_family == AF_INET || sa->sa_family == AF_INET6;
    if (tcp) {
        char host[48], port[8];
        if (getnameinfo(sa, (socklen_t)salen, host, sizeof host, port, sizeof port,
                        NI_NUMERICHOST | NI_NUMERICSERV) == 0)
            snprintf(peer, sizeof peer, "%s:%s", host, port);
    } else if (sa->sa_family == AF_UNIX) {
        struct ucred cr;
        socklen_t len = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
            snprintf(peer, sizeof peer, "unix uid=%u pid=%d", (unsigned)cr.uid, (int)cr.pid);
    }
    pcd_serve_accept(l->srv, fd, peer, tcp, l);
}

static void set_listening(pcd_server *srv, bool on)
{
    for (size_t i = 0; i < srv->nlisteners; i++)
        (on ? evconnlistener_enable : evconnlistener_disable)(srv->listeners[i]->l);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    set_listening(arg, true);
}

static void on_accept_error(struct evconnlistener *el, void *arg)
{
    pcd_server *srv = ((pcd_listener *)arg)->srv;
    (void)el;
    int e = EVUTIL_SOCKET_ERROR();
    srv->loop.counters.accept_errors++;
    unsigned long long skipped;
    if (pcd_log_limit_ok(&srv->loop.accept_log, 10, &skipped))
        pcd_error("accept failed: %s (%llu more failures since the last such line; "
                  "max_connections %u, open %u)", strerror(e), skipped, srv->cfg.max_connections,
                  srv->loop.nconns);
    if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
        return; /* the peer's trouble (ECONNABORTED ...): the next accept may work */
    if (!srv->loop.accept_timer)
        srv->loop.accept_timer = evtimer_new(srv->base, on_accept_resume, srv);
    if (!srv->loop.accept_timer)
        return;
    srv->loop.accept_pause_ms = srv->loop.accept_pause_ms ? srv->loop.accept_pause_ms * 2 : 10;
    if (srv->loop.accept_pause_ms > 1000)
        srv->loop.accept_pause_ms = 1000;
    struct timeval tv = {srv->loop.accept_pause_ms / 1000,
                         (srv->loop.accept_pause_ms % 1000) * 1000};
    set_listening(srv, false);
    evtimer_add(srv->loop.accept_timer, &tv);
}

static void free_listener(pcd_listener *l)
{
    if (!l)
        return;
    if (l->l)
        evconnlistener_free(l->l);
    pcd_tls_context_free(l->tls);
    free(l);
}

/* A listener for rights and (a NULL: none) TLS; its socket is bound by the
 * caller, which hands it over with adopt(). */
static pcd_listener *new_listener(pcd_server *srv, const char *what, unsigned rights,
                                  const pcd_access *a, char *err, size_t errlen)
{
    pcd_listener *l = calloc(1, sizeof *l);
    pcd_listener **ls = realloc(srv->listeners, (srv->nlisteners + 1) * sizeof *ls);
    if (ls)
        srv->listeners = ls;
    if (!l || !ls) {
        free(l);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->srv = srv;
    l->rights = rights;
    snprintf(l->what, sizeof l->what, "%s", what);
    if (a && a->tls_cert && !(l->tls = pcd_tls_context(a, err, errlen))) {
        free(l);
        return NULL;
    }
    return l;
}

/* l takes el (NULL: it could not be made, errno says why) and is kept. */
static int adopt(pcd_server *srv, pcd_listener *l, struct evconnlistener *el, char *err,
                 size_t errlen)
{
    if (!el) {
        snprintf(err, errlen, "cannot listen on %s: %s", l->what, strerror(errno));
        free_listener(l);
        return -1;
    }
    l->l = el;
    evconnlistener_set_error_cb(el, on_accept_error);
    srv->listeners[srv->nlisteners++] = l;
    pcd_info("listening on %s (rights: %s%s)", l->what, pcp_right_name(l->rights),
             l->tls ? ", TLS" : "");
    return 0;
}

static const unsigned FLAGS = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;

static int listen_tcp(pcd_server *srv, const char *spec, const pcd_access *a, char *err,
                      size_t errlen)
{
    /* "host:port", "[v6]:port" */
    char host[256];
    const char *port = pcd_tcp_split(spec, host, sizeof host);
    if (!port) {
        snprintf(err, errlen, "listen.tcp '%s' is not host:port", spec);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "listen.tcp '%s': %s", spec, gai_strerror(rc));
        return -1;
    }
    char what[300];
    snprintf(what, sizeof what, "tcp %s", spec);
    pcd_listener *l = new_listener(srv, what, a->rights, a, err, errlen);
    if (!l) {
        freeaddrinfo(ai);
        return -1;
    }
    struct evconnlistener *el = evconnlistener_new_bind(srv->base, on_accept, l, FLAGS, 511,
                                                        ai->ai_addr, (int)ai->ai_addrlen);
    freeaddrinfo(ai);
    return adopt(srv, l, el, err, errlen);
}

static int listen_unix(pcd_server *srv, const char *path, unsigned mode, unsigned rights, char *err,
                       size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sun.sun_path) {
        snprintf(err, errlen, "listen.unix path '%s' is longer than %zu bytes", path,
                 sizeof sun.sun_path - 1);
        return -1;
    }
    strcpy(sun.sun_path, path);
    /* A socket file left by a daemon that died is stale; anything else at
     * that path is not ours to delete. */
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "listen.unix path '%s' exists and is not a socket", path);
            return -1;
        }
        unlink(path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0 ||
        chmod(path, mode) != 0 || listen(fd, 511) != 0) {
        snprintf(err, errlen, "cannot listen on unix %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char **p = realloc(srv->unix_paths, (srv->nunix_paths + 1) * sizeof *p);
    if (!p || !(p[srv->nunix_paths] = strdup(path))) {
        if (p)
            srv->unix_paths = p;
        close(fd);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    srv->unix_paths = p;
    srv->nunix_paths++;
    char what[200];
    snprintf(what, sizeof what, "unix %s (mode %04o)", path, mode);
    pcd_listener *l = new_listener(srv, what, rights, NULL, err, errlen);
    if (!l) {
        close(fd);
        return -1;
    }
    return adopt(srv, l, evconnlistener_new(srv->base, on_accept, l, FLAGS, -1, fd), err, errlen);
}

/* A socket systemd passed: the config entry with its address gives its
 * rights and TLS, else its kind's default.  Addresses are compared as text
 * ("127.0.0.1:7411", a socket path), the form the .socket unit and the
 * config both use. */
static int listen_passed(pcd_server *srv, int fd, char *err, size_t errlen)
{
    const pcd_config *c = &srv->cfg;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char addr[128] = "", what[200];
    const pcd_access *a = NULL;
    unsigned rights = c->tcp_rights_default;
    bool named = getsockname(fd, (struct sockaddr *)&ss, &len) == 0 && len <= sizeof ss;
    if (named && ss.ss_family == AF_UNIX) {
        rights = c->unix_rights_default;
        snprintf(addr, sizeof addr, "%s", ((struct sockaddr_un *)&ss)->sun_path);
        for (size_t i = 0; i < c->nunix; i++)
            if (!strcmp(c->unix_paths[i], addr))
                rights = c->unix_rights[i];
    } else if (named) {
        char host[64], port[8];
        if (getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, port, sizeof port,
                        NI_NUMERICHOST | NI_NUMERICSERV) == 0)
            snprintf(addr, sizeof addr, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
        for (size_t i = 0; i < c->ntcp; i++)
            if (!strcmp(c->tcp[i], addr))
                a = &c->tcp_access[i], rights = a->rights;
    }
    snprintf(what, sizeof what, "socket fd %d from systemd (%s)", fd, addr);
    evutil_make_socket_nonblocking(fd);
    pcd_listener *l = new_listener(srv, what, rights, a, err, errlen);
    if (!l)
        return -1;
    return adopt(srv, l, evconnlistener_new(srv->base, on_accept, l, FLAGS, -1, fd), err, errlen);
}

int pcd_listen(pcd_server *srv, char *err, size_t errlen)
{
    int n = pcd_notify_listen_fds();
    if (n > 0) {
        for (int i = 0; i < n; i++)
            if (listen_passed(srv, 3 + i, err, errlen) != 0)
                return -1;
        return 0;
    }
    for (size_t i = 0; i < srv->cfg.ntcp; i++)
        if (listen_tcp(srv, srv->cfg.tcp[i], &srv->cfg.tcp_access[i], err, errlen) != 0)
            return -1;
    for (size_t i = 0; i < srv->cfg.nunix; i++)
        if (listen_unix(srv, srv->cfg.unix_paths[i], srv->cfg.unix_modes[i],
                        srv->cfg.unix_rights[i], err, errlen) != 0)
            return -1;
    if (srv->nlisteners == 0) {
        snprintf(err, errlen, "no listeners configured (listen.tcp and listen.unix are empty)");
        return -1;
    }
    return 0;
}

void pcd_unlisten(pcd_server *srv)
{
    if (srv->loop.accept_timer)
        event_free(srv->loop.accept_timer);
    srv->loop.accept_timer = NULL;
    for (size_t i = 0; i < srv->nlisteners; i++)
        free_listener(srv->listeners[i]);
    free(srv->listeners);
    srv->listeners = NULL;
    srv->nlisteners = 0;
    for (size_t i = 0; i < srv->nunix_paths; i++) {
        unlink(srv->unix_paths[i]);
        free(srv->unix_paths[i]);
    }
    free(srv->unix_paths);
    srv->unix_paths = NULL;
    srv->nunix_paths = 0;
}
