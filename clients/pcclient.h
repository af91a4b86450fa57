/* pcclient.h - a small blocking client for perceptrond (MessagePack-RPC).
 *
 * Used by perceptronctl, the benchmark and the end-to-end tests.  Requests
 * may be pipelined: pack any number with pcc_request()/pcc_notify(), send
 * them with pcc_flush(), then read the responses in order with pcc_read().
 * pcc_call() does all three for one request.
 *
 * Ownership: a pcc_client owns its socket and buffers (pcc_close frees them);
 * the objects pcc_read returns live until the next pcc_read or pcc_close.
 */
#ifndef PCC_CLIENT_H
#define PCC_CLIENT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pcc_client pcc_client;

#define PCC_DEFAULT_ADDRESS "unix:perceptrond.sock"
/* The socket of the installed daemon (perceptrond.service's RuntimeDirectory,
 * conf/perceptrond.systemd.yaml, perceptrond.socket). */
#define PCC_INSTALLED_PATH "/run/perceptrond/perceptrond.sock"

/* address: "unix:PATH", "tcp:HOST:PORT", "tls:HOST:PORT", a path containing
 * '/', or "HOST:PORT".  Returns 0, or -1 with err set.  The same as
 * pcc_connect_with(address, NULL, ...): no token, TLS verified against the
 * system's CAs. */
int pcc_connect(const char *address, pcc_client **out, char *err, size_t errlen);

/* How to connect besides the address (every field may be NULL). */
typedef struct pcc_options {
    const char *token;     /* sent with `auth` once connected; refused: pcc_connect fails */
    const char *tls_ca;    /* PEM file the daemon's certificate must chain to (tls: only);
                            * NULL: the system's CAs */
    const char *tls_cert;  /* a client certificate and its key (PEM), for listeners that ask */
    const char *tls_key;
} pcc_options;

/* The options of the environment: $PERCEPTROND_TOKEN (or the first line of
 * the file $PERCEPTROND_TOKEN_FILE, read into buf), $PERCEPTROND_TLS_CA,
 * $PERCEPTROND_TLS_CERT, $PERCEPTROND_TLS_KEY.  -1 with err when the token
 * file cannot be read. */
int pcc_options_from_env(pcc_options *o, char *buf, size_t buflen, char *err, size_t errlen);
int pcc_connect_with(const char *address, const pcc_options *o, pcc_client **out, char *err,
                     size_t errlen);
void pcc_close(pcc_client *c);
int pcc_fd(const pcc_client *c);

/* Starts a request [0, msgid, method, params]: packs everything up to the
 * params array header of nparams entries and returns the packer for the
 * caller to pack exactly nparams objects. */
msgpack_packer *pcc_request(pcc_client *c, const char *method, uint32_t nparams, uint32_t *msgid);
/* The same for a notification [2, method, params] (no response). */
msgpack_packer *pcc_notify(pcc_client *c, const char *method, uint32_t nparams);
/* Appends raw bytes (tests use it to send garbage). */
void pcc_raw(pcc_client *c, const void *bytes, size_t len);
/* Writes everything packed so far.  0, or -1 with err. */
int pcc_flush(pcc_client *c, char *err, size_t errlen);
/* Reads the next response.  *error is NULL on success (then *result is the
 * result), else the error map.  Returns 0, or -1 on EOF / I/O / protocol
 * error / timeout_ms elapsed (-1 = wait forever) with err set. */
int pcc_read(pcc_client *c, uint32_t *msgid, const msgpack_object **error,
             const msgpack_object **result, int timeout_ms, char *err, size_t errlen);
/* With us > 0, pcc_read polls the socket without sleeping for up to us
 * microseconds before it blocks: a synchronous caller then gets its answer
 * without waiting for its CPU to wake (see perceptrond's busy_poll_us).
 * Costs that much CPU per call at most; 0 (the default) turns it off. */
void pcc_set_busy_poll(pcc_client *c, unsigned us);
/* Seconds on the monotonic clock: the busy poll's and the timeouts' time,
 * for callers that time their own requests on the same clock. */
double pcc_monotonic(void);
/* flush + read the response to msgid. */
int pcc_call(pcc_client *c, uint32_t msgid, const msgpack_object **error,
             const msgpack_object **result, char *err, size_t errlen);

/* Helpers for reading results. */
const msgpack_object *pcc_map_get(const msgpack_object *map, const char *key);
bool pcc_str_eq(const msgpack_object *o, const char *s);
/* A number as double (ints and floats); NAN otherwise. */
double pcc_number(const msgpack_object *o);
/* The error's code and message ("" when absent). */
int64_t pcc_error_code(const msgpack_object *error);
void pcc_error_message(const msgpack_object *error, char *buf, size_t len);

#endif
