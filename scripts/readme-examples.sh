#!/usr/bin/env bash
# Prints the README's value-rendering examples (choosing the path, read,
# break) as one real run produces them: starts the fixtures, runs each
# command exactly as the README shows it, and prints "$ command" followed by
# its stdout and stderr, for pasting into README.md. Run as root after
# `bash scripts/build.sh` and the fixtures (ctest -R build_fixtures).
#   usage: readme-examples.sh [BUILD_DIR]
set -euo pipefail
build=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
fx=$build/fixtures/default
export PATH=$build:$PATH
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
start() { "$@" >/dev/null 2>&1 & pids+=($!); }

start "$fx/counter"; counter=${pids[-1]}
start "$fx/zoo" --sleep-ms 10; zoo=${pids[-1]}
start "$fx/fibonacci" --loop; fib=${pids[-1]}
start "$fx/pacer" --rate 100000; hot=${pids[-1]}
start "$fx/pacer" --rate 10; slow=${pids[-1]}
sleep 1

show() {
  echo "\$ $*"
  eval "$@" 2>&1 || true
  echo
}

echo '--- Choosing the path'
show goscope break -p "$counter" main.doWork -n 3 --explain
show goscope break -p "$fib" main.fibonacciLoop --args -n 2 --max-overhead 5 --explain
show goscope trace -p "$zoo" main.Point.Dist -d 0.3 --explain "| head -4"
show goscope count -p "$counter" main.doWork --strategy delve
echo '--- The cost of a session, and its bound'
show goscope trace -p "$hot" main.scale -d 0.5 --explain "| tail -2"
show goscope trace -p "$slow" main.scale -d 1 --explain
show goscope count -p "$counter" "'main.*'" -d 3 --max-overhead 2
show goscope doctor -p "$zoo"
echo '--- read: end to end, direct vs Delve (5 runs each, interleaved; wall ms)'
for i in 1 2 3 4 5; do
  for mode in direct delve; do
    arg=(); [[ $mode == delve ]] && arg=(--strategy delve)
    t0=$(date +%s%N); goscope read -p "$counter" "${arg[@]}" main.counter >/dev/null 2>&1; t1=$(date +%s%N)
    echo "  $mode $(( (t1 - t0) / 1000000 )) ms"
  done
done
echo '--- read'
show goscope read -p "$counter" main.counter --explain
show goscope read -p "$counter" --strategy delve main.counter
show goscope read -p "$zoo" main.cfg main.cfg.Name "'len(main.items)'" main.labels main.primary main.errNotFound
show goscope read --json -p "$zoo" main.cfg.Name "'len(main.items)'" main.items main.cfg
echo '--- trace and count --filter'
show goscope trace -c "'$fx/zoo --rounds 2'" main.add --filter "'x > 20 && y < 9'" "2>&1 | grep -v '^zoo: '"
show goscope count --json -c "'$fx/zoo --rounds 5'" main.parsePositive --filter "'s =~ \"-*\"'" "2>&1 | grep -v '^zoo: '"
echo '--- break'
show goscope break -p "$zoo" "'main.(*Server).Handle'" --args -n 2 --strategy delve
show goscope break -p "$zoo" "'main.(*Server).Handle'" --args -n 2 --strategy bpf
show goscope break -p "$zoo" main.checkRecord --args --locals main.cfg.Name -n 1 --json
