#!/usr/bin/env bash
# Configures and builds goscope into ./build (or $GOSCOPE_BUILD_DIR).
# GOSCOPE_BUILD_TYPE: RelWithDebInfo by default (developers and tests: the
# test programs debug well); scripts/demo.sh builds Release for users.
# Arguments go to `cmake --build` (e.g. --target goscope: the CLI alone).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GOSCOPE_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${GOSCOPE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$build" -j"$(nproc)" "$@"
