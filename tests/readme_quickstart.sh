#!/usr/bin/env bash
# readme_quickstart.sh - runs the README's quick start exactly as written: every ```sh
# block of its "Using it" section (but scripts/run, which this script stands in for), line by
# line from a directory laid out like the repository (build/, data/, clients/ linked), against
# a fresh perceptrond listening where scripts/run's would (./perceptrond.sock; no TCP, so a
# daemon on 7411 elsewhere on the machine does not interfere).  Fails on the first command
# that fails.
#   $1: the source root, $2: the build directory.
set -euo pipefail
src=$1 build=$2
# Debian's python3 (with python3-msgpack), as on the fresh machine the README speaks of,
# before any other python3 on PATH (pyenv and the like).
export PATH=/usr/bin:$PATH
work=$(mktemp -d /tmp/pcd-readme-XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
ln -s "$(cd "$build" && pwd)" "$work/build"
ln -s "$src/data" "$work/data"
ln -s "$src/clients" "$work/clients"
cd "$work"
printf 'listen: {tcp: [], unix: [perceptrond.sock]}\nstate_dir: state\n' > quickstart.yaml
build/daemon/perceptrond --config quickstart.yaml 2> daemon.log &
pid=$!
for _ in $(seq 100); do [ -S perceptrond.sock ] && break; sleep 0.1; done
[ -S perceptrond.sock ] || { cat daemon.log; echo "the daemon did not start"; exit 1; }

# The blocks, verbatim: from "## Using it" to the next "## ".
awk '/^## Using it/{on=1; next} /^## /{on=0} on && /^```sh$/{inb=1; next} on && inb && /^```$/{inb=0; print "#--end"; next} on && inb{print}' \
    "$src/README.md" > blocks.sh
[ "$(grep -c '^#--end' blocks.sh)" -ge 2 ] || { echo "README: the quick start blocks are gone"; exit 1; }
grep -q 'perceptronctl' blocks.sh
bash -euo pipefail blocks.sh > out.txt 2>&1 || { cat out.txt; echo "README quick start failed"; exit 1; }
cat out.txt
# what the commands are there to show
grep -q '^pong from' out.txt
grep -q '^examples       1000$' out.txt
grep -q 'confusion matrix' out.txt
grep -q '^probability ' out.txt
grep -q "'probability'" out.txt
echo "README quick start: ok"
