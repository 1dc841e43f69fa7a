#!/usr/bin/env bash
# What typing a stripped binary's arguments from its own data costs the
# traced program per call: nothing, if the decoding is in user space. The
# same function (main.emit(n int, name string) int of bench/go/tracefeed),
# traced with its arguments from DWARF (the plain build: n, name, result)
# and from the runtime's traceback layout (the same code built with
# -ldflags='-s -w': (w, {w, w}), no result). Per mode a fresh target paced at
# RATE calls a second; two figures:
#   - the BPF programs' own time per run (kernel.bpf_stats_enabled: the sum of
#     run_time_ns / run_cnt over goscope's programs, entry and return), read
#     1.5 s in and 0.5 s before the end;
#   - the target's CPU per call (utime+stime over its calls in the window),
#     which includes the traps (the same sites in both builds).
# Modes interleaved (A B, B A, ...), REPS rounds, medians and ranges, the
# ratio layout / DWARF.
#
# Usage (root):  bench/trace_layout_cost.sh   env: REPS (3), SECS (5), RATE (20000)
# Exit: 0 measured and the layout's program time within 1.25x of DWARF's;
#       3 measured but above; 1 error.
set -euo pipefail
source "$(dirname -- "$(readlink -f -- "$0")")/common.sh"
reps=${REPS:-3}
secs=${SECS:-5}
rate=${RATE:-20000}
[[ $reps =~ ^[1-9][0-9]*$ && $secs =~ ^[4-9]$|^[1-9][0-9]+$ && $rate =~ ^[1-9][0-9]*$ ]] ||
  die "REPS and RATE must be positive integers, SECS at least 4"
func=main.emit

bpf_stats_on

plain=$(build_bench_go tracefeed)
stripped=$(build_bench_go_as tracefeed tracefeed-stripped -ldflags='-s -w')

# "run_time_ns run_cnt" summed over the kprobe programs named gs_* that were
# not in the file (goscope's, loaded by this mode).
prog_runs() {
  bpftool -j prog show | python3 -c '
import json, sys
before = set(open(sys.argv[1]).read().split())
t = n = 0
for p in json.load(sys.stdin):
    if p.get("type") == "kprobe" and p.get("name", "").startswith("gs_") and str(p["id"]) not in before:
        t += p.get("run_time_ns", 0); n += p.get("run_cnt", 0)
print(t, n)' "$1"
}
# "cpu_ticks calls" of the target now.
target_state() {
  local pid=$1 out=$2
  echo "$(awk '{ print $14 + $15 }' "/proc/$pid/stat") $(tail -n 1 "$out" | sed -n 's/.* n=\([0-9]*\).*/\1/p')"
}

modes=(dwarf layout)
declare -A binary=([dwarf]="$plain" [layout]="$stripped")
run_mode() {
  local mode=$1 rep=$2 log=$tmp/$1.$2.log out=$tmp/$1.$2.feed target g a b sa sb
  "${binary[$mode]}" --rate "$rate" --out "$out" >/dev/null 2>&1 &
  target=$!
  bench_track "$target"
  sleep 1.2
  bpf_prog_ids >"$tmp/before"
  timeout -k 5 "$((secs + 60))" "$goscope" trace -p "$target" "$func" -d "$secs" >/dev/null 2>"$log" &
  g=$!
  bench_track "$g"
  sleep 1.5
  a=$(prog_runs "$tmp/before")
  sa=$(target_state "$target" "$out")
  sleep "$(awk -v s="$secs" 'BEGIN { print s - 2 }')"
  b=$(prog_runs "$tmp/before")
  sb=$(target_state "$target" "$out")
  wait "$g" || { cat "$log" >&2; die "$mode (rep $rep): goscope trace failed"; }
  kill "$target" 2>/dev/null || true
  wait "$target" 2>/dev/null || true
  grep -q "arguments\|events lost" "$log" && grep "events lost" "$log" >&2 || true
  local ns cpu
  ns=$(awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
    if (y[2] - x[2] < 1000) { print "nan"; exit } printf "%.1f\n", (y[1] - x[1]) / (y[2] - x[2]) }')
  cpu=$(awk -v a="$sa" -v b="$sb" -v hz="$(getconf CLK_TCK)" 'BEGIN { split(a, x, " "); split(b, y, " ");
    if (y[2] - x[2] < 1000) { print "nan"; exit } printf "%.2f\n", (y[1] - x[1]) / hz * 1e6 / (y[2] - x[2]) }')
  [[ $ns != nan ]] || { cat "$log" >&2; die "$mode (rep $rep): too few program runs counted ($a -> $b)"; }
  echo "$ns $cpu" >>"$tmp/r.$mode"
  printf '  rep %d  %-7s %8s ns per program run, %6s us of target CPU per call\n' "$rep" "$mode" "$ns" "$cpu" >&2
}

echo "trace_layout_cost: $func of tracefeed at $rate calls/s, $reps reps x $secs s per mode, interleaved; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((rep = 1; rep <= reps; rep++)); do
  for ((i = 0; i < ${#modes[@]}; i++)); do
    run_mode "${modes[(i + rep - 1) % ${#modes[@]}]}" "$rep"
  done
done

echo
echo "trace $func: arguments from DWARF (plain build) against the traceback layout (stripped), $reps x ${secs} s per mode at $rate calls/s, interleaved"
echo "machine: $(nproc) vCPUs, Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %-30s %s\n' "mode" "BPF ns per run median [min..max]" "target CPU us per call median [min..max]"
for mode in "${modes[@]}"; do printf '%-8s %-30s %s\n' "$mode" "$(col "$tmp/r.$mode" 1)" "$(col "$tmp/r.$mode" 2)"; done
dn=$(med "$tmp/r.dwarf" 1)
ln=$(med "$tmp/r.layout" 1)
dc=$(med "$tmp/r.dwarf" 2)
lc=$(med "$tmp/r.layout" 2)
echo "layout / DWARF: $(awk -v l="$ln" -v d="$dn" 'BEGIN { printf "%.2fx", l / d }') BPF time per run, $(awk -v l="$lc" -v d="$dc" 'BEGIN { printf "%.2fx", l / d }') target CPU per call"
verdict=$(awk -v l="$ln" -v d="$dn" 'BEGIN { print (l <= 1.25 * d) ? "MET" : "NOT MET" }')
echo "the layout's program time within 1.25x of DWARF's: $verdict"
[[ $verdict == MET ]] || exit 3
