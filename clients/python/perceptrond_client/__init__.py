"""perceptrond_client - a Python client for perceptrond (MessagePack-RPC).

Depends only on msgpack (Debian: python3-msgpack).  Install with
``pip install ./clients/python`` (no network needed).

One ``Client`` is one connection, for one thread at a time; a ``Pool`` hands
connections to many threads.  Requests may be pipelined with send()/recv(), or
made one at a time with the method helpers, which raise PerceptrondError on an
error response.  A connection the daemon closed while it was idle, or lost to
a restart, is opened again before the next request; a request that was in
flight when the connection broke is retried only when it changes nothing
(predict without an event, info, ...): a write may have been applied, so its
ConnectionError is raised for the caller to decide.

    from perceptrond_client import Client
    with Client("unix:perceptrond.sock") as c:
        c.label("spam", {"viagra": 1.0, "hello": 0.5}, 1)
        print(c.predict("spam", {"viagra": 1.0}))
        c.predict("ads", {"ad=42": 1}, event="req-1")   # label later
        c.label_event("ads", "req-1", 1)

Read your writes across replicas: Client(..., read_your_writes=True) keeps
the "position" of each write's answer per model and sends the last one as
predict's and predict_batch's {"after": POSITION}, so a prediction, from any
replica, comes after the client's own writes (docs/scale-out.md); a replica
that cannot apply it within its limits.after_wait_ms answers code 18.

A token (docs/security.md) is sent with `auth` on connecting (and on every
reconnection): token=..., or $PERCEPTROND_TOKEN / $PERCEPTROND_TOKEN_FILE.
"tls:HOST:PORT" speaks TLS (Python's ssl), checking the daemon's certificate
against tls_ca (a PEM file; default $PERCEPTROND_TLS_CA, else the system's
CAs); tls_cert/tls_key give a client certificate.
"""
import contextlib
import os
import queue
import select
import socket
import ssl
import threading
from typing import (Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

import msgpack

__all__ = ["Client", "Pool", "PerceptrondError", "DEFAULT_ADDRESS", "Features", "Label",
           "EventId", "explanation_total"]
__version__ = "0.1.0"

DEFAULT_ADDRESS = "unix:perceptrond.sock"

#: A feature map {name or index: value}, pairs [[name or index, value], ...] or a dense list.
Features = Union[Mapping[Union[str, int], float], Sequence[Sequence[Union[str, int, float]]],
                 Sequence[float]]
#: 1 / -1 (or True / False) for binary models, a class name for multiclass ones.
Label = Union[int, bool, str]
#: An event ID for label later: an integer or a string of 1 to 128 bytes.
EventId = Union[int, str]

# Methods that change nothing: safe to send again when the connection broke
# before their answer came.
_READS = frozenset(["predict", "predict_batch", "models", "info", "weights", "stats", "ping",
                    "compare"])
# Methods whose answer carries a position in their model's log (params[0]
# names the model); predict is one with an event.
_WRITES = frozenset(["label", "label_batch", "label_event", "predict", "create", "drop", "reset",
                     "promote", "import", "copy", "rollback"])


class PerceptrondError(Exception):
    """An error response: .code is the wire code (docs/protocol.md), .message the text."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__("error %s: %s" % (code, message))
        self.code = code
        self.message = message


def _env_token() -> Optional[str]:
    path = os.environ.get("PERCEPTROND_TOKEN_FILE")
    if path:
        with open(path) as f:
            return f.readline().strip() or None
    return os.environ.get("PERCEPTROND_TOKEN") or None


def _connect(address: str, timeout: Optional[float], tls_ca: Optional[str] = None,
             tls_cert: Optional[str] = None, tls_key: Optional[str] = None) -> socket.socket:
    if address.startswith("tls:"):
        host, _, port = address[4:].rpartition(":")
        host = host.strip("[]")
        ctx = ssl.create_default_context(cafile=tls_ca or os.environ.get("PERCEPTROND_TLS_CA"))
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        cert = tls_cert or os.environ.get("PERCEPTROND_TLS_CERT")
        if cert:
            ctx.load_cert_chain(cert, tls_key or os.environ.get("PERCEPTROND_TLS_KEY"))
        s = socket.create_connection((host, int(port)), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return ctx.wrap_socket(s, server_hostname=host)
    if address.startswith("unix:"):
        address = address[5:]
    elif address.startswith("tcp:"):
        address = address[4:]
    if "/" in address or ":" not in address:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(address)
        except BaseException:
            s.close()
            raise
        return s
    host, _, port = address.rpartition(":")
    s = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    return s


class Client:
    """A connection to perceptrond.  address: "unix:PATH", "tcp:HOST:PORT",
    "tls:HOST:PORT", a path, or "HOST:PORT".  timeout (seconds) bounds each
    socket operation; reconnect=False turns the reopening of a closed
    connection off.  token: sent with `auth` on every connection (None:
    $PERCEPTROND_TOKEN or $PERCEPTROND_TOKEN_FILE, if set); a refused token
    raises PerceptrondError (code 14).  read_your_writes=True: every
    predict and predict_batch of a model waits for this client's last write
    to it ({"after": its position}, kept in positions)."""

    def __init__(self, address: str = DEFAULT_ADDRESS, timeout: Optional[float] = None,
                 reconnect: bool = True, token: Optional[str] = None,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None, read_your_writes: bool = False) -> None:
        self.address = address
        self.timeout = timeout
        self.reconnect = reconnect
        self._token = token or _env_token()
        self._tls = (tls_ca, tls_cert, tls_key)
        self._sock: Optional[socket.socket] = None
        self._next_id = 1
        self._out: List[bytes] = []
        self._queued = 0   # requests in _out (notifications have no answer)
        self._waiting = 0  # requests sent whose answers have not been read
        self.read_your_writes = read_your_writes
        #: model -> the position of the last write answered (read_your_writes)
        self.positions: Dict[str, str] = {}
        self._sent: Dict[int, str] = {}  # msgid -> model, of writes awaiting their answer
        self._open()

    def _open(self) -> None:
        self._sock = _connect(self.address, self.timeout, *self._tls)
        self._unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        self._waiting = 0
        self._sent = {}  # answers lost with the old connection record nothing
        if self._token:
            try:
                self._call("auth", (self._token,))
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _closed_by_peer(self) -> bool:
        """True when the daemon closed this idle connection (EOF or an error
        is waiting and no answer is due)."""
        if self._sock is None:
            return True
        if self._waiting:
            return False
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
            if not readable:
                return False
            # the TCP stream itself: a TLS socket takes no flags (its peer's
            # close_notify reads as data here, and is found on the next use)
            return socket.socket.recv(self._sock, 1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _ensure_open(self) -> None:
        if self.reconnect and self._closed_by_peer():
            self.close()
            self._open()

    # -- pipelining ---------------------------------------------------------
    def send(self, method: str, *params: Any) -> int:
        """Queues a request; returns its msgid.  flush() sends the queue."""
        msgid = self._next_id
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF
        if self.read_your_writes and method in _WRITES and params and isinstance(params[0], str):
            self._sent[msgid] = params[0]
        self._out.append(msgpack.packb([0, msgid, method, list(params)], use_bin_type=True))
        self._queued += 1
        return msgid

    def notify(self, method: str, *params: Any) -> None:
        """Queues a notification (no response, errors are dropped)."""
        self._out.append(msgpack.packb([2, method, list(params)], use_bin_type=True))

    def flush(self) -> None:
        """Sends what send() and notify() queued (reopening a connection the
        daemon closed while idle first)."""
        if not self._out:
            return
        self._ensure_open()
        if self._sock is None:
            raise ConnectionError("the connection is closed")
        data = b"".join(self._out)
        self._out = []
        self._waiting += self._queued
        self._queued = 0
        self._sock.sendall(data)

    def recv(self) -> Tuple[int, Optional[Dict[str, Any]], Any]:
        """The next response as (msgid, error, result); error is None or a dict."""
        for msg in self._unpacker:
            return self._response(msg)
        if self._sock is None:
            raise ConnectionError("the connection is closed")
        while True:
            data = self._sock.recv(65536)
            if not data:
                self.close()
                raise ConnectionError("perceptrond closed the connection")
            self._unpacker.feed(data)
            for msg in self._unpacker:
                return self._response(msg)

    def _response(self, msg: Any) -> Tuple[int, Optional[Dict[str, Any]], Any]:
        if not isinstance(msg, list) or len(msg) != 4 or msg[0] != 1:
            raise ValueError("not a MessagePack-RPC response: %r" % (msg,))
        self._waiting = max(0, self._waiting - 1)
        model = self._sent.pop(msg[1], None) if self._sent else None
        if model is not None and isinstance(msg[3], dict) and msg[3].get("position") is not None:
            self.positions[model] = msg[3]["position"]
        return msg[1], msg[2], msg[3]

    def call(self, method: str, *params: Any) -> Any:
        """One request: returns its result or raises PerceptrondError.  When
        the connection breaks before the answer, a read is sent once more on
        a new connection; anything else raises ConnectionError."""
        try:
            return self._call(method, params)
        except (ConnectionError, OSError):
            self.close()
            retry = method in _READS and not (method == "predict" and len(params) > 2 and
                                              isinstance(params[2], dict) and "event" in params[2])
            if not (self.reconnect and retry):
                raise
            self._open()
            return self._call(method, params)

    def _call(self, method: str, params: Sequence[Any]) -> Any:
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
    def predict(self, model: str, features: Features, event: Optional[EventId] = None,
                explain: int = 0) -> Any:
        """{label, score, scores?}.  With event, the daemon remembers the
        example and the prediction for label_event (docs/label-later.md).
        With explain=K the answer has "explain": the K largest contributions
        of the features to the score, the bias and the rest, which add up to
        the score (docs/protocol.md, "Explanations"; explanation_total).
        With read_your_writes, {"after": ...} waits for this client's last
        write to the model."""
        opts: Dict[str, Any] = {}
        if event is not None:
            opts["event"] = event
        if explain:
            opts["explain"] = explain
        after = self._after(model)
        if after is not None:
            opts["after"] = after
        if not opts:
            return self.call("predict", model, features)
        return self.call("predict", model, features, opts)

    def label(self, model: str, features: Features, label: Label) -> Any:
        return self.call("label", model, features, label)

    def label_event(self, model: str, event: EventId, label: Optional[Label],
                    explain: int = 0) -> Any:
        """Learns the example remembered under event with label (None:
        forget it): {served, predicted, score, mistake, updated, delay}, and
        with explain=K the score taken apart, as predict's."""
        if explain:
            return self.call("label_event", model, event, label, {"explain": explain})
        return self.call("label_event", model, event, label)

    def label_many(self, model: str, pairs: Iterable[Tuple[Features, Label]],
                   window: int = 512) -> List[Any]:
        """Labels every (features, label) pair, pipelined window requests at a
        time; returns their results in order.  Raises PerceptrondError for the
        first error once every answer of its window was read."""
        out: List[Any] = []
        it = iter(pairs)
        while True:
            ids = [self.send("label", model, f, y) for f, y in _take(it, window)]
            if not ids:
                return out
            self.flush()
            first: Optional[Dict[str, Any]] = None
            answers: Dict[int, Any] = {}
            while len(answers) < len(ids):
                msgid, error, result = self.recv()
                answers[msgid] = result
                if error is not None and first is None:
                    first = error
            if first is not None:
                raise PerceptrondError(first.get("code"), first.get("message"))
            out.extend(answers[i] for i in ids)

    def predict_batch(self, model: str, examples: Iterable[Features], explain: int = 0) -> List[Any]:
        opts: Dict[str, Any] = {}
        if explain:
            opts["explain"] = explain
        after = self._after(model)
        if after is not None:
            opts["after"] = after
        if opts:
            return self.call("predict_batch", model, list(examples), opts)
        return self.call("predict_batch", model, list(examples))

    def _after(self, model: str) -> Optional[str]:
        """The position a read of model waits for (read_your_writes), or None."""
        return self.positions.get(model) if self.read_your_writes else None

    def label_batch(self, model: str, pairs: Iterable[Tuple[Features, Label]]) -> Any:
        return self.call("label_batch", model, [[f, y] for f, y in pairs])

    def models(self) -> List[str]:
        return self.call("models")

    def info(self, model: str) -> Dict[str, Any]:
        return self.call("info", model)

    def compare(self, model: str) -> Dict[str, Any]:
        """The model and its challengers side by side, with McNemar's test."""
        return self.call("compare", model)

    def promote(self, model: str, challenger: int) -> Any:
        return self.call("promote", model, challenger)

    def weights(self, model: str, cls: Optional[str] = None, top_k: int = 20) -> List[Any]:
        return self.call("weights", model, cls, top_k)

    def create(self, name: str, spec: Optional[Mapping[str, Any]] = None, **keys: Any) -> Any:
        """create(name, {"rule": "pa", "join.ttl": 60}) or create(name, rule="pa")."""
        full = dict(spec or {}, **keys)
        return self.call("create", name, full) if full else self.call("create", name)

    def drop(self, model: str) -> Any:
        return self.call("drop", model)

    def reset(self, model: str) -> Any:
        return self.call("reset", model)

    def save(self) -> Any:
        return self.call("save")

    def stats(self) -> Dict[str, Any]:
        return self.call("stats")

    def ping(self) -> str:
        return self.call("ping")

    def auth(self, token: str) -> Dict[str, Any]:
        """This connection's rights become the token's: {"name", "rights"};
        the token is sent again on every reconnection."""
        r = self.call("auth", token)
        self._token = token
        return r


def explanation_total(explanation: Mapping[str, Any]) -> float:
    """bias + each contribution in the order answered + rest: the score the
    explanation takes apart (bit for bit but where the listed parts cancel
    far beyond it; docs/protocol.md, "Explanations")."""
    total = explanation["bias"]
    for part in explanation["features"]:
        total += part["contribution"]
    return total + explanation["rest"]


def _take(it: Iterator[Any], n: int) -> List[Any]:
    out = []
    for x in it:
        out.append(x)
        if len(out) == n:
            break
    return out


class Pool:
    """Connections shared by threads: each call takes one connection, so
    calls from many threads run side by side, at most size connections.

        pool = Pool("unix:perceptrond.sock", size=8)
        pool.label("spam", {"hello": 1}, -1)        # from any thread
        with pool.client() as c:                    # several calls on one connection
            c.predict("ads", x, event=rid)
    """

    def __init__(self, address: str = DEFAULT_ADDRESS, size: int = 8,
                 timeout: Optional[float] = None, **client_args: Any) -> None:
        """client_args (token, tls_ca, ...) go to every Client."""
        if size < 1:
            raise ValueError("a pool needs at least one connection")
        self.address = address
        self.timeout = timeout
        self._client_args = client_args
        self._free: "queue.LifoQueue[Optional[Client]]" = queue.LifoQueue()
        for _ in range(size):
            self._free.put(None)  # opened on first use
        self._lock = threading.Lock()
        self._all: List[Client] = []

    @contextlib.contextmanager
    def client(self) -> Iterator[Client]:
        """A connection for this thread until the with block ends."""
        c = self._free.get()
        try:
            if c is None:
                c = Client(self.address, self.timeout, **self._client_args)
                with self._lock:
                    self._all.append(c)
            yield c
        except PerceptrondError:
            raise  # an answer: the connection is fine
        except BaseException:
            if c is not None:  # its stream may hold unread answers: start afresh
                c.close()
                with self._lock:
                    self._all.remove(c)
                c = None
            raise
        finally:
            self._free.put(c)

    def close(self) -> None:
        with self._lock:
            for c in self._all:
                c.close()
            self._all = []

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def call(self, method: str, *params: Any) -> Any:
        with self.client() as c:
            return c.call(method, *params)

    def predict(self, model: str, features: Features, event: Optional[EventId] = None,
                explain: int = 0) -> Any:
        with self.client() as c:
            return c.predict(model, features, event, explain)

    def label(self, model: str, features: Features, label: Label) -> Any:
        with self.client() as c:
            return c.label(model, features, label)

    def label_event(self, model: str, event: EventId, label: Optional[Label],
                    explain: int = 0) -> Any:
        with self.client() as c:
            return c.label_event(model, event, label, explain)

    def label_many(self, model: str, pairs: Iterable[Tuple[Features, Label]],
                   window: int = 512) -> List[Any]:
        with self.client() as c:
            return c.label_many(model, pairs, window)

    def info(self, model: str) -> Dict[str, Any]:
        with self.client() as c:
            return c.info(model)

    def compare(self, model: str) -> Dict[str, Any]:
        with self.client() as c:
            return c.compare(model)
