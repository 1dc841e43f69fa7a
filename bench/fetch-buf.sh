#!/usr/bin/env bash
# Fetches buf, issue #14's 58,000-function reference binary (goal 1: a cold
# start under 1 s, peak RSS under 100 MB), from the npm registry: the
# stripped linux/amd64 release of @bufbuild/buf-linux-x64 (1.75.0: Go 1.27.3,
# 58,519 functions, 46.8 MB). Usage:
#   bench/fetch-buf.sh OUTDIR        (prints the binary's path on stdout)
# Writes OUTDIR/buf-VERSION and keeps the npm tarball in OUTDIR/npm, so a
# re-run downloads nothing. Then e.g.:
#   sudo BINS="$(bench/fetch-buf.sh build/bench-bins)" bench/startup.sh
# Exit status: 0 with the binary there, 1 otherwise.
set -euo pipefail

version=${BUF_VERSION:-1.75.0}
out=${1:?usage: fetch-buf.sh OUTDIR}
mkdir -p "$out/npm"
out=$(cd "$out" && pwd)  # absolute: npm pack runs in $out/npm
bin=$out/buf-$version
if [[ ! -x $bin ]]; then
  command -v npm >/dev/null || { echo "fetch-buf.sh: npm not found (apt-get install npm)" >&2; exit 1; }
  tgz=$out/npm/bufbuild-buf-linux-x64-$version.tgz
  if [[ ! -s $tgz ]]; then
    (cd "$out/npm" && npm pack "@bufbuild/buf-linux-x64@$version" --silent >/dev/null 2>"$out/npm/.err") || {
      echo "fetch-buf.sh: npm pack @bufbuild/buf-linux-x64@$version failed: $(tail -1 "$out/npm/.err")" >&2
      exit 1
    }
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf -- "$tmp"' EXIT
  tar -xzf "$tgz" -C "$tmp" package/bin/buf || { echo "fetch-buf.sh: $tgz has no package/bin/buf" >&2; exit 1; }
  mv "$tmp/package/bin/buf" "$bin.tmp" && chmod 755 "$bin.tmp" && mv "$bin.tmp" "$bin"
  rm -f "$out/npm/.err"
fi
echo "$bin"
