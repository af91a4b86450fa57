#!/usr/bin/env bash
# bench/join_ab.sh - two perceptrond binaries compared on label later, A B A B
# ..., ROUNDS times: each a fresh daemon (journal on, fsync everysec) and a
# fresh state directory, bench_join -P against it.  Every round's figures
# go in (bench_join's rounds alternate label and predict + label_event
# pairs), then the medians per side: the daemon's CPU time per label and per
# pair (from /proc: steadier than the wall clock on this shared machine),
# the wall rates, and the pair's throughput as a share of label's.  Not a
# test.
#
#   bench/join_ab.sh OLD_DAEMON NEW_DAEMON [ROUNDS] [-- bench_join options]
#   (default options: -n 250000 -r 2 -m 1)
set -euo pipefail
cd "$(dirname "$0")/.."
a=$1 b=$2 rounds=${3:-8}
shift 2; [ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-n 250000 -r 2 -m 1)
. bench/lib.sh
bench=build/bench/bench_join
pass_pid=1
re='^round [0-9]*: label \([0-9]*\) labels\/s .* \([0-9]*\) pairs\/s .*daemon CPU \([0-9.]*\) us\/label, \([0-9.]*\) us\/pair'
echo "# $(uptime)"
for r in $(seq "$rounds"); do
  for side in A B; do
    if [ $side = A ]; then run_once "$a" "" "${opts[@]}"; else run_once "$b" "" "${opts[@]}"; fi
    figure "$re" "$side \\3 \\4 \\1 \\2" | tee -a "$work/results"
  done
done
echo "# medians of every round, A = $a, B = $b ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
medians "$work/results" "CPU us/label" "CPU us/pair" labels/s pairs/s
python3 - "$work/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    side, *v = line.split()
    rows.setdefault(side, []).append([float(x) for x in v])
for side, v in rows.items():
    cl, cp, wl, wp = (statistics.median(c) for c in zip(*v))
    print(f"{side}: a pair at {100 * cl / cp:.1f} % of label's throughput by daemon CPU, "
          f"{100 * wp / wl:.1f} % by the wall clock")
PY
