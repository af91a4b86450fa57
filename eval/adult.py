"""adult.py - seed 004's Adult experiment (Section 6, Table 2, App. B) through the daemon.

Seed 004 (Online Maximum Margin) compares e-OMM, ce-OMM and n-OMM with the
Perceptron, ROMMA, aggressive ROMMA, PUMMA and ALMA on the UCI Adult data made
linearly separable.  This file rebuilds that data set as App. B.1 and B.2 say,
streams it once, in file order, through a private perceptrond for every rule
the daemon has, and sets the figures beside the paper's Table 2:

  data         adult.data then adult.test, rows with a missing value dropped,
               k-1 dummies per categorical column, every column standardised
               (B.1); a linear SVM fitted, and the points it misclassifies or
               puts within 0.01 of its hyperplane removed (B.1); the exact
               max-margin (w*, b*) and its certificates v+, v- (Lemma 3.1)
               from a QP; the points moved along y w* so the margin is 1 (B.2).
  main pass    theta = 0 with b* as it comes and with b* = 0 (Table 2's two
               columns): mistakes, the final classifier's margin on the whole
               set, and tau, the first example after which the classifier has
               a positive margin on the whole set (checked after every update).
  translations the ten variants of B.2 (theta in 0..1, b* kept or moved to 0):
               the mistakes of each rule, to show which rules are translation
               invariant, and for seed 004's rules m, margin and tau beside
               its Table 3 (one pass, every variant).
  five passes  Table 4 (App. B.4): seed 004's rules but n-OMM make five
               passes over every variant (PASS_THETAS), each pass in
               a new random order (the same orders for every rule and variant,
               numpy seed PASS_SEED); n-OMM keeps its one pass, as in the paper.

--reuse keeps the figures of eval/results/adult.json for the rules whose code
did not change with the anchor (all but INVARIANT: the OMM rules and PUMMA
run again) and runs the rest and the passes (the data are prepared again,
the same).

ce-OMM (omm with rho = 0) and PUMMA run beside common.RULES.  --smoke
runs the same pipeline on the first 3,000 rows with four rules and two
thetas, writes to a temporary directory and checks the invariants (check()).

Run with Debian's python3:  /usr/bin/python3 eval/adult.py [--smoke]
"""
import csv
import math
import statistics
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

NUMERIC = ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
LABEL = "ltgt50k"
THETAS = [0.0, 0.25, 0.5, 0.75, 1.0]
SVM_DISTANCE = 0.01  # B.1: points within this distance of the SVM hyperplane go
# In the main pass (theta = 0) tau is exact: the margin is checked after every
# update.  In the other variants it is looked for every GRID examples, then
# pinned down inside the first window that ends positive.  GRID is also the
# pipelining window of the main pass once tau is known.
GRID = 500
OMM_RULES = ["omm", "ce-omm", "omm-naive"]
# The translation-invariant rules: the OMM ones (Remark 3.4) and PUMMA (App. B.5).
INVARIANT = OMM_RULES + ["pumma"]
PASSES = 5       # Table 4
PASS_SEED = 2025 # the orders of the passes
# Table 4 has every theta: five passes of seven rules over the ten variants,
# 12 million labels (about 8 minutes on the 2-core VM).
PASS_THETAS = THETAS
# Table 4 again for the perceptron over ORDER_RUNS other sets of pass orders
# (seeds PASS_SEED + 1 ...): its five-pass count depends on the orders far more
# than the other rules' (`adult.py --orders`, which keeps the rest of adult.json).
ORDER_RUNS = 15
ORDER_RULES = ["perceptron"]

# B.1 says "a linear support vector classifier" and nothing more.  sklearn's
# LinearSVC with its defaults keeps 38,297 points of which only 17.4% are
# positive; with class_weight="balanced" it keeps 36,217 with 26.3% positive,
# much nearer the paper's 35,508 and 27.11%, so we use the balanced one and
# report the other beside it.  (The primal solver, dual=False, because the
# dual one does not converge in minutes on 45,222 x 96.)
SVM_CLASS_WEIGHT = "balanced"

# The rules seed 004 runs, by our rule names, with its Table 2 (theta = 0):
# (mistakes, final margin, tau) for b* = 0 and for b* = -0.2848; None is the
# paper's dash (no positive margin).
PAPER = {
    "omm-naive": ("n-OMM", (4, 1.00, 70), (4, 1.00, 70)),
    "ce-omm": ("ce-OMM", (21, 0.05, 16808), (21, 0.05, 16808)),
    "omm": ("e-OMM", (6, 0.84, 534), (6, 0.84, 534)),
    "romma": ("ROMMA", (38, 0.16, 28065), (4114, None, None)),
    "aromma": ("a-ROMMA", (11, 0.73, 265), (2643, None, None)),
    "pumma": ("PUMMA", (9, 0.68, 584), (9, 0.68, 584)),
    "perceptron": ("Perceptron", (59, None, None), (52, None, None)),
    "alma": ("ALMA", (53, None, None), (174, None, None)),
}
PAPER_DATA = {"n": 35508, "d": 96, "positive_pct": 27.11, "D": 220.43,
              "Dbar_over_D_b0": 0.9666, "Dbar_over_D_b": 0.9658, "b_star": -0.2848}

# ce-OMM is the omm rule with rho = 0 (seed 004 Section 6), run beside the
# others; PUMMA (delta = 0.01, App. B.3: its default) is seed 004's alone, so
# the other experiments leave it out of common.RULES.
RUN_RULES = common.RULES[:-1] + ["ce-omm", "omm-naive", "pumma"]
SMOKE_RULES = ["perceptron", "pa", "omm", "ce-omm", "pumma"]

# Seed 004's Tables 3 (one pass) and 4 (five passes, n-OMM one): per theta,
# per rule, (m, margin, tau) for b* = 0 and for b* = -0.2848, None a dash.
# The text of the seed drops the dashes; each row was read back by its
# columns' kinds (m and tau integers, margin and time in (0, 1]).  The OMM rows
# and PUMMA's are the same at every theta (Table 3/4 repeat them).
_D = None


def _paper_tables():
    one = {0.0: {"romma": ((38, 0.16, 28065), (4114, _D, _D)),
                 "aromma": ((11, 0.73, 265), (2643, _D, _D)),
                 "perceptron": ((59, _D, _D), (52, _D, _D)), "alma": ((53, _D, _D), (174, _D, _D))},
           0.25: {"romma": ((529, _D, _D), (5600, _D, _D)),
                  "aromma": ((220, _D, 12282), (3816, _D, _D)),
                  "perceptron": ((70, _D, _D), (76, _D, _D)),
                  "alma": ((689, _D, 23099), (1961, _D, _D))},
           0.5: {"romma": ((1571, _D, _D), (6693, _D, _D)), "aromma": ((788, _D, _D), (5096, _D, _D)),
                 "perceptron": ((66, _D, _D), (56, 0.03, 24953)),
                 "alma": ((2489, _D, _D), (5448, _D, _D))},
           0.75: {"romma": ((2887, _D, _D), (8099, _D, _D)),
                  "aromma": ((1695, _D, _D), (6232, _D, _D)),
                  "perceptron": ((112, _D, _D), (74, _D, _D)),
                  "alma": ((4633, _D, _D), (8602, _D, _D))},
           1.0: {"romma": ((4132, _D, _D), (9213, _D, _D)), "aromma": ((2728, _D, _D), (7413, _D, _D)),
                 "perceptron": ((80, _D, _D), (46, 0.05, 20579)),
                 "alma": ((6636, _D, _D), (10946, _D, _D))}}
    five = {0.0: {"romma": ((38, 0.16, 28065), (6637, _D, _D)),
                  "aromma": ((11, 0.89, 265), (3095, _D, 150864)),
                  "perceptron": ((69, 0.06, 64028), (78, 0.01, 170119)),
                  "alma": ((79, _D, _D), (329, _D, _D))},
            0.25: {"romma": ((577, _D, _D), (9531, _D, _D)),
                   "aromma": ((221, 0.56, 12282), (4851, _D, _D)),
                   "perceptron": ((72, 0.16, 60814), (122, _D, _D)),
                   "alma": ((695, 0.64, 23099), (2142, 0.36, 45381))},
            0.5: {"romma": ((2039, _D, _D), (13052, _D, _D)),
                  "aromma": ((807, 0.07, 39063), (7292, _D, _D)),
                  "perceptron": ((70, 0.00, 47354), (56, 0.03, 24953)),
                  "alma": ((2685, 0.28, 57793), (7999, 0.01, 135655))},
            0.75: {"romma": ((4140, _D, _D), (16850, _D, _D)),
                   "aromma": ((1829, _D, 89998), (10124, _D, _D)),
                   "perceptron": ((138, _D, _D), (82, 0.01, 52263)),
                   "alma": ((5926, _D, _D), (14866, _D, _D))},
            1.0: {"romma": ((6653, _D, _D), (20737, _D, _D)),
                  "aromma": ((3176, _D, 160346), (13393, _D, _D)),
                  "perceptron": ((84, 0.09, 45807), (46, 0.05, 20579)),
                  "alma": ((9812, _D, _D), (23840, _D, _D))}}
    same1 = {"omm-naive": (4, 1.00, 70), "ce-omm": (21, 0.05, 16808), "omm": (6, 0.84, 534),
             "pumma": (9, 0.68, 584)}
    same5 = dict(same1, omm=(6, 0.93, 534), pumma=(9, 0.88, 584))
    for table, same in ((one, same1), (five, same5)):
        for rows in table.values():
            rows.update({r: (v, v) for r, v in same.items()})
    return one, five


PAPER_ONE, PAPER_FIVE = _paper_tables()
TABLE_RULES = ["omm-naive", "ce-omm", "omm", "romma", "aromma", "pumma", "perceptron", "alma"]
SMOKE_ROWS = 3000
# The ROMMA family learns its bias through a constant coordinate of -Dbar
# (Li and Long, seed 004 App. B.3), which needs Dbar in advance.
ROMMA_FAMILY = {"romma", "aromma", "naromma"}


# ---------------------------------------------------------------- the data

def data_dir():
    """$ADULT_DIR, else ../shared/data/adult beside the repository, else
    /work/shared/data/adult; exits if none holds adult.data and adult.test."""
    for d in [os.environ.get("ADULT_DIR"),
              os.path.join(os.path.dirname(common.ROOT), "shared", "data", "adult"),
              "/work/shared/data/adult"]:
        if d and all(os.path.exists(os.path.join(d, f)) for f in ("adult.data", "adult.test")):
            return d
    sys.exit(MISSING)


MISSING = ("adult: no adult.data and adult.test found: set ADULT_DIR to their directory "
           "(UCI Adult, https://doi.org/10.24432/C5XW20, with a CSV header line)")


def unavailable():
    """Why this experiment cannot run here (None: it can)."""
    try:
        data_dir()
    except SystemExit:
        return MISSING
    return None


def load_rows(directory):
    """The rows of adult.data then adult.test, in file order, as dicts, less
    those with a missing value ('?').  adult.test's labels end with '.'."""
    rows = []
    for name in ("adult.data", "adult.test"):
        with open(os.path.join(directory, name), newline="") as f:
            for row in csv.DictReader(f, skipinitialspace=True):
                row = {k.strip(): (v or "").strip() for k, v in row.items()}
                if all(row.values()) and "?" not in row.values():
                    rows.append(row)
    return rows


def encode(rows):
    """(X, y): numeric columns as they are, each categorical column with k
    levels as k-1 dummies (the alphabetically first level dropped, as pandas'
    drop_first does), then every column standardised (mean 0, sd 1)."""
    columns = []
    for key in rows[0]:
        if key == LABEL:
            continue
        values = [r[key] for r in rows]
        if key in NUMERIC:
            columns.append(np.array(values, dtype=float)[:, None])
        else:
            levels = sorted(set(values))
            index = {v: i for i, v in enumerate(levels)}
            onehot = np.zeros((len(values), len(levels)))
            onehot[np.arange(len(values)), [index[v] for v in values]] = 1.0
            columns.append(onehot[:, 1:])
    X = np.hstack(columns)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.array([1 if r[LABEL].rstrip(".") == ">50K" else -1 for r in rows])
    return X, y


def svm_keep(X, y, class_weight):
    """B.1: the points a linear SVM classifies correctly and puts at least
    SVM_DISTANCE (Euclidean) from its hyperplane."""
    import warnings
    from sklearn.svm import LinearSVC
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svm = LinearSVC(C=1.0, dual=False, class_weight=class_weight, max_iter=5000).fit(X, y)
    distance = y * svm.decision_function(X) / np.linalg.norm(svm.coef_)
    return distance >= SVM_DISTANCE


def max_margin(X, y):
    """The hard-margin SVM, min ||w||^2/2 s.t. y_i (w.x_i + b) >= 1, solved
    in the primal (d + 1 variables) with cvxopt.  Returns the unit-norm
    (w*, b*), the margin gamma and the certificates v+, v- (Lemma 3.1): the
    nearest points of the two hulls, the dual weights normalised per class."""
    from cvxopt import matrix, solvers
    n, d = X.shape
    P = np.zeros((d + 1, d + 1))
    P[:d, :d] = np.eye(d)
    G = -y[:, None] * np.hstack([X, np.ones((n, 1))])
    solvers.options.update({"show_progress": False, "abstol": 1e-10, "reltol": 1e-10,
                            "feastol": 1e-10, "maxiters": 200})
    sol = solvers.qp(matrix(P), matrix(np.zeros(d + 1)), matrix(G), matrix(-np.ones(n)))
    wb = np.array(sol["x"]).ravel()
    alpha = np.maximum(np.array(sol["z"]).ravel(), 0.0)
    norm = np.linalg.norm(wb[:d])
    w, b = wb[:d] / norm, wb[d] / norm
    gamma = float(np.min(y * (X @ w + b)))  # the margin this (w, b) has exactly
    vp = alpha[y > 0] @ X[y > 0] / alpha[y > 0].sum()
    vn = alpha[y < 0] @ X[y < 0] / alpha[y < 0].sum()
    return w, b, gamma, vp, vn


def diameter(P, block=1024):
    """max ||p - q|| over the rows of P, exactly: a point far from every other
    is near the top of ||p - c|| + max ||q - c|| (c the centroid), so points are
    tried in that order, a block at a time (one matrix product), until the
    bound cannot beat the best pair found."""
    c = P.mean(axis=0)
    r = np.linalg.norm(P - c, axis=1)
    order = np.argsort(-r)
    sq = np.einsum("ij,ij->i", P, P)
    best2 = 0.0
    for k in range(0, len(order), block):
        rows = order[k:k + block]
        if r[rows[0]] + r[order[0]] <= math.sqrt(best2):
            break
        d2 = sq[:, None] + sq[rows][None, :] - 2.0 * (P @ P[rows].T)
        best2 = max(best2, float(d2.max()))
    return math.sqrt(max(best2, 0.0))


def prepare(smoke=False):
    """Everything of B.1 and B.2 up to the margin normalisation: X (margin 1,
    b* as it comes), y, w*, b*, the certificates and the data's figures."""
    directory = data_dir()
    rows = load_rows(directory)
    X, y = encode(rows)
    raw = {"rows_complete": len(rows), "d": X.shape[1]}
    if smoke:
        X, y = X[:SMOKE_ROWS], y[:SMOKE_ROWS]
    keep = svm_keep(X, y, SVM_CLASS_WEIGHT)
    if not smoke:  # the unweighted SVM's result, for the report
        other = svm_keep(X, y, None)
        raw["svm_unweighted"] = {"n": int(other.sum()),
                                 "positive_pct": 100.0 * float((y[other] > 0).mean())}
    X, y = X[keep], y[keep]
    w, b, gamma, vp, vn = max_margin(X, y)
    # B.2 (i): x -> x + zeta y w* with zeta = 1 - gamma: the margin becomes 1,
    # (w*, b*) and the class diameters stay, the certificates move with their class.
    zeta = 1.0 - gamma
    X = X + zeta * y[:, None] * w
    vp, vn = vp + zeta * w, vn - zeta * w
    D = max(diameter(X[y > 0]), diameter(X[y < 0]))
    info = dict(raw, n=len(y), positive_pct=100.0 * float((y > 0).mean()), gamma_raw=gamma,
                b_star=float(b), D=D, svm_class_weight=SVM_CLASS_WEIGHT,
                certificate_gap=float(np.linalg.norm(vp - vn) / 2))
    return X, y, w, b, vp, vn, info


def variant(X, y, w, vp, vn, theta, zero_bias):
    """B.2 (ii) and (iii): translate by -(v+ + v-)/2 if zero_bias (b* becomes
    0), then by theta times the component of the longest point orthogonal to
    w* (Dbar grows, (w*, b*), gamma* and D stay)."""
    if zero_bias:
        X = X - (vp + vn) / 2
    longest = X[np.argmax(np.einsum("ij,ij->i", X, X))]
    return X + theta * (longest - (longest @ w) * w)


# ---------------------------------------------------------------- the rules

def spec(rule, d, dbar, zero_bias):
    """The create spec: each rule's defaults (ALMA's are seed 004 App. B.3's:
    alpha = 1 - phi = 0.7, B = sqrt(8)/alpha, C = sqrt(2)).  App. B.3 gives
    the homogeneous rules a bias only "to handle the case of b* != 0": a
    constant coordinate of 1, or of -Dbar for the ROMMA family (Li and Long).
    So they run without one where b* = 0, as the paper's left column does.
    The OMM rules always learn their own b (the bias flag means nothing to them)."""
    s = {"rule": rule, "dim": d, "bias": not zero_bias}
    if rule == "ce-omm":
        s.update(rule="omm", params={"rho": 0.0})
    if rule in ROMMA_FAMILY and not zero_bias:
        s["bias_value"] = -dbar
    return s


def whole_set_margin(client, model, X, y):
    """min_i y_i (w.x_i + b) / ||w|| of the current classifier, from its
    weights (numpy does the n dot products); -inf while w = 0.  The intercept
    is the score of the empty example: info's bias is the bias weight, which
    for winnow leaves out the threshold theta its score subtracts."""
    norm = client.info(model)["learners"][0]["norm"]
    if not norm:
        return float("-inf")
    w = np.zeros(X.shape[1])
    for e in client.weights(model, None, X.shape[1]):
        w[e["index"]] = e["weight"]
    intercept = client.predict(model, {})["score"]
    return float(np.min(y * (X @ w + intercept)) / norm)


def label_all(client, model, xs, ys):
    """Streams the examples (pipelined); (mistake, updated) per example."""
    return [(bool(a["mistake"]), bool(a["updated"]))
            for a in common.pipelined(client, "label", model, zip(xs, ys))]


def exact_tau(client, rule, sp, X, y, xs, ys, lo, hi):
    """tau inside the grid window (lo, hi] that ends positive: a fresh model
    replays the first lo examples, then checks after each update."""
    model = rule + ".tau"
    client.create(model, **sp)
    label_all(client, model, xs[:lo], ys[:lo])
    tau = first_positive(client, model, X, y, xs, ys, lo, hi)[1]
    client.drop(model)
    return tau


def first_positive(client, model, X, y, xs, ys, lo, hi):
    """Labels examples lo..hi-1 one at a time, checking the margin on the
    whole set after each update (the classifier changes only there); returns
    the steps and the first example after which the margin is positive, or
    None.  The exact tau, at the price of one round trip per example."""
    steps = []
    for t in range(lo, hi):
        steps += label_all(client, model, xs[t:t + 1], ys[t:t + 1])
        if steps[-1][1] and whole_set_margin(client, model, X, y) > 0:
            return steps, t + 1
    return steps, None


def run_rule(client, rule, X, y, xs, ys, dbar, zero_bias, exact):
    """One pass in order: the mistakes, tau (the first example after which
    the classifier has a positive margin on the whole set, None if never),
    the final margin on the whole set and the learner's info.  exact: tau is
    checked after every update, and the final margin comes from the
    daemon's predict_batch scores; otherwise tau is looked for every GRID
    examples and pinned down inside the first window that ends positive, so
    a positive margin that comes and goes between grid points is missed."""
    model = rule  # one model at a time, named after its rule
    sp = spec(rule, X.shape[1], dbar, zero_bias)
    client.create(model, **sp)
    steps, tau, window = [], None, None
    start = time.time()
    if exact:
        steps, tau = first_positive(client, model, X, y, xs, ys, 0, len(xs))
    for i in range(len(steps), len(xs), GRID):
        steps += label_all(client, model, xs[i:i + GRID], ys[i:i + GRID])
        if not exact and window is None and whole_set_margin(client, model, X, y) > 0:
            window = (i, len(steps))
    seconds = time.time() - start
    learner = client.info(model)["learners"][0]
    if exact:  # the daemon's own scores, as a client would see them
        s = np.array(common.scores(client, model, xs))
        margin = float(np.min(y * s) / learner["norm"]) if learner["norm"] else None
    else:
        margin = whole_set_margin(client, model, X, y)
    client.drop(model)
    if window:
        tau = exact_tau(client, rule, sp, X, y, xs, ys, *window)
    return {"mistakes": sum(m for m, _ in steps), "tau": tau, "margin": margin,
            "mistake_at": [t + 1 for t, (m, _) in enumerate(steps) if m],
            "gamma_t": learner["margin"], "updates": learner["updates"],
            "note": learner["note"], "bias": sp["bias"], "seconds": seconds}


def run_variant(X, y, rules, zero_bias, exact_margin, done=None):
    dbar = float(np.max(np.linalg.norm(X, axis=1)))
    xs, ys = X.tolist(), [int(v) for v in y]  # once for every rule
    out = {}
    with common.Daemon() as d:
        client = d.client()
        for rule in rules:
            if done and rule in done and rule not in INVARIANT:
                out[rule] = done[rule]
                continue
            out[rule] = run_rule(client, rule, X, y, xs, ys, dbar, zero_bias, exact_margin)
            print("adult: %-10s %6d mistakes  tau %-6s margin %-10.4g %.1fs"
                  % (rule, out[rule]["mistakes"], out[rule]["tau"], out[rule]["margin"],
                     out[rule]["seconds"]), file=sys.stderr, flush=True)
    return out, dbar


def run_passes(X, y, rules, zero_bias, orders):
    """Table 4: each rule makes len(orders) passes, pass k in order orders[k]:
    the mistakes of all passes, tau (the first example, counted over the
    passes, after which the classifier has a positive margin on the whole
    set; looked for every GRID examples, so up to GRID late), the final
    margin and the time."""
    dbar = float(np.max(np.linalg.norm(X, axis=1)))
    xs, ys = X.tolist(), [int(v) for v in y]
    out = {}
    with common.Daemon() as d:
        client = d.client()
        for rule in rules:
            model = rule + ".passes"
            client.create(model, **spec(rule, X.shape[1], dbar, zero_bias))
            mistakes, seen, tau, start = 0, 0, None, time.time()
            for order in orders:
                px, py = [xs[i] for i in order], [ys[i] for i in order]
                for i in range(0, len(px), GRID):
                    steps = label_all(client, model, px[i:i + GRID], py[i:i + GRID])
                    mistakes += sum(m for m, _ in steps)
                    seen += len(steps)
                    if tau is None and whole_set_margin(client, model, X, y) > 0:
                        tau = seen
            seconds = time.time() - start
            out[rule] = {"mistakes": mistakes, "tau": tau, "seconds": seconds,
                         "margin": whole_set_margin(client, model, X, y)}
            client.drop(model)
            print("adult: %d passes %-10s %6d mistakes  tau %-7s margin %-10.4g %.1fs"
                  % (len(orders), rule, mistakes, tau, out[rule]["margin"], seconds),
                  file=sys.stderr, flush=True)
    return out


def run_orders(X, y, zero_bias, rules, runs):
    """The Table 4 passes of each rule over `runs` sets of PASSES orders, the
    mistakes of each pass only (no tau: the margin checks are what costs):
    {rule: [[mistakes of pass 1..PASSES] per set of orders]}."""
    dbar = float(np.max(np.linalg.norm(X, axis=1)))
    xs, ys = X.tolist(), [int(v) for v in y]
    out = {rule: [] for rule in rules}
    with common.Daemon() as d:
        client = d.client()
        for k in range(runs):
            rng = np.random.RandomState(PASS_SEED + 1 + k)
            orders = [rng.permutation(len(y)) for _ in range(PASSES)]
            for rule in rules:
                model = "%s.orders" % rule
                client.create(model, **spec(rule, X.shape[1], dbar, zero_bias))
                per_pass = []
                for order in orders:
                    steps = label_all(client, model, [xs[i] for i in order], [ys[i] for i in order])
                    per_pass.append(sum(m for m, _ in steps))
                out[rule].append(per_pass)
                client.drop(model)
    return out


def run_order_study():
    """`adult.py --orders`: the order study into eval/results/adult.json,
    the rest of it kept."""
    results = common.load_json("adult")
    X0, y, w, b, vp, vn, data = prepare(False)
    t0 = time.time()
    study = {}
    for zero_bias in (False, True):
        for theta in PASS_THETAS:
            X = variant(X0, y, w, vp, vn, theta, zero_bias)
            study[variant_name(theta, zero_bias)] = run_orders(X, y, zero_bias, ORDER_RULES,
                                                                ORDER_RUNS)
            print("adult: orders %s %s" % (variant_name(theta, zero_bias), {
                r: sorted(sum(p) for p in v) for r, v in study[variant_name(theta, zero_bias)].items()}),
                file=sys.stderr, flush=True)
    results["orders"] = {"runs": ORDER_RUNS, "seed": PASS_SEED + 1, "seconds": time.time() - t0,
                         "variants": study}
    results.pop("meta", None)
    common.save_json("adult", results)
    return results


def order_table(results):
    """Table 4's perceptron over many sets of pass orders: median, range, and
    the two modes (orders whose five passes end separating the data make a
    few hundred mistakes at most; the others about two thousand a pass)."""
    o = results.get("orders")
    if not o:
        return []
    rows = []
    for theta in THETAS:
        for zero_bias in (True, False):
            name = variant_name(theta, zero_bias)
            for rule, runs in o["variants"].get(name, {}).items():
                totals = sorted(sum(p) for p in runs)
                low = [t for t in totals if t < 2000]
                high = [p for p in runs if sum(p) >= 2000]
                ours = results.get("passes", {}).get(name, {}).get(rule, {}).get("mistakes")
                paper = (PAPER_FIVE.get(theta, {}).get(rule, (None, None))[0 if zero_bias else 1]
                         or (None,))[0]
                rows.append(["%g" % theta, "b*=0" if zero_bias else "b*", rule,
                             "-" if ours is None else ours, "-" if paper is None else paper,
                             "%d" % statistics.median(totals), "%d - %d" % (totals[0], totals[-1]),
                             "%d of %d" % (len(low), len(totals)),
                             "-" if not high else "%d" % statistics.median([p[-1] for p in high])])
    modes = []
    for name, v in o["variants"].items():
        runs = v.get("perceptron", [])
        high = [p for p in runs if sum(p) >= 2000]
        low = [p for p in runs if sum(p) < 2000]
        if high and low:
            modes.append(
                "%s: in the %d set(s) of orders of the high mode the first pass makes %d to %d mistakes and "
                "each pass after it fewer (the fifth %d to %d): a slow convergence, not a failure; "
                "in the %d of the low mode the first pass makes %d to %d and the four others %d at "
                "most in all." % (name, len(high), min(p[0] for p in high), max(p[0] for p in high),
                                  min(p[-1] for p in high), max(p[-1] for p in high), len(low),
                                  min(p[0] for p in low), max(p[0] for p in low),
                                  max(sum(p[1:]) for p in low)))
    explain = []
    if modes:
        explain = ["The two modes. " + " ".join(modes) + (
            " Which mode a run is in shows in its first pass; the rule is right in both (issue 26 "
            "checked the daemon against an independent numpy perceptron, step for step, on the "
            "same orders). "
            "So the paper's single figure (84 at theta = 1, b* = 0) and our first draw (10,850) "
            "are each one sample of a two-valued outcome, and the median over orders, with its "
            "range, is the figure to compare."), ""]
    return ["Table 4's perceptron over %d other sets of five pass orders (seeds %d on): its count "
            "at theta = 1, b* = 0 (10,850 in Table 4's draw, 84 in the paper) is two-valued "
            "over orders, so one draw beside the paper's figure says little. `low` counts the "
            "sets of orders with fewer than 2,000 mistakes in all; `last pass` is the median "
            "mistakes of the fifth pass over the others."
            % (o["runs"], o["seed"]), "",
            common.markdown_table(["theta", "variant", "rule", "Table 4 draw", "paper",
                                   "median", "range", "low", "last pass (high)"], rows), ""] + explain


def variant_name(theta, zero_bias):
    return "theta=%g,%s" % (theta, "b*=0" if zero_bias else "b*")


# ---------------------------------------------------------------- run, report

def run(smoke=False, out_dir=None, reuse=False):
    t0 = time.time()
    old = common.load_json("adult") if reuse else {"variants": {}}
    X0, y, w, b, vp, vn, data = prepare(smoke)
    data["prepare_seconds"] = time.time() - t0
    rules = SMOKE_RULES if smoke else RUN_RULES
    thetas = [0.0, 1.0] if smoke else THETAS
    results = {"data": data, "paper": PAPER_DATA, "grid_translated": GRID,
               "smoke": smoke, "variants": {}, "passes": {}}
    rng = np.random.RandomState(PASS_SEED)
    orders = [rng.permutation(len(y)) for _ in range(2 if smoke else PASSES)]
    pass_rules = ["omm", "pumma"] if smoke else [r for r in TABLE_RULES if r != "omm-naive"]
    t_passes = 0.0
    for zero_bias in (False, True):
        for theta in thetas:
            X = variant(X0, y, w, vp, vn, theta, zero_bias)
            main = theta == 0.0
            print("adult: variant %s" % variant_name(theta, zero_bias), file=sys.stderr)
            runs, dbar = run_variant(X, y, rules, zero_bias, main,
                                     old["variants"].get(variant_name(theta, zero_bias), {}).get("rules"))
            bias = b + w @ (vp + vn) / 2 if zero_bias else b  # b* after the translation
            results["variants"][variant_name(theta, zero_bias)] = {
                "theta": theta, "zero_bias": zero_bias, "Dbar": dbar,
                "Dbar_over_D": dbar / data["D"], "b_star": float(bias),
                "margin_star": float(np.min(y * (X @ w + bias))), "rules": runs}
            if theta in PASS_THETAS:
                t1 = time.time()
                results["passes"][variant_name(theta, zero_bias)] = run_passes(
                    X, y, pass_rules, zero_bias, orders)
                t_passes += time.time() - t1
    results["passes_seconds"] = t_passes
    results["seconds"] = time.time() - t0
    if reuse:  # the run that made the reused figures, and this one
        results["reused_from"] = old.get("reused_from") or {"seconds": old.get("seconds"),
                                                            "meta": old.get("meta")}
    check(results, smoke)
    plots(results, out_dir)
    plot_translations(results, out_dir)
    # The plots need every mistake's position at theta = 0 only; the other
    # variants' lists (9,000 entries for ROMMA at theta = 1) would make the JSON 3 MB.
    for v in results["variants"].values():
        if v["theta"] != 0:
            for r in v["rules"].values():
                r.pop("mistake_at", None)
    common.save_json("adult", results, out_dir)
    return results


def check(results, smoke):
    """What must hold whatever the run: the prepared data has margin 1 under
    (w*, b*) in every variant; the OMM rules (translation invariant, Remark
    3.4) make the same mistakes on every variant; in the smoke run e-OMM ends
    with a positive margin on the whole set."""
    for name, v in results["variants"].items():
        assert abs(v["margin_star"] - 1.0) < 1e-6, (name, v["margin_star"])
    for rule in INVARIANT:
        m = {name: v["rules"][rule]["mistakes"] for name, v in results["variants"].items()
             if rule in v["rules"]}
        assert len(set(m.values())) <= 1, (rule, m)
    if smoke:
        main = results["variants"][variant_name(0.0, False)]["rules"]
        assert main["omm"]["margin"] > 0, main["omm"]


# The rules seed 004 compares, for the translation plot (PA for contrast).
PLOT_TRANSLATED = ["perceptron", "romma", "aromma", "alma", "pa", "omm", "ce-omm", "omm-naive",
                   "pumma"]


def plots(results, out_dir):
    """Cumulative mistakes against examples at theta = 0, one PNG per b*.
    A mistake-free start is left off the log axis."""
    images = out_dir or common.IMAGES
    n = results["data"]["n"]
    for zero_bias, tag in ((False, "b"), (True, "b0")):
        v = results["variants"][variant_name(0.0, zero_bias)]
        curves = []
        for k, rule in enumerate(r for r in RUN_RULES if r in v["rules"]):
            at = v["rules"][rule]["mistake_at"]
            points = [(t, i + 1) for i, t in enumerate(at)] + ([(n, len(at))] if at else [])
            curves.append((rule, points, "with steps " + common.style(k)))
        common.plot_curves(os.path.join(images, "eval-adult-%s.png" % tag),
                           "Adult (seed 004), theta = 0, %s: cumulative mistakes, one pass"
                           % ("b* = 0" if zero_bias else "b* = %.4f" % v["b_star"]),
                           curves, "examples", "cumulative mistakes", logy=True)


def plot_translations(results, out_dir):
    """Mistakes against theta for the rules seed 004 compares: solid with b*
    kept, dashed with b* = 0."""
    curves = []
    for k, rule in enumerate(PLOT_TRANSLATED):
        for zero_bias in (False, True):
            points = [(t, max(1, x["rules"][rule]["mistakes"])) for t in THETAS
                      for x in [results["variants"].get(variant_name(t, zero_bias))]
                      if x and rule in x["rules"]]
            if points:
                curves.append((rule + (", b*=0" if zero_bias else ""), points,
                               "with linespoints " + common.style(k, zero_bias)))
    common.plot_curves(os.path.join(out_dir or common.IMAGES, "eval-adult-translations.png"),
                       "Adult (seed 004 App. B.2): mistakes in one pass against theta",
                       curves, "theta", "mistakes", logy=True)


def fmt(x, digits=2):
    """A table cell: '-' for None (the paper's dash) and for -inf (w = 0)."""
    if x is None or (isinstance(x, float) and math.isinf(x)):
        return "-"
    return "%.*f" % (digits, x) if isinstance(x, float) else str(x)


def report(results):
    data, paper = results["data"], results["paper"]
    out = ["## Adult (seed 004, Section 6 and App. B)", ""]
    out.append(common.markdown_table(
        ["", "ours", "seed 004"],
        [["points after the SVM filter", data["n"], paper["n"]],
         ["dimension d", data["d"], paper["d"]],
         ["positive (%)", "%.2f" % data["positive_pct"], paper["positive_pct"]],
         ["D = max(D+, D-)", "%.2f" % data["D"], "%.2f" % paper["D"]],
         ["b* (unit w*)", "%.4f" % data["b_star"], paper["b_star"]],
         ["Dbar/D, theta 0, b*", "%.4f" % results["variants"][variant_name(0, False)]["Dbar_over_D"],
          paper["Dbar_over_D_b"]],
         ["Dbar/D, theta 0, b* = 0", "%.4f" % results["variants"][variant_name(0, True)]["Dbar_over_D"],
          paper["Dbar_over_D_b0"]]]))
    out += ["", "Table 2 beside ours (theta = 0, one pass in file order; m mistakes, "
            "margin of the final classifier on the whole set, tau the first example after which "
            "it is positive on the whole set, '-' never).  Paper: m / margin / tau, "
            "its dash meaning no positive margin.", ""]
    rows = []
    v0 = results["variants"][variant_name(0, True)]["rules"]
    vb = results["variants"][variant_name(0, False)]["rules"]
    for rule in [r for r in RUN_RULES if r in v0]:  # the JSON sorts its keys
        p = PAPER.get(rule)
        cells = [rule + (" (%s)" % p[0] if p else "")]
        for k, runs in ((1, v0), (2, vb)):
            r = runs[rule]
            cells += [r["mistakes"], fmt(r["margin"]), fmt(r["tau"]),
                      "%d / %s / %s" % (p[k][0], fmt(p[k][1]), fmt(p[k][2])) if p else ""]
        rows.append(cells)
    out.append(common.markdown_table(
        ["rule", "m (b*=0)", "margin", "tau", "paper (b*=0)",
         "m (b*=%.4f)" % data["b_star"], "margin", "tau", "paper (b*=-0.2848)"], rows))
    gammas = ["%s %.4f" % (PAPER[r][0], v0[r]["gamma_t"]) for r in OMM_RULES
              if r in v0 and v0[r]["gamma_t"] is not None]
    if gammas:
        out += ["", "The OMM rules' own margin gamma_t (`info`) at the end, b* = 0: %s; Lemma 4.1 "
                "says gamma_t >= gamma* = 1." % ", ".join(gammas)]
    out += ["", "![Adult, b* = 0](img/eval-adult-b0.png)", "",
            "![Adult, b* as it comes](img/eval-adult-b.png)", "",
            "![Adult, mistakes against theta](img/eval-adult-translations.png)", "",
            "(The plot against theta shows the rules seed 004 compares, and PA; the table below "
            "has all of them.)", ""]
    # translations
    names = [variant_name(t, zb) for zb in (False, True) for t in THETAS
             if variant_name(t, zb) in results["variants"]]
    rules = [r for r in RUN_RULES if r in results["variants"][names[0]]["rules"]]
    out += ["Mistakes on the ten variants of App. B.2 (theta, b* kept or moved to 0); "
            "a row that does not change is a translation-invariant rule.", ""]
    rows = []
    for rule in rules:
        rows.append([rule] + [results["variants"][n]["rules"].get(rule, {}).get("mistakes")
                              for n in names])
    out.append(common.markdown_table(["rule"] + names, rows))
    out += ["", "Dbar/D per variant: " + ", ".join(
        "%s %.3f" % (n, results["variants"][n]["Dbar_over_D"]) for n in names), ""]
    out += paper_tables(results)
    out += discussion(results)
    return "\n".join(out) + "\n"


def mgt(r):
    """m / margin / tau of a run or of a paper triple, '-' for a dash."""
    if r is None:
        return ""
    if isinstance(r, dict):
        r = (r["mistakes"], r["margin"] if r["margin"] is not None and r["margin"] > 0 else None,
             r["tau"])
    return "%s / %s / %s" % (r[0], fmt(r[1]), fmt(r[2]))


def paper_tables(results):
    """Seed 004's Tables 3 and 4 (every theta; one pass, then five) beside
    ours, for the rules it runs.  Our margin is shown as '-' when it is not
    positive, as the paper's dash."""
    out = []
    v, p = results["variants"], results.get("passes", {})
    for title, paper, runs_of in (
            ("Table 3 (App. B.4): one pass in file order, every variant", PAPER_ONE,
             lambda name: v[name]["rules"]),
            ("Table 4 (App. B.4): %d passes, each in a new random order (the same orders for "
             "every rule and variant), n-OMM one pass; tau counted over the passes and looked for "
             "every %d examples" % (PASSES, GRID), PAPER_FIVE,
             lambda name: dict(p.get(name, {}), **{"omm-naive": v[name]["rules"].get("omm-naive")}))):
        rows = []
        for theta in THETAS:
            n0, nb = variant_name(theta, True), variant_name(theta, False)
            if n0 not in v or nb not in v:
                continue
            r0, rb = runs_of(n0), runs_of(nb)
            for rule in TABLE_RULES:
                if rule not in r0 or r0[rule] is None:
                    continue
                pp = paper[theta].get(rule, (None, None))
                rows.append(["%g" % theta, rule, mgt(r0[rule]), mgt(pp[0]), mgt(rb.get(rule)),
                             mgt(pp[1])])
        if rows:
            out += ["%s: m / margin / tau, ours beside the paper's." % title, "",
                    common.markdown_table(["theta", "rule", "ours b*=0", "paper b*=0", "ours b*",
                                           "paper b*=-0.2848"], rows), ""]
    if p:
        out += ["The five passes took %.0f s for the %d variants."
                % (results.get("passes_seconds", 0), len(p)), ""]
    out += order_table(results)
    if results.get("reused_from"):
        out += ["(This run reused the one-pass figures of an earlier full run, %s s, for the rules "
                "it had but the OMM rules and PUMMA, which ran again with the passes: %.0f s in all.)"
                % ("%.0f" % results["reused_from"]["seconds"] if results["reused_from"].get("seconds")
                   else "?", results["seconds"]), ""]
    return out


def discussion(results):
    """Why our figures differ from Table 2, with the numbers of this run."""
    data, v = results["data"], results["variants"]
    b0, bb = v[variant_name(0, True)]["rules"], v[variant_name(0, False)]["rules"]
    unweighted = data.get("svm_unweighted", {})
    invariant = [r for r in b0 if len({x["rules"][r]["mistakes"] for x in v.values()
                                       if r in x["rules"]}) == 1]
    nomm = b0.get("omm-naive", {})
    lost = sorted("%s (%s)" % (r, n) for n, x in v.items() for r, run in x["rules"].items()
                  if run["tau"] is not None and run["margin"] <= 0)
    restarts = sorted({"%s (%s): %s" % (r, n, x["rules"][r]["note"]) for n, x in v.items()
                       for r in ("omm", "ce-omm") if r in x["rules"] and x["rules"][r]["note"]})

    def m(runs, rule, key="mistakes"):  # a figure, or '?' where the rule did not run
        x = runs.get(rule, {}).get(key)
        return "?" if x is None else ("%.3g" % x if isinstance(x, float) else x)
    return ["### Discussion", "",
            "**The data.** App. B.1 names \"a linear support vector classifier\" and nothing "
            "else: not its C, its loss or its class weights, and they decide which points go.  "
            "sklearn's LinearSVC with its defaults keeps %s points of which %.2f%% are positive, "
            "far from the paper's 35,508 and 27.11%%; with class_weight=balanced it keeps %d "
            "(%.2f%%), which we use.  The rest agrees closely: d = %d, D = %.2f (paper 220.43), "
            "Dbar/D = %.4f and %.4f (0.9658, 0.9666), because both are set by a few extreme "
            "points, chiefly the one Holand-Netherlands row, whose standardised dummy is "
            "sqrt(45,222) = 212.7.  b* = %.4f (paper -0.2848) for a unit w*.  So our stream has "
            "%+d points against the paper's, near the boundary, in the same file order, "
            "and mistake counts of a few dozen may move by several: they are the figures of one "
            "particular sequence, not expectations."
            % (unweighted.get("n", "?"), unweighted.get("positive_pct", float("nan")), data["n"],
               data["positive_pct"], data["d"], data["D"],
               v[variant_name(0, False)]["Dbar_over_D"], v[variant_name(0, True)]["Dbar_over_D"],
               data["b_star"], data["n"] - PAPER_DATA["n"]), "",
            "**The OMM family** reproduces the paper within a mistake or two: e-OMM %s (paper 6), "
            "n-OMM %s (4), ce-OMM %s (21), and ce-OMM's tau %s against 16,808 (for a conservative "
            "rule tau is its last mistake).  The margins: e-OMM %s (0.84), n-OMM %s (1.00).  "
            "n-OMM keeps only the points that triggered an update (Alg. 1 line 20; %s), so its "
            "last classifier is the max-margin one of those points, gamma_t = %s >= gamma* = 1 "
            "(Lemma 4.1), and points passed earlier under older classifiers may sit a little "
            "inside that margin: the paper's \"solving the offline problem on the whole data set\" "
            "is true only up to that.  The daemon's n-OMM takes %.1f s for the pass against the "
            "paper's 76 s (a warm-started nearest-point solver in C against Mosek calls from Python)."
            % (m(b0, "omm"), m(b0, "omm-naive"), m(b0, "ce-omm"), m(b0, "ce-omm", "tau"),
               m(b0, "omm", "margin"), m(b0, "omm-naive", "margin"), nomm.get("note"),
               "%.4f" % nomm.get("gamma_t", float("nan")), nomm.get("seconds", 0)), "",
            "The OMM rules restart from scratch when the hulls of the two classes meet "
            "(non-separable data); on these separable data they %s."
            % ("never did" if not restarts else "did: " + "; ".join(restarts)), "",
            "**Translations.** Over the ten variants of App. B.2 the mistakes do not change for "
            "%s: the translation-invariant rules (Remark 3.4), and the run asserts it.  aromma and "
            "naromma agree on every variant, as seed 000's Theorem 7 says.  Every other rule "
            "degrades as theta grows, most the aggressive homogeneous ones (PA, ROMMA, a-ROMMA, "
            "ALMA, MCP: thousands of mistakes at theta = 1), least the Perceptron, as the paper "
            "observes (\"surprisingly stable\")." % ", ".join(invariant), "",
            "**The benchmarks at theta = 0.** App. B.3 adds a bias coordinate (1, or -Dbar for "
            "ROMMA) only to handle b* != 0, so in the b* = 0 column the homogeneous rules run "
            "without a bias, as the paper's do: that is what makes ROMMA and a-ROMMA good there "
            "(%s and %s mistakes; paper 38 and 11) and hopeless with the -Dbar coordinate "
            "(%s and %s; paper 4114 and 2643).  The Perceptron makes %s / %s (59 / 52), ALMA "
            "%s / %s (53 / 174), with ALMA at the paper's parameters (alpha = 0.7, B = sqrt(8)/alpha, "
            "C = sqrt(2)).  ROMMA ends with a margin of %s here after %s mistakes where the "
            "paper's reached 0.16 at example 28,065: the same order of mistakes, a different "
            "sequence.  PUMMA (delta = 0.01, App. B.3) makes %s / %s mistakes (paper 9 / 9), margin "
            "%s (0.68), tau %s (584), the same on every variant: translation invariant, as App. B.5 "
            "shows.  Rules seed 004 does not run are in the table "
            "for completeness, with their defaults: PA (C = 1; pa and pa1 coincide: their step "
            "l/||x||^2 evidently never reaches C here), MCP, Winnow (which, with its positive "
            "multiplicative weights, still separates the standardised data in one pass at "
            "theta = 0)." 
            % (m(b0, "romma"), m(b0, "aromma"), m(bb, "romma"), m(bb, "aromma"),
               m(b0, "perceptron"), m(bb, "perceptron"), m(b0, "alma"), m(bb, "alma"),
               m(b0, "romma", "margin"), m(b0, "romma"), m(b0, "pumma"), m(bb, "pumma"),
               m(b0, "pumma", "margin"), m(b0, "pumma", "tau")), "",
            "**Method.** One pass in file order (adult.data, then adult.test), progressive "
            "validation through the daemon's `label` answers.  The final margin is "
            "min y (w.x + b) / ||w|| over the whole set from the daemon's `predict_batch` scores and "
            "`info` norm (||w|| without the bias).  At theta = 0 tau is exact: the margin on the "
            "whole set is computed (from `weights` and the score of the empty example) after every "
            "update, until it is positive.  The margin need not stay positive once it is: %s "
            "reach a positive margin and end below zero.  In "
            "the theta > 0 variants tau (in the JSON only) is looked for every %d examples and "
            "pinned down inside the first window that ends positive, so it can be later than the "
            "exact one.  "
            "The run took %.0f s, %.0f s of it preparing the data (the SVM, the QP for (w*, b*) "
            "with cvxopt, the class diameters)."
            % (", ".join(lost) or "no rule here does, but other rules can", results["grid_translated"], results["seconds"],
               data["prepare_seconds"]), ""]


def main():
    if "--orders" in sys.argv[1:]:
        print("\n".join(order_table(run_order_study())))
        return
    smoke = "--smoke" in sys.argv[1:]
    out_dir = tempfile.mkdtemp(prefix="pcd-adult-") if smoke else None
    results = run(smoke=smoke, out_dir=out_dir, reuse="--reuse" in sys.argv[1:])
    print(report(results))
    print("adult: %.1f s%s" % (results["seconds"], " (smoke, results in %s)" % out_dir if smoke else ""),
          file=sys.stderr)


if __name__ == "__main__":
    main()
