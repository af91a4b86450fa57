#!/usr/bin/env bash
# bench/ab.sh - two perceptrond binaries compared as the guide asks: A B A B
# ..., ROUNDS times, each against a fresh state directory with the same
# config and the same bench_daemon, then the medians and the ratio B/A.
# This shared 2-core machine drifts by 10-30 %, so only alternation and
# medians say anything.  Not a test.
#
#   bench/ab.sh OLD_DAEMON NEW_DAEMON [ROUNDS] [-- bench_daemon options]
#   (CONFIG_A, CONFIG_B: YAML lines added to each side's config, e.g.
#    CONFIG_B="journal: {enabled: false}" against a binary that predates it)
set -euo pipefail
cd "$(dirname "$0")/.."
a=$1 b=$2 rounds=${3:-5}
shift 2; [ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-n 1000000 -p 20000 -s 0)
bench=build/bench/bench_daemon
work=$(mktemp -d /var/tmp/pcd-ab.XXXXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for r in $(seq "$rounds"); do
  for side in A B; do
    bin=$a extra=${CONFIG_A:-}
    [ $side = B ] && bin=$b extra=${CONFIG_B:-}
    rm -rf "$work/state"
    printf 'listen: {tcp: [], unix: ["%s/pcd.sock"]}\nstate_dir: %s/state\nsnapshot: {interval: 0}\n%s\n' \
      "$work" "$work" "$extra" > "$work/conf.yaml"
    "$bin" --config "$work/conf.yaml" 2> "$work/daemon.log" &
    pid=$!
    for _ in $(seq 100); do [ -S "$work/pcd.sock" ] && break; sleep 0.05; done
    $bench -a "unix:$work/pcd.sock" "${opts[@]}" > "$work/run.txt"
    kill $pid; wait $pid || true
    l=$(sed -n 's/^label requests.* = \([0-9]*\) labels\/s.*/\1/p' "$work/run.txt")
    n=$(sed -n 's/^label notifications.* = \([0-9]*\) labels\/s.*/\1/p' "$work/run.txt")
    bt=$(sed -n 's/^label_batch.* = \([0-9]*\) labels\/s.*/\1/p' "$work/run.txt")
    read -r p50 p99 < <(sed -n 's/^predict latency.*p50 \([0-9.]*\)  p99 \([0-9.]*\) .*/\1 \2/p' "$work/run.txt")
    echo "round $r $side: labels/s $l  notifications/s $n  label_batch/s $bt  predict p50 $p50 us p99 $p99 us"
    echo "$side $l $n $bt $p50 $p99" >> "$work/results"
  done
done
echo "# medians of $rounds rounds, A = $a, B = $b (load $(cut -d' ' -f1-3 /proc/loadavg))"
python3 - "$work/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    s, *v = line.split()
    rows.setdefault(s, []).append([float(x) for x in v])
med = {s: [statistics.median(c) for c in zip(*v)] for s, v in rows.items()}
names = ["labels/s", "notifications/s", "label_batch/s", "predict p50 us", "predict p99 us"]
for i, n in enumerate(names):
    print(f"{n:<16} A {med['A'][i]:>12.1f}  B {med['B'][i]:>12.1f}  B/A {med['B'][i] / med['A'][i]:.3f}")
PY
