#!/usr/bin/env bash
# The README's test command: installs every package (as root), fetches the
# other Go releases and Delves the release matrix runs (scripts/toolchains.sh,
# a cache outside the repository), builds, builds the Go fixtures and runs
# every test, two at a time. Runtime tests need root (uprobes, BPF, ptrace);
# CI is root. Tiers and how to run each: tests/README.md.
#   GOSCOPE_RELEASES  the Go releases of the matrix (default: every one,
#                     "go1.19 go1.21 ... go1.27"); the others are skipped
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GOSCOPE_BUILD_DIR:-$root/build}
bash "$root/scripts/setup.sh"
# The matrix's toolchains: a release that did not arrive is skipped by its
# tests with the reason (failed under CI=true); the rest still runs.
items=(dlv)
if [[ -n ${GOSCOPE_RELEASES:-} ]]; then
  for r in $GOSCOPE_RELEASES; do [[ $r == go1.19 ]] || items+=("$r"); done
else
  items+=(go)
fi
start=$SECONDS
bash "$root/scripts/toolchains.sh" "${items[@]}" >/dev/null || echo "test.sh: not every toolchain was fetched (see above)" >&2
echo "test.sh: toolchains ready in $((SECONDS - start)) s"
bash "$root/scripts/build.sh"
# Prebuilt Go programs from the npm registry, built by other Go versions than
# the local toolchain; the tests skip them when they cannot be fetched.
if bash "$root/scripts/fetch-go-samples.sh" "$build/go-samples"; then
  export GOSCOPE_GO_SAMPLES=$build/go-samples
else
  echo "test.sh: Go samples not fetched (no npm or no registry); their tests are skipped" >&2
fi
# The MCP TypeScript SDK from the npm registry: the test client of goscope mcp.
if bash "$root/scripts/fetch-mcp-client.sh" "$build/mcp-client"; then
  export GOSCOPE_MCP_CLIENT=$build/mcp-client
else
  echo "test.sh: the MCP SDK client not fetched (no npm or no registry); its tests are skipped" >&2
fi
cd "$build"
ctest --output-on-failure --timeout 900 -j2 "$@"
