#!/usr/bin/env bash
# Fetches prebuilt, stripped Go programs built by Go versions other than the
# local toolchain (1.19): esbuild's linux/amd64 binaries from the npm registry,
# one per pclntab/buildinfo format change we know of, and lefthook's for the
# Go releases no esbuild release was built with (1.21, 1.24, 1.27). Usage:
#   scripts/fetch-go-samples.sh OUTDIR
# Writes OUTDIR/<program>-<version> (esbuild-0.17.19, lefthook-1.5.5: the
# binary) and caches the npm tarballs in OUTDIR/npm, so re-runs download
# nothing. The tests (tests/runtime/test_go_versions.cpp, test_go_samples_cli.cpp,
# ...) read OUTDIR from GOSCOPE_GO_SAMPLES; those about esbuild glob esbuild-*.
# Exit status: 0 when every sample is present, 1 otherwise (each failure is
# reported; samples that did arrive stay usable).
set -uo pipefail

out=${1:?usage: fetch-go-samples.sh OUTDIR}
mkdir -p "$out/npm"
out=$(cd "$out" && pwd)  # absolute: npm pack runs in $out/npm

# package@version   Go version it was built with (`go version BINARY`), what it covers
samples=(
  "esbuild-linux-64@0.11.23"    # go1.16.3   pclntab 1.16 (0xfffffffa), buildinfo pointers
  "esbuild-linux-64@0.13.15"    # go1.17.2   pclntab 1.16, buildinfo pointers
  "esbuild-linux-64@0.14.39"    # go1.18.1   pclntab 1.18 (0xfffffff0), inline buildinfo
  "@esbuild/linux-x64@0.15.18"  # go1.19.3   pclntab 1.18
  "@esbuild/linux-x64@0.17.19"  # go1.20.4   pclntab 1.20 (0xfffffff1)
  "@esbuild/linux-x64@0.23.1"   # go1.22.5   pclntab 1.20
  "@esbuild/linux-x64@0.25.12"  # go1.23.12  pclntab 1.20
  "@esbuild/linux-x64@0.27.7"   # go1.25.7   no .go.buildinfo section (removed by the release build)
  "@esbuild/linux-x64@0.28.2"   # go1.26.5   moduledata in its own .go.module section
  # esbuild went from go1.20.12 (0.19.x-0.21.x) to go1.22 (0.22+) and 0.24-0.26 are go1.23:
  # no esbuild release on npm was built by 1.21 or 1.24, and none by 1.27 yet.
  "lefthook-linux-x64@1.5.5"    # go1.21.4   pclntab 1.20
  "lefthook-linux-x64@1.13.0"   # go1.24.7   pclntab 1.20, runtime.g.goid at 160 (as in 1.23)
  "lefthook-linux-x64@2.2.2"    # go1.27.0   pclntab 1.20
)

if ! command -v npm >/dev/null; then
  echo "fetch-go-samples.sh: npm not found (apt-get install npm)" >&2
  exit 1
fi

status=0
for spec in "${samples[@]}"; do
  version=${spec##*@}
  pkg=${spec%@*}
  # The program, named like the package's scope or first word:
  # @esbuild/linux-x64, esbuild-linux-64 -> esbuild; lefthook-linux-x64 -> lefthook.
  program=${pkg#@}
  program=${program%%/*}
  program=${program%%-linux*}
  bin="$out/$program-$version"
  [[ -x $bin ]] && continue
  # npm pack names the tarball after the package: @esbuild/linux-x64 -> esbuild-linux-x64-V.tgz
  tgz="$out/npm/$(echo "${pkg#@}" | tr / -)-$version.tgz"
  if [[ ! -s $tgz ]]; then
    if ! (cd "$out/npm" && npm pack "$spec" --silent >/dev/null 2>"$out/npm/.err"); then
      echo "fetch-go-samples.sh: npm pack $spec failed: $(tail -1 "$out/npm/.err")" >&2
      status=1
      continue
    fi
  fi
  tmp=$(mktemp -d)
  if tar -xzf "$tgz" -C "$tmp" "package/bin/$program" 2>/dev/null; then
    mv "$tmp/package/bin/$program" "$bin.tmp" && chmod 755 "$bin.tmp" && mv "$bin.tmp" "$bin"
  else
    echo "fetch-go-samples.sh: $tgz has no package/bin/$program" >&2
    status=1
  fi
  rm -rf "$tmp"
done
rm -f "$out/npm/.err"
exit $status
