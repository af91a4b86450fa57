"""workload.py - the crash-state harness's client: writes of every kind, each logged.

Creates models, labels (pipelined windows), predicts with an event and labels
it later, saves (snapshots), drops models; every write is numbered, and its
sending (SEND) and its answer (ACK, with the error code or 0) are appended to
the trace the daemon's shim writes, so the checker knows, at any crash point,
which writes were sent and which were acknowledged, and when.  A refused write
(e.g. code 11 while the journal is failing) or a connection the daemon closed
is logged and the run goes on, on a new connection."""
import random
import time

from crashtrace import ACK, SEND

RULES = ("pa", "perceptron", "pa1", "romma", "alma")
DIM = 8


class Op:
    __slots__ = ("kind", "model", "send", "ack", "err", "ack_t")

    def __init__(self, kind, model):
        self.kind, self.model = kind, model
        self.send = self.ack = None  # trace indices are found by the checker
        self.err = None


class Workload:
    def __init__(self, client_factory, writer, seed):
        self.connect = client_factory
        self.c = client_factory()
        self.w = writer
        self.rng = random.Random(seed)
        self.ops = []          # op id -> Op
        self.live = []         # models whose create was acknowledged and not dropped
        self.pending = []      # (model, event) predicted with an event, acknowledged
        self.nmodels = 0
        self.nevents = 0
        self.refused = 0       # answers with an error
        self.dropped_conns = 0

    def _new(self, kind, model):
        self.ops.append(Op(kind, model))
        return len(self.ops) - 1

    def _batch(self, reqs):
        """Sends [(op id, method, params)] pipelined; logs SEND and each ACK.
        Returns {op id: result} of those acknowledged."""
        if not reqs:
            return {}
        ids = {}
        for op, method, params in reqs:
            ids[self.c.send(method, *params)] = op
        self.w.put(SEND, reqs[0][0], len(reqs))
        got = {}
        try:
            self.c.flush()
            for _ in reqs:
                msgid, error, result = self.c.recv()
                op = ids.get(msgid)
                if op is None:
                    continue
                code = error.get("code", -1) if error else 0
                self.w.put(ACK, op, 0, code)
                self.ops[op].err = code
                if code:
                    self.refused += 1
                else:
                    got[op] = result
        except (ConnectionError, OSError):
            self.dropped_conns += 1
            try:
                self.c.close()
            except OSError:
                pass
            time.sleep(0.05)
            self.c = self.connect()
        return got

    def _x(self):
        return [round(self.rng.uniform(-1, 1), 3) for _ in range(DIM)]

    def create(self):
        name = "m%d" % self.nmodels
        self.nmodels += 1
        spec = {"rule": self.rng.choice(RULES), "dim": DIM, "join.ttl": 3600}
        if self.rng.random() < 0.3:
            spec["challengers"] = [{"rule": "pa"}]
        op = self._new("create", name)
        if self._batch([(op, "create", (name, spec))]):
            self.live.append(name)

    def labels(self):
        m = self.rng.choice(self.live)
        n = self.rng.choice((1, 1, 2, 8, 32, 64))
        reqs = []
        for _ in range(n):
            x = self._x()
            y = 1 if sum(x[:3]) - x[4] > 0 else -1
            reqs.append((self._new("label", m), "label", (m, x, y)))
        self._batch(reqs)

    def predict_event(self):
        m = self.rng.choice(self.live)
        ev = "e%d" % self.nevents
        self.nevents += 1
        op = self._new("event", m)
        if self._batch([(op, "predict", (m, self._x(), {"event": ev}))]):
            self.pending.append((m, ev))

    def label_event(self):
        m, ev = self.pending.pop(self.rng.randrange(len(self.pending)))
        if m in self.live:
            op = self._new("join", m)
            self._batch([(op, "label_event", (m, ev, self.rng.choice((1, -1))))])

    def drop(self):
        m = self.live.pop(self.rng.randrange(len(self.live)))
        op = self._new("drop", m)
        self._batch([(op, "drop", (m,))])

    def save(self):
        op = self._new("save", None)
        self._batch([(op, "save", ())])

    def run(self, seconds, max_models=8):
        end = time.monotonic() + seconds
        for _ in range(3):
            self.create()
        while time.monotonic() < end:
            r = self.rng.random()
            if not self.live or (r < 0.03 and len(self.live) < max_models):
                self.create()
            elif r < 0.05 and len(self.live) > 2:
                self.drop()
            elif r < 0.08:
                self.save()
            elif r < 0.20:
                self.predict_event()
            elif r < 0.30 and self.pending:
                self.label_event()
            else:
                self.labels()
        self.c.close()
