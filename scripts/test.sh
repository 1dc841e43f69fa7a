#!/usr/bin/env bash
# The README's test command: installs every package (as root), runs the unit
# tier where it needs neither root nor the kernel's BTF (scripts/unit-tier.sh:
# a unit failure stops here, in a few minutes), builds, builds the Go
# fixtures and runs every test, two at a time. Runtime tests need root
# (uprobes, BPF, ptrace); CI is root. Tiers: tests/README.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GOSCOPE_BUILD_DIR:-$root/build}
bash "$root/scripts/setup.sh"
bash "$root/scripts/unit-tier.sh" "$build-unit"
bash "$root/scripts/build.sh"
# Prebuilt Go programs from the npm registry, built by other Go versions than
# the local toolchain; the tests skip them when they cannot be fetched.
if bash "$root/scripts/fetch-go-samples.sh" "$build/go-samples"; then
  export GOSCOPE_GO_SAMPLES=$build/go-samples
else
  echo "test.sh: Go samples not fetched (no npm or no registry); their tests are skipped" >&2
fi
cd "$build"
ctest --output-on-failure --timeout 900 -j2 "$@"
