#!/usr/bin/env bash
# bench/redis.sh - what the shared log costs: bench_daemon against a fresh
# perceptrond writing through Redis Streams (log: {backend: redis}, a fresh
# redis-server with appendonly yes, appendfsync everysec, on a Unix socket),
# then against one with the local journal (fsync everysec), ROUNDS times in
# turn; prints each run's labels/s (pipelined label requests, label_batch of
# 256) and the sync label latency.  Not a test.
#
#   bench/redis.sh [ROUNDS] [-- bench_daemon options]   (default 3 rounds, -n 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-n 200000 -p 2000 -s 5000)
daemon=build/daemon/perceptrond
bench=build/bench/bench_daemon
[ -x "$daemon" ] && [ -x "$bench" ] || { echo "build first: ninja -C build" >&2; exit 2; }
work=$(mktemp -d /var/tmp/pcd-redis-bench.XXXXXX)
pid=; rpid=
trap 'kill $pid $rpid 2>/dev/null || true; rm -rf "$work"' EXIT
for r in $(seq "$rounds"); do
  for mode in redis journal; do
    rm -rf "$work/state" "$work"/*.aof "$work/appendonlydir"
    if [ "$mode" = redis ]; then
      redis-server --port 0 --unixsocket "$work/redis.sock" --dir "$work" --appendonly yes \
        --save "" --logfile "$work/redis.log" &
      rpid=$!
      for _ in $(seq 100); do [ -S "$work/redis.sock" ] && break; sleep 0.05; done
      extra="log: {backend: redis, address: \"unix:$work/redis.sock\"}"
    else
      extra="journal: {fsync: everysec}"
    fi
    printf 'listen: {tcp: [], unix: ["%s/pcd.sock"]}\nstate_dir: %s/state\nsnapshot: {interval: 0}\n%s\n' \
      "$work" "$work" "$extra" > "$work/conf.yaml"
    $daemon --config "$work/conf.yaml" 2> "$work/daemon.log" &
    pid=$!
    for _ in $(seq 100); do [ -S "$work/pcd.sock" ] && break; sleep 0.05; done
    sleep 0.2 # the log connects
    $bench -a "unix:$work/pcd.sock" "${opts[@]}" > "$work/run.txt"
    kill $pid; wait $pid || true
    if [ -n "$rpid" ]; then kill $rpid; wait $rpid || true; rpid=; fi
    labels=$(sed -n 's/^label requests.* = \([0-9]*\) labels\/s.*/\1/p' "$work/run.txt")
    batch=$(sed -n 's/^label_batch.* = \([0-9]*\) labels\/s.*/\1/p' "$work/run.txt")
    read -r p50 p99 < <(sed -n 's/^label latency.*p50 \([0-9.]*\)  p99 \([0-9.]*\) .*/\1 \2/p' "$work/run.txt")
    echo "round $r  $mode  labels/s $labels  label_batch/s $batch  sync label p50 $p50 us p99 $p99 us"
  done
done
