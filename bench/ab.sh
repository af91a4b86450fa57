#!/usr/bin/env bash
# bench/ab.sh - two perceptrond binaries compared as the guide asks: A B A B
# ..., ROUNDS times, each against a fresh state directory with the same
# bench_daemon, then the medians and the ratio B/A.  This shared 2-core
# machine drifts by 10-30 %, so only alternation and medians say anything.
# Not a test.
#
#   bench/ab.sh OLD_DAEMON NEW_DAEMON [ROUNDS] [-- bench_daemon options]
#   CONFIG_A, CONFIG_B: YAML lines added to each side's config, e.g.
#   CONFIG_B="journal: {enabled: false}" against a binary that predates it.
#   OPTS_A, OPTS_B: bench_daemon options added on one side only, e.g.
#   OPTS_B="-E 5" bench/ab.sh D D 5 -- -n 200000 -p 200000 -s 0: what asking
#   for explanations costs, with D the same binary.
set -euo pipefail
cd "$(dirname "$0")/.."
a=$1 b=$2 rounds=${3:-5}
shift 2; [ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-n 1000000 -p 20000 -s 0)
pass_pid=1 # the daemon's CPU time a predict
. bench/lib.sh
for r in $(seq "$rounds"); do
  for side in A B; do
    # shellcheck disable=SC2086 # OPTS_A/OPTS_B are words
    if [ $side = A ]; then run_once "$a" "${CONFIG_A:-}" "${opts[@]}" ${OPTS_A:-}
    else run_once "$b" "${CONFIG_B:-}" "${opts[@]}" ${OPTS_B:-}; fi
    l=$(figure '^label requests.* = \([0-9]*\) labels\/s.*')
    n=$(figure '^label notifications.* = \([0-9]*\) labels\/s.*')
    bt=$(figure '^label_batch.* = \([0-9]*\) labels\/s.*')
    ps=$(figure '^predict requests.* = \([0-9]*\) predicts\/s.*')
    pc=$(figure '^predict daemon CPU: \([0-9.]*\) us.*')
    read -r p50 p99 < <(figure '^predict latency.*p50 \([0-9.]*\)  p99 \([0-9.]*\) .*' '\1 \2') || true
    : "${p50:=0}" "${p99:=0}" "${ps:=0}" "${pc:=0}" # none with -p 0
    echo "round $r $side: labels/s $l  notifications/s $n  label_batch/s $bt  predicts/s $ps ($pc us of daemon CPU each)  predict p50 $p50 us p99 $p99 us"
    echo "$side $l $n $bt $ps $pc $p50 $p99" >> "$work/results"
  done
done
echo "# medians of $rounds rounds, A = $a, B = $b ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
medians "$work/results" labels/s notifications/s label_batch/s predicts/s "us CPU/predict" "predict p50 us" "predict p99 us"
