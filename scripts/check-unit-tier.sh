#!/usr/bin/env bash
# Proves, on every build, what scripts/unit-tier.sh shows by building from
# scratch: no unit-test executable links the BPF programs (whose build needs
# the kernel's BTF, bpftool and clang), so `ctest -L unit` builds and runs
# without them. Reads the link lines CMake generated for each unit target.
#   usage: check-unit-tier.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check-unit-tier.sh BUILD_DIR}
shopt -s nullglob
links=("$build"/CMakeFiles/goscope_unit_*.dir/link.txt)
if [[ ${#links[@]} -eq 0 ]]; then
  echo "check-unit-tier: no unit-test targets under $build" >&2
  exit 2
fi
fail=0
for l in "${links[@]}"; do
  t=$(basename "$(dirname "$l")" .dir)
  if grep -qE 'libgoscope_bpf_programs\.a|\.skel\.h' "$l"; then
    echo "FAIL: $t links the BPF programs (it would need the kernel's BTF to build)"
    fail=1
  else
    echo "ok: $t builds without the BPF programs"
  fi
done
exit $fail
