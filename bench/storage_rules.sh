#!/usr/bin/env bash
# bench/storage_rules.sh - bench_rules in dense and sparse storage, A B A B
# ROUNDS times, then per rule and dimension the median examples per CPU
# second of each and the ratio sparse/dense.  Not a test.
#
#   bench/storage_rules.sh [ROUNDS] [SECONDS-PER-CELL] [rule...]
#
# BENCH_RULES="old/bench_rules new/bench_rules" compares builds: each round
# runs every binary in turn (both storages each), and the table has a row
# per rule and binary, so a change is measured alternated with its parent.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} secs=${2:-0.3}
shift $(( $# > 2 ? 2 : $# ))
read -r -a bins <<< "${BENCH_RULES:-build/bench/bench_rules}"
out=$(mktemp -d /tmp/pcd-storage.XXXXXX)
trap 'rm -rf "$out"' EXIT
uptime
for r in $(seq "$rounds"); do
  for b in "${!bins[@]}"; do
    for s in dense sparse; do
      "${bins[$b]}" "$secs" --storage=$s "$@" |
        awk -v s=$s -v b=$b '/^# examples/ {t++} t == 1 && NF == 5 && $1 != "rule" {print b, s, $0}' >> "$out/rows"
    done
  done
done
uptime
python3 - "$out/rows" "${bins[@]}" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    b, s, rule, *v = line.split()
    rows.setdefault((rule, int(b), s), []).append([float(x) for x in v])
bins = sys.argv[2:]
dims = ["2^10", "2^16", "2^20", "2^24"]
print("# median examples per CPU second (uniform indices); sparse/dense")
for k, b in enumerate(bins) if len(bins) > 1 else []:
    print(f"# [{k}] {b}")
print(f"{'rule':<{12 if len(bins) == 1 else 16}}" + "".join(f"{'dense ' + d:>14}{'sparse ' + d:>14}{'ratio':>7}" for d in dims[2:]))
for rule in dict.fromkeys(k[0] for k in rows):
    for b in range(len(bins)):
        d = [statistics.median(c) for c in zip(*rows[(rule, b, "dense")])]
        sp = [statistics.median(c) for c in zip(*rows[(rule, b, "sparse")])]
        name = rule if len(bins) == 1 else f"{rule} [{b}]"
        print(f"{name:<{12 if len(bins) == 1 else 16}}" + "".join(f"{d[i]:>14.0f}{sp[i]:>14.0f}{sp[i] / d[i]:>7.2f}" for i in (2, 3)))
PY
