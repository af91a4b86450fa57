#!/usr/bin/env bash
# Regenerates the whole evaluation (docs/evaluation.md, docs/img/eval-*.png,
# eval/results/*.json): installs the packages (.ci/deps lists the
# experiments' too: numpy, sklearn, cvxopt, gnuplot, Fashion-MNIST), builds
# the daemon, runs every experiment.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps
# the suite's data sets' packages (eval/datasets.py's table): a missing one is skipped
missing=$(/usr/bin/python3 eval/datasets.py --packages | while read -r p; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"; done)
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
exec /usr/bin/python3 eval/evaluate.py all
