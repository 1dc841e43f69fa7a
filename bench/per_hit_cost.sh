#!/usr/bin/env bash
# Per-hit cost of counting calls of one Go function, in two cases run one
# after the other (CASES, default both):
#   stack-check  main.work, which has a stack check: `goscope count` (its
#                probe on the stack-check jbe, which the kernel emulates),
#                `goscope count --entry` (the plain entry, single-stepped) and
#                bpftrace's `uprobe:BIN:main.work { @ = count(); }` (the entry, too);
#   leaf         main.leafWork, a leaf without a stack check: `goscope count`
#                (its call sites, emulated `call`s: docs/disassembly.md,
#                "Call-site placement"), `goscope count --entry` and bpftrace
#                (the entry, single-stepped);
#   leaf-latency main.leafWork timed: `goscope latency` (its call sites and
#                the instruction after each) against `goscope latency --entry`
#                (the entry, single-stepped, and its RET); not run by default
#                (CASES="leaf-latency"), and without bpftrace (a uretprobe
#                crashes Go programs: it has no Go latency to compare).
#   trace        main.work traced against counted, per call (not run by
#                default: CASES="trace"): `goscope count` (the jbe), `goscope
#                latency` (the jbe and the RETs: the traps a trace has, no
#                event), `goscope trace --json` (the same sites, an event at
#                each: stdout to a file) and bpftrace printf-ing each entry
#                (`uprobe:BIN:main.work { printf("%d\n", tid); }`). A run of
#                trace or bpftrace is not voided by events the reader lost
#                (the target paid for them): the loss is printed. The
#                verdict: trace / count per call <= TRACE_X (1.3).
#
# The target is bench/go/hotloop: main calls main.work (--leaf: main.leafWork)
# in a tight loop and reports its own calls per second. Every mode runs the target for SECS+1
# seconds (each tool starts it with -c, so it is probed from its first
# instruction); the first report line is dropped as warm-up and the median of
# the others is that run's ops/s. Modes are interleaved, in a rotated order,
# REPS times. Per-hit cost of a mode in one repetition =
#   1e9 * (1/ops_mode - 1/ops_base)  ns,   ops_base = that repetition's no-probe run.
# Each tool's count must equal the target's own call count (within 1%), or
# the run is void (exit 1).
#
# Usage (root):  bench/per_hit_cost.sh        env: REPS (5), SECS (3), TARGET_X (5),
#                CASES ("stack-check leaf"; also "leaf-latency", "trace"), TRACE_X (1.3), GOSCOPE_BUILD_DIR (./build) or GOSCOPE (the binary)
# Exit: 0 measured and bpftrace/goscope >= TARGET_X in every case (leaf-latency:
#       entry/goscope > 1); 3 measured but below it in a case; 1 error.
set -euo pipefail
source "$(dirname -- "$(readlink -f -- "$0")")/common.sh"

reps=${REPS:-5}
secs=${SECS:-3}
target_x=${TARGET_X:-5}
trace_x=${TRACE_X:-1.3}
[[ $reps =~ ^[1-9][0-9]*$ && $secs =~ ^[1-9][0-9]*$ ]] || die "REPS and SECS must be positive integers"
cases=(${CASES:-stack-check leaf})

hotloop=$(build_bench_go hotloop)

modes=(base goscope entry bpftrace)
sub=count  # goscope's subcommand: count, or latency (leaf-latency)
declare -A label=([base]="no probe" [goscope]="goscope count" [entry]="goscope count --entry" [bpftrace]="bpftrace uprobe @=count()")

# run_mode MODE REP: runs the target under MODE, appends that run's ops/s to
# $tmp/ops.MODE.
run_mode() {
  local mode=$1 rep=$2 out=$tmp/$1.$2.report log=$tmp/$1.$2.log pid rc=0 count="" total ops
  local cmd="$hotloop${flags:+ $flags} --duration $((secs + 1)) --out $out"
  local limit=$((secs + 60))
  case $mode in
    base) timeout -k 5 "$limit" $cmd >"$log" 2>&1 & ;;
    goscope) timeout -k 5 "$limit" "$goscope" "$sub" --json -c "$cmd" "$func" >"$log" 2>&1 & ;;
    entry) timeout -k 5 "$limit" "$goscope" "$sub" --json --entry -c "$cmd" "$func" >"$log" 2>&1 & ;;
    bpftrace) timeout -k 5 "$limit" bpftrace -e "uprobe:$hotloop:$func { @ = count(); }" -c "$cmd" >"$log" 2>&1 & ;;
    latency) timeout -k 5 "$limit" "$goscope" latency --json -c "$cmd" "$func" >"$log" 2>&1 & ;;
    trace) timeout -k 5 "$limit" "$goscope" trace --json -c "$cmd" "$func" >"$log.out" 2>"$log" & ;;
    printf) timeout -k 5 "$limit" bpftrace -e "uprobe:$hotloop:$func { printf(\"%d\\n\", tid); }" -c "$cmd" >"$log.out" 2>"$log" & ;;
  esac
  pid=$!
  bench_track "$pid"
  wait "$pid" || rc=$?
  if [[ $rc -ne 0 ]]; then cat "$log" >&2; die "$mode (rep $rep) exited with status $rc"; fi

  total=$(sed -n 's/^hotloop: total=\([0-9]*\)$/\1/p' "$out")
  [[ -n $total ]] || { cat "$log" "$out" >&2; die "$mode (rep $rep): the target did not finish its report"; }
  case $mode in
    # count's {"func","count","final":true}; latency's {"func","count",...,"final":true}
    goscope | entry | latency) count=$(grep '"final":true' "$log" | sed -n 's/^{"func":"'"$func"'","count":\([0-9]*\),.*/\1/p' | head -1) ;;
    bpftrace) count=$(sed -n 's/^@: \([0-9]*\)$/\1/p' "$log") ;;
    # Shown calls; what the reader lost is said, not a void run.
    trace | printf)
      count=$(grep -c "$( [[ $mode == trace ]] && echo '"func":"'"$func"'"' || echo '^[0-9]' )" "$log.out" || true)
      lost=$(sed -n 's/^goscope: \([0-9]*\) events lost.*/\1/p; s/^Lost \([0-9]*\) events.*/\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
      printf '  rep %d  %-26s shown %s of %s calls, %s events lost\n' "$rep" "${label[$mode]}" "$count" "$total" "$lost" >&2
      rm -f "$log.out"  # hundreds of MB a run
      count="" ;;
  esac
  if [[ $mode != base && $mode != trace && $mode != printf ]]; then
    [[ -n $count ]] || { cat "$log" >&2; die "$mode (rep $rep): no count in the tool's output"; }
    awk -v c="$count" -v t="$total" 'BEGIN { d = c - t; if (d < 0) d = -d; exit !(d <= 0.01 * t + 1000) }' ||
      die "$mode (rep $rep): the tool counted $count calls, the target made $total"
  fi
  ops=$(sed -n 's/^hotloop: t=[0-9]* n=[0-9]* ops=\([0-9.]*\)$/\1/p' "$out" | tail -n +2 | stats | cut -d' ' -f1)
  [[ $ops != nan ]] || die "$mode (rep $rep): no report lines"
  echo "$ops" >>"$tmp/ops.$mode"
  printf '  rep %d  %-26s %10s ops/s%s\n' "$rep" "${label[$mode]}" "$(fmt_si "$ops")" "${count:+  (counted $count of $total calls)}" >&2
}

# measure_case CASE: the runs and the table of one case; returns 3 when
# bpftrace/goscope is below TARGET_X.
measure_case() {
local case_name=$1 kind want
modes=(base goscope entry bpftrace) sub=count
label[goscope]="goscope count" label[entry]="goscope count --entry"
case $case_name in
  stack-check) func=main.work flags="" want=stack-check-branch ;;
  leaf) func=main.leafWork flags="--leaf" want=call-sites ;;
  leaf-latency)
    func=main.leafWork flags="--leaf" want=call-sites sub=latency modes=(base goscope entry)
    label[goscope]="goscope latency" label[entry]="goscope latency --entry" ;;
  trace)
    func=main.work flags="" want=stack-check-branch modes=(base goscope latency trace printf)
    label[goscope]="goscope count" label[latency]="goscope latency" label[trace]="goscope trace --json"
    label[printf]="bpftrace printf" ;;
  *) die "unknown case '$case_name' (stack-check, leaf, leaf-latency, trace)" ;;
esac
kind=$("$goscope" list --json -b "$hotloop" "$func" | sed -n 's/.*"probe_kind":"\([^"]*\)".*/\1/p')
[[ $kind == "$want" ]] || die "$func in $hotloop: probe_kind '$kind', expected $want"
rm -f "$tmp"/ops.* "$tmp"/cost.* "$tmp"/ratio.* "$tmp"/*.report "$tmp"/*.log  # the target appends to its report

echo "per_hit_cost: $case_name: $func in $hotloop (probe_kind $kind); $reps reps x $secs s, modes interleaved" >&2
for ((rep = 1; rep <= reps; rep++)); do
  for ((i = 0; i < ${#modes[@]}; i++)); do
    run_mode "${modes[(i + rep - 1) % ${#modes[@]}]}" "$rep"
  done
done

# Per-repetition costs against that repetition's baseline.
for mode in "${modes[@]:1}"; do
  paste "$tmp/ops.base" "$tmp/ops.$mode" | awk '{ printf "%.6g\n", 1e9 * (1 / $2 - 1 / $1) }' >"$tmp/cost.$mode"
done
if [[ $case_name == trace ]]; then
  for mode in latency trace printf; do
    paste "$tmp/cost.goscope" "$tmp/cost.$mode" | awk '{ printf "%.6g\n", $2 / $1 }' >"$tmp/ratio.$mode"
  done
  paste "$tmp/cost.trace" "$tmp/cost.printf" | awk '{ printf "%.6g\n", $2 / $1 }' >"$tmp/ratio.printf_trace"
  echo
  echo "Per-call cost of tracing $func against counting it (probe_kind $kind), $reps x ${secs} s per mode, interleaved"
  echo "machine: $(nproc) vCPUs, Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-27s %-32s %-30s %s\n' "mode" "target ops/s median [min..max]" "ns per call median [min..max]" "x count"
  for mode in "${modes[@]}"; do
    read -r om omin omax < <(stats <"$tmp/ops.$mode")
    ops_col="$(fmt_si "$om") [$(fmt_si "$omin")..$(fmt_si "$omax")]"
    if [[ $mode == base ]]; then printf '%-27s %-32s %-30s %s\n' "${label[$mode]}" "$ops_col" "-" "-"; continue; fi
    read -r cm cmin cmax < <(stats <"$tmp/cost.$mode")
    x=1
    [[ $mode != goscope ]] && read -r x _ < <(stats <"$tmp/ratio.$mode")
    printf '%-27s %-32s %-30s %.2f\n' "${label[$mode]}" "$ops_col" "$(printf '%.0f [%.0f..%.0f]' "$cm" "$cmin" "$cmax")" "$x"
  done
  read -r pm pmin pmax < <(stats <"$tmp/ratio.printf_trace")
  printf 'bpftrace printf / goscope trace per call: %.1fx median [%.1fx..%.1fx]\n' "$pm" "$pmin" "$pmax"
  read -r rm rmin rmax < <(stats <"$tmp/ratio.trace")
  verdict=$(awk -v r="$rm" -v t="$trace_x" 'BEGIN { print (r <= t) ? "MET" : "NOT MET" }')
  printf 'trace / count per call: %.2fx median of %d reps [%.2fx..%.2fx]; target <= %sx: %s\n' "$rm" "$reps" "$rmin" "$rmax" "$trace_x" "$verdict"
  [[ $verdict == MET ]] || return 3
  return 0
fi
paste "$tmp/cost.goscope" "$tmp/cost.entry" | awk '{ printf "%.6g\n", $2 / $1 }' >"$tmp/ratio.entry"
if [[ $sub == latency ]]; then
  echo
  echo "per repetition: ns per hit (goscope latency, goscope latency --entry), entry/goscope"
  paste "$tmp/ops.base" "$tmp/cost.goscope" "$tmp/cost.entry" "$tmp/ratio.entry" |
    awk '{ printf "  rep %d: no-probe %s ops/s; %.0f, %.0f ns; %.1fx\n", NR, ($1 >= 1e6 ? sprintf("%.3gM", $1 / 1e6) : sprintf("%.3gk", $1 / 1e3)), $2, $3, $4 }'
  echo
  echo "Per-call cost of timing $func ($case_name case: goscope's probe_kind $kind), $reps x ${secs} s per mode, interleaved"
  echo "machine: $(nproc) vCPUs, Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-27s %-32s %-30s %s\n' "mode" "target ops/s median [min..max]" "ns per call median [min..max]" "x goscope"
  for mode in "${modes[@]}"; do
    read -r om omin omax < <(stats <"$tmp/ops.$mode")
    ops_col="$(fmt_si "$om") [$(fmt_si "$omin")..$(fmt_si "$omax")]"
    if [[ $mode == base ]]; then printf '%-27s %-32s %-30s %s\n' "${label[$mode]}" "$ops_col" "-" "-"; continue; fi
    read -r cm cmin cmax < <(stats <"$tmp/cost.$mode")
    x=1
    [[ $mode == entry ]] && read -r x _ < <(stats <"$tmp/ratio.entry")
    printf '%-27s %-32s %-30s %.1f\n' "${label[$mode]}" "$ops_col" "$(printf '%.0f [%.0f..%.0f]' "$cm" "$cmin" "$cmax")" "$x"
  done
  read -r rm rmin rmax < <(stats <"$tmp/ratio.entry")
  printf 'latency --entry / latency at call sites per call: %.1fx median of %d reps [%.1fx..%.1fx]\n' "$rm" "$reps" "$rmin" "$rmax"
  awk -v r="$rm" 'BEGIN { exit !(r > 1) }' || return 3
  return 0
fi
paste "$tmp/cost.goscope" "$tmp/cost.bpftrace" | awk '{ printf "%.6g\n", $2 / $1 }' >"$tmp/ratio.bpftrace"

# Per repetition, so a disturbed one (another job took the CPUs) shows.
echo
echo "per repetition: ns per hit (goscope, goscope --entry, bpftrace), bpftrace/goscope"
paste "$tmp/ops.base" "$tmp/cost.goscope" "$tmp/cost.entry" "$tmp/cost.bpftrace" "$tmp/ratio.bpftrace" |
  awk -v best="$(sort -g "$tmp/ops.base" | tail -1)" '{
    printf "  rep %d: no-probe %s ops/s; %.0f, %.0f, %.0f ns; %.1fx%s\n", NR, ($1 >= 1e6 ? sprintf("%.3gM", $1 / 1e6) : sprintf("%.3gk", $1 / 1e3)),
      $2, $3, $4, $5, ($1 < best / 2 ? "  (disturbed: no-probe ops/s below half the best; kept in the medians)" : "") }'
echo
echo "Per-hit cost of counting $func ($case_name case: goscope's probe_kind $kind), $reps x ${secs} s per mode, interleaved"
echo "machine: $(nproc) vCPUs, Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%-27s %-32s %-30s %s\n' "mode" "target ops/s median [min..max]" "ns per hit median [min..max]" "x goscope"
for mode in "${modes[@]}"; do
  read -r om omin omax < <(stats <"$tmp/ops.$mode")
  ops_col="$(fmt_si "$om") [$(fmt_si "$omin")..$(fmt_si "$omax")]"
  if [[ $mode == base ]]; then
    printf '%-27s %-32s %-30s %s\n' "${label[$mode]}" "$ops_col" "-" "-"
    continue
  fi
  read -r cm cmin cmax < <(stats <"$tmp/cost.$mode")
  cost_col=$(printf '%.0f [%.0f..%.0f]' "$cm" "$cmin" "$cmax")
  case $mode in
    goscope) x="1" ;;
    entry) read -r x _ < <(stats <"$tmp/ratio.entry") ;;
    bpftrace) read -r x _ < <(stats <"$tmp/ratio.bpftrace") ;;
  esac
  printf '%-27s %-32s %-30s %.1f\n' "${label[$mode]}" "$ops_col" "$cost_col" "$x"
done
read -r rm rmin rmax < <(stats <"$tmp/ratio.bpftrace")
verdict=$(awk -v r="$rm" -v t="$target_x" 'BEGIN { print (r >= t) ? "MET" : "NOT MET" }')
printf 'bpftrace / goscope per hit (%s): %.1fx median of %d reps [%.1fx..%.1fx]; target >= %sx: %s\n' \
  "$case_name" "$rm" "$reps" "$rmin" "$rmax" "$target_x" "$verdict"
[[ $verdict == MET ]] || return 3
}

status=0
for c in "${cases[@]}"; do
  measure_case "$c" || status=$?
  echo
done
exit "$status"
