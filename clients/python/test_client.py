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
from perceptrond_client import Client, PerceptrondError  # noqa: E402


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
            f.write('listen:\n  tcp: [%s]\n  unix: ["%s"]\nstate_dir: %s/state\n%s\n'
                    % (", ".join(tcp or ['"127.0.0.1:%d"' % self.port]), self.sock, self.dir, extra))
        self.log = open(os.path.join(self.dir, "daemon.log"), "w")
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

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=20)
        self.log.close()
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
            self.assertEqual(set(r), {"predicted", "score", "mistake", "updated"})
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
