"""synthetic.py - every rule on synthetic streams with a known margin, label noise and drift.

The papers prove their bounds for separable streams.  These streams show what
each rule does there and where the assumption fails:

  separable  points on the unit sphere of R^d labelled by a fixed unit vector u,
             kept only if |u.x| >= gamma: margin gamma, radius R = 1 by
             construction, so the Perceptron makes at most (R/gamma)^2 mistakes
             (Novikoff; seed 001) and the check below holds the daemon to it;
  noise      the same stream with a fraction of the labels flipped;
  drift      the same, but u turns a full circle, evenly, over the stream (a
             quarter turn every n/4 examples), so a rule must keep forgetting
             what it learnt.

Each rule streams through a private daemon (progressive validation), then is
tested on 2,000 fresh clean points labelled by the final u.  The streams have
no bias (u goes through the origin) and the models none either, except the
OMM rules, which always learn their own b.
"""
import math
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

DIM = 20
GAMMA = 0.1
NOISE = 0.05
TEST = 2000


def unit(v):
    n = math.sqrt(sum(a * a for a in v))
    return [a / n for a in v]


def sphere_point(rnd):
    return unit([rnd.gauss(0, 1) for _ in range(DIM)])


def target_at(u0, u1, frac):
    """The drifting target after a fraction frac of the stream: u0 turned by
    frac * 360 degrees towards u1 (orthonormal to it)."""
    a = frac * 2 * math.pi
    return [math.cos(a) * p + math.sin(a) * q for p, q in zip(u0, u1)]


def margin_point(rnd, u):
    """A point of the unit sphere at least gamma from u's hyperplane, as an
    {index: value} map, and its label sign(u.x)."""
    while True:
        x = sphere_point(rnd)
        m = sum(a * b for a, b in zip(u, x))
        if abs(m) >= GAMMA:
            return {i: v for i, v in enumerate(x)}, 1 if m > 0 else -1


def make_stream(kind, n, seed):
    """(examples, labels, final target): examples as {index: value} maps."""
    rnd = random.Random(seed)
    u0 = sphere_point(rnd)
    r = sphere_point(rnd)  # Gram-Schmidt: u1 orthogonal to u0
    d = sum(a * b for a, b in zip(r, u0))
    u1 = unit([a - d * b for a, b in zip(r, u0)])
    xs, ys = [], []
    while len(xs) < n:
        x, y = margin_point(rnd, target_at(u0, u1, len(xs) / n) if kind == "drift" else u0)
        if kind == "noise" and rnd.random() < NOISE:
            y = -y
        xs.append(x)
        ys.append(y)
    return xs, ys, (target_at(u0, u1, 1) if kind == "drift" else u0)


def test_set(u, seed):
    rnd = random.Random(seed)
    return tuple(zip(*(margin_point(rnd, u) for _ in range(TEST))))


def run_rule(client, rule, xs, ys, txs, tys):
    client.create(rule, rule=rule, dim=DIM, bias=False)
    mistakes = common.stream(client, rule, xs, ys)
    answers = common.predictions(client, rule, txs)
    test_err = sum(1 for a, y in zip(answers, tys) if a["label"] != y)  # the rule's own sign
    note = client.info(rule)["learners"][0].get("note")
    client.drop(rule)
    q = len(mistakes) * 3 // 4
    return {"mistakes": sum(mistakes), "last_quarter": sum(mistakes[q:]),
            "test_errors": test_err, "cumulative": common.cumulative(mistakes), "note": note}


def run(smoke=False, out_dir=None):
    n = 1000 if smoke else 20000
    rules = ["perceptron", "mcp", "pa", "omm"] if smoke else common.RULES
    kinds = ["separable"] if smoke else ["separable", "noise", "drift"]
    results = {"dim": DIM, "gamma": GAMMA, "noise": NOISE, "n": n, "test": TEST, "streams": {}}
    with common.Daemon() as d:
        c = d.client()
        for k, kind in enumerate(kinds):
            xs, ys, u = make_stream(kind, n, seed=100 + k)
            txs, tys = test_set(u, seed=200 + k)
            per = {}
            for rule in rules:
                # n-OMM re-solves a QP over all its kept points at each update; where the
                # stream is not separable it restarts often, and the kept points stay few.
                per[rule] = run_rule(c, rule, xs, ys, txs, tys)
                print("synthetic %-9s %-10s mistakes %5d  last quarter %4d  test errors %4d"
                      % (kind, rule, per[rule]["mistakes"], per[rule]["last_quarter"],
                         per[rule]["test_errors"]), file=sys.stderr)
            results["streams"][kind] = per
    # Seed 001 Thm 1 (Perceptron) and seed 000 Thm 10 (CMCP, MCP): at most (R/gamma)^2
    # mistakes on a separable stream.  Failing it means the daemon's rule is wrong.
    bound = int((1 / GAMMA) ** 2)
    for rule, v in results["streams"]["separable"].items():
        if rule in ("perceptron", "cmcp", "mcp") and v["mistakes"] > bound:
            sys.exit("synthetic: %s made %d mistakes on a separable stream, bound %d"
                     % (rule, v["mistakes"], bound))
    if out_dir is None:
        for kind, per in results["streams"].items():
            common.plot(os.path.join(common.IMAGES, "eval-synthetic-%s.png" % kind),
                        "synthetic %s stream (d=%d, gamma=%g): cumulative mistakes"
                        % (kind, DIM, GAMMA),
                        {r: v["cumulative"] for r, v in per.items()}, logy=True)
    # The curves are for the plots; the JSON keeps every 100th point.
    for per in results["streams"].values():
        for v in per.values():
            v["cumulative"] = v["cumulative"][99::100]
    common.save_json("synthetic", results, out_dir)
    return results


def report(results):
    s = results["streams"]  # JSON sorts the keys: put them back in the order of the text
    kinds = [k for k in ("separable", "noise", "drift") if k in s]
    rules = [r for r in common.RULES if r in s[kinds[0]]]
    rows = []
    for r in rules:
        row = [r]
        for k in kinds:
            row += [s[k][r]["mistakes"], s[k][r]["last_quarter"], s[k][r]["test_errors"]]
        rows.append(row)
    headers = ["rule"]
    for k in kinds:
        headers += ["%s mistakes" % k, "last 1/4", "test errors"]
    text = ["## Synthetic streams: margin, noise, drift", "",
            "%d examples on the unit sphere of R^%d, labelled by a unit vector u with margin "
            "gamma = %g (points nearer the hyperplane are dropped); *noise* flips %d%% of the "
            "labels; *drift* turns u a full circle, evenly, over the stream. One pass, "
            "progressive validation (mistakes before each update); *last 1/4*: mistakes over "
            "the last quarter of the stream; *test errors*: on %d fresh clean points labelled "
            "by the final u. The bound of seed 001 Thm 1 and seed 000 Thm 10 for the Perceptron, "
            "CMCP and MCP on the separable stream is (R/gamma)^2 = %d mistakes; the program "
            "fails if a rule breaks it." % (results["n"], results["dim"], results["gamma"],
                                            round(results["noise"] * 100), results["test"],
                                            round((1 / results["gamma"]) ** 2)),
            "", common.markdown_table(headers, rows), ""]
    for k in kinds:
        text += ["![cumulative mistakes, %s stream](img/eval-synthetic-%s.png)" % (k, k), ""]
    text += [DISCUSSION]
    return "\n".join(text)


DISCUSSION = """What the tables show (the streams are seeded, so the figures repeat exactly):

- **Separable.** Every rule but two converges (at most one mistake in the last quarter), and the
  Perceptron, CMCP and MCP stay well inside the (R/gamma)^2 bound (30, 23 and 11 against 100). PA,
  aggressive ROMMA, MCP and e-OMM, which also update on small margins, make a third of the
  Perceptron's mistakes or fewer. *Winnow* cannot express this target: its weights are positive (multiplicative updates
  from 1) and u has negative coordinates, so it stays near chance (seed 001 states it for monotone
  disjunctions, which u is not). *margin* (Margin-Fuzzy, seed 002 Alg. 4) deliberately ignores
  mistakes closer than epsilon = 0.1 to its hyperplane, which is where this stream's points crowd.
- **Noise** (5% of labels flipped, so no rule can avoid about 1,000 mistakes). The rules whose step
  is bounded or shrinks (PA-I, ALMA, MCP, CMCP, fuzzy) end with almost no errors on clean test
  points; the rules that take a full step on every noisy label (Perceptron, ROMMA, aggressive ROMMA,
  e-OMM) keep being pulled off the target (about 5% test errors). The OMM rules assume
  separability: when the two hulls meet they start again from one point (our choice, see
  `lib/rules/omm.c`). e-OMM's two certificates rarely meet (3 restarts), but n-OMM's kept points do
  (173 restarts): it learns from a few dozen points at a time and does worst.
- **Drift** (the target turns a full circle). Aggressive rules that update on small margins (PA,
  aggressive ROMMA/NAROMMA, MCP, ALMA) track it with tens of mistakes; the conservative ones (the
  Perceptron, ROMMA, CMCP) lag by about 150. *fuzzy* computes memberships from the running means of
  each class over the whole stream, which average out over a full turn: it ends worse than chance
  (86% of the last quarter wrong). e-OMM's margin estimate gamma_t only shrinks and its certificates
  move only as far as its closed-form step allows: it lags (377 mistakes, no restart); n-OMM sees its
  kept points stop being separable and restarts (7 times).
- *aromma* and *naromma* make exactly the same mistakes on every stream, as seed 000 Theorem 7 says.
"""


if __name__ == "__main__":
    smoke = "--smoke" in sys.argv[1:]
    res = run(smoke=smoke, out_dir=tempfile.mkdtemp(prefix="pc-eval-") if smoke else None)
    print(report(res))
