#!/usr/bin/env bash
# Installs a built goscope into a temporary prefix, then configures and
# builds one of examples/ as another CMake project would: find_package(goscope)
# with only that prefix to look in. The program built must run (its usage
# line, exit 2: no target given).
#
# Usage: scripts/install-check.sh BUILD_DIR
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd -- "$1" && pwd)
root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/goscope-install-check.XXXXXX")
trap 'rm -rf -- "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/lib/cmake/goscope/goscopeConfig.cmake" || test -f "$work/prefix/lib64/cmake/goscope/goscopeConfig.cmake"
test -f "$work/prefix/include/goscope/api/goscope.hpp"
# Nothing of the build or source tree is on the consumer's include path.
cmake -S "$root/tests/install" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -Dgoscope_DIR= -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DGOSCOPE_EXAMPLE="$root/examples/counter_reader.cpp" >/dev/null
cmake --build "$work/consumer" -j"$(nproc)" >/dev/null
if grep -rq -- "$build/layers\|$root/src" "$work/consumer/CMakeFiles/consumer.dir/flags.make"; then
  echo "install-check: the consumer was built with goscope's build or source tree on its include path" >&2
  exit 1
fi
status=0
"$work/consumer/consumer" >/dev/null 2>"$work/usage" || status=$?
if [[ $status -eq 0 ]] || ! grep -q "usage" "$work/usage"; then
  echo "install-check: the program built against the installed goscope did not print its usage (exit $status):" >&2
  cat "$work/usage" >&2
  exit 1
fi
echo "install-check: examples/counter_reader.cpp built against $work/prefix by find_package(goscope), and ran"
