#!/usr/bin/env bash
# bench/storage_rules.sh - bench_rules in dense and sparse storage, A B A B
# ROUNDS times, then per rule and dimension the median examples per CPU
# second of each and the ratio sparse/dense.  Not a test.
#
#   bench/storage_rules.sh [ROUNDS] [SECONDS-PER-CELL] [rule...]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} secs=${2:-0.3}
shift $(( $# > 2 ? 2 : $# ))
br=${BENCH_RULES:-build/bench/bench_rules}
out=$(mktemp -d /tmp/pcd-storage.XXXXXX)
trap 'rm -rf "$out"' EXIT
uptime
for r in $(seq "$rounds"); do
  for s in dense sparse; do
    "$br" "$secs" --storage=$s "$@" | awk -v s=$s '/^# examples/ {t++} t == 1 && NF == 5 && $1 != "rule" {print s, $0}' >> "$out/rows"
  done
done
uptime
python3 - "$out/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    s, rule, *v = line.split()
    rows.setdefault((rule, s), []).append([float(x) for x in v])
dims = ["2^10", "2^16", "2^20", "2^24"]
print("# median examples per CPU second (uniform indices); sparse/dense")
print(f"{'rule':<12}" + "".join(f"{'dense ' + d:>14}{'sparse ' + d:>14}{'ratio':>7}" for d in dims[2:]))
for rule in dict.fromkeys(k[0] for k in rows):
    d = [statistics.median(c) for c in zip(*rows[(rule, "dense")])]
    sp = [statistics.median(c) for c in zip(*rows[(rule, "sparse")])]
    print(f"{rule:<12}" + "".join(f"{d[i]:>14.0f}{sp[i]:>14.0f}{sp[i] / d[i]:>7.2f}" for i in (2, 3)))
PY
