# bench/lib.sh - what bench/ab.sh and bench/journal.sh share: a fresh daemon
# per run in a work dir on disk (not a tmpfs: fdatasync must cost what it
# costs), bench_daemon against it, the figures read back, medians.  Sourced.

bench=build/bench/bench_daemon
work=$(mktemp -d /var/tmp/pcd-bench.XXXXXX)
pid=
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT

# run_once DAEMON "YAML LINES" BENCH_OPTS...: one daemon, one bench run into $work/run.txt
# (with pass_pid set, the bench is also given -P and the daemon's pid)
run_once() {
  local bin=$1 extra=$2
  shift 2
  rm -rf "$work/state" "$work/pcd.sock"
  printf 'listen: {tcp: [], unix: ["%s/pcd.sock"]}\nstate_dir: %s/state\nsnapshot: {interval: 0}\n%s\n' \
    "$work" "$work" "$extra" > "$work/conf.yaml"
  "$bin" --config "$work/conf.yaml" 2> "$work/daemon.log" &
  pid=$!
  for _ in $(seq 100); do [ -S "$work/pcd.sock" ] && break; sleep 0.05; done
  $bench -a "unix:$work/pcd.sock" ${pass_pid:+-P $pid} "$@" > "$work/run.txt"
  kill $pid; wait $pid || true
}

# figure REGEX [REPLACEMENT]: what the sed REGEX captures (\1 by default) in
# the last run's output
figure() { sed -n "s/$1/${2:-\\1}/p" "$work/run.txt"; }

# medians FILE NAME...: rows "SIDE v1 v2 ..." -> one line per NAME with the median per side
medians() {
  python3 - "$@" <<'PY'
import statistics, sys
path, names = sys.argv[1], sys.argv[2:]
rows = {}
for line in open(path):
    side, *v = line.split()
    rows.setdefault(side, []).append([float(x) for x in v])
med = {s: [statistics.median(c) for c in zip(*v)] for s, v in rows.items()}
base = next(iter(med))
print(f"{'':<16}" + "".join(f"{s:>14}" for s in med) + "".join(f"{s + '/' + base:>16}" for s in list(med)[1:]))
for i, n in enumerate(names):
    print(f"{n:<16}" + "".join(f"{med[s][i]:>14.2f}" for s in med)
          + "".join(f"{med[s][i] / med[base][i]:>16.3f}" if med[base][i] else f"{'-':>16}"
                    for s in list(med)[1:]))
PY
}
