/* http.c - the metrics endpoint: an evhttp server on metrics.listen.
 *
 *   /metrics   the Prometheus text format (metrics.c)
 *   /healthz   200 "ok" while the loop turns (a stuck loop answers nothing)
 *   /readyz    200 "ready" once models are restored and the listeners bound,
 *              503 with the reason while starting, stopping, with the journal
 *              failed or the shared log disconnected (writes would be refused)
 *
 * GET and HEAD only, small requests, 10 s to send one.  It has no
 * authentication: bind it to loopback, or to an address only the monitoring
 * system reaches (docs/operations.md).
 */
#include "daemon/net/http.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/net/metrics.h"

struct pcd_http {
    struct evhttp *http;
};

static void reply(struct evhttp_request *req, int code, const char *reason, const char *type,
                  struct evbuffer *body)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    /* HEAD: the headers only (evhttp sends a body to HTTP/1.0 clients) */
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD)
        evbuffer_drain(body, evbuffer_get_length(body));
    evhttp_send_reply(req, code, reason, body);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    pcd_server *srv = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    struct evbuffer *body = evbuffer_new();
    if (!body) {
        evhttp_send_error(req, HTTP_INTERNAL, "out of memory");
        return;
    }
    char why[400];
    const char *text = "text/plain; charset=utf-8";
    if (!path) {
        evhttp_send_error(req, HTTP_BADREQUEST, NULL);
    } else if (!strcmp(path, "/metrics")) {
        if (pcd_metrics_render(srv, body) == 0)
            reply(req, HTTP_OK, "OK", "text/plain; version=0.0.4; charset=utf-8", body);
        else
            evhttp_send_error(req, HTTP_INTERNAL, "out of memory");
    } else if (!strcmp(path, "/healthz")) {
        evbuffer_add_printf(body, "ok\n");
        reply(req, HTTP_OK, "OK", text, body);
    } else if (!strcmp(path, "/readyz")) {
        bool unready = pcd_metrics_unready(srv, why, sizeof why);
        evbuffer_add_printf(body, "%s\n", unready ? why : "ready");
        reply(req, unready ? 503 : HTTP_OK, unready ? "Service Unavailable" : "OK", text, body);
    } else {
        evbuffer_add_printf(body, "not found: try /metrics, /healthz or /readyz\n");
        reply(req, HTTP_NOTFOUND, "Not Found", text, body);
    }
    evbuffer_free(body);
}

int pcd_http_open(pcd_server *srv, char *err, size_t errlen)
{
    const char *spec = srv->cfg.metrics_listen;
    if (!*spec)
        return 0;
    /* "host:port" or "[v6]:port", checked by the config loader */
    char host[256];
    const char *port = pcd_tcp_split(spec, host, sizeof host);
    if (!port) {
        snprintf(err, errlen, "metrics.listen '%s' is not host:port", spec);
        return -1;
    }
    struct pcd_http *h = calloc(1, sizeof *h);
    if (!h || !(h->http = evhttp_new(srv->base))) {
        free(h);
        snprintf(err, errlen, "out of memory for the metrics endpoint");
        return -1;
    }
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_max_headers_size(h->http, 8192);
    evhttp_set_max_body_size(h->http, 0);
    evhttp_set_timeout(h->http, 10);
    evhttp_set_gencb(h->http, on_request, srv);
    if (!evhttp_bind_socket_with_handle(h->http, host, (ev_uint16_t)atoi(port))) {
        snprintf(err, errlen, "cannot listen on metrics.listen %s (is the port in use?)", spec);
        evhttp_free(h->http);
        free(h);
        return -1;
    }
    srv->http = h;
    pcd_info("metrics on http://%s/metrics (and /healthz, /readyz)", spec);
    return 0;
}

void pcd_http_close(pcd_server *srv)
{
    if (!srv->http)
        return;
    evhttp_free(srv->http->http);
    free(srv->http);
    srv->http = NULL;
}
