#!/usr/bin/env bash
# The MCP TypeScript SDK from the npm registry, as the test client of
# `goscope mcp` (tests/runtime/test_mcp.cpp): installs tests/mcp's locked
# dependencies into OUTDIR (npm ci, again only when the lock changed) and
# copies the client script beside them, where Node resolves its imports.
# Usage: scripts/fetch-mcp-client.sh OUTDIR   (prints nothing on success)
# Exit: 0 ready; 1 npm missing or the registry unreachable (the tests that
# need it are then skipped with the reason, and fail under CI=true).
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: fetch-mcp-client.sh OUTDIR" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../tests/mcp" && pwd)
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "fetch-mcp-client.sh: node or npm not found (apt-get install npm)" >&2
  exit 1
fi
stamp=$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)
if [[ ! -d $out/node_modules/@modelcontextprotocol/sdk || $(cat "$out/.lock-stamp" 2>/dev/null) != "$stamp" ]]; then
  cp "$src/package.json" "$src/package-lock.json" "$out/"
  if ! (cd "$out" && npm ci --no-audit --no-fund --silent >/dev/null 2>"$out/.npm-err"); then
    echo "fetch-mcp-client.sh: npm ci failed: $(tail -1 "$out/.npm-err")" >&2
    exit 1
  fi
  echo "$stamp" >"$out/.lock-stamp"
fi
cp "$src"/*.mjs "$out/"
