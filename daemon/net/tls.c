/* tls.c - OpenSSL for the TCP listeners that ask for it (listen.tcp[].tls).
 *
 * libevent's OpenSSL bufferevents do the record layer: conn.c reads and
 * writes the same evbuffers as on a plain socket (it only must not write to
 * the fd itself).  TLS 1.2 at least; client certificates are verified against
 * client_ca when given, required or optional as the config says.
 */
#include "daemon/net/tls.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>

static void reason(char *err, size_t errlen, const char *what, const char *file)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "unknown error";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    snprintf(err, errlen, "TLS: cannot use %s %s: %s", what, file, buf);
}

SSL_CTX *pcd_tls_context(const pcd_access *a, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        reason(err, errlen, "a new context", "");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, a->tls_cert) != 1) {
        reason(err, errlen, "the certificate", a->tls_cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, a->tls_key, SSL_FILETYPE_PEM) != 1) {
        reason(err, errlen, "the key", a->tls_key);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        reason(err, errlen, "the key", a->tls_key);
        goto fail;
    }
    if (a->tls_client_ca) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(a->tls_client_ca);
        if (SSL_CTX_load_verify_locations(ctx, a->tls_client_ca, NULL) != 1 || !names) {
            if (names)
                sk_X509_NAME_pop_free(names, X509_NAME_free);
            reason(err, errlen, "the client CA", a->tls_client_ca);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names); /* taken over */
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
                                    (a->tls_client_required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                           NULL);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

void pcd_tls_context_free(SSL_CTX *ctx)
{
    SSL_CTX_free(ctx);
}

struct bufferevent *pcd_tls_accept(struct event_base *base, evutil_socket_t fd, SSL_CTX *ctx)
{
    SSL *ssl = SSL_new(ctx);
    if (!ssl)
        return NULL;
    struct bufferevent *bev = bufferevent_openssl_socket_new(base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                             BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        SSL_free(ssl);
        return NULL;
    }
    /* A peer that vanishes without close_notify is an EOF, not an error:
     * requests are framed by MessagePack, not by the TLS stream's end. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

void pcd_tls_error(struct bufferevent *bev, char *buf, size_t len)
{
    unsigned long e = bufferevent_get_openssl_error(bev);
    buf[0] = 0;
    if (e)
        ERR_error_string_n(e, buf, len);
    while (bufferevent_get_openssl_error(bev))
        ;
}

bool pcd_tls_peer(struct bufferevent *bev, char *buf, size_t len)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    X509 *cert = ssl ? SSL_get1_peer_certificate(ssl) : NULL;
    if (!cert)
        return false;
    bool ok = SSL_get_verify_result(ssl) == X509_V_OK;
    if (ok)
        X509_NAME_oneline(X509_get_subject_name(cert), buf, (int)len);
    X509_free(cert);
    return ok;
}
