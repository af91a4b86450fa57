"""perceptrond_client - a small Python client for perceptrond (MessagePack-RPC).

Depends only on msgpack (Debian: python3-msgpack).  One Client is one
connection; requests may be pipelined with send()/recv(), or made one at a
time with the method helpers, which raise PerceptrondError on an error
response.

    from perceptrond_client import Client
    with Client("unix:perceptrond.sock") as c:
        c.label("spam", {"viagra": 1.0, "hello": 0.5}, 1)
        print(c.predict("spam", {"viagra": 1.0}))

A token (docs/security.md) is sent with `auth` on connecting: token=..., or
$PERCEPTROND_TOKEN / $PERCEPTROND_TOKEN_FILE.  "tls:HOST:PORT" speaks TLS
(Python's ssl), checking the daemon's certificate against tls_ca (a PEM file;
default $PERCEPTROND_TLS_CA, else the system's CAs); tls_cert/tls_key give a
client certificate.
"""
import os
import socket
import ssl

import msgpack

__all__ = ["Client", "PerceptrondError", "DEFAULT_ADDRESS"]

DEFAULT_ADDRESS = "unix:perceptrond.sock"


class PerceptrondError(Exception):
    """An error response: .code is the wire code (docs/protocol.md), .message the text."""

    def __init__(self, code, message):
        super().__init__("error %s: %s" % (code, message))
        self.code = code
        self.message = message


def _env_token():
    path = os.environ.get("PERCEPTROND_TOKEN_FILE")
    if path:
        with open(path) as f:
            return f.readline().strip() or None
    return os.environ.get("PERCEPTROND_TOKEN") or None


def _connect(address, tls_ca=None, tls_cert=None, tls_key=None):
    if address.startswith("tls:"):
        host, _, port = address[4:].rpartition(":")
        host = host.strip("[]")
        ctx = ssl.create_default_context(cafile=tls_ca or os.environ.get("PERCEPTROND_TLS_CA"))
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        cert = tls_cert or os.environ.get("PERCEPTROND_TLS_CERT")
        if cert:
            ctx.load_cert_chain(cert, tls_key or os.environ.get("PERCEPTROND_TLS_KEY"))
        s = socket.create_connection((host, int(port)))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return ctx.wrap_socket(s, server_hostname=host)
    if address.startswith("unix:"):
        address = address[5:]
    elif address.startswith("tcp:"):
        address = address[4:]
    elif "/" not in address and ":" not in address:
        pass  # a bare socket file name
    if "/" in address or ":" not in address:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(address)
        return s
    host, _, port = address.rpartition(":")
    s = socket.create_connection((host.strip("[]"), int(port)))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Client:
    """A connection to perceptrond.  address: "unix:PATH", "tcp:HOST:PORT",
    "tls:HOST:PORT", a path, or "HOST:PORT".  token: sent with `auth` at once
    (None: $PERCEPTROND_TOKEN or $PERCEPTROND_TOKEN_FILE, if set); a refused
    token raises PerceptrondError (code 14)."""

    def __init__(self, address=DEFAULT_ADDRESS, timeout=None, token=None, tls_ca=None,
                 tls_cert=None, tls_key=None):
        self._sock = _connect(address, tls_ca, tls_cert, tls_key)
        self._sock.settimeout(timeout)
        self._unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        self._next_id = 1
        self._out = []
        token = token or _env_token()
        if token:
            try:
                self.auth(token)
            except BaseException:
                self.close()
                raise

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- pipelining ---------------------------------------------------------
    def send(self, method, *params):
        """Queues a request; returns its msgid.  flush() sends the queue."""
        msgid = self._next_id
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF
        self._out.append(msgpack.packb([0, msgid, method, list(params)], use_bin_type=True))
        return msgid

    def notify(self, method, *params):
        """Queues a notification (no response, errors are dropped)."""
        self._out.append(msgpack.packb([2, method, list(params)], use_bin_type=True))

    def flush(self):
        if self._out:
            self._sock.sendall(b"".join(self._out))
            self._out = []

    def recv(self):
        """The next response as (msgid, error, result); error is None or a dict."""
        for msg in self._unpacker:
            return self._response(msg)
        while True:
            data = self._sock.recv(65536)
            if not data:
                raise ConnectionError("perceptrond closed the connection")
            self._unpacker.feed(data)
            for msg in self._unpacker:
                return self._response(msg)

    @staticmethod
    def _response(msg):
        if not isinstance(msg, list) or len(msg) != 4 or msg[0] != 1:
            raise ValueError("not a MessagePack-RPC response: %r" % (msg,))
        return msg[1], msg[2], msg[3]

    def call(self, method, *params):
        """One request: returns its result or raises PerceptrondError."""
        msgid = self.send(method, *params)
        self.flush()
        while True:
            got, error, result = self.recv()
            if got == msgid:
                break
        if error is not None:
            raise PerceptrondError(error.get("code"), error.get("message"))
        return result

    # -- methods ------------------------------------------------------------
    def predict(self, model, features):
        return self.call("predict", model, features)

    def label(self, model, features, label):
        return self.call("label", model, features, label)

    def predict_batch(self, model, examples):
        return self.call("predict_batch", model, list(examples))

    def label_batch(self, model, pairs):
        return self.call("label_batch", model, [[f, y] for f, y in pairs])

    def models(self):
        return self.call("models")

    def info(self, model):
        return self.call("info", model)

    def weights(self, model, cls=None, top_k=20):
        return self.call("weights", model, cls, top_k)

    def create(self, name, **spec):
        return self.call("create", name, spec) if spec else self.call("create", name)

    def drop(self, model):
        return self.call("drop", model)

    def reset(self, model):
        return self.call("reset", model)

    def save(self):
        return self.call("save")

    def stats(self):
        return self.call("stats")

    def ping(self):
        return self.call("ping")

    def auth(self, token):
        """This connection's rights become the token's: {"name", "rights"}."""
        return self.call("auth", token)
