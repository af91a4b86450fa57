"""common.py - what every evaluation shares: a private daemon, streaming, plots, tables.

The evaluation talks to the real perceptrond over its Unix socket, as a client
would: each experiment starts its own daemon (a temporary directory holding
the socket, the config and the state), creates its models with `create`,
streams examples with pipelined `label` requests (progressive validation: the
prediction comes before the update) and reads back `predict` and `info`.

Run with Debian's python3 (/usr/bin/python3), which has python3-msgpack,
python3-numpy and python3-sklearn.
"""
import collections
import itertools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
from perceptrond_client import Client, PerceptrondError  # noqa: E402

RESULTS = os.path.join(ROOT, "eval", "results")
IMAGES = os.path.join(ROOT, "docs", "img")

# Requests in flight on one connection.  The daemon stops reading a client
# whose unread answers pass max_output_bytes (64 MiB here); 512 small answers
# stay far below that, and the pipeline keeps the socket busy.
WINDOW = 512


def daemon_binary():
    """The perceptrond to evaluate: $PERCEPTROND, or the one in build/."""
    path = os.environ.get("PERCEPTROND", os.path.join(ROOT, "build", "daemon", "perceptrond"))
    if not os.access(path, os.X_OK):
        sys.exit("evaluate: no daemon at %s: build it first (ninja -C build)" % path)
    return path


class Daemon:
    """A private perceptrond on a Unix socket in a temporary directory.

        with Daemon() as d:
            c = d.client()
    """

    # The rules as the papers state them: a spec's keys left out are the plain
    # perceptron's, not the default template's averaging and preparation.
    PLAIN_TEMPLATE = "template: {rule: perceptron, averaged: false, scale: none, transforms: []}\n"

    def __init__(self, extra=PLAIN_TEMPLATE):
        """extra: YAML lines added to the config (by default the plain
        template; "" leaves the daemon's default template)."""
        self.dir = tempfile.mkdtemp(prefix="pcd-eval-")
        sock = os.path.join(self.dir, "pcd.sock")
        self.address = "unix:" + sock
        config = os.path.join(self.dir, "perceptrond.yaml")
        with open(config, "w") as f:
            # No TCP, no snapshots while streaming (interval 0 = only on save
            # and exit), room for big batches of dense examples.
            f.write("listen:\n  tcp: []\n  unix: [%s]\nstate_dir: %s\n"
                    "snapshot:\n  interval: 0\n"
                    "limits:\n  max_message_bytes: 64MiB\n  max_output_bytes: 64MiB\n"
                    "  max_batch: 100000\n  idle_timeout: 0\n"
                    "log_level: warning\nauto_create: false\n%s"
                    % (sock, os.path.join(self.dir, "state"), extra))
        self.proc = subprocess.Popen([daemon_binary(), "--config", config])
        deadline = time.time() + 10
        while True:  # ready when it accepts a connection (the file exists before listen())
            try:
                Client(self.address).close()
                break
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.close()
                sys.exit("evaluate: the daemon did not start (see its log above)")
            time.sleep(0.02)

    def client(self):
        return Client(self.address)

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def pipelined(client, method, model, items):
    """One request per item (params: model, *item), WINDOW in flight; the
    results in order.  Raises PerceptrondError on the first error answer."""
    results, in_flight = [], collections.deque()
    queue = iter(items)
    done = False
    while True:
        while not done and len(in_flight) < WINDOW:
            item = next(queue, None)
            if item is None:
                done = True
                break
            in_flight.append(client.send(method, model, *item))
        if not in_flight:
            break
        client.flush()
        msgid, error, result = client.recv()
        if msgid != in_flight.popleft():  # the daemon answers in order
            raise ValueError("answer %d out of order" % msgid)
        if error is not None:
            raise PerceptrondError(error.get("code"), error.get("message"))
        results.append(result)
    return results


def stream(client, model, examples, labels):
    """Labels every example in order; returns the list of mistakes (0/1), the
    progressive validation the daemon reports in each `label` answer."""
    answers = pipelined(client, "label", model, zip(examples, labels))
    return [1 if a["mistake"] else 0 for a in answers]


def predictions(client, model, examples, chunk=2000):
    """The daemon's answers ({label, score, scores?}) on an iterable of
    examples, by predict_batch in chunks (only a chunk is held at a time)."""
    it, out = iter(examples), []
    while batch := list(itertools.islice(it, chunk)):
        out += client.predict_batch(model, batch)
    return out


def scores(client, model, examples):
    """The scores of a model on examples: a list of floats for binary models,
    of {class: score} maps for multiclass ones."""
    return [p.get("scores", p["score"]) for p in predictions(client, model, examples)]


def cumulative(mistakes):
    return list(itertools.accumulate(mistakes))


def gnuplot(path, commands):
    """Draws a 960x600 PNG at path with gnuplot: commands come after the
    terminal and output settings.  Without gnuplot it says so and draws nothing."""
    if not shutil.which("gnuplot"):
        print("evaluate: gnuplot not found (apt-get install gnuplot-nox): no plot %s" % path,
              file=sys.stderr)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    head = ["set terminal pngcairo size 960,600 noenhanced font ',10'", "set output '%s'" % path]
    subprocess.run(["gnuplot"], input="\n".join(head + commands) + "\n", text=True, check=True)


def style(k, dashed=False):
    """Colour and dash of curve k: gnuplot has 8 colours, so past 8 curves the
    colours come back dashed; dashed=True forces a dash."""
    return "lc %d dt %d" % (k % 8 + 1, 2 if dashed else k // 8 % 3 + 1)


def plot_curves(path, title, curves, xlabel, ylabel, logy=False):
    """Plots curves [(name, [(x, y), ...], how)], how being gnuplot's
    'with ...' clause and style (e.g. "with steps " + style(k))."""
    cmds = ["set title '%s'" % title.replace("'", ""), "set xlabel '%s'" % xlabel,
            "set ylabel '%s'" % ylabel, "set key outside right top", "set grid"]
    if logy:
        cmds.append("set logscale y")
    cmds.append("plot " + ", ".join("'-' using 1:2 %s lw 2 title '%s'" % (how, name)
                                    for name, _, how in curves))
    for _, points, _ in curves:  # inline data: one block per curve, each ended by 'e'
        cmds += ["%.10g %.10g" % xy for xy in points] + ["e"]
    gnuplot(path, cmds)


def plot(path, title, series, xlabel="examples", ylabel="cumulative mistakes", logy=False):
    """Plots {name: [y values at x = 1, 2, ...]} as lines.  Long series are
    thinned to about 2000 points (the curves are monotone, so the picture
    does not change)."""
    curves = []
    for k, (name, ys) in enumerate(series.items()):
        step = max(1, len(ys) // 2000)
        points = [(i + 1, ys[i]) for i in range(0, len(ys), step)]
        if ys and (len(ys) - 1) % step:
            points.append((len(ys), ys[-1]))
        curves.append((name, points, "with lines " + style(k)))
    plot_curves(path, title, curves, xlabel, ylabel, logy)


def markdown_table(headers, rows):
    """A GitHub markdown table; floats get 4 significant digits."""
    def cell(v):
        if isinstance(v, float):
            return "%.4g" % v
        return "" if v is None else str(v)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def save_json(name, obj, out_dir=None):
    """Writes eval/results/NAME.json, stamped with the date and the machine
    (or NAME.json in out_dir, unstamped: smoke runs)."""
    if out_dir is None:
        obj["meta"] = {"date": time.strftime("%Y-%m-%d"),
                       "machine": "%s, %d cores" % (platform.machine(), os.cpu_count())}
    out_dir = out_dir or RESULTS
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name + ".json")
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    return path


def load_json(name):
    with open(os.path.join(RESULTS, name + ".json")) as f:
        return json.load(f)


# Every rule with the parameters the evaluation uses: the defaults of
# docs/algorithms.md unless a paper's experiment fixes one (noted where it is used).
RULES = ["perceptron", "margin", "greedy", "fuzzy", "winnow", "pa", "pa1", "pa2", "romma",
         "aromma", "naromma", "cmcp", "mcp", "alma", "omm", "omm-naive"]
