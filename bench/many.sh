#!/usr/bin/env bash
# bench/many.sh - many small models in perceptrond, per storage: labels/s
# (bench_daemon_many), labels per second of the daemon's CPU time (user +
# system, from /proc: steadier than the wall clock on a shared machine), and
# the daemon's resident memory after the run (VmRSS) and at its peak (VmHWM),
# A B A B ... ROUNDS times with a fresh daemon each run, then the medians.
# Not a test.
#
#   bench/many.sh [ROUNDS] [STORAGE...] [-- bench_daemon_many options]
#   e.g. bench/many.sh 3 sparse dense -- -m 300
# Two binaries A/B: sides A:STORAGE and B:STORAGE run $PCD_A and $PCD_B,
#   e.g. PCD_A=old/perceptrond PCD_B=build/daemon/perceptrond bench/many.sh 5 A:sparse B:sparse
# A storage may name the weights' width too: dense+float32.
# Storages default to "sparse dense".  Dense needs ~8.4 MB per model at
# 2^20: 1,000 models take ~8.5 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
[ $# -gt 0 ] && shift
sides=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sides+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#sides[@]} -eq 0 ] && sides=(sparse dense)
opts=("$@")
. bench/lib.sh
bin=${PCD_BIN:-build/daemon/perceptrond}
many=${MANY_BIN:-build/bench/bench_daemon_many}
kb() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$pid/status"; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }   # utime + stime, clock ticks
uptime
for r in $(seq "$rounds"); do
  for s in "${sides[@]}"; do
    storage=${s#*:} side_bin=$bin
    case $s in A:*) side_bin=$PCD_A ;; B:*) side_bin=$PCD_B ;; esac
    rm -rf "$work/state" "$work/pcd.sock"
    printf 'listen: {tcp: [], unix: ["%s/pcd.sock"]}\nstate_dir: %s/state\nsnapshot: {interval: 0}\njournal: {enabled: false}\n' \
      "$work" "$work" > "$work/conf.yaml"
    "$side_bin" --config "$work/conf.yaml" 2> "$work/daemon.log" &
    pid=$!
    for _ in $(seq 100); do [ -S "$work/pcd.sock" ] && break; sleep 0.05; done
    t0=$(ticks)
    $many -a "unix:$work/pcd.sock" -s "$storage" "${opts[@]}" > "$work/run.txt"
    t1=$(ticks) rss=$(kb VmRSS) hwm=$(kb VmHWM)
    kill -9 $pid; wait $pid 2>/dev/null || true   # no final snapshot of ~1000 models
    l=$(figure '.*: \([0-9]*\) labels\/s.*')
    n=$(figure '.*many models: \([0-9]*\) .* models .*, \([0-9]*\) examples each.*' '\1 * \2')
    pc=$(( $(eval "echo \$(( $n ))") * $(getconf CLK_TCK) / (t1 - t0 > 0 ? t1 - t0 : 1) ))
    echo "round $r $s: $(sed 's/^daemon many models: //' "$work/run.txt"); daemon: $pc labels per CPU second, RSS $((rss / 1024)) MB (peak $((hwm / 1024)) MB)"
    echo "$s $l $pc $((rss / 1024)) $((hwm / 1024))" >> "$work/results"
  done
done
echo "# medians of $rounds rounds ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
medians "$work/results" labels/s "labels/CPU s" "RSS MB" "peak RSS MB"
