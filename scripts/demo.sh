#!/usr/bin/env bash
# The README's demo command: installs, builds, starts the counter fixture and
# points goscope at it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GOSCOPE_BUILD_DIR:-$root/build}
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh" --target goscope  # the CLI alone: the demo does not wait for the tests
bash "$root/scripts/build-fixtures.sh" "$build/fixtures" >/dev/null

"$build/fixtures/default/counter" --report >/dev/null &
counter=$!
trap 'kill $counter 2>/dev/null; wait $counter 2>/dev/null || true' EXIT
sleep 0.5

echo "\$ goscope info -p $counter"
"$build/goscope" info -p "$counter"
echo
echo "\$ goscope list -p $counter 'main.*'"
"$build/goscope" list -p "$counter" 'main.*'
echo
echo "\$ goscope count -p $counter main.doWork --read main.counter -i 1 -d 3"
"$build/goscope" count -p "$counter" main.doWork --read main.counter -i 1 -d 3
