#!/usr/bin/env bash
# Builds bench/synth_ring.c and its BPF program bench/synth_ring.bpf.c into
# OUTDIR (OUTDIR/synth_ring, OUTDIR/synth_ring.bpf.o), the way CMakeLists.txt
# compiles bpf/*.bpf.c (clang -target bpf against a vmlinux.h), with the
# system compiler and Debian's libbpf. Used by bench/trace_throughput.sh
# SYNTH=1 and tests/runtime/test_synth_ring.cpp.
#
# Usage: bench/synth_ring_build.sh OUTDIR [VMLINUX_H]
#   VMLINUX_H: a vmlinux.h to use (a build's build/bpf/vmlinux.h); without
#   it, one is dumped from /sys/kernel/btf/vmlinux with bpftool into OUTDIR.
set -euo pipefail
src=$(cd -- "$(dirname -- "$(readlink -f -- "$0")")/.." && pwd)
out=${1:?usage: synth_ring_build.sh OUTDIR [VMLINUX_H]}
vmlinux=${2:-}
mkdir -p "$out"
if [[ -z $vmlinux ]]; then
  bpftool=$(command -v bpftool || echo /usr/sbin/bpftool)
  "$bpftool" btf dump file /sys/kernel/btf/vmlinux format c >"$out/vmlinux.h.tmp"
  mv "$out/vmlinux.h.tmp" "$out/vmlinux.h"
  vmlinux=$out/vmlinux.h
fi
inc=$(mktemp -d)
trap 'rm -rf -- "$inc"' EXIT
cp -- "$vmlinux" "$inc/vmlinux.h"
clang=$(command -v clang || command -v clang-14)
"$clang" -target bpf -mcpu=v3 -O2 -g -D__TARGET_ARCH_x86 -Wall -Wno-unused-function \
  -I"$inc" -I"$src/bpf" -c "$src/bench/synth_ring.bpf.c" -o "$out/synth_ring.bpf.o"
cc -O2 -Wall -pthread -I"$src/bpf" -o "$out/synth_ring" "$src/bench/synth_ring.c" -lbpf
