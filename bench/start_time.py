#!/usr/bin/python3
"""start_time.py - how long a daemon takes to start on a state directory of
many models (not a test; docs/operations.md, "Models at rest").

    bench/start_time.py MODELS WEIGHTS DIR BINARY [BINARY ...]

Makes MODELS sparse perceptrons (dim 2^20), each taught one example of
WEIGHTS named features, in a daemon of the last BINARY, saves them and
stops it; then, per BINARY, alternately, 3 rounds: starts it on that state
directory, without and with limits.resident_max, and prints the seconds
until it answers `models`, and its RSS then.
"""
import os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "clients", "python"))
from perceptrond_client import Client  # noqa: E402


def config(d, extra):
    path = os.path.join(d, "perceptrond.yaml")
    with open(path, "w") as f:
        f.write(f"listen: {{unix: [\"{d}/sock\"]}}\nstate_dir: {d}/state\n"
                f"journal: {{fsync: everysec}}\nsnapshot: {{interval: 3600}}\n"
                f"limits: {{max_models: 1000000{extra}}}\n")
    return path


def start(binary, d, extra):
    t0 = time.monotonic()
    p = subprocess.Popen([binary, "--config", config(d, extra)], stderr=subprocess.DEVNULL)
    while True:
        try:
            c = Client("unix:" + d + "/sock")
            n = len(c.call("models"))
            break
        except (OSError, ConnectionError):
            if p.poll() is not None:
                return None  # e.g. a binary older than resident_max refuses the key
            time.sleep(0.005)
    dt = time.monotonic() - t0
    rss = next(int(l.split()[1]) for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS"))
    return p, c, dt, n, rss


def main():
    models, weights, base, binaries = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    d = os.path.join(base, f"pcd-start-{os.getpid()}")
    os.makedirs(d)
    try:
        p, c, _, _, _ = start(binaries[-1], d, "")
        t0 = time.monotonic()
        for i in range(models):
            c.send("create", f"m{i}", {"rule": "perceptron", "dim": 1 << 20, "storage": "sparse"})
            c.send("label", f"m{i}", {f"f{k}": 1.0 + k for k in range(weights)}, 1)
            if i % 256 == 255 or i == models - 1:
                c.flush()
                for _ in range(2 * (i % 256 + 1)):
                    _, err, _ = c.recv()
                    if err:
                        sys.exit(f"the daemon refused: {err}")
        made = time.monotonic() - t0
        c.close()
        c = Client("unix:" + d + "/sock")
        c.call("save")
        c.close()
        p.terminate()
        p.wait()
        files = os.listdir(d + "/state")
        print(f"{models} models of {weights} weights made in {made:.1f} s; "
              f"{len(files)} entries in the state directory", flush=True)
        for rnd in range(3):
            for b in binaries:
                for extra in ("", ", resident_max: 1000"):
                    got = start(b, d, extra)
                    if not got:
                        print(f"round {rnd} {b} {extra}: refused to start", flush=True)
                        continue
                    p, c, dt, n, rss = got
                    c.close()
                    p.terminate()
                    p.wait()
                    print(f"round {rnd} {b} {'resident_max 1000' if extra else 'all resident'}: "
                          f"{dt:.2f} s to answer, {n} models, RSS {rss / 1024:.0f} MiB", flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


main()
