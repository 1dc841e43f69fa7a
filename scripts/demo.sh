#!/usr/bin/env bash
# The README's demo command: installs the Debian packages, builds goscope
# (Release, the CLI alone: the demo does not wait for the tests), installs it
# on PATH, starts the counter fixture and points goscope at it.
#   GOSCOPE_PREFIX   where to install (default /usr/local: /usr/local/bin/goscope)
#   GOSCOPE_BUILD_DIR  the Release build (default build-release/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GOSCOPE_BUILD_DIR:-$root/build-release}
prefix=${GOSCOPE_PREFIX:-/usr/local}
bash "$root/scripts/setup.sh"
start=$(date +%s)
GOSCOPE_BUILD_DIR=$build GOSCOPE_BUILD_TYPE=Release bash "$root/scripts/build.sh" --target goscope
cmake --install "$build" --prefix "$prefix" >/dev/null
echo "demo: built in $(( $(date +%s) - start )) s; installed $prefix/bin/goscope"
bash "$root/scripts/build-fixtures.sh" "$build/fixtures" >/dev/null
goscope=$prefix/bin/goscope

"$build/fixtures/default/counter" --report >/dev/null &
counter=$!
trap 'kill $counter 2>/dev/null; wait $counter 2>/dev/null || true' EXIT
sleep 0.5

echo "\$ goscope info -p $counter"
"$goscope" info -p "$counter"
echo
echo "\$ goscope list -p $counter 'main.*'"
"$goscope" list -p "$counter" 'main.*'
echo
echo "\$ goscope count -p $counter main.doWork --read main.counter -i 1 -d 3"
"$goscope" count -p "$counter" main.doWork --read main.counter -i 1 -d 3
