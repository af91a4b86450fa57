"""systemd integration without systemd as PID 1.

- the unit files pass `systemd-analyze verify` with nothing on stderr and
  `systemd-analyze security --offline=yes` scores 2.0 or better;
- Type=notify: with a NOTIFY_SOCKET of our own the daemon sends READY=1 only
  once it answers, STATUS lines, WATCHDOG=1 pings at the WATCHDOG_USEC rate,
  and STOPPING=1 on SIGTERM; with the shared log, READY=1 only once it has
  caught up with Redis (a real redis-server started late);
- socket activation: under systemd-socket-activate the daemon serves the
  socket it is handed (and not the listeners of its config), with the rights
  of the config entry of its address, else its kind's default.

Needs $PERCEPTROND and $UNITS (the systemd/ directory)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import msgpack

BIN = os.environ["PERCEPTROND"]
REDIS = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
UNITS = os.environ["UNITS"]


def ping(path, method="ping", *params):
    if isinstance(path, tuple):
        s = socket.create_connection(path, timeout=5)
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(path)
    s.sendall(msgpack.packb([0, 7, method, list(params)]))
    u = msgpack.Unpacker(raw=False)
    while True:
        u.feed(s.recv(4096))
        for msg in u:
            s.close()
            return msg


class Units(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pcd-units-")
        for name in ("perceptrond.service", "perceptrond.socket"):
            with open(os.path.join(UNITS, name)) as f:
                text = f.read().replace("/usr/sbin/perceptrond", BIN)
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_verify_is_clean(self):
        # --man=no: the man pages are installed by `meson install`, not here.
        units = [os.path.join(self.dir, n) for n in ("perceptrond.socket", "perceptrond.service")]
        p = subprocess.run(["systemd-analyze", "verify", "--man=no"] + units,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.strip(), "")

    def test_security_score(self):
        p = subprocess.run(["systemd-analyze", "security", "--offline=yes",
                            os.path.join(self.dir, "perceptrond.service")],
                           capture_output=True, text=True)
        m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", p.stdout + p.stderr)
        self.assertIsNotNone(m, p.stdout + p.stderr)
        print("systemd-analyze security exposure:", m.group(1), file=sys.stderr)
        self.assertLessEqual(float(m.group(1)), 2.0)


class Notify(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pcd-notify-")
        self.sock = os.path.join(self.dir, "pcd.sock")
        self.config = os.path.join(self.dir, "c.yaml")
        with open(self.config, "w") as f:
            f.write('listen:\n  tcp: []\n  unix: ["%s"]\nstate_dir: %s/state\n' % (self.sock, self.dir))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_ready_status_watchdog_stopping(self):
        nsock = os.path.join(self.dir, "notify")
        n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        n.bind(nsock)
        n.settimeout(5)
        env = dict(os.environ, NOTIFY_SOCKET=nsock, WATCHDOG_USEC="200000")
        env.pop("WATCHDOG_PID", None)
        proc = subprocess.Popen([BIN, "--config", self.config], env=env,
                                stderr=subprocess.DEVNULL)
        try:
            first = n.recv(4096).decode()
            self.assertIn("READY=1", first)
            # READY means serving: the socket answers right away
            self.assertEqual(ping(self.sock)[3], "pong")
            seen = set()
            deadline = time.time() + 8
            while time.time() < deadline and not {"WATCHDOG=1", "STATUS"} <= seen:
                msg = n.recv(4096).decode()
                if "WATCHDOG=1" in msg:
                    seen.add("WATCHDOG=1")
                if "STATUS=" in msg:
                    seen.add("STATUS")
            self.assertEqual(seen, {"WATCHDOG=1", "STATUS"})
            proc.send_signal(signal.SIGTERM)
            stopping = False
            while not stopping:
                stopping = "STOPPING=1" in n.recv(4096).decode()
            self.assertEqual(proc.wait(timeout=10), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
            n.close()

    @unittest.skipUnless(REDIS, "redis-server is not installed")
    def test_ready_waits_for_the_shared_log(self):
        # Reads are refused until the daemon has caught up with the log; so is
        # READY=1, or `systemctl start` would return before it serves.
        rsock = os.path.join(self.dir, "redis.sock")
        with open(self.config, "a") as f:
            f.write('log: {backend: redis, address: "unix:%s"}\n'
                    'template: {rule: pa, dim: 8}\nauto_create: true\n' % rsock)
        nsock = os.path.join(self.dir, "notify")
        n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        n.bind(nsock)
        n.settimeout(0.2)
        env = dict(os.environ, NOTIFY_SOCKET=nsock)
        env.pop("WATCHDOG_USEC", None)
        proc = subprocess.Popen([BIN, "--config", self.config], env=env,
                                stderr=subprocess.DEVNULL)
        redis = None

        def notes(seconds, until=None):
            got, end = [], time.time() + seconds
            while time.time() < end:
                try:
                    got.append(n.recv(4096).decode())
                except socket.timeout:
                    continue
                if until and until in got[-1]:
                    break
            return got

        try:
            for _ in range(500):  # listening, but Redis is not there
                if os.path.exists(self.sock):
                    break
                time.sleep(0.01)
            self.assertEqual(ping(self.sock)[3], "pong")
            early = notes(2.0)
            self.assertFalse([m for m in early if "READY=1" in m], early)
            self.assertTrue([m for m in early if "STATUS=not ready" in m or
                             "STATUS=catching up" in m], early)
            busy = ping(self.sock, "predict", "m", {"a": 1.0})
            self.assertEqual(busy[2]["code"], 12, busy)  # busy: catching up
            redis = subprocess.Popen([REDIS, "--port", "0", "--unixsocket", rsock, "--dir", self.dir,
                                      "--save", "", "--appendonly", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            late = notes(20.0, until="READY=1")
            self.assertTrue(late and "READY=1" in late[-1], late)
            self.assertIsNone(ping(self.sock, "label", "m", {"a": 1.0}, 1)[2])
            self.assertIsNone(ping(self.sock, "predict", "m", {"a": 1.0})[2])
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=10), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
            if redis:
                redis.kill()
                redis.wait()
            n.close()

    def test_socket_activation(self):
        act = os.path.join(self.dir, "activated.sock")
        proc = subprocess.Popen(["systemd-socket-activate", "-l", act, BIN, "--config", self.config],
                                stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(act):
                    break
                time.sleep(0.01)
            self.assertEqual(ping(act)[3], "pong")
            self.assertFalse(os.path.exists(self.sock), "config listeners must be ignored")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)

    def test_passed_sockets_take_their_entry_rights(self):
        act = os.path.join(self.dir, "activated.sock")
        with socket.socket() as f:
            f.bind(("127.0.0.1", 0))
            port = f.getsockname()[1]
        with open(self.config, "w") as f:
            f.write('listen:\n  tcp: [{address: "127.0.0.1:%d", rights: read}]\n'
                    '  unix: ["%s"]\nstate_dir: %s/state\n' % (port, self.sock, self.dir))
        log = os.path.join(self.dir, "log")
        with open(log, "w") as lf:
            proc = subprocess.Popen(["systemd-socket-activate", "-l", act, "-l",
                                     "127.0.0.1:%d" % port, BIN, "--config", self.config],
                                    stderr=lf, stdout=lf)
        try:
            for _ in range(200):
                if os.path.exists(act):
                    break
                time.sleep(0.01)
            # the Unix socket no entry names: unix_rights (admin)
            self.assertEqual(ping(act, "create", "m")[2], None)
            # the TCP socket: its entry's read
            tcp = ("127.0.0.1", port)
            self.assertEqual(ping(tcp, "models")[3], ["m"])
            self.assertEqual(ping(tcp, "drop", "m")[2]["code"], 13)
            self.assertEqual(ping(act, "drop", "m")[2], None)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
        with open(log) as lf:
            text = lf.read()
        self.assertIn("(127.0.0.1:%d) (rights: read)" % port, text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
