#!/usr/bin/env bash
# Regenerates the whole evaluation (docs/evaluation.md, docs/img/eval-*.png,
# eval/results/*.json): installs what the experiments need beyond the
# daemon's own packages, builds the daemon, runs every experiment.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps
need=()
for p in python3-numpy python3-sklearn gnuplot-nox dataset-fashion-mnist; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
exec /usr/bin/python3 eval/evaluate.py all
