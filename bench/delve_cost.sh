#!/usr/bin/env bash
# What the Delve path costs the target, measured from the target's side.
# The target is the counter fixture: main.doWork increments main.counter in a
# tight loop, so one of its threads is always runnable unless a debugger
# holds it. Two views of the target, both read without stopping it:
#   - progress: main.counter, from /proc/PID/mem;
#   - held: wall time minus the time the thread running the loop was
#     runnable (on a CPU or waiting for one: /proc/PID/task/TID/schedstat).
#     A thread that ptrace holds is neither, so this is the time the target
#     was stopped, and CPU contention (2 vCPUs shared with dlv and goscope,
#     and with whatever else runs on the machine) does not count as a stop.
#
# 1. A one-off read (`goscope read --strategy delve -p PID main.counter`: a plain variable is otherwise read directly, without Delve), READS times:
#    end to end (the goscope command's wall time), stopped as goscope's own
#    clock says it (dlv's attach to its detach), held (above), and lost
#    progress: window - increments / rate, the rate measured over RATE_MS
#    right before and right after (their mean); the window spans the whole
#    goscope command, so lost progress also counts the CPU dlv takes away.
# 2. 1 Hz sampling (`goscope sample -i 1 --at main.doWork main.counter`):
#    WINDOW seconds with no probe, WINDOW seconds in the middle of a sampling
#    session, and WINDOW seconds in the middle of a session that is attached
#    and running but never stops (a breakpoint on main.main, which is never
#    called again), interleaved REPS times in rotating order. Per window:
#    throughput (increments/s) and held time per second. Reported: the
#    throughput ratio sampled / no probe of the same repetition, the held
#    time sampling adds, how much of it being attached alone costs (every
#    signal to a ptraced thread - Go's preemption SIGURG, ~100/s for a busy
#    goroutine - is a stop and a round trip through dlv), and goscope's own
#    pause per sample.
# 3. For contrast, `goscope break` on every call of main.doWork: hits/s and
#    the throughput under it.
#
# Usage (root):  bench/delve_cost.sh
#   env: READS (10), REPS (5), WINDOW (5 s), RATE_MS (300),
#        GOSCOPE_BUILD_DIR (./build) or GOSCOPE (the binary)
# Exit: 0 measured, 1 error.
set -euo pipefail

root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/.." && pwd)
build=${GOSCOPE_BUILD_DIR:-$root/build}
goscope=${GOSCOPE:-$build/goscope}
reads=${READS:-10}
reps=${REPS:-5}
window=${WINDOW:-5}
rate_ms=${RATE_MS:-300}

die() { echo "delve_cost.sh: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "run as root (ptrace)"
for tool in dlv readelf dd od awk; do command -v "$tool" >/dev/null || die "'$tool' not found (bash scripts/setup.sh)"; done
[[ -x $goscope ]] || die "no goscope binary at $goscope (set GOSCOPE or GOSCOPE_BUILD_DIR)"
counter_bin=$build/fixtures/default/counter
if [[ ! -x $counter_bin ]]; then
  bash "$root/scripts/build-fixtures.sh" "$build/fixtures" >&2 || die "building the fixtures failed"
fi

tmp=$(mktemp -d /tmp/goscope-delve-cost.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# stdin: one number a line. stdout: "median min max".
stats() {
  sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "nan nan nan"; exit }
    med = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.6g %.6g %.6g\n", med, a[1], a[NR] }'
}

"$counter_bin" >/dev/null &
target=$!
pids+=("$target")
addr=$(readelf -sW "$counter_bin" | awk '$8 == "main.counter" { print $2 }')
[[ -n $addr ]] || die "no main.counter symbol in $counter_bin"
addr=$((16#$addr))
sleep 0.5

# "WALL_S COUNT TID=RUNNABLE_S,...": now, the target's counter, and for each
# of its threads the time it has been runnable (on a CPU + waiting for one),
# all read without stopping it.
snap() {
  local t=$EPOCHREALTIME v r f
  v=$(dd if=/proc/$target/mem bs=8 count=1 iflag=skip_bytes skip=$addr status=none | od -An -td8)
  r=""
  for f in /proc/$target/task/*/schedstat; do
    r+=$(awk -v tid="$(basename "$(dirname "$f")")" '{ printf "%s=%.9f,", tid, ($1 + $2) / 1e9 }' "$f")
  done
  echo "$t ${v// /} $r"
}
# The difference of two snaps: "WALL_S INCREMENTS RUNNABLE_S", RUNNABLE_S
# being that of the thread runnable the longest: the one running the loop
# (Go's other threads wake now and then, and summing them would count more
# runnable time than there is wall time).
delta() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    n = split(x[3], ta, ","); for (i = 1; i <= n; i++) if (split(ta[i], kv, "=") == 2) before[kv[1]] = kv[2]
    n = split(y[3], tb, ","); best = 0
    for (i = 1; i <= n; i++) if (split(tb[i], kv, "=") == 2 && (kv[1] in before) && kv[2] - before[kv[1]] > best) best = kv[2] - before[kv[1]]
    printf "%.9f %d %.9f\n", y[1] - x[1], y[2] - x[2], best }'
}
# Increments per second over RATE_MS.
rate() {
  local a b
  a=$(snap)
  sleep "$(awk -v m="$rate_ms" 'BEGIN { print m / 1000 }')"
  b=$(snap)
  delta "$a" "$b" | awk '{ print $2 / $1 }'
}

echo "target: $counter_bin (PID $target), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "goscope: $goscope; $(dlv version | sed -n 's/^Version: /Delve /p')"

# ---- 1. one-off read ----
for f in e2e stopped held lost; do : >"$tmp/$f"; done
for ((i = 1; i <= reads; i++)); do
  r1=$(rate)
  a=$(snap)
  "$goscope" read --strategy delve -p "$target" main.counter >"$tmp/read.out" 2>"$tmp/read.err" || { cat "$tmp/read.err" >&2; die "goscope read failed"; }
  b=$(snap)
  r2=$(rate)
  stopped=$(sed -n 's/.* was stopped \([0-9.]*\) ms.*/\1/p' "$tmp/read.err")
  [[ -n $stopped ]] || { cat "$tmp/read.err" >&2; die "goscope read did not say how long the target was stopped"; }
  echo "$stopped" >>"$tmp/stopped"
  read -r w n run < <(delta "$a" "$b")
  awk -v w="$w" -v n="$n" -v run="$run" -v r="$(awk -v a="$r1" -v b="$r2" 'BEGIN { print (a + b) / 2 }')" \
    -v d="$tmp" 'BEGIN { print w * 1000 >> (d "/e2e"); print (w - run) * 1000 >> (d "/held"); print (w - n / r) * 1000 >> (d "/lost") }'
  sleep 0.3
done
echo
echo "one-off read of main.counter, $reads runs (median, min..max):"
for f in e2e stopped held lost; do
  case $f in
    e2e) what="end to end (goscope read)" ;;
    stopped) what="stopped, goscope's clock" ;;
    held) what="held, target's threads not runnable" ;;
    lost) what="lost progress, target's counter" ;;
  esac
  read -r med lo hi < <(stats <"$tmp/$f")
  printf "  %-38s %7.1f ms  (%.1f..%.1f)\n" "$what" "$med" "$lo" "$hi"
done

# ---- 2. 1 Hz sampling, interleaved with no-probe windows ----
# One window: "THROUGHPUT HELD_MS_PER_S".
measure() {
  local a b
  a=$(snap)
  sleep "$window"
  b=$(snap)
  delta "$a" "$b" | awk '{ printf "%.6g %.4f\n", $2 / $1, ($1 - $3) / $1 * 1000 }'
}
# The same window in the middle of a goscope session; $1: the goscope
# arguments after -p PID. Appends goscope's pause figures for sample.
measure_session() {
  local g m
  "$goscope" "$1" -p "$target" "${@:2}" >"$tmp/session.out" 2>"$tmp/session.err" &
  g=$!
  pids+=("$g")
  sleep 1.5  # attached, first samples taken: measure the steady state
  m=$(measure)
  wait "$g" || { cat "$tmp/session.err" >&2; die "goscope $1 failed"; }
  sed -n 's/.*pause per sample \([0-9.]*\) ms on average, \([0-9.]*\) ms at most.*/\1 \2/p' "$tmp/session.err" >>"$tmp/pauses"
  echo "$m"
}
run_mode() {
  case $1 in
    base) measure ;;
    sampled) measure_session sample --at main.doWork main.counter -i 1 -d $((window + 3)) ;;
    # attached and running, a breakpoint that is never hit: the price of
    # being ptraced at all, without a single sample
    attached) measure_session break main.main -d $((window + 3)) ;;
  esac
}
for f in ratio pauses added attached; do : >"$tmp/$f"; done
modes=(base sampled attached)
echo
echo "1 Hz sampling (goscope sample -i 1 --at main.doWork main.counter), ${window} s windows, interleaved"
echo "with no probe and with goscope attached but not sampling (break main.main, never hit):"
for ((i = 1; i <= reps; i++)); do
  declare -A res=()
  for ((k = 0; k < 3; k++)); do
    m=${modes[$(((i + k) % 3))]}
    res[$m]=$(run_mode "$m")
    sleep 0.5
  done
  read -r bt bh <<<"${res[base]}"
  read -r st sh <<<"${res[sampled]}"
  read -r at ah <<<"${res[attached]}"
  ratio=$(awk -v s="$st" -v b="$bt" 'BEGIN { printf "%.4f", s / b }')
  echo "$ratio" >>"$tmp/ratio"
  awk -v s="$sh" -v b="$bh" 'BEGIN { printf "%.3f\n", s - b }' >>"$tmp/added"
  awk -v s="$ah" -v b="$bh" 'BEGIN { printf "%.3f\n", s - b }' >>"$tmp/attached"
  printf "  rep %d: no probe %.4g ops/s held %.2f ms/s | sampling %.4g ops/s held %.2f ms/s | attached %.4g ops/s held %.2f ms/s | ratio %s\n" \
    "$i" "$bt" "$bh" "$st" "$sh" "$at" "$ah" "$ratio"
done
read -r ratio_med ratio_min ratio_max < <(stats <"$tmp/ratio")
read -r added_med added_min added_max < <(stats <"$tmp/added")
read -r att_med att_min att_max < <(stats <"$tmp/attached")
read -r pause_med _ _ < <(awk '{ print $1 }' "$tmp/pauses" | stats)
read -r _ _ pmax_max < <(awk '{ print $2 }' "$tmp/pauses" | stats)
printf "  throughput ratio sampling / no probe: median %s (%s..%s)\n" "$ratio_med" "$ratio_min" "$ratio_max"
printf "  held time added by sampling: median %.2f ms per second (%.2f..%.2f) = %.2f%% of the target's time\n" \
  "$added_med" "$added_min" "$added_max" "$(awk -v a="$added_med" 'BEGIN { print a / 10 }')"
printf "    of which being attached at all: median %.2f ms per second (%.2f..%.2f)\n" "$att_med" "$att_min" "$att_max"
printf "    and the samples: goscope's pause %.1f ms on average (median of runs), longest %.1f ms\n" "$pause_med" "$pmax_max"

# ---- 3. for contrast: a breakpoint on every call ----
echo
echo "for contrast, goscope break on every call of main.doWork:"
read -r base_t _ < <(measure)
"$goscope" break -p "$target" main.doWork -d $((window + 2)) >/dev/null 2>"$tmp/break.err" &
g=$!
pids+=("$g")
sleep 1
read -r during_t during_h < <(measure)
wait "$g" || { cat "$tmp/break.err" >&2; die "goscope break failed"; }
hits=$(sed -n 's/.*(\([0-9.]*\) hits\/s).*/\1/p' "$tmp/break.err")
printf "  no probe %.4g ops/s; under the breakpoint %.4g ops/s (ratio %.2g), held %.0f ms/s; %s hits/s\n" \
  "$base_t" "$during_t" "$(awk -v d="$during_t" -v b="$base_t" 'BEGIN { print d / b }')" "$during_h" "$hits"
