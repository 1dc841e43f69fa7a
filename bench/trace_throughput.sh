#!/usr/bin/env bash
# How many trace events the reading side decodes, and what each costs it
# (issue #14 goal 6): goscope `trace --json > /dev/null`, goscope's text
# lines > /dev/null, and bpftrace printf-ing the same values, on the same
# hot function in one run.
#
# Producer: bench/go/tracefeed, GOROUTINES goroutines calling
# main.emit(n int, name string) int as fast as they can. Every call is two
# ring-buffer events for each tool: the entry (n and name) and the RET (the
# result). goscope puts its entry probe on the stack-check jbe and one on the
# RET; bpftrace gets a uprobe on the entry and one on the RET's file offset:
#   uprobe:BIN:main.emit { printf("%llu %d %d main.emit(n=%d, name=%s)\n", nsecs, pid, tid, reg("ax"), str(reg("bx"), reg("cx"))); }
#   uprobe:BIN:0xRET     { printf("%llu %d %d = %d\n", nsecs, pid, tid, reg("ax")); }
# Each tool attaches to the running producer for SECS seconds (goscope without
# --max-overhead: the bound would drop the probes, 2 goroutines take more than
# one CPU; it only warns), its stdout to
# /dev/null. From the first second the producer reports under the probes
# (its rate collapses), for SECS - 3 s (a window W), the script
# reads the tool's user+system CPU (/proc/PID/stat, and its children's once
# reaped: goscope's link helper) and the producer's call counter (its
# report file, once a second; interpolated). Per mode and round:
#   events/s    = 2 x the producer's calls/s in W (from its own lines inside
#                 W), less the events the tool said it lost
#                 (whole run; so never more than what it decoded)
#   CPU/event   = tool CPU in W / those events
#   events per CPU-second = 1 / CPU/event: what one core of the tool keeps up
#                 with (the producer is limited by the uprobe traps, ~1-10 us
#                 each, on this machine; not by the reader)
#   producer ns CPU per event = the producer's user+system CPU in W / those
#                 events: what each trap (and its BPF program's record) cost
#                 the traced program; events a second on 2 vCPUs cannot pass
#                 2 s / (producer's + tool's CPU per event)
# Modes run in rotated order (A B C, B C A, ...) ROUNDS times; the table shows
# median [min..max] and the ratios against bpftrace per round. With
# GOSCOPE_BASE=/path/to/goscope, that build's json and text modes run too.
#
# SITES=1: the producer's callers call main.emitLeaf instead (tracefeed
# --sites): a leaf that goscope probes at its call site, where the `call`
# and the instruction after it (the loop's `jmp`) are both emulated by the
# kernel: no single-stepped RET, so the producer makes several times more
# calls a second under goscope's probes. bpftrace keeps its entry and RET
# uprobes (what `printf` of the same values takes there). The table then
# also says whether goscope delivered TARGET events a second of wall time.
#
# SYNTH=1: no uprobe traps feed the ring but bench/synth_ring, an in-kernel
# synthetic producer writing copies of a real call's records into goscope's
# own ring (bench/trace_throughput_synth.sh says how, and its env): the
# events goscope DELIVERS a second of wall time when the producer is not
# the limit, against TARGET a second; no bpftrace mode.
#
# Usage (root): bench/trace_throughput.sh   env: ROUNDS (3), SECS (6), GOROUTINES (2),
#               TARGET (1000000 events per CPU-second), SITES (0), SYNTH (0), GOSCOPE_BASE
# Exit: 0 measured and goscope's json and text decode >= TARGET events per
#       CPU-second (median) with CPU/event <= bpftrace's; 3 measured but not; 1 error.
set -euo pipefail
source "$(dirname -- "$(readlink -f -- "$0")")/common.sh"

rounds=${ROUNDS:-3}
secs=${SECS:-6}
goroutines=${GOROUTINES:-2}
target=${TARGET:-1000000}
[[ $rounds =~ ^[1-9][0-9]*$ && $secs =~ ^[6-9]$|^[1-9][0-9]+$ ]] || die "ROUNDS must be a positive integer, SECS at least 6"
sites=${SITES:-0}
func=main.emit
feed_args=()
[[ $sites == 1 ]] && { func=main.emitLeaf; feed_args=(--sites); }
hz=$(getconf CLK_TCK)
if [[ ${SYNTH:-0} == 1 ]]; then
  source "$root/bench/trace_throughput_synth.sh"
  exit
fi

feed=$(build_bench_go tracefeed)
"$feed" --goroutines "$goroutines" "${feed_args[@]}" --out "$tmp/feed.report" >/dev/null 2>&1 &
producer=$!
bench_track "$producer"
sleep 1.2

# bpftrace's program: the entry by name, the RET by file offset (goscope list gives its address).
ret=$("$goscope" list --json -b "$feed" "$func" | sed -n 's/.*"returns":\["\(0x[0-9a-f]*\)".*/\1/p')
[[ -n $ret ]] || die "goscope list gave no RET for $func"
read -r seg_off seg_vaddr < <(readelf -lW "$feed" | awk '$1 == "LOAD" && / E / { print $2, $3; exit }')
ret_off=$(printf '0x%x' $((ret - seg_vaddr + seg_off)))
# No /pid == .../ filter: bpftrace 0.17 compares the pid of the root pid
# namespace, which is not the one this script sees in a container (the
# filter then drops everything); the producer's private copy is the only
# process running that file. BEGIN runs once both probes are attached.
cat >"$tmp/trace.bt" <<EOF
uprobe:$feed:$func { printf("%llu %d %d $func(n=%d, name=%s)\n", nsecs, pid, tid, reg("ax"), str(reg("bx"), reg("cx"))); }
uprobe:$feed:$ret_off { printf("%llu %d %d = %d\n", nsecs, pid, tid, reg("ax")); }
BEGIN { system("touch $tmp/bt.attached"); }
EOF

modes=(${MODES:-json text bpftrace})
[[ -n ${GOSCOPE_BASE:-} ]] && modes+=(base_json base_text)
declare -A label=([json]="goscope trace --json" [text]="goscope trace (text)" [bpftrace]="bpftrace printf"
  [base_json]="GOSCOPE_BASE --json" [base_text]="GOSCOPE_BASE (text)")

# The producer's calls a second between T0 and T1: from its own lines inside
# that span (the first and the last), not interpolated past it (after the
# window the producer runs unprobed, 1000x faster).
calls_rate() {
  awk -v t0="$1" -v t1="$2" '{ split($2, a, "="); split($3, b, "="); ts = a[2] / 1e9; n = b[2]
      if (ts >= t0 && ts <= t1) { if (!f) { fa = ts; na = n; f = 1 } lt = ts; ln = n } }
    END { if (!f || lt - fa < 0.5) { print "nan"; exit } printf "%.1f\n", (ln - na) / (lt - fa) }' "$tmp/feed.report"
}
# user+system CPU ticks of PID and of its reaped children.
cpu_ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat" 2>/dev/null || echo nan; }

run_mode() {
  local mode=$1 round=$2 log=$tmp/$1.$2.err pid t0 t1 c0 c1 p0 p1 rate lost g
  case $mode in
    json | base_json | text | base_text)
      g=$goscope
      [[ $mode == base_* ]] && g=$GOSCOPE_BASE
      local json=()
      [[ $mode == *json ]] && json=(--json)
      timeout -k 5 $((secs + 60)) "$g" trace "${json[@]}" -p "$producer" "$func" -d "$secs" \
        >/dev/null 2>"$log" &
      ;;
    bpftrace) timeout -s INT -k 5 $((secs + 60)) bpftrace --unsafe "$tmp/trace.bt" >/dev/null 2>"$log" & ;;
  esac
  pid=$!
  bench_track "$pid"
  # The window starts once the probes are attached (start-up, bpftrace's
  # compilation included, is not what is measured) and in effect; it lasts SECS - 3 s.
  local waited=0
  until grep -q 'attached to' "$log" 2>/dev/null || [[ -e $tmp/bt.attached ]]; do
    sleep 0.1
    ((++waited < 600)) || { cat "$log" >&2; die "$mode (round $round): not attached after 60 s"; }
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$mode (round $round): the tool exited before attaching"; }
  done
  rm -f "$tmp/bt.attached"
  # ... and the probes are in effect: bpftrace 0.17 runs BEGIN before its
  # uprobes fire (the producer ran unprobed for ~2 s after it). The producer's
  # own line says so: under the probes it makes far fewer than a million
  # calls a second (two traps a call), unprobed tens of millions.
  local since
  since=$(now_s)
  waited=0
  until awk -v s="$since" '{ split($2, a, "="); split($4, o, "=") } a[2] / 1e9 > s + 0.9 && o[2] < 1e6 { f = 1 } END { exit !f }' \
    "$tmp/feed.report"; do
    sleep 0.2
    ((++waited < 150)) || { cat "$log" >&2; die "$mode (round $round): the producer was not slowed by the probes within 30 s"; }
  done
  local tool
  tool=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null | awk '{ print $1 }')  # timeout's child: the tool
  [[ -n $tool ]] || die "$mode (round $round): no tool process under timeout ($pid)"
  t0=$(now_s); c0=$(cpu_ticks "$tool"); p0=$(cpu_ticks "$producer")
  sleep "$((secs - 3))"
  t1=$(now_s); c1=$(cpu_ticks "$tool"); p1=$(cpu_ticks "$producer")
  [[ $mode == bpftrace ]] && kill -INT "$tool" 2>/dev/null
  wait "$pid" || true
  sleep 1.1  # the producer's line after t1
  [[ -n ${BENCH_DEBUG:-} ]] && { echo "t0=$t0 t1=$t1 tool=$tool" >&2; tail -12 "$tmp/feed.report" >&2; }
  rate=$(calls_rate "$t0" "$t1")
  case $mode in
    bpftrace) lost=$(awk '/Lost [0-9]+ events/ { s += $2 } END { print s + 0 }' "$log") ;;
    *) lost=$(awk '/events lost/ { print $2 + 0; f = 1 } END { if (!f) print 0 }' "$log") ;;
  esac
  [[ $c0 != nan && $c1 != nan && $rate != nan ]] || { cat "$log" >&2; die "$mode (round $round): no CPU or call figures"; }
  # Two uprobe traps a call, a microsecond or more each: on 2 vCPUs the
  # producer cannot make a million probed calls a second. More means the
  # probes were not in place during the window: the round is void.
  awk -v r="$rate" 'BEGIN { exit !(r < 1e6) }' ||
    { cat "$log" >&2; tail -8 "$tmp/feed.report" >&2; die "$mode (round $round): the producer made $rate calls/s in the window: not probed"; }
  awk -v m="$mode" -v r="$round" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v rate="$rate" \
    -v lost="$lost" -v hz="$hz" -v p0="$p0" -v p1="$p1" 'BEGIN {
      w = t1 - t0; ev = 2 * rate * w - lost; if (ev < 1) ev = 1
      cpu = (c1 - c0) / hz; pcpu = (p1 - p0) / hz
      printf "%s %d %.0f %.0f %.6f %.1f %.0f %d %.3f %.1f\n", m, r, rate, ev / w, cpu / w, cpu / ev * 1e9, (cpu > 0 ? ev / cpu : 0), lost,
        pcpu / w, pcpu / (2 * rate * w) * 1e9
    }' >>"$tmp/rows"
  tail -1 "$tmp/rows" | awk -v l="${label[$mode]}" '{ printf "  round %d  %-22s calls/s %9s  events/s %9s  CPU %.2f s/s  %7.1f ns/event  %9s events per CPU-s  lost %d  producer %.2f CPU s/s, %.0f ns/event\n", $2, l, $3, $4, $5, $6, $7, $8, $9, $10 }' >&2
}

echo "trace_throughput: $func in $feed ($goroutines goroutines, unthrottled${feed_args[*]:+, ${feed_args[*]}}), $rounds rounds x $secs s per mode, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/rows"
run_rounds

col() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$tmp/rows" | stats; }
fmt3() { read -r a b c <<<"$1"; printf '%s [%s..%s]' "$(fmt_si "$a")" "$(fmt_si "$b")" "$(fmt_si "$c")"; }
echo
echo "Trace throughput: $func, 2 events a call, stdout to /dev/null; $rounds rounds x ${secs} s per mode, interleaved; median [min..max]"
echo "machine: $(nproc) vCPUs, Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after"
printf '%-22s %-26s %-26s %-24s %-26s %-16s %s\n' mode "events decoded/s" "tool CPU s/s" "ns CPU per event" "events per CPU-second" "lost (per run)" "producer ns CPU per event (its traps)"
for m in "${modes[@]}"; do
  read -r c5 lo5 hi5 < <(col "$m" 5)
  read -r c6 lo6 hi6 < <(col "$m" 6)
  read -r c10 lo10 hi10 < <(col "$m" 10)
  printf '%-22s %-26s %-26s %-24s %-26s %-16s %s\n' "${label[$m]}" "$(fmt3 "$(col "$m" 4)")" "$(printf '%.2f [%.2f..%.2f]' "$c5" "$lo5" "$hi5")" \
    "$(printf '%.0f [%.0f..%.0f]' "$c6" "$lo6" "$hi6")" "$(fmt3 "$(col "$m" 7)")" \
    "$(awk -v m="$m" '$1 == m { printf "%s%d", (n++ ? "," : ""), $8 }' "$tmp/rows")" \
    "$(printf '%.0f [%.0f..%.0f]' "$c10" "$lo10" "$hi10")"
done
# Per round: bpftrace's CPU per event / goscope's (> 1: goscope cheaper).
ratio() {
  awk -v m="$1" '$1 == "bpftrace" { b[$2] = $6 } $1 == m { g[$2] = $6 } END { for (r in g) if (b[r] > 0 && g[r] > 0) print b[r] / g[r] }' "$tmp/rows" | stats
}
verdict=MET
for m in json text; do
  read -r rm rlo rhi < <(ratio "$m")
  read -r cap _ _ < <(col "$m" 7)
  printf '%s: bpftrace CPU per event / goscope'"'"'s = %.2fx [%.2fx..%.2fx]; %s events per CPU-second (target %s)\n' \
    "${label[$m]}" "$rm" "$rlo" "$rhi" "$(fmt_si "$cap")" "$(fmt_si "$target")"
  awk -v c="$cap" -v t="$target" -v r="$rm" 'BEGIN { exit !(c + 0 >= t && r + 0 >= 1) }' || verdict="NOT MET"
done
if [[ -n ${GOSCOPE_BASE:-} ]]; then
  for m in json text; do
    awk -v m="$m" '$1 == "base_" m { b[$2] = $6 } $1 == m { g[$2] = $6 } END { for (r in g) if (b[r] > 0 && g[r] > 0) print b[r] / g[r] }' \
      "$tmp/rows" | stats | { read -r a lo hi; printf 'GOSCOPE_BASE CPU per event / this build'"'"'s, %s: %.2fx [%.2fx..%.2fx]\n' "$m" "$a" "$lo" "$hi"; }
  done
fi
# Delivered: decoded events a second of wall time (the producer's rate
# under the probes decides it, not the reader's capacity).
for m in json text; do
  read -r dm dlo dhi < <(col "$m" 4)
  printf '%s: %s events delivered a second (wall) [%s..%s], target %s: %s\n' "${label[$m]}" "$(fmt_si "$dm")" \
    "$(fmt_si "$dlo")" "$(fmt_si "$dhi")" "$(fmt_si "$target")" \
    "$(awk -v x="$dm" -v t="$target" 'BEGIN { print (x + 0 >= t ? "MET" : "NOT MET") }')"
done
echo "goscope json and text >= $(fmt_si "$target") events per CPU-second and cheaper per event than bpftrace: $verdict"
[[ $verdict == MET ]] || exit 3
