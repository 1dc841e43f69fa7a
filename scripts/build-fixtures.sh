#!/usr/bin/env bash
# Builds every Go fixture (each directory under fixtures/go with Go files) in
# four variants: OUTDIR/<variant>/<name>
#
#   default   go build
#   stripped  -ldflags='-s -w'            (no .symtab, no DWARF; .gopclntab stays)
#   pie       -buildmode=pie              (ET_DYN, load bias at run time)
#   nopt      -gcflags='all=-N -l'        (no optimization, no inlining)
#
# All variants use CGO_ENABLED=0. PIE needs no cgo: on linux/amd64 Go >= 1.15
# links -buildmode=pie internally by default, so no C toolchain is involved.
# Such a binary is ET_DYN with an interpreter (/lib64/ld-linux-x86-64.so.2)
# but no DT_NEEDED libraries; the first PT_LOAD has p_vaddr 0x400000.
#
# And, for separate debug info (docs/debug-info.md), from a few fixtures:
#
#   splitdebug/NAME.debug     objcopy --only-keep-debug of default/NAME (DWARF,
#                             notes, .symtab; NOBITS .text)
#   splitdebug/NAME-stripped  objcopy --strip-all of default/NAME: no DWARF, no
#                             .symtab, nothing that points at a debug file
#   splitdebug/NAME-linked    the same plus a .gnu_debuglink naming NAME.debug
#   buildid/NAME              go build -ldflags=-B 0x<sha1 of NAME>: a GNU
#                             build-id note (Go < 1.21 has no -B gobuildid)
#   buildid/NAME-stripped     objcopy --strip-all of it
#   buildid/NAME.debug        objcopy --only-keep-debug of it
#
# No -trimpath: DWARF and pclntab keep the absolute source paths
# (…/fixtures/go/<name>/main.go), which tests rely on.
#
# Usage: scripts/build-fixtures.sh OUTDIR
# Idempotent (rebuilds into the same places); works from any cwd, as root,
# with HOME unset; uses no network (GOPROXY=off, the fixtures have no
# dependencies). The build cache lives in OUTDIR/.gocache.
set -euo pipefail

if [[ $# -ne 1 || -z $1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi

script_dir=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")" && pwd)
src_dir=$(cd -- "$script_dir/../fixtures/go" && pwd)
mkdir -p -- "$1"
out_dir=$(cd -- "$1" && pwd)

command -v go >/dev/null || { echo "build-fixtures: 'go' not found in PATH" >&2; exit 1; }

export GOCACHE="$out_dir/.gocache"
export GOPATH="$out_dir/.gopath"
export GOMODCACHE="$GOPATH/pkg/mod"
export GOENV=off           # no $HOME/.config/go/env (HOME may be unset)
export GOPROXY=off
export GOFLAGS=-buildvcs=false
export GO111MODULE=on
export GOWORK=off
export GOTOOLCHAIN=local   # ignored by Go < 1.21
export CGO_ENABLED=0
export GOOS=linux GOARCH=amd64
unset GOBIN GOEXPERIMENT GOAMD64 || true

fixtures=()
for dir in "$src_dir"/*/; do
  name=$(basename -- "$dir")
  compgen -G "$dir*.go" >/dev/null && fixtures+=("$name")
done
if [[ ${#fixtures[@]} -eq 0 ]]; then
  echo "build-fixtures: no fixtures under $src_dir" >&2
  exit 1
fi

variants=(default stripped pie nopt)
variant_flags() {
  case $1 in
    default)  flags=() ;;
    stripped) flags=("-ldflags=-s -w") ;;
    pie)      flags=(-buildmode=pie) ;;
    nopt)     flags=("-gcflags=all=-N -l") ;;
    *) echo "build-fixtures: unknown variant $1" >&2; exit 1 ;;
  esac
}

cd -- "$src_dir"
for variant in "${variants[@]}"; do
  variant_flags "$variant"
  mkdir -p -- "$out_dir/$variant"
  for name in "${fixtures[@]}"; do
    go build "${flags[@]}" -o "$out_dir/$variant/$name" "./$name"
  done
  echo "build-fixtures: $variant: ${fixtures[*]} -> $out_dir/$variant"
done

# Separate debug info: the stripped twins keep the build's Go build ID and
# code byte for byte (objcopy rewrites no allocated section).
command -v objcopy >/dev/null || { echo "build-fixtures: 'objcopy' (binutils) not found in PATH" >&2; exit 1; }
split_fixtures=(counter functions zoo)
mkdir -p -- "$out_dir/splitdebug" "$out_dir/buildid"
for name in "${split_fixtures[@]}"; do
  d="$out_dir/splitdebug"
  objcopy --only-keep-debug "$out_dir/default/$name" "$d/$name.debug"
  objcopy --strip-all "$out_dir/default/$name" "$d/$name-stripped"
  # --add-gnu-debuglink records the CRC32 of the file it is given and its base name.
  (cd -- "$d" && objcopy --strip-all --add-gnu-debuglink="$name.debug" "$out_dir/default/$name" "$name-linked")
done
echo "build-fixtures: splitdebug: ${split_fixtures[*]} -> $out_dir/splitdebug"
buildid_fixtures=(functions)
for name in "${buildid_fixtures[@]}"; do
  d="$out_dir/buildid"
  id=$(printf '%s' "goscope-fixture-$name" | sha1sum | cut -c1-40)
  go build "-ldflags=-B 0x$id" -o "$d/$name" "./$name"
  objcopy --only-keep-debug "$d/$name" "$d/$name.debug"
  objcopy --strip-all "$d/$name" "$d/$name-stripped"
done
echo "build-fixtures: buildid: ${buildid_fixtures[*]} -> $out_dir/buildid"
