#!/usr/bin/env bash
# bench/redis.sh - what the shared log costs, against the local journal.
# Per round, in turn (A B C A B C ...), each on fresh state:
#   journal  one daemon, the local journal (fsync everysec)
#   redis1   one daemon on a fresh redis-server (Unix socket, appendonly yes,
#            appendfsync everysec), log: {backend: redis}
#   redis1w  one daemon as redis1, with log.wait_replicas: 1, on a
#            redis-server that has one replica (a second redis-server,
#            --replicaof over loopback TCP): every answer waits for a WAIT
#   redis3   three daemons on one fresh redis-server, every one serving the
#            model; the benchmark talks to the first, bench_lag samples the
#            replica lag of all three while the stream grows
#   cluster  one daemon on a fresh Redis Cluster of three masters (loopback
#            TCP, appendonly yes, everysec), log.cluster: true; the model's
#            stream is on one of them
# MODES="journal cluster" picks some (default: journal redis1 redis1w redis3).
# bench_daemon's figures per run (pipelined label requests, label_batch of
# 256, the sync label latency), the lag p50/p99 of the two replicas that
# take no traffic (the worse of them), then the medians.  Prints `uptime`
# before and after: the machine is shared.  Not a test.
#
#   bench/redis.sh [ROUNDS] [-- bench_daemon options]   (default 5 rounds, -n 200000 -p 0 -s 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
shift || true
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-n 200000 -p 0 -s 2000)
daemon=${PCD_DAEMON:-build/daemon/perceptrond} # PCD_DAEMON: another binary
[ -x "$daemon" ] && [ -x build/bench/bench_daemon ] && [ -x build/bench/bench_lag ] ||
  { echo "build first: ninja -C build" >&2; exit 2; }
source bench/lib.sh # $work, $bench, figure, medians
pids=()
cpids=()
rpid=
qpid=
lpid=
trap 'kill ${pids[@]:-} ${cpids[@]:-} $rpid $qpid $lpid 2>/dev/null || true; rm -rf "$work"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_cluster: three fresh masters joined by redis-cli; sets $extra
start_cluster() {
  local ports=() p
  for i in 1 2 3; do
    p=$(free_port)
    while [ $((p + 10000)) -ge 65536 ]; do p=$(free_port); done
    ports+=("$p")
    mkdir -p "$work/c$i"
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file nodes.conf \
      --dir "$work/c$i" --appendonly yes --appendfsync everysec --save "" --logfile "$work/c$i/redis.log" &
    cpids+=($!)
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.05; done
  done
  redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes > "$work/create.log"
  for p in "${ports[@]}"; do
    for _ in $(seq 200); do
      redis-cli -p "$p" cluster info | grep -q cluster_state:ok && break
      sleep 0.05
    done
  done
  extra="log: {backend: redis, address: \"tcp:127.0.0.1:${ports[0]}\", cluster: true}"
}

# start_daemon I "YAML": daemon I with its own state dir and socket
start_daemon() {
  local d="$work/d$1"
  mkdir -p "$d"
  printf 'listen: {tcp: [], unix: ["%s/pcd.sock"]}\nstate_dir: %s/state\nsnapshot: {interval: 0}\n%s\n' \
    "$d" "$d" "$2" > "$d/conf.yaml"
  $daemon --config "$d/conf.yaml" 2> "$d/daemon.log" &
  pids+=($!)
  for _ in $(seq 100); do [ -S "$d/pcd.sock" ] && break; sleep 0.05; done
}

echo "# $(uptime)"
echo "# bench_daemon ${opts[*]}"
: > "$work/results"
for r in $(seq "$rounds"); do
  for mode in ${MODES:-journal redis1 redis1w redis3}; do
    rm -rf "$work"/d* "$work"/c? "$work/appendonlydir" "$work/redis.sock" "$work/replica"
    n=1 extra="journal: {fsync: everysec}"
    if [ "$mode" = cluster ]; then
      start_cluster
    elif [ "$mode" != journal ]; then
      port=0
      [ "$mode" = redis1w ] && port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$work/redis.sock" --dir "$work" \
        --appendonly yes --appendfsync everysec --save "" --repl-diskless-sync-delay 0 \
        --logfile "$work/redis.log" &
      rpid=$!
      for _ in $(seq 100); do [ -S "$work/redis.sock" ] && break; sleep 0.05; done
      extra="log: {backend: redis, address: \"unix:$work/redis.sock\"}"
      [ "$mode" = redis3 ] && n=3
      if [ "$mode" = redis1w ]; then
        mkdir -p "$work/replica"
        redis-server --port 0 --unixsocket "$work/replica/redis.sock" --dir "$work/replica" \
          --save "" --replicaof 127.0.0.1 "$port" --logfile "$work/replica/redis.log" &
        qpid=$!
        for _ in $(seq 200); do
          redis-cli -s "$work/replica/redis.sock" info replication 2>/dev/null |
            grep -q master_link_status:up && break
          sleep 0.05
        done
        extra="log: {backend: redis, address: \"unix:$work/redis.sock\", wait_replicas: 1}"
      fi
    fi
    for i in $(seq "$n"); do start_daemon "$i" "$extra"; done
    sleep 0.3 # the log connects
    if [ "$n" = 3 ]; then
      build/bench/bench_lag -r "$work/redis.sock" -m bench -i 5 \
        "unix:$work/d1/pcd.sock" "unix:$work/d2/pcd.sock" "unix:$work/d3/pcd.sock" > "$work/lag.txt" &
      lpid=$!
    fi
    $bench -a "unix:$work/d1/pcd.sock" "${opts[@]}" > "$work/run.txt"
    lag50=- lag99=- lagline=
    if [ -n "$lpid" ]; then
      kill -INT "$lpid"; wait "$lpid" || true; lpid=
      read -r lag50 lag99 < <(sed -n '2,3s/.*p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$work/lag.txt" |
        sort -k2 -g | tail -1)
      lagline="  replica lag p50 $lag50 ms p99 $lag99 ms"
    fi
    kill "${pids[@]}"; wait "${pids[@]}" || true; pids=()
    if [ -n "$qpid" ]; then kill "$qpid"; wait "$qpid" || true; qpid=; fi
    if [ -n "$rpid" ]; then kill "$rpid"; wait "$rpid" || true; rpid=; fi
    if [ ${#cpids[@]} -gt 0 ]; then kill "${cpids[@]}"; wait "${cpids[@]}" || true; cpids=(); fi
    labels=$(figure '^label requests.* = \([0-9]*\) labels\/s.*')
    batch=$(figure '^label_batch.* = \([0-9]*\) labels\/s.*')
    read -r p50 p99 < <(figure '^label latency.*p50 \([0-9.]*\)  p99 \([0-9.]*\) .*' '\1 \2')
    echo "round $r  $mode  labels/s $labels  label_batch/s $batch  sync label p50 $p50 us p99 $p99 us$lagline"
    echo "$mode $labels $batch $p50 $p99 ${lag50/-/0} ${lag99/-/0}" >> "$work/results"
  done
done
echo "# medians of $rounds rounds (lag: the worse of the two replicas without traffic, ms)"
medians "$work/results" labels/s label_batch/s "sync p50 us" "sync p99 us" "lag p50 ms" "lag p99 ms"
echo "# $(uptime)"
