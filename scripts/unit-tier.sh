#!/usr/bin/env bash
# The unit tier as someone without root or the kernel's BTF runs it:
# configures a fresh build directory whose BTF file does not exist
# (-DGOSCOPE_VMLINUX_BTF=/nonexistent: building anything that needs vmlinux.h,
# i.e. the BPF programs, fails), builds the target unit_tests alone, and runs
# `ctest -L unit` as nobody when started as root. Prints how long the build
# and the tests took. Tiers: tests/README.md.
#
#   scripts/unit-tier.sh [BUILD_DIR]   (default <repo>/build-unit, emptied first)
#   GOSCOPE_UNIT_CTEST_ARGS="-j2"      (more ctest arguments)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build-unit}")
rm -rf "$build"
mkdir -p "$build"

as=()
src=$root
if [[ $(id -u) -eq 0 ]]; then
  as=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/nonexistent)
  # Some tests read the source tree (recorded dlv exchanges, fuzz corpora):
  # where nobody cannot (a clone under /root), build from a copy of it.
  if ! "${as[@]}" test -r "$root/tests/fuzz/CMakeLists.txt"; then
    src=$build/src
    mkdir -p "$src"
    (cd "$root" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$src"
    echo "unit-tier.sh: nobody cannot read $root: building from a copy in $src"
  fi
fi

t0=$SECONDS
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGOSCOPE_VMLINUX_BTF=/nonexistent >/dev/null
cmake --build "$build" -j"$(nproc)" --target unit_tests >/dev/null
if [[ -e $build/bpf/vmlinux.h ]]; then
  echo "unit-tier.sh: building the unit tier made vmlinux.h: it reached the BPF programs" >&2
  exit 1
fi
echo "unit-tier.sh: configured and built the unit tier in $(( SECONDS - t0 ))s (GOSCOPE_VMLINUX_BTF=/nonexistent)"

# ctest writes Testing/ into the build directory.
[[ ${#as[@]} -eq 0 ]] || chown -R nobody:nogroup "$build"
t1=$SECONDS
rc=0
# shellcheck disable=SC2086
(cd "$build" && "${as[@]}" ctest -L unit --output-on-failure ${GOSCOPE_UNIT_CTEST_ARGS:-}) || rc=$?
echo "unit-tier.sh: ctest -L unit as $("${as[@]}" id -un) took $(( SECONDS - t1 ))s (exit $rc)"
exit $rc
