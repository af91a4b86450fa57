#!/usr/bin/env bash
# bench/journal.sh - what the journal costs: bench_daemon against a fresh
# perceptrond for each fsync mode (journal off, no, everysec, always), the
# modes taken in turn (off no everysec always, off no ...) ROUNDS times so
# that the drift of a shared machine falls on every mode alike; prints each
# run, then the medians and the ratios to `off`.  Not a test.
#
#   bench/journal.sh [ROUNDS] [-- bench_daemon options]   (default 5 rounds)
#   MODES="off everysec" bench/journal.sh ...   only those modes
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
shift || true
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-n 1000000 -p 0 -s 20000)
. bench/lib.sh
for r in $(seq "$rounds"); do
  for mode in ${MODES:-off no everysec always}; do
    if [ "$mode" = off ]; then journal="{enabled: false}"; else journal="{fsync: $mode}"; fi
    run_once build/daemon/perceptrond "journal: $journal" "${opts[@]}"
    l=$(figure '^label requests.* = \([0-9]*\) labels\/s.*')
    bt=$(figure '^label_batch.* = \([0-9]*\) labels\/s.*')
    read -r p50 p99 < <(figure '^label latency.*p50 \([0-9.]*\)  p99 \([0-9.]*\) .*' '\1 \2')
    echo "round $r $mode: labels/s $l  label_batch/s $bt  sync label p50 $p50 us p99 $p99 us  [$(figure '^journal: \(.*\)')]"
    echo "$mode $l $bt $p50 $p99" >> "$work/results"
  done
done
echo "# medians of $rounds rounds ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
medians "$work/results" labels/s label_batch/s "sync label p50" "sync label p99"
