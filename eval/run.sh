#!/usr/bin/env bash
# Regenerates the whole evaluation (docs/evaluation.md, docs/img/eval-*.png,
# eval/results/*.json): installs the packages (.ci/deps lists the
# experiments' too: numpy, sklearn, cvxopt, gnuplot, Fashion-MNIST), builds
# the daemon, runs every experiment.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
exec /usr/bin/python3 eval/evaluate.py all
