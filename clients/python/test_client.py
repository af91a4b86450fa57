"""Tests of the Python client against the real daemon ($PERCEPTROND)."""
import math
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perceptrond_client import Client, PerceptrondError, Pool, explanation_total  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, extra="", tcp=None):
        self.dir = tempfile.mkdtemp(prefix="pcd-py-")
        self.sock = os.path.join(self.dir, "pcd.sock")
        self.port = free_port()
        self.config = os.path.join(self.dir, "perceptrond.yaml")
        with open(self.config, "w") as f:
            # the plain perceptron as the template (the default template
            # averages and prepares features), unless the test gives one
            plain = "" if "template:" in extra else \
                "template: {rule: perceptron, averaged: false, scale: none, transforms: []}\n"
            f.write('listen:\n  tcp: [%s]\n  unix: ["%s"]\nstate_dir: %s/state\n%s\n%s'
                    % (", ".join(tcp or ['"127.0.0.1:%d"' % self.port]), self.sock, self.dir, extra,
                       plain))
        self.start()

    def start(self):
        self.log = open(os.path.join(self.dir, "daemon.log"), "a")
        self.proc = subprocess.Popen([os.environ["PERCEPTROND"], "--config", self.config],
                                     stderr=self.log, stdout=self.log)
        for _ in range(500):
            if os.path.exists(self.sock):
                try:
                    Client("unix:" + self.sock).close()
                    return
                except OSError:
                    pass
            if self.proc.poll() is not None:
                raise RuntimeError("perceptrond exited: see %s" % self.log.name)
            time.sleep(0.01)
        raise RuntimeError("perceptrond did not start")

    def stop(self, remove=True):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=20)
        self.log.close()
        if remove:
            shutil.rmtree(self.dir)
        return rc


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()

    @classmethod
    def tearDownClass(cls):
        assert cls.daemon.stop() == 0

    def test_binary_model_over_unix_and_tcp(self):
        with Client("unix:" + self.daemon.sock) as c, \
                Client("tcp:127.0.0.1:%d" % self.daemon.port) as t:
            c.create("py-bin", rule="pa1", hash_bits=16, params={"C": 0.5})
            r = c.label("py-bin", {"good": 1.0, "nice": 1.0}, 1)
            self.assertEqual(set(r), {"predicted", "score", "mistake", "updated", "position"})
            c.label("py-bin", {"bad": 1.0, "awful": 1.0}, -1)
            self.assertEqual(t.predict("py-bin", {"good": 1.0})["label"], 1)
            self.assertEqual(t.predict("py-bin", {"awful": 1.0})["label"], -1)
            # the calibrated probability of the label 1 comes with every prediction
            p = t.predict("py-bin", {"good": 1.0})
            self.assertEqual(set(p), {"label", "score", "probability"})
            self.assertTrue(0.0 < p["probability"] < 1.0)
            info = t.info("py-bin")
            self.assertEqual(info["rule"], "pa1")
            self.assertEqual(info["examples"], 2)
            self.assertEqual(info["params"]["C"], 0.5)
            top = t.weights("py-bin", None, 4)
            self.assertEqual({w["feature"] for w in top}, {"good", "nice", "bad", "awful"})

    def test_multiclass_and_batches(self):
        with Client("unix:" + self.daemon.sock) as c:
            c.create("py-multi", rule="perceptron", dim=4, open_classes=True)
            data = [([1, 0, 0, 0], "a"), ([0, 1, 0, 0], "b"), ([0, 0, 1, 0], "c")]
            for _ in range(3):
                r = c.label_batch("py-multi", data)
                self.assertEqual(r["examples"], 3)
            preds = c.predict_batch("py-multi", [x for x, _ in data])
            self.assertEqual([p["label"] for p in preds], ["a", "b", "c"])
            self.assertEqual(sorted(preds[0]["scores"]), ["a", "b", "c"])
            self.assertEqual(sorted(preds[0]["probabilities"]), ["a", "b", "c"])
            self.assertAlmostEqual(sum(preds[0]["probabilities"].values()), 1.0, places=12)

    def test_pipelining_and_notifications(self):
        with Client("unix:" + self.daemon.sock) as c:
            c.create("py-pipe", dim=8)
            ids = [c.send("label", "py-pipe", [i % 3, 1.0], 1 if i % 3 else -1) for i in range(2000)]
            for i in range(500):
                c.notify("label", "py-pipe", [i % 3, 1.0], 1 if i % 3 else -1)
            c.flush()
            got = [c.recv()[0] for _ in ids]
            self.assertEqual(got, ids)
            self.assertEqual(c.ping(), "pong")
            self.assertEqual(c.info("py-pipe")["examples"], 2500)

    def test_errors_are_raised_with_codes(self):
        with Client("unix:" + self.daemon.sock) as c:
            with self.assertRaises(PerceptrondError) as e:
                c.predict("no-such-model", {"x": 1})
            self.assertEqual(e.exception.code, 5)
            with self.assertRaises(PerceptrondError) as e:
                c.label("py-err", {"x": math.nan}, 1)
            self.assertEqual(e.exception.code, 6)
            with self.assertRaises(PerceptrondError) as e:
                c.call("no_such_method")
            self.assertEqual(e.exception.code, 3)
            self.assertEqual(c.ping(), "pong")

    def test_admin(self):
        with Client(self.daemon.sock) as c:
            c.create("py-admin", rule="mcp", dim=2)
            self.assertIn("py-admin", c.models())
            c.label("py-admin", [1.0, 2.0], 1)
            self.assertGreaterEqual(c.save()["written"], 1)
            c.reset("py-admin")
            self.assertEqual(c.info("py-admin")["examples"], 0)
            self.assertEqual(c.drop("py-admin")["dropped"], "py-admin")
            self.assertNotIn("py-admin", c.models())
            self.assertGreaterEqual(c.stats()["requests"], 1)


    def test_label_later(self):
        with Client(self.daemon.sock) as c:
            c.create("py-later", {"rule": "pa", "hash_bits": 8, "join.ttl": 60})
            served = c.predict("py-later", {"a": 1.0, "b": 0.5}, event="req-1")["label"]
            c.predict("py-later", [0.0, 1.0], event=2)
            r = c.label_event("py-later", "req-1", -1)
            self.assertEqual(r["served"], served)
            self.assertEqual(r["mistake"], served != -1)
            self.assertGreaterEqual(r["delay"], 0)
            with self.assertRaises(PerceptrondError) as e:
                c.label_event("py-later", "req-1", 1)
            self.assertEqual(e.exception.code, 17)
            with self.assertRaises(PerceptrondError) as e:
                c.label_event("py-later", "nope", 1)
            self.assertEqual(e.exception.code, 15)
            c.label_event("py-later", 2, None)  # forgotten
            j = c.info("py-later")["join"]
            self.assertEqual((j["events"], j["joined"], j["forgotten"], j["pending"]), (2, 1, 1, 0))
            self.assertEqual(c.info("py-later")["examples"], 1)

    def test_explanations_add_up_to_the_score(self):
        with Client(self.daemon.sock) as c:
            c.create("py-explain", {"rule": "pa1", "hash_bits": 12, "scale": "max",
                                    "join.ttl": 60})
            for i in range(40):
                c.label("py-explain", {"age": 20 + i, "income": 1000.0 * (i % 7),
                                       "city=paris": 1.0}, 1 if i % 3 else -1)
            x = {"age": 33, "income": 4000.0, "city=paris": 1.0, "new": 2.0}
            p = c.predict("py-explain", x, explain=2)
            e = p["explain"]
            self.assertEqual(e["score"], p["score"])
            self.assertEqual(len(e["features"]), 2)
            self.assertEqual(e["others"], 2)
            self.assertEqual(explanation_total(e), p["score"])
            for part in e["features"]:
                self.assertIn(part["feature"], x)
                self.assertEqual(part["value"], x[part["feature"]])
                self.assertEqual(part["contribution"], part["weight"] * part["scaled"])
            [b] = c.predict_batch("py-explain", [x], explain=2)
            self.assertEqual(b["explain"], e)
            # label later: the outcome's answer explains the score it learned from
            c.predict("py-explain", x, event="e1")
            r = c.label_event("py-explain", "e1", 1, explain=3)
            self.assertEqual(r["explain"]["score"], r["score"])
            self.assertEqual(explanation_total(r["explain"]), r["score"])
            with self.assertRaises(PerceptrondError) as err:
                c.predict("py-explain", x, explain=1000)
            self.assertEqual(err.exception.code, 4)
            self.assertIn("'explain'", str(err.exception))

    def test_read_your_writes_sends_the_last_position(self):
        with Client(self.daemon.sock, read_your_writes=True) as c, Client(self.daemon.sock) as plain:
            created = c.create("py-ryw", dim=8)
            self.assertEqual(c.positions, {"py-ryw": created["position"]})
            r = c.label("py-ryw", [1.0, 0, 0], 1)
            self.assertGreater(int(r["position"]), int(created["position"]))
            self.assertEqual(c.positions["py-ryw"], r["position"])
            c.label_many("py-ryw", [([0, 1.0], -1)] * 10, window=4)
            b = c.label_batch("py-ryw", [([1.0], 1), ([0, 1.0], -1)])
            self.assertEqual(c.positions["py-ryw"], b["position"])
            # what goes on the wire: predict and predict_batch with {"after": last}
            sent = []
            call = c.call
            c.call = lambda method, *params: sent.append((method, params)) or call(method, *params)
            self.assertEqual(c.predict("py-ryw", [1.0])["label"], 1)
            self.assertEqual(len(c.predict_batch("py-ryw", [[1.0], [0, 1.0]])), 2)
            c.call = call
            self.assertEqual([p[-1] for _, p in sent], [{"after": b["position"]}] * 2)
            # a position no write of this daemon had: refused, naming the option
            with self.assertRaises(PerceptrondError) as e:
                plain.call("predict", "py-ryw", [1.0], {"after": str(10 ** 12)})
            self.assertEqual(e.exception.code, 4)
            self.assertIn("'after'", str(e.exception))
            # a model of its own per position; reads of other models wait for nothing
            c.create("py-ryw2", dim=8)
            self.assertNotEqual(c.positions["py-ryw2"], c.positions["py-ryw"])
            self.assertNotIn("py-ryw3", c.positions)
            # off: nothing kept, nothing sent
            self.assertEqual(plain.positions, {})

    def test_label_many_is_pipelined_and_ordered(self):
        with Client(self.daemon.sock) as c:
            c.create("py-many", dim=4)
            pairs = [([1.0, i % 2, 0, 0], 1 if i % 2 else -1) for i in range(1500)]
            out = c.label_many("py-many", pairs, window=256)
            self.assertEqual(len(out), 1500)
            self.assertTrue(all(set(r) == {"predicted", "score", "mistake", "updated", "position"}
                                for r in out))
            # the journal's LSNs, one record per label, in order
            self.assertEqual([int(r["position"]) for r in out],
                             list(range(int(out[0]["position"]), int(out[0]["position"]) + 1500)))
            self.assertEqual(c.info("py-many")["examples"], 1500)
            bad = [([1.0], 1), ([1.0], "x"), ([0.5], -1)]  # the second is refused
            with self.assertRaises(PerceptrondError) as e:
                c.label_many("py-many", bad)
            self.assertEqual(e.exception.code, 7)
            self.assertEqual(c.info("py-many")["examples"], 1502)  # the others were learned
            self.assertEqual(c.ping(), "pong")  # and the stream is in step

    def test_pool_is_safe_across_threads(self):
        import threading
        with Client(self.daemon.sock) as c:
            c.create("py-pool", dim=4)
        errors = []
        with Pool(self.daemon.sock, size=3) as pool:
            def work(t):
                try:
                    for i in range(100):
                        pool.label("py-pool", [1.0, t, i % 2, 0], 1 if i % 2 else -1)
                        pool.predict("py-pool", [1.0, t, 0, 0])
                        if i % 25 == 0:
                            with pool.client() as pc:  # several calls on one connection
                                ids = [pc.send("ping") for _ in range(5)]
                                pc.flush()
                                self.assertEqual([pc.recv()[0] for _ in ids], ids)
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)
            threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            self.assertEqual(pool.info("py-pool")["examples"], 800)


class ReconnectTest(unittest.TestCase):
    def test_after_an_idle_close(self):
        d = Daemon("limits: {idle_timeout: 1}")
        try:
            with Client(d.sock) as c:
                c.create("py-idle", dim=2)
                time.sleep(1.6)  # the daemon closes the idle connection
                c.label("py-idle", [1.0, 0.0], 1)  # a write: sent on a new connection
                time.sleep(1.6)
                self.assertEqual(c.info("py-idle")["examples"], 1)
        finally:
            self.assertEqual(d.stop(), 0)

    def test_after_a_restart(self):
        d = Daemon()
        try:
            with Client(d.sock) as c, Client(d.sock, reconnect=False) as plain:
                c.create("py-restart", dim=2)
                c.label("py-restart", [1.0, 0.0], 1)
                d.stop(remove=False)
                d.start()
                self.assertEqual(c.info("py-restart")["examples"], 1)
                c.label("py-restart", [0.0, 1.0], -1)
                self.assertEqual(c.info("py-restart")["examples"], 2)
                with self.assertRaises((ConnectionError, OSError)):
                    plain.ping()  # without reconnect the old connection is gone
        finally:
            self.assertEqual(d.stop(), 0)


class InstallTest(unittest.TestCase):
    def test_pip_install_works_offline(self):
        """pip install ./clients/python with no index: the in-tree backend needs nothing."""
        venv = tempfile.mkdtemp(prefix="pcd-venv-")
        try:
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True)
            pip = os.path.join(venv, "bin", "pip")
            here = os.path.dirname(os.path.abspath(__file__))
            r = subprocess.run([pip, "install", "--no-index", "--no-cache-dir", here],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            code = ("import os, perceptrond_client as p; "
                    "d = os.path.dirname(p.__file__); "
                    "assert 'site-packages' in d, d; "
                    "assert os.path.exists(os.path.join(d, 'py.typed')); "
                    "print(p.__version__, p.Pool.__name__)")
            r = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], cwd=venv,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), ["0.1.0", "Pool"])
        finally:
            shutil.rmtree(venv)


class AccessTest(unittest.TestCase):
    """Tokens and TLS: a daemon with a TLS listener of no rights and a tokens file."""

    TOKEN = "py-admin-token-0123456789"

    @classmethod
    def setUpClass(cls):
        d = tempfile.mkdtemp(prefix="pcd-py-tls-")
        cls.tmp = d
        run = lambda *a: subprocess.run(a, cwd=d, check=True, capture_output=True)
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=py-ca")
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost")
        with open(os.path.join(d, "ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        run("openssl", "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext")
        tokens = os.path.join(d, "tokens")
        with open(tokens, "w") as f:
            f.write("py admin %s\n" % cls.TOKEN)
        os.chmod(tokens, 0o600)
        cls.tls_port = free_port()
        cls.daemon = Daemon(
            'auth: {tokens_file: "%s"}\n' % tokens, tcp=[
                '{address: "127.0.0.1:%d", rights: none, tls: {cert: "%s/srv.pem", key: "%s/srv.key"}}'
                % (cls.tls_port, d, d)])
        cls.ca = os.path.join(d, "ca.pem")

    @classmethod
    def tearDownClass(cls):
        assert cls.daemon.stop() == 0
        shutil.rmtree(cls.tmp)

    def test_a_token_over_tls(self):
        addr = "tls:127.0.0.1:%d" % self.tls_port
        with Client(addr, tls_ca=self.ca) as c:
            self.assertEqual(c.ping(), "pong")
            with self.assertRaises(PerceptrondError) as e:
                c.models()
            self.assertEqual(e.exception.code, 13)
        with Client(addr, tls_ca=self.ca, token=self.TOKEN) as c:
            c.create("py-tls", dim=4)
            self.assertIn("py-tls", c.models())
            self.assertEqual(c.drop("py-tls")["dropped"], "py-tls")
        os.environ["PERCEPTROND_TOKEN"] = "py-wrong-token-0123456789"
        try:
            with self.assertRaises(PerceptrondError) as e:
                Client(addr, tls_ca=self.ca)
            self.assertEqual(e.exception.code, 14)
        finally:
            del os.environ["PERCEPTROND_TOKEN"]
        with self.assertRaises(ssl.SSLError):
            Client(addr)  # the system's CAs do not know this one


if __name__ == "__main__":
    unittest.main()
