#!/usr/bin/env bash
# bench/journal.sh - what the journal costs: bench_daemon against a fresh
# perceptrond for each fsync mode (journal off, no, everysec, always), the
# modes taken in turn (off no everysec always, off no ...) ROUNDS times, so
# that the drift of a shared machine falls on every mode alike; prints each
# run, then the medians.  Not a test.
#
#   bench/journal.sh [ROUNDS] [-- bench_daemon options]     (default 5 rounds, -n 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
shift || true
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-n 1000000 -p 20000 -s 20000)
daemon=build/daemon/perceptrond
bench=build/bench/bench_daemon
[ -x "$daemon" ] && [ -x "$bench" ] || { echo "build first: ninja -C build" >&2; exit 2; }
work=$(mktemp -d /var/tmp/pcd-journal-bench.XXXXXX) # on disk, not a tmpfs: fdatasync must cost what it costs
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
out=$work/results
for r in $(seq "$rounds"); do
  for mode in off no everysec always; do
    rm -rf "$work/state"
    if [ "$mode" = off ]; then journal="{enabled: false}"; else journal="{fsync: $mode}"; fi
    printf 'listen: {tcp: [], unix: ["%s/pcd.sock"]}\nstate_dir: %s/state\nsnapshot: {interval: 0}\njournal: %s\n' \
      "$work" "$work" "$journal" > "$work/conf.yaml"
    $daemon --config "$work/conf.yaml" 2> "$work/daemon.log" &
    pid=$!
    for _ in $(seq 100); do [ -S "$work/pcd.sock" ] && break; sleep 0.05; done
    $bench -a "unix:$work/pcd.sock" "${opts[@]}" > "$work/run.txt"
    kill $pid; wait $pid || true
    labels=$(sed -n 's/^label requests.* = \([0-9]*\) labels\/s.*/\1/p' "$work/run.txt")
    batch=$(sed -n 's/^label_batch.* = \([0-9]*\) labels\/s.*/\1/p' "$work/run.txt")
    read -r p50 p99 < <(sed -n 's/^label latency.*p50 \([0-9.]*\)  p99 \([0-9.]*\) .*/\1 \2/p' "$work/run.txt")
    fs=$(sed -n 's/^journal: \(.*\)/\1/p' "$work/run.txt")
    echo "round $r  $mode  labels/s $labels  label_batch/s $batch  sync label p50 $p50 us p99 $p99 us  [$fs]"
    echo "$mode $labels $batch $p50 $p99" >> "$out"
  done
done
echo "# medians of $rounds rounds ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-9s %14s %9s %16s %9s %16s %16s\n' mode "labels/s" "vs off" "label_batch/s" "vs off" "sync p50 (us)" "sync p99 (us)"
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m, *v = line.split()
    rows.setdefault(m, []).append([float(x) for x in v])
med = {m: [statistics.median(c) for c in zip(*v)] for m, v in rows.items()}
for m in ["off", "no", "everysec", "always"]:
    l, b, p50, p99 = med[m]
    print(f"{m:<9} {l:>14.0f} {l / med['off'][0]:>8.0%} {b:>16.0f} {b / med['off'][1]:>8.0%} {p50:>16.1f} {p99:>16.1f}")
PY
