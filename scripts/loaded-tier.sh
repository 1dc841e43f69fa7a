#!/usr/bin/env bash
# The loaded tier of the Delve kill cases in full: every case of
# tests/runtime/test_dlv_death_loaded.cpp (doctest suite "loaded") with 20
# rounds each (CI runs 5), the machine loaded by the test itself (a CPU hog
# per core, three times over). Needs root and the fixtures (build/fixtures):
#   GOSCOPE_BUILD_DIR=build scripts/loaded-tier.sh [doctest options, e.g. -tc='*execs*']
# GOSCOPE_LOADED_ROUNDS, GOSCOPE_HOGS_PER_CPU and GOSCOPE_KILL_SEED override.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GOSCOPE_BUILD_DIR:-$root/build}
export GOSCOPE_LOADED_ROUNDS=${GOSCOPE_LOADED_ROUNDS:-20}
exec "$build/goscope_runtime_tests" -ts=loaded "$@"
