#!/usr/bin/python3
"""whatif.py - a Python model of the default template's learning, to measure
changes the daemon does not have (yet) on the suite's CSV files.

It reads eval/suite.py's CSV exports (build/eval-data) as perceptronctl does
(a numeric column is the feature COLUMN, a text one COLUMN=text with value 1,
zeros sent, empty fields left out), adds the half-octave bins of `*:logbins`
(NAME#lbK, zeros too), scales, appends the bias feature 1 and runs PA
(Crammer et al. 2006) averaged (Daume's lazy form), one-vs-rest for
multiclass with classes added on first sight, progressive validation.  With
the daemon's settings (the defaults here) it gives the template's figures of
docs/evaluation.md on each of the eleven smaller sets, and with --scale rms
those of the daemon's `scale: rms`: feature hashing aside, it is the same
arithmetic.  Pure Python: Adult takes 10 s, Fashion-MNIST is left out.

Variants (docs/evaluation.md, "The small multiclass sets"):
  --scale max|rms|rms-bins1   rms-bins1: rms for the features sent, the bins
                              left at 1 (the daemon cannot tell them apart
                              after the name step)
  --no-average, --no-bins
  --select                    predict with the last weights instead of the
                              average while a mixture SPRT on the discordant
                              progressive mistakes says they are better (95 %)

    /usr/bin/python3 eval/whatif.py [--only a,b] [variant options]
"""
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import datasets  # noqa: E402

CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build",
                     "eval-data")


def number(s):
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def half_octave(v):
    m, e = math.frexp(1 + abs(v))
    return 2 * (e - 1) + (1 if m >= 0.70710678118654752440 else 0)


def load(path):
    rows = []
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        k = header.index("label")
        for row in r:
            if not row:
                continue
            feats = []
            for j, s in enumerate(row):
                s = s.strip()
                if j == k or not s:
                    continue
                v = number(s)
                feats.append((header[j], v) if v is not None else ("%s=%s" % (header[j], s), 1.0))
            rows.append((feats, row[k].strip()))
    return rows


class Prep:
    def __init__(self, scale, bins):
        self.scale, self.bins = scale, bins
        self.mx, self.q, self.n = {}, {}, 0

    def learn(self, feats):
        """The example as the rule sees it: [(name, value)], the bias last."""
        x = []
        for name, v in feats:
            x.append((name, v, False))
            if self.bins:
                x.append(("%s#lb%s%d" % (name, "-" if v < 0 else "", half_octave(v)), 1.0, True))
        x = [(n, v, b) for n, v, b in x if v != 0]
        out = []
        self.n += 1
        for n, v, is_bin in x:
            if self.scale == "max":
                self.mx[n] = max(self.mx.get(n, 0.0), abs(v))
                d = self.mx[n]
            elif self.scale == "rms-bins1" and is_bin:
                d = 1.0
            else:
                self.q[n] = self.q.get(n, 0.0) + v * v
                d = math.sqrt(self.q[n] / self.n)
            out.append((n, v / d))
        out.append(("", 1.0))
        return out


class Vec:
    def __init__(self):
        self.w, self.a, self.tick = {}, {}, 0

    def dot(self, x):
        return sum(self.w.get(n, 0.0) * v for n, v in x)

    def dot_avg(self, x):
        if self.tick <= 0:
            return self.dot(x)
        return self.dot(x) - sum(self.a.get(n, 0.0) * v for n, v in x) / self.tick

    def add(self, x, alpha):
        for n, v in x:
            self.w[n] = self.w.get(n, 0.0) + alpha * v
            self.a[n] = self.a.get(n, 0.0) + self.tick * alpha * v


def last_better(b, c):
    """Mixture SPRT (eval's compare test): b examples the last weights got right
    and the average wrong, c the converse; L = B(b+1, c+1) 2^(b+c) >= 20."""
    if b <= c:
        return False
    return (math.lgamma(b + 1) + math.lgamma(c + 1) - math.lgamma(b + c + 2)
            + (b + c) * math.log(2)) >= math.log(20)


def run(rows, positive, scale="max", bins=True, averaged=True, select=False):
    prep = Prep(scale, bins)
    binary = positive is not None
    W, classes = {}, []
    mistakes = b = c = 0
    for feats, label in rows:
        x = prep.learn(feats)
        n2 = sum(v * v for _, v in x)
        if binary:
            targets = {"+": 1 if label == positive else -1}
            classes = ["+"]
            W.setdefault("+", Vec())
        elif label not in W:
            W[label] = Vec()
            classes.append(label)
        plain = {k: W[k].dot(x) for k in classes}
        avg = {k: W[k].dot_avg(x) if averaged else plain[k] for k in classes}
        if binary:
            p_avg, p_last, truth = avg["+"] >= 0, plain["+"] >= 0, targets["+"] == 1
        else:
            p_avg = max(classes, key=lambda k: (avg[k], -classes.index(k)))
            p_last = max(classes, key=lambda k: (plain[k], -classes.index(k)))
            truth = label
        pred = p_last if select and last_better(b, c) else p_avg
        mistakes += pred != truth
        b += p_avg != truth and p_last == truth
        c += p_avg == truth and p_last != truth
        for k in classes:
            y = targets[k] if binary else (1 if k == label else -1)
            loss = 1 - y * plain[k]
            if loss > 0:
                W[k].add(x, loss / n2 * y)
            if averaged:
                W[k].tick += 1
    return mistakes / len(rows)


def main(argv):
    only, kw = [], {}
    it = iter(argv)
    for a in it:
        if a == "--only":
            only = next(it).split(",")
        elif a == "--scale":
            kw["scale"] = next(it)
        elif a == "--no-average":
            kw["averaged"] = False
        elif a == "--no-bins":
            kw["bins"] = False
        elif a == "--select":
            kw["select"] = True
        else:
            sys.exit(__doc__)
    for d in datasets.DATASETS:
        path = os.path.join(CACHE, d.name + ".csv")
        if (only and d.name not in only) or not os.path.exists(path):
            continue
        rows = load(path)
        labels = {y for _, y in rows}
        positive = (d.positive if d.positive in labels else min(labels)) if len(labels) == 2 \
            else None
        print("%-14s %.3f" % (d.name, run(rows, positive, **kw)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
