"""evaluate.py - regenerates every evaluation table and plot, and docs/evaluation.md.

    /usr/bin/python3 eval/evaluate.py all          # every experiment (eval/run.sh: ~20 min)
    /usr/bin/python3 eval/evaluate.py synthetic    # one of synthetic, adult, fashion
    /usr/bin/python3 eval/evaluate.py report       # docs/evaluation.md from eval/results/
    /usr/bin/python3 eval/evaluate.py smoke        # small runs of each, nothing written (a test)

Each experiment is a module with run(smoke, out_dir) -> results (saved as
eval/results/NAME.json, plots in docs/img/) and report(results) -> markdown.
The report step only reads the saved results, so docs/evaluation.md can be
rebuilt without running anything again; the sections of the page no
experiment writes ("## Experts", "## Label hints": other programs' tables
kept by hand) stay where they were.
"""
import importlib
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

EXPERIMENTS = ["suite", "fashion", "adult", "synthetic"]
DOC = os.path.join(common.ROOT, "docs", "evaluation.md")

HEADER = """# Evaluation: how each rule learns, through the running daemon

Every figure on this page was produced by streaming data through a real `perceptrond` over its Unix
socket (pipelined `label` requests, progressive validation: each prediction is made before the
example is learnt; `predict_batch` for test sets), by the programs in `eval/`:

```
scripts/install-deps && ninja -C build       # the daemon
eval/run.sh                                  # installs numpy, scikit-learn, gnuplot, Fashion-MNIST; runs all
/usr/bin/python3 eval/evaluate.py report     # this page again from eval/results/*.json
```

`eval/evaluate.py EXPERIMENT` reruns one experiment (`fashion`, `adult`, `synthetic`); the raw
results are in `eval/results/`, the plots in `docs/img/`. `meson test -C build eval_smoke` runs a
small version of each (through the daemon too) as part of the tests.

Rules run with the defaults of their parameter tables (`perceptronctl create --help`, docs/algorithms.md)
unless a section says otherwise.
"""


def experiment(name):
    return importlib.import_module(name)


def sections(text):
    """[(heading, text)] of a page cut before each '## ' heading (the first
    part, before any, has the heading '')."""
    out, heading, lines = [], "", []
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            out.append((heading, "".join(lines)))
            heading, lines = line.strip(), []
        lines.append(line)
    out.append((heading, "".join(lines)))
    return out


def kept_sections(generated):
    """The sections of the page as it is that no experiment writes (written
    by hand from other programs' output: eval/hints.py, the experts), each
    with the heading of the generated section it followed, so that a report
    puts them back where they were instead of dropping them."""
    try:
        with open(DOC) as f:
            old = sections(f.read())
    except FileNotFoundError:
        return []
    ours = {h for h, _ in sections(generated)}
    kept, after = [], ""
    for heading, text in old:
        if heading in ours:
            after = heading
        elif heading:
            kept.append((after, text))
    return kept


def report():
    parts = [HEADER]
    for name in EXPERIMENTS:
        try:
            results = common.load_json(name)
        except FileNotFoundError:
            parts.append("## %s\n\nNot run yet: `eval/evaluate.py %s`.\n" % (name, name))
            continue
        parts.append(experiment(name).report(results))
        if "meta" in results:  # common.save_json's stamp
            parts.append("*Run on %(date)s, %(machine)s.*\n" % results["meta"])
    generated = "\n".join(parts).rstrip() + "\n"
    kept = kept_sections(generated)
    out = []
    for heading, text in sections(generated):
        out.append(text)
        out += [k for after, k in kept if after == heading]
    with open(DOC, "w") as f:
        f.write("".join(out).rstrip() + "\n")
    print("evaluate: wrote %s%s" % (os.path.relpath(DOC, common.ROOT),
                                    " (%d sections kept as they were)" % len(kept) if kept else ""))


def run(name, smoke=False):
    """Runs one experiment; it saves its own results (a smoke run, in a
    temporary directory removed afterwards)."""
    start = time.time()
    out = tempfile.mkdtemp(prefix="pc-eval-") if smoke else None
    try:
        experiment(name).run(smoke=smoke, out_dir=out)
    finally:
        if out:
            shutil.rmtree(out, ignore_errors=True)
    print("evaluate: %s%s done in %.1f s" % (name, " (smoke)" if smoke else "", time.time() - start),
          file=sys.stderr)


def main(argv):
    what = argv[1] if len(argv) > 1 else "help"
    if what == "report":
        report()
    elif what == "smoke":
        for name in EXPERIMENTS:
            # The Adult files live outside the repository (../shared/data): a
            # machine without them skips that experiment, and says so.
            why = getattr(experiment(name), "unavailable", lambda: None)()
            if why:
                print("evaluate: %s skipped: %s" % (name, why), file=sys.stderr)
                continue
            run(name, smoke=True)
    elif what == "all":
        for name in EXPERIMENTS:
            run(name)
        report()
    elif what in EXPERIMENTS:
        run(what)
        report()
    else:
        print(__doc__.strip())
        return 0 if what in ("help", "-h", "--help") else 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
