#!/usr/bin/env bash
# Fuzzes goscope's parsers of untrusted bytes with libFuzzer: builds the
# targets of tests/fuzz/ with clang (-fsanitize=fuzzer,address,undefined) in a
# build directory of their own, then runs each for SECONDS_PER_TARGET.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 60)
#   scripts/fuzz.sh --total SECONDS           (the whole run, build included,
#                                             in about SECONDS: what is left
#                                             after the build is shared out,
#                                             at least 2 s a target; ctest's
#                                             fuzz_bounded passes --total 60)
#   GOSCOPE_FUZZ_SECONDS=3600 scripts/fuzz.sh (seconds per target; the
#                                             environment wins over both)
#   GOSCOPE_FUZZ_BUILD=dir                    (default <repo>/build-fuzz)
#   GOSCOPE_FUZZ_TARGETS="pclntab delve_json" (default: all eight)
#
# The seed corpus (tests/fuzz/<name>/, regressions included) is read, never
# written: new inputs go to <build>/corpus/<name>/, kept between runs so that
# fuzzing resumes where it stopped. A crash, a sanitizer report, a hang (10 s)
# or an out-of-memory input is saved as <build>/artifacts/<name>/crash-*
# (timeout-*, oom-*) and makes the script exit 1. To keep one as a regression
# test: fix the bug, then copy the file to tests/fuzz/<name>/regressions/.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
started=$SECONDS
total=
if [[ ${1:-} == --total ]]; then
  total=${2:?usage: fuzz.sh --total SECONDS}
  seconds=
else
  seconds=${1:-60}
fi
if [[ -n ${GOSCOPE_FUZZ_SECONDS:-} ]]; then
  seconds=$GOSCOPE_FUZZ_SECONDS
  total=
fi
build=${GOSCOPE_FUZZ_BUILD:-$repo/build-fuzz}
targets=${GOSCOPE_FUZZ_TARGETS:-probe_spec pclntab dwarf_location dwarf_types delve_json disasm analysis_record cached_probe_proof}
cxx=$(command -v clang++ || command -v clang++-14 || true)
if [[ -z $cxx ]]; then
  echo "fuzz.sh: clang++ not found (scripts/setup.sh installs it)" >&2
  exit 1
fi

# Inputs longer than this per target are not generated: big enough for every
# seed, small enough to keep executions fast.
declare -A max_len=([probe_spec]=512 [pclntab]=65536 [dwarf_location]=256 [dwarf_types]=8192 [delve_json]=16384 [disasm]=4096)

echo "fuzz.sh: building the fuzz targets in $build"
cmake -S "$repo/tests/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=None >/dev/null
cmake --build "$build" -j2 >/dev/null
if [[ -n $total ]]; then
  read -ra names <<<"$targets"
  left=$(( total - (SECONDS - started) ))
  seconds=$(( left / ${#names[@]} ))
  (( seconds >= 2 )) || seconds=2
  echo "fuzz.sh: built in $(( SECONDS - started ))s; ${seconds}s per target to end within about ${total}s"
fi

failed=()
summary=()
for name in $targets; do
  corpus=$build/corpus/$name
  artifacts=$build/artifacts/$name
  log=$build/logs/$name.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  echo "fuzz.sh: fuzzing $name for ${seconds}s"
  rc=0
  # -timeout: an input that runs 10 s is a hang; -rss_limit_mb: 2 GB is an
  # out-of-memory bug (the machine is shared). Fuzzing may also stop early on
  # a crash; the exit status says so.
  "$build/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="${max_len[$name]:-4096}" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$repo/tests/fuzz/$name" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if [[ $rc -ne 0 ]]; then
    failed+=("$name")
    summary+=("$(printf '%-15s FAILED (exit %d) after %s runs; log %s' "$name" "$rc" "${runs:-?}" "$log")")
    grep -E '^(==[0-9]+==ERROR|SUMMARY:|.*runtime error:|artifact_prefix|Test unit written to)' "$log" | head -20 >&2 || true
  else
    summary+=("$(printf '%-15s %10s runs in %ss (%s/s), coverage %s edges, corpus %s files' \
      "$name" "${runs:-?}" "$seconds" "$(( ${runs:-0} / (seconds > 0 ? seconds : 1) ))" "${cov:-?}" \
      "$(find "$corpus" -type f | wc -l)")")
  fi
done

echo "fuzz.sh: summary ($(( SECONDS - started ))s in all)"
printf '  %s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: ${failed[*]} found a bug; inputs in $build/artifacts/" >&2
  exit 1
fi
