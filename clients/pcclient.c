/* pcclient.c - the blocking MessagePack-RPC client (see pcclient.h).
 *
 * Over "tls:" the bytes go through OpenSSL (SSL_read/SSL_write on the same
 * blocking socket); everything above send_some/recv_some is the same. */
#include "clients/pcclient.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct pcc_client {
    int fd;
    SSL_CTX *ctx;   /* both NULL without TLS */
    SSL *ssl;
    uint32_t next_id;
    msgpack_sbuffer out;
    msgpack_packer pk;
    msgpack_unpacker up;
    msgpack_unpacked res;
    unsigned busy_poll_us;
};

void pcc_set_busy_poll(pcc_client *c, unsigned us)
{
    c->busy_poll_us = us;
}

double pcc_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* OpenSSL writes with write(), which raises SIGPIPE on a closed
 * connection; a library must not kill its caller for that (the plain path
 * uses MSG_NOSIGNAL).  SIGPIPE is blocked around the write and one it raised
 * is taken back, as libcurl does. */
typedef struct nopipe {
    sigset_t old;
    bool pending; /* one was pending before: not ours to take */
} nopipe;

static void nopipe_begin(nopipe *np)
{
    sigset_t pipe_set, pend;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pend);
    sigpending(&pend);
    np->pending = sigismember(&pend, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &np->old);
}

static void nopipe_end(nopipe *np)
{
    int saved = errno;
    if (!np->pending) {
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &np->old, NULL);
    errno = saved;
}

static ssize_t send_some(pcc_client *c, const char *p, size_t n)
{
    if (!c->ssl)
        return send(c->fd, p, n, MSG_NOSIGNAL);
    nopipe np;
    nopipe_begin(&np);
    int w = SSL_write(c->ssl, p, n > INT_MAX ? INT_MAX : (int)n);
    if (w <= 0)
        errno = SSL_get_error(c->ssl, w) == SSL_ERROR_SYSCALL && errno ? errno : EPROTO;
    nopipe_end(&np);
    return w > 0 ? w : -1;
}

static ssize_t recv_some(pcc_client *c, char *p, size_t n)
{
    if (!c->ssl)
        return recv(c->fd, p, n, 0);
    int r = SSL_read(c->ssl, p, n > INT_MAX ? INT_MAX : (int)n);
    if (r > 0)
        return r;
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0))
        return 0;
    if (!(e == SSL_ERROR_SYSCALL && errno))
        errno = EPROTO;
    return -1;
}

/* Waits up to busy_poll_us for input without sleeping; true if some came. */
static bool spin_for_input(const pcc_client *c)
{
    if (c->ssl && SSL_pending(c->ssl) > 0)
        return true;
    if (!c->busy_poll_us)
        return false;
    double until = pcc_monotonic() + c->busy_poll_us * 1e-6;
    do {
        char b;
        ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return true; /* data, or an EOF / error for recv to report */
    } while (pcc_monotonic() < until);
    return false;
}

static int connect_unix(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sun.sun_path) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -1;
    }
    strcpy(sun.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
        snprintf(err, errlen, "cannot connect to unix:%s: %s (is perceptrond running?)", path,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int connect_tcp(const char *hostport, char *err, size_t errlen)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof host) {
        snprintf(err, errlen, "address '%s' is not host:port", hostport);
        return -1;
    }
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai;
    int rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", hostport, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, errlen, "cannot connect to tcp:%s: %s (is perceptrond running?)", hostport,
                 strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* OpenSSL's reason for what just failed. */
static void tls_reason(char *err, size_t errlen, const char *what)
{
    char buf[256] = "unknown error";
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    snprintf(err, errlen, "TLS: %s: %s", what, buf);
}

/* The TLS handshake on fd with the daemon at host, its certificate checked
 * against o->tls_ca (or the system's CAs) and host. */
static int start_tls(pcc_client *c, const char *hostport, const pcc_options *o, char *err,
                     size_t errlen)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    snprintf(host, sizeof host, "%.*s", (int)(colon - hostport), hostport);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    if (!(c->ctx = SSL_CTX_new(TLS_client_method())))
        return tls_reason(err, errlen, "no context"), -1;
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if ((o && o->tls_ca ? SSL_CTX_load_verify_locations(c->ctx, o->tls_ca, NULL)
                        : SSL_CTX_set_default_verify_paths(c->ctx)) != 1)
        return tls_reason(err, errlen, o && o->tls_ca ? o->tls_ca : "the system's CAs"), -1;
    if (o && o->tls_cert &&
        (SSL_CTX_use_certificate_chain_file(c->ctx, o->tls_cert) != 1 ||
         SSL_CTX_use_PrivateKey_file(c->ctx, o->tls_key ? o->tls_key : o->tls_cert,
                                     SSL_FILETYPE_PEM) != 1))
        return tls_reason(err, errlen, o->tls_cert), -1;
    if (!(c->ssl = SSL_new(c->ctx)) || SSL_set_fd(c->ssl, c->fd) != 1 ||
        SSL_set1_host(c->ssl, host) != 1)
        return tls_reason(err, errlen, "no connection"), -1;
    unsigned char ip[16];
    if (inet_pton(AF_INET, host, ip) != 1 && inet_pton(AF_INET6, host, ip) != 1)
        SSL_set_tlsext_host_name(c->ssl, host); /* SNI names hosts, never addresses */
    nopipe np;
    nopipe_begin(&np);
    int hs = SSL_connect(c->ssl);
    nopipe_end(&np);
    if (hs != 1) {
        long v = SSL_get_verify_result(c->ssl);
        if (v != X509_V_OK) {
            ERR_clear_error();
            snprintf(err, errlen, "TLS: the certificate of %s is not trusted: %s", hostport,
                     X509_verify_cert_error_string(v));
            return -1;
        }
        return tls_reason(err, errlen, "handshake failed"), -1;
    }
    return 0;
}

int pcc_options_from_env(pcc_options *o, char *buf, size_t buflen, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    const char *file = getenv("PERCEPTROND_TOKEN_FILE");
    o->token = getenv("PERCEPTROND_TOKEN");
    if (file && *file) {
        FILE *f = fopen(file, "r");
        if (!f || !fgets(buf, (int)buflen, f)) {
            snprintf(err, errlen, "cannot read the token in %s: %s", file,
                     f ? "it is empty" : strerror(errno));
            if (f)
                fclose(f);
            return -1;
        }
        fclose(f);
        buf[strcspn(buf, "\r\n")] = 0;
        o->token = buf;
    }
    if (o->token && !*o->token)
        o->token = NULL;
    o->tls_ca = getenv("PERCEPTROND_TLS_CA");
    o->tls_cert = getenv("PERCEPTROND_TLS_CERT");
    o->tls_key = getenv("PERCEPTROND_TLS_KEY");
    return 0;
}

/* auth(token) right after connecting: 0, or -1 with err. */
static int send_token(pcc_client *c, const char *token, char *err, size_t errlen)
{
    uint32_t id;
    msgpack_packer *pk = pcc_request(c, "auth", 1, &id);
    msgpack_pack_str(pk, strlen(token));
    msgpack_pack_str_body(pk, token, strlen(token));
    const msgpack_object *error, *result;
    if (pcc_call(c, id, &error, &result, err, errlen) != 0)
        return -1;
    if (error) {
        char msg[256];
        pcc_error_message(error, msg, sizeof msg);
        snprintf(err, errlen, "the daemon refused the token: %s", msg);
        return -1;
    }
    return 0;
}

int pcc_connect(const char *address, pcc_client **out, char *err, size_t errlen)
{
    return pcc_connect_with(address, NULL, out, err, errlen);
}

int pcc_connect_with(const char *address, const pcc_options *o, pcc_client **out, char *err,
                     size_t errlen)
{
    int fd;
    bool tls = strncmp(address, "tls:", 4) == 0;
    if (strncmp(address, "unix:", 5) == 0)
        fd = connect_unix(address + 5, err, errlen);
    else if (strncmp(address, "tcp:", 4) == 0 || tls)
        fd = connect_tcp(address + 4, err, errlen);
    else if (strchr(address, '/') || !strchr(address, ':'))
        fd = connect_unix(address, err, errlen);
    else
        fd = connect_tcp(address, err, errlen);
    if (fd < 0)
        return -1;
    pcc_client *c = calloc(1, sizeof *c);
    if (!c || !msgpack_unpacker_init(&c->up, 65536)) {
        free(c);
        close(fd);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->fd = fd;
    c->next_id = 1;
    msgpack_sbuffer_init(&c->out);
    msgpack_packer_init(&c->pk, &c->out, msgpack_sbuffer_write);
    msgpack_unpacked_init(&c->res);
    if ((tls && start_tls(c, address + 4, o, err, errlen) != 0) ||
        (o && o->token && send_token(c, o->token, err, errlen) != 0)) {
        pcc_close(c);
        return -1;
    }
    *out = c;
    return 0;
}

void pcc_close(pcc_client *c)
{
    if (!c)
        return;
    if (c->ssl) { /* close_notify; the daemon does not wait for it */
        nopipe np;
        nopipe_begin(&np);
        SSL_shutdown(c->ssl);
        nopipe_end(&np);
    }
    SSL_free(c->ssl);
    SSL_CTX_free(c->ctx);
    close(c->fd);
    msgpack_sbuffer_destroy(&c->out);
    msgpack_unpacker_destroy(&c->up);
    msgpack_unpacked_destroy(&c->res);
    free(c);
}

int pcc_fd(const pcc_client *c)
{
    return c->fd;
}

msgpack_packer *pcc_request(pcc_client *c, const char *method, uint32_t nparams, uint32_t *msgid)
{
    uint32_t id = c->next_id++;
    if (msgid)
        *msgid = id;
    msgpack_pack_array(&c->pk, 4);
    msgpack_pack_uint8(&c->pk, 0);
    msgpack_pack_uint32(&c->pk, id);
    msgpack_pack_str(&c->pk, strlen(method));
    msgpack_pack_str_body(&c->pk, method, strlen(method));
    msgpack_pack_array(&c->pk, nparams);
    return &c->pk;
}

msgpack_packer *pcc_notify(pcc_client *c, const char *method, uint32_t nparams)
{
    msgpack_pack_array(&c->pk, 3);
    msgpack_pack_uint8(&c->pk, 2);
    msgpack_pack_str(&c->pk, strlen(method));
    msgpack_pack_str_body(&c->pk, method, strlen(method));
    msgpack_pack_array(&c->pk, nparams);
    return &c->pk;
}

void pcc_raw(pcc_client *c, const void *bytes, size_t len)
{
    msgpack_sbuffer_write(&c->out, bytes, len);
}

int pcc_flush(pcc_client *c, char *err, size_t errlen)
{
    size_t off = 0;
    while (off < c->out.size) {
        ssize_t n = send_some(c, c->out.data + off, c->out.size - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "send: %s", n < 0 ? strerror(errno) : "connection closed");
            c->out.size = 0;
            return -1;
        }
        off += (size_t)n;
    }
    c->out.size = 0;
    return 0;
}

int pcc_read(pcc_client *c, uint32_t *msgid, const msgpack_object **error,
             const msgpack_object **result, int timeout_ms, char *err, size_t errlen)
{
    for (;;) {
        msgpack_unpack_return r = msgpack_unpacker_next(&c->up, &c->res);
        if (r == MSGPACK_UNPACK_PARSE_ERROR) {
            snprintf(err, errlen, "the server sent malformed MessagePack");
            return -1;
        }
        if (r == MSGPACK_UNPACK_SUCCESS) {
            const msgpack_object *o = &c->res.data;
            if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4 ||
                o->via.array.ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
                o->via.array.ptr[0].via.u64 != 1 ||
                o->via.array.ptr[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
                snprintf(err, errlen, "the server sent something that is not a response");
                return -1;
            }
            *msgid = (uint32_t)o->via.array.ptr[1].via.u64;
            *error = o->via.array.ptr[2].type == MSGPACK_OBJECT_NIL ? NULL : &o->via.array.ptr[2];
            *result = &o->via.array.ptr[3];
            return 0;
        }
        if (!spin_for_input(c) && timeout_ms >= 0) {
            struct pollfd p = {.fd = c->fd, .events = POLLIN};
            int pr = poll(&p, 1, timeout_ms);
            if (pr == 0) {
                snprintf(err, errlen, "no response within %d ms", timeout_ms);
                return -1;
            }
        }
        if (msgpack_unpacker_buffer_capacity(&c->up) < 65536 &&
            !msgpack_unpacker_reserve_buffer(&c->up, 65536)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        ssize_t n = recv_some(c, msgpack_unpacker_buffer(&c->up),
                              msgpack_unpacker_buffer_capacity(&c->up));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "%s", n == 0 ? "the server closed the connection" : strerror(errno));
            return -1;
        }
        msgpack_unpacker_buffer_consumed(&c->up, (size_t)n);
    }
}

int pcc_call(pcc_client *c, uint32_t msgid, const msgpack_object **error,
             const msgpack_object **result, char *err, size_t errlen)
{
    if (pcc_flush(c, err, errlen) != 0)
        return -1;
    uint32_t got;
    do {
        if (pcc_read(c, &got, error, result, -1, err, errlen) != 0)
            return -1;
    } while (got != msgid);
    return 0;
}

const msgpack_object *pcc_map_get(const msgpack_object *map, const char *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP)
        return NULL;
    size_t n = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
            memcmp(k->via.str.ptr, key, n) == 0)
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

bool pcc_str_eq(const msgpack_object *o, const char *s)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
           memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

double pcc_number(const msgpack_object *o)
{
    if (!o)
        return NAN;
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return (double)o->via.u64;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return (double)o->via.i64;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return o->via.f64;
    default: return NAN;
    }
}

int64_t pcc_error_code(const msgpack_object *error)
{
    double v = pcc_number(pcc_map_get(error, "code"));
    return isnan(v) ? -1 : (int64_t)v;
}

void pcc_error_message(const msgpack_object *error, char *buf, size_t len)
{
    const msgpack_object *m = pcc_map_get(error, "message");
    if (m && m->type == MSGPACK_OBJECT_STR)
        snprintf(buf, len, "%.*s", (int)m->via.str.size, m->via.str.ptr);
    else if (len)
        buf[0] = 0;
}
