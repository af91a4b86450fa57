#!/usr/bin/python3
"""datasets.py - the public data sets of eval/suite.py, as CSV files the way users have them.

The suite measures perceptrond (and Vowpal Wabbit, and the majority class) on
raw CSV files: no standardising, no one-hot encoding, no converter.  This file
keeps the one table of those data sets (DATASETS: one row each) and writes
each of them once to a cache directory (default build/eval-data/) as

    a header line with the original column names,
    numeric columns at their own scale, as the source writes them,
    categorical columns as text (missing values as the source writes them: '?', 'NA'),
    the label last, as text, in a column named `label`,
    the rows in the source's own order, except for sources sorted (or grouped)
    by class, which are shuffled ONCE with numpy's RandomState(0) (the row says so).

Every source ships with a Debian package or with scikit-learn: nothing is
downloaded at run time.  A source whose package is not installed is skipped
with a message naming the package.  Each row of DATASETS names its Debian
package; `datasets.py --packages` lists them, and eval/run.sh installs them
(.ci/deps has those the tests need: python3-sklearn, dataset-fashion-mnist).

(UCI Adult is not packaged: it comes from the project's shared/data/adult/, or
$PCD_SHARED/data/adult/.)

    /usr/bin/python3 eval/datasets.py [--dir DIR] [--refresh] [NAME...]
    /usr/bin/python3 eval/datasets.py --packages

writes the files and prints rows, columns and classes of each.
"""
import collections
import csv
import gzip
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, "build", "eval-data")
SEED = 0  # numpy RandomState seed of the one shuffle of class-sorted sources

SKLEARN_DATA = "/usr/lib/python3/dist-packages/sklearn"
STATSMODELS = "/usr/lib/python3/dist-packages/statsmodels/datasets"
PENGUINS = "/usr/lib/R/site-library/palmerpenguins/extdata/penguins.csv"
WEKA = "/usr/share/doc/weka/examples"
FASHION = "/usr/share/datasets/fashion-mnist"  # as eval/fashion.py reads it


class Missing(Exception):
    """A source that is not on this machine: the message says which package brings it."""


def need(path, package):
    if not os.path.exists(path):
        raise Missing("%s not found: install the Debian package %s" % (path, package))
    return path


# -- helpers ------------------------------------------------------------------

def number_text(v):
    """A number as the shortest text that reads back the same (repr), without
    a '.0' on integers: 5.1 stays 5.1, 16.0 becomes 16 (as the source CSVs write them)."""
    s = repr(float(v))
    return s[:-2] if s.endswith(".0") else s


def shuffled(rows):
    """The one shuffle of a source sorted by class: numpy RandomState(SEED)."""
    import numpy as np
    order = np.random.RandomState(SEED).permutation(len(rows))
    return [rows[i] for i in order]


def read_arff(path):
    """(attribute names, rows of text fields) of a Weka ARFF file.  Values are
    kept as written ('?' for a missing value); quotes are ARFF's single ones."""
    names, rows, data = [], [], False
    with open(path, encoding="latin-1") as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            if not data:
                low = s.lower()
                if low.startswith("@attribute"):
                    m = re.match(r"@attribute\s+('([^']*)'|\"([^\"]*)\"|(\S+))", s, re.I)
                    names.append(m.group(2) or m.group(3) or m.group(4))
                elif low.startswith("@data"):
                    data = True
                continue
            rows.append([v.strip() for v in
                         next(csv.reader([s], quotechar="'", skipinitialspace=True))])
    return names, rows


# -- loaders: each returns (header, rows), the label last ----------------------

def adult():
    """UCI Adult's adult.data, with the column names of adult.names."""
    dirs = [os.path.join(os.environ["PCD_SHARED"], "data", "adult")] if "PCD_SHARED" in os.environ else []
    dirs.append(os.path.join(ROOT, "..", "shared", "data", "adult"))
    for d in dirs:
        if os.path.exists(os.path.join(d, "adult.data")):
            break
    else:
        raise Missing("adult.data not found in %s (set $PCD_SHARED to the shared/ directory)"
                      % " or ".join(dirs))
    with open(os.path.join(d, "adult.names")) as f:  # "age: continuous." ...
        names = [m.group(1) for m in (re.match(r"^([a-z-]+): ", l) for l in f) if m]
    rows = []
    with open(os.path.join(d, "adult.data")) as f:
        for fields in csv.reader(f, skipinitialspace=True):
            # The shared copy has a header line of its own (underscored names): skipped,
            # adult.names' names are UCI's.
            if not fields or fields[0] == "age":
                continue
            rows.append([v.strip() for v in fields])
    return names + ["label"], rows


def fashion_mnist():
    """Fashion-MNIST's 60,000 training images: 784 pixel columns (0..255), the
    class name as the label; read as eval/fashion.py reads it."""
    import numpy as np
    need(FASHION, "dataset-fashion-mnist")
    names = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
             "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

    def idx(name, offset):
        with gzip.open(os.path.join(FASHION, name)) as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
    xs = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784)
    ys = idx("train-labels-idx1-ubyte.gz", 8)
    # pixel1..pixel784 as in Zalando's own CSV export of the set
    header = ["pixel%d" % (i + 1) for i in range(784)] + ["label"]
    return header, [[str(v) for v in x.tolist()] + [names[y]] for x, y in zip(xs, ys)]


def sklearn_set(loader, package="python3-sklearn"):
    """One of scikit-learn's bundled sets (no download): its feature names,
    the class names as labels."""
    def load():
        need(SKLEARN_DATA, package)
        import sklearn.datasets
        b = getattr(sklearn.datasets, loader)()
        names = [str(n) for n in (b.feature_names if hasattr(b, "feature_names") and
                                  b.feature_names is not None else range(b.data.shape[1]))]
        targets = [str(t) for t in b.target_names]
        rows = [[number_text(v) for v in x] + [targets[y]] for x, y in zip(b.data, b.target)]
        return names + ["label"], rows
    return load


def fair():
    """statsmodels' Fair (1978) affairs survey; the label is whether affairs > 0,
    statsmodels' own split in its "Discrete Choice Models" example."""
    path = need(os.path.join(STATSMODELS, "fair", "fair.csv"), "python3-statsmodels")
    with open(path) as f:
        r = csv.reader(f)
        header = next(r)
        rows = [row for row in r if row]
    k = header.index("affairs")
    # affairs itself is the label's source: kept out of the features
    out = [row[:k] + row[k + 1:] + ["affair" if float(row[k]) > 0 else "none"] for row in rows]
    return header[:k] + header[k + 1:] + ["label"], out


ANES_PID = ["Strong Democrat", "Weak Democrat", "Independent-Democrat",
            "Independent-Independent", "Independent-Republican", "Weak Republican",
            "Strong Republican"]


def anes96():
    """statsmodels' 1996 American National Election Study extract: party
    identification (PID, 7 classes, statsmodels' endog in its MNLogit example)
    from the other columns as the file has them."""
    path = need(os.path.join(STATSMODELS, "anes96", "anes96.csv"), "python3-statsmodels")
    with open(path) as f:
        lines = [l.split() for l in f if l.strip()]
    header = [h.strip("'\"") for h in lines[0]]
    k = header.index("PID")
    out = [row[:k] + row[k + 1:] + [ANES_PID[int(float(row[k]))]] for row in lines[1:]]
    return header[:k] + header[k + 1:] + ["label"], out


def penguins():
    """palmerpenguins' penguins.csv: species from island, bill, flipper, body
    mass, sex and year; 'NA' left as the file writes it."""
    with open(need(PENGUINS, "r-cran-palmerpenguins")) as f:
        r = csv.reader(f)
        header = next(r)
        rows = [row for row in r if row]
    k = header.index("species")
    return (header[:k] + header[k + 1:] + ["label"],
            [row[:k] + row[k + 1:] + [row[k]] for row in rows])


def weka(name):
    """One of the ARFF files Debian's weka ships as examples; the class is the
    last attribute."""
    def load():
        names, rows = read_arff(need(os.path.join(WEKA, name + ".arff"), "weka"))
        return names[:-1] + ["label"], rows
    return load


# -- the table ----------------------------------------------------------------

Dataset = collections.namedtuple("Dataset", "name loader description source package shuffle positive")

# name, loader, what it is, where it comes from, the Debian package (None: not
# packaged), shuffled once (the source is sorted by class), and for binary sets
# the class sent as +1 (--positive).
DATASETS = [
    Dataset("adult", adult,
            "income >50K from census: 6 numeric (fnlwgt up to 1.5M, capital-gain up to 99,999) "
            "and 8 categorical columns, '?' for missing",
            "UCI Adult adult.data (Becker and Kohavi 1996), shared/data/adult/", None, False, ">50K"),
    Dataset("fashion-mnist", fashion_mnist,
            "10 clothing classes from 28x28 grey images: 784 pixel columns 0..255",
            "Fashion-MNIST training set (Xiao et al. 2017), /usr/share/datasets/fashion-mnist",
            "dataset-fashion-mnist", False, None),
    Dataset("iris", sklearn_set("load_iris"),
            "3 iris species from 4 measurements in cm",
            "scikit-learn load_iris (Fisher 1936); sorted by class, shuffled once",
            "python3-sklearn", True, None),
    Dataset("wine", sklearn_set("load_wine"),
            "3 cultivars from 13 chemical measurements (proline ~300..1700 beside hue ~0.5..1.7)",
            "scikit-learn load_wine (UCI Wine); sorted by class, shuffled once",
            "python3-sklearn", True, None),
    Dataset("breast-cancer", sklearn_set("load_breast_cancer"),
            "malignant or benign from 30 cell-nucleus measurements (area ~100..4000 beside "
            "fractal dimension ~0.05)",
            "scikit-learn load_breast_cancer (UCI WDBC)", "python3-sklearn", False, "malignant"),
    Dataset("digits", sklearn_set("load_digits"),
            "10 digits from 8x8 images: 64 pixel columns 0..16",
            "scikit-learn load_digits (UCI optdigits test part)", "python3-sklearn", False, None),
    Dataset("fair", fair,
            "any extramarital affair (affairs > 0) from 8 survey answers, codes 1..6 and "
            "ages/years as numbers",
            "statsmodels datasets/fair/fair.csv (Fair 1978); sorted by class, shuffled once",
            "python3-statsmodels", True, "affair"),
    Dataset("anes96", anes96,
            "7-point party identification from 9 columns (population in 1000s up to 7300 "
            "beside 1..7 scales)",
            "statsmodels datasets/anes96/anes96.csv (ANES 1996)", "python3-statsmodels", False, None),
    Dataset("penguins", penguins,
            "3 penguin species: island and sex as text, bill in mm, body mass in g, 'NA' missing",
            "palmerpenguins extdata/penguins.csv (Horst et al. 2020); sorted by species, "
            "shuffled once", "r-cran-palmerpenguins", True, None),
    Dataset("credit-g", weka("credit-g"),
            "good or bad credit risk: 7 numeric (credit amount up to 18,424) and 13 "
            "categorical columns",
            "Weka examples credit-g.arff (Statlog German credit)", "weka", False, "bad"),
    Dataset("segment", weka("segment-challenge"),
            "7 outdoor image-region classes from 19 numeric features (-50..150 and 0..1)",
            "Weka examples segment-challenge.arff (UCI Image Segmentation)", "weka", False, None),
    Dataset("soybean", weka("soybean"),
            "19 soybean diseases from 35 categorical columns, '?' for missing",
            "Weka examples soybean.arff (Michalski and Chilausky 1980); grouped by class, "
            "shuffled once", "weka", True, None),
]

BY_NAME = {d.name: d for d in DATASETS}


def csv_path(name, cache=CACHE):
    return os.path.join(cache, name + ".csv")


def export(d, cache=CACHE, refresh=False):
    """Writes data set d to cache/NAME.csv (unless it is there and refresh is
    false) and returns its path; raises Missing when its source is not
    installed.  Written to a temporary name first, so an interrupted export
    leaves no half file behind that a later run would take for the whole."""
    path = csv_path(d.name, cache)
    if os.path.exists(path) and not refresh:
        return path
    header, rows = d.loader()
    if d.shuffle:
        rows = shuffled(rows)
    os.makedirs(cache, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        # minimal quoting (RFC 4180): only fields with a comma or a quote, which
        # perceptronctl's CSV reader unquotes
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, path)
    return path


def read_csv(path):
    """(header, rows) of an exported file, every field as text."""
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        return header, [row for row in r if row]


def label_counts(path):
    """The label column's classes in order of first appearance, with their counts."""
    counts = collections.Counter()
    with open(path, newline="") as f:
        r = csv.reader(f)
        k = next(r).index("label")
        for row in r:
            if row:
                counts[row[k]] += 1
    return counts


def main(argv):
    cache, refresh, names = CACHE, False, []
    it = iter(argv)
    for a in it:
        if a == "--packages":  # the Debian packages of the table, for eval/run.sh
            print("\n".join(sorted({d.package for d in DATASETS if d.package})))
            return
        if a == "--dir":
            cache = next(it)
        elif a == "--refresh":
            refresh = True
        else:
            names.append(a)
    for d in DATASETS:
        if names and d.name not in names:
            continue
        try:
            path = export(d, cache, refresh)
        except Missing as e:
            print("%-14s skipped: %s" % (d.name, e), file=sys.stderr)
            continue
        header, rows = read_csv(path)
        counts = label_counts(path)
        print("%-14s %6d rows %4d columns %3d classes  %s" % (
            d.name, len(rows), len(header) - 1, len(counts), d.package or "(shared/)"))


if __name__ == "__main__":
    main(sys.argv[1:])
