#!/usr/bin/env bash
# How long a one-off Delve read stops the target, by Go release and Delve:
# `goscope read --strategy delve -p PID main.cfg.Name` on zoo built by each
# release given, through the Delve goscope chooses for it (Debian 12's 1.20.2
# for Go 1.19, 1.24.0 for 1.22-1.24, 1.27.1 for 1.25-1.27: docs/delve.md,
# "Which Delve"). The figure is goscope's own "was stopped N ms" (dlv's
# attach to its detach), and the end to end time of the command.
#
# Per round, one read of each release in turn (A B A B ...), ROUNDS rounds;
# reported per release: median [min..max] of the stop and of end to end, the
# Delve used, and the ratio of each release's median stop to the first
# release's. The load average is printed before and after: the machine is
# shared, read the ratios.
#
# Usage (root):  bench/delve_release_stop.sh [go1.NN ...]   (default: go1.19 go1.24 go1.27)
#   env: ROUNDS (5), TARGET_MS (350), GOSCOPE_BUILD_DIR (./build) or GOSCOPE
# Needs the release fixtures (scripts/toolchains.sh, then
# scripts/build-release-fixtures.sh BUILD/fixtures).
# Exit: 0 measured and the last release's median stop <= TARGET_MS, 3
# measured but over, 1 error.
set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/common.sh"

rounds=${ROUNDS:-5}
target_ms=${TARGET_MS:-350}
releases=("$@")
[[ ${#releases[@]} -gt 0 ]] || releases=(go1.19 go1.24 go1.27)

pids=()
for rel in "${releases[@]}"; do
  zoo=$build/fixtures/$rel/default/zoo
  [[ -x $zoo ]] || die "$zoo missing: scripts/toolchains.sh ${rel} && scripts/build-release-fixtures.sh $build/fixtures $rel"
  mkfifo "$tmp/$rel.out"
  "$zoo" >"$tmp/$rel.out" &
  pid=$!
  bench_track "$pid"
  exec 3<"$tmp/$rel.out"
  read -r -t 10 ready <&3 || die "zoo ($rel) did not start"
  [[ $ready == ready ]] || die "zoo ($rel) said '$ready'"
  cat <&3 >/dev/null &
  bench_track $!
  exec 3<&-
  pids+=("$pid")
  # The Delve goscope picks for it, as `info` says.
  "$goscope" info --json -p "$pid" | awk -F'"path":' '/"delve"/ { split($NF, a, "\""); print a[2] }' >"$tmp/$rel.dlv"
done
sleep 0.5

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 0; r < rounds; r++)); do
  for i in "${!releases[@]}"; do
    rel=${releases[$i]}
    t0=$EPOCHREALTIME
    "$goscope" read --strategy delve -p "${pids[$i]}" main.cfg.Name >"$tmp/out" 2>"$tmp/err" ||
      { cat "$tmp/err" >&2; die "read ($rel) failed"; }
    t1=$EPOCHREALTIME
    grep -q '^main.cfg.Name = "zoo" (string)$' "$tmp/out" || die "read ($rel) printed: $(cat "$tmp/out")"
    sed -n 's/.*was stopped \([0-9.]*\) ms.*/\1/p' "$tmp/err" | head -1 >>"$tmp/$rel.stop"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }' >>"$tmp/$rel.e2e"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "one-off Delve read of main.cfg.Name, zoo by Go release; $rounds rounds, A B A B; load $load_before -> $load_after"
printf '%-8s %-44s %-26s %-26s %s\n' release delve "stopped ms med [min..max]" "end to end ms med [min..max]" "stop / ${releases[0]}"
first=""
last_med=0
for rel in "${releases[@]}"; do
  read -r sm smin smax < <(stats <"$tmp/$rel.stop")
  read -r em emin emax < <(stats <"$tmp/$rel.e2e")
  [[ -n $first ]] || first=$sm
  ratio=$(awk -v a="$sm" -v b="$first" 'BEGIN { printf "%.2fx", a / b }')
  printf '%-8s %-44s %-26s %-26s %s\n' "$rel" "$(cat "$tmp/$rel.dlv")" "$sm [$smin..$smax]" "$em [$emin..$emax]" "$ratio"
  last_med=$sm
done
awk -v m="$last_med" -v t="$target_ms" 'BEGIN { exit !(m <= t) }' || { echo "over: ${releases[-1]}'s median stop ${last_med} ms > ${target_ms} ms"; exit 3; }
echo "met: ${releases[-1]}'s median stop ${last_med} ms <= ${target_ms} ms"
