#!/usr/bin/python3
"""hints.py - label hints (selective sampling) on the suite's data sets and the synthetic streams.

The question (issue 31): a service that pays for each label asks for it only
when `predict` answers `ask: true` (a model created with hints.b; the daemon
asks with probability b / (b + |score|), docs/algorithms.md "Label hints").
With b chosen so that at most 30 % of the labels are asked for, how many more
mistakes do its predictions make than those of a model that learns every
label?

For each data set of eval/suite.py (raw CSV, the features perceptronctl
makes of a row) and the synthetic separable and noisy streams
(eval/synthetic.py), one pass in file order through a private daemon with
the default template:
  - every label: each example labelled; its progressive mistakes;
  - hints: each example predicted, its prediction counted right or wrong,
    and labelled only when the answer asked; b found by bisection (in log
    scale, between 1e-4 and 100, STEPS runs) as the largest b that asks for
    at most 30 % of the labels (the fraction asked grows with b).
The table gives the chosen b, its asked fraction and the ratio of its
mistakes (over every prediction) to the mistakes of learning every label.

    /usr/bin/python3 eval/hints.py [--only NAME,NAME] [--max-rows N]

prints a markdown table and saves eval/results/hints.json (docs/evaluation.md,
"Label hints").  --max-rows (default 60,000) leaves out larger sets (Fashion-
MNIST: 784 named features a row in synchronous Python calls).
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import suite  # noqa: E402
import synthetic  # noqa: E402

B_LOW, B_HIGH, STEPS = 1e-4, 100.0, 9
ASKED_MAX = 0.30


def csv_examples(path, positive):
    """(features, label) of each row: the features perceptronctl --header
    makes of it (suite.row_features); the label 1/-1 (binary: positive is
    +1) or the class name (positive None)."""
    out = []
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows)[:-1]
        for fields in rows:
            if not fields:
                continue
            x = {n: v for n, v, _ in suite.row_features(header, fields[:-1])}
            y = fields[-1].strip()
            out.append((x, y if positive is None else (1 if y == positive else -1)))
    return out


def every_label(c, model, spec, examples):
    c.create(model, spec)
    mistakes = sum(r["mistake"] for r in c.label_many(model, examples))
    c.drop(model)
    return mistakes


def with_hints(c, model, spec, examples, b):
    """(mistakes of every prediction, labels asked for)."""
    c.create(model, dict(spec, **{"hints.b": b}))
    mistakes = asked = 0
    for x, y in examples:
        p = c.predict(model, x)
        mistakes += p["label"] != y
        if p["ask"]:
            asked += 1
            c.label(model, x, y)
    c.drop(model)
    return mistakes, asked


def evaluate(c, name, examples, multiclass):
    spec = {"open_classes": True} if multiclass else {}
    n = len(examples)
    full = every_label(c, name, spec, examples)
    tried, chosen = [], None
    lo, hi = B_LOW, B_HIGH
    for _ in range(STEPS):
        b = (lo * hi) ** 0.5
        mistakes, asked = with_hints(c, name, spec, examples, b)
        tried.append({"b": b, "asked": asked / n, "error": mistakes / n})
        if asked / n > ASKED_MAX:
            hi = b
        else:
            lo = b
            chosen = tried[-1]
    row = {"rows": n, "every_label_error": full / n, "tried": tried, "chosen": chosen}
    if chosen:
        row["ratio"] = chosen["error"] / (full / n) if full else None
    return row


def main(argv):
    only, max_rows = [], 60000
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--only":
            only = args.pop(0).split(",")
        elif a == "--max-rows":
            max_rows = int(args.pop(0))
        else:
            sys.exit(__doc__)
    results = {}
    with suite.Daemon() as d, d.client() as c:
        for ds, path in suite.available([n for n in only if n not in ("separable", "noise")],
                                        suite.datasets.CACHE, False):
            rows, _, counts = suite.file_stats(path)
            if rows > max_rows:
                print("hints: %s left out (%d rows > --max-rows %d)" % (ds.name, rows, max_rows),
                      file=sys.stderr)
                continue
            multiclass = len(counts) > 2
            examples = csv_examples(path, None if multiclass else suite.positive_class(ds, counts))
            results[ds.name] = evaluate(c, ds.name, examples, multiclass)
            print("hints: %s done" % ds.name, file=sys.stderr)
        for kind in ("separable", "noise"):
            if only and kind not in only:
                continue
            xs, ys, _ = synthetic.make_stream(kind, 10000, 1)
            results["synthetic " + kind] = evaluate(c, kind, list(zip(xs, ys)), False)
    table = []
    for name, r in results.items():
        ch = r["chosen"]
        table.append([name, str(r["rows"]), "%.3f" % r["every_label_error"],
                      "%.3g" % ch["b"] if ch else "-", "%.1f %%" % (100 * ch["asked"]) if ch else "-",
                      "%.3f" % ch["error"] if ch else "-",
                      "%.2f" % r["ratio"] if ch and r.get("ratio") is not None else "-"])
    print(common.markdown_table(["data set", "rows", "error, every label", "b",
                                 "labels asked", "error, hints", "ratio"], table))
    if not only:
        common.save_json("hints", {"results": results, "asked_max": ASKED_MAX,
                                   "b_range": [B_LOW, B_HIGH], "steps": STEPS})


if __name__ == "__main__":
    main(sys.argv[1:])
