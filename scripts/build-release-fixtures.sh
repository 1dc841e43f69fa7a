#!/usr/bin/env bash
# Builds the fixtures the release matrix runs (tests/release/) with every Go
# release that scripts/toolchains.sh has cached, in three variants each:
#
#   OUTDIR/go1.NN/default/NAME    go build
#   OUTDIR/go1.NN/stripped/NAME   -ldflags='-s -w'
#   OUTDIR/go1.NN/pie/NAME        -buildmode=pie
#
# for Go 1.21 to 1.27 (GOROOT=<cache>/go1.NN/usr/lib/go-1.NN, GOTOOLCHAIN=local).
# Go 1.19, the system's toolchain, is the one scripts/build-fixtures.sh builds
# the ordinary fixtures with: OUTDIR/go1.19/VARIANT links to OUTDIR/VARIANT.
#
# Usage: scripts/build-release-fixtures.sh OUTDIR [go1.NN ...]
# OUTDIR is the ordinary fixture directory (BUILD/fixtures). Without
# releases, every one whose toolchain is cached; GOSCOPE_RELEASES (e.g.
# "go1.24 go1.27") narrows that. A release whose toolchain is not cached is
# said and left out (its tests say so too, and fail under CI=true); fetching
# is scripts/toolchains.sh's job, so this script uses no network. The Go
# build cache lives beside the toolchains (<cache>/.gocache): a new build
# directory does not compile each release's standard library again.
# Exit status: 0 when every release it found was built, 1 when a build failed.
set -euo pipefail

if [[ $# -lt 1 || -z $1 ]]; then
  echo "usage: $0 OUTDIR [go1.NN ...]" >&2
  exit 2
fi
script_dir=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")" && pwd)
src_dir=$(cd -- "$script_dir/../fixtures/go" && pwd)
mkdir -p -- "$1"
out_dir=$(cd -- "$1" && pwd)
shift

all=(go1.19 go1.21 go1.22 go1.23 go1.24 go1.25 go1.26 go1.27)
if [[ $# -gt 0 ]]; then releases=("$@")
elif [[ -n ${GOSCOPE_RELEASES:-} ]]; then read -ra releases <<<"$GOSCOPE_RELEASES"
else releases=("${all[@]}"); fi

# What the release contract runs (tests/release/): zoo (every kind of
# argument, the Delve-path globals, latency, exact counts at its pause),
# counter (a hot loop and a global to set), leafcalls (leaf functions),
# inlined (inlined calls counted exactly) and fibonacci (a map argument).
fixtures=(zoo counter leafcalls inlined fibonacci)
variants=(default stripped pie)

export GOENV=off GOPROXY=off GOFLAGS=-buildvcs=false GO111MODULE=on GOWORK=off
export GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOARCH=amd64
unset GOBIN GOEXPERIMENT GOAMD64 GOROOT || true

status=0
for rel in "${releases[@]}"; do
  if [[ $rel == go1.19 ]]; then
    mkdir -p -- "$out_dir/go1.19"
    for v in "${variants[@]}"; do ln -sfn "../$v" "$out_dir/go1.19/$v"; done
    echo "build-release-fixtures: go1.19: the ordinary fixtures ($out_dir/{${variants[*]}})"
    continue
  fi
  if ! where=$(bash "$script_dir/toolchains.sh" --offline "$rel" 2>/dev/null); then
    echo "build-release-fixtures: $rel: toolchain not cached, skipped (scripts/toolchains.sh $rel fetches it)" >&2
    continue
  fi
  read -r _ version goroot <<<"$where"
  toolchains=$(dirname -- "$(dirname -- "$(dirname -- "$(dirname -- "$goroot")")")")
  export GOROOT=$goroot GOCACHE=$toolchains/.gocache GOPATH=$out_dir/.gopath
  export GOMODCACHE=$GOPATH/pkg/mod
  cd -- "$src_dir"
  start=$SECONDS
  for v in "${variants[@]}"; do
    case $v in
      default) flags=() ;;
      stripped) flags=("-ldflags=-s -w") ;;
      pie) flags=(-buildmode=pie) ;;
    esac
    mkdir -p -- "$out_dir/$rel/$v"
    for name in "${fixtures[@]}"; do
      if ! "$goroot/bin/go" build "${flags[@]}" -o "$out_dir/$rel/$v/$name" "./$name"; then
        echo "build-release-fixtures: $rel ($version): go build $v $name failed" >&2
        status=1
      fi
    done
  done
  echo "build-release-fixtures: $rel ($version): ${fixtures[*]} x ${variants[*]} -> $out_dir/$rel ($((SECONDS - start)) s)"
done
exit $status
