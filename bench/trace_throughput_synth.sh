# bench/trace_throughput.sh SYNTH=1 (sourced by it, after common.sh): how
# many trace events a second goscope's reader DELIVERS (ring -> decode ->
# match -> format -> stdout), fed by an in-kernel synthetic producer instead
# of uprobe traps (issue #14 goal 6: a million a second on one core).
#
# The target is real: tracefeed --rate FEED_RATE (10 calls a second of
# main.emit(n, name), two goroutines), traced by goscope as usual
# (`trace [--json] -p PID main.emit -d ...`, stdout /dev/null). Once a call
# of it has been read, bench/synth_ring copies that call's two records (the
# entry, with the name's bytes, and the return) and writes copies of them
# into the session's ring from a BPF_PROG_TYPE_SYSCALL program for SECS
# seconds on THREADS threads, at RATE records a second (0: as fast as the
# ring takes them), with emit_event's wake-up rule (WAKEUP=crossing: the
# experiment in docs/kernel.md); every record it could not write is counted
# in the session's own lost counter (bench/synth_ring.c says how). goscope
# decodes and prints them as calls of main.emit (n=RAX set to 4242).
#
# Per mode and round, from synth_ring's window (SECS s):
#   delivered/s   records goscope consumed (the ring's consumer position
#                 moved over them: each one decoded, matched and written)
#                 a second
#   CPU/event     goscope's user+system CPU in the window / those records
#   lost          goscope's end line ("N events lost"), which must equal the
#                 records the producer could not write (ring full) plus at
#                 most the target's own few: checked, a round that
#                 disagrees stops the script (exit 1)
#   producer      records offered a second, and how long goscope took to
#                 drain the ring after the window
# PIN=1 (the default on 2+ CPUs): goscope runs on CPU 0 (taskset), the
# producer on CPU 1: "one core" of the reader, and the reader's core not
# taken by the producer (other processes on the machine still share both).
# Modes rotate (run_rounds); GOSCOPE_BASE adds that build's json and text.
# bpftrace is not run: there is no synthetic producer for it (its printf
# reads perf buffers fed by its own uprobes); its figure stays the
# real-producer one of the default mode.
#
# env: ROUNDS (3), SECS (6), THREADS (1), RATE (0), FEED_RATE (10),
#      WAKEUP (emit_event), PIN (1), TARGET (1000000 delivered events a second)
# Exit: 0 goscope's json and text medians delivered >= TARGET a second;
#       3 measured but not; 1 error.
# shellcheck shell=bash disable=SC2154,SC2317  # globals and functions of common.sh and trace_throughput.sh; run_mode is called by run_rounds

threads=${THREADS:-1}
rate=${RATE:-0}
feed_rate=${FEED_RATE:-10}
wakeup=${WAKEUP:-emit_event}
pin=${PIN:-1}
pin_reader=() pin_producer=()
if [[ $pin == 1 && $(nproc) -ge 2 ]]; then
  need taskset
  pin_reader=(taskset -c 0) pin_producer=(taskset -c 1)
else
  pin=0
fi
mark=4242
[[ $threads =~ ^[1-9][0-9]*$ && $rate =~ ^[0-9]+$ && $feed_rate =~ ^[1-9][0-9]*$ ]] ||
  die "THREADS and FEED_RATE must be positive integers, RATE a non-negative one"
need cc; need clang

synth=$tmp/synth/synth_ring
vmlinux=$build/bpf/vmlinux.h
[[ -r $vmlinux ]] || vmlinux=
bash "$root/bench/synth_ring_build.sh" "$tmp/synth" ${vmlinux:+"$vmlinux"} >&2 || die "building bench/synth_ring failed"

feed=$(build_bench_go tracefeed)
"$feed" --goroutines 2 --rate "$feed_rate" --out "$tmp/feed.report" >/dev/null 2>&1 &
producer=$!
bench_track "$producer"
sleep 1

modes=(json text)
[[ -n ${GOSCOPE_BASE:-} ]] && modes+=(base_json base_text)
declare -A label=([json]="goscope trace --json" [text]="goscope trace (text)"
  [base_json]="GOSCOPE_BASE --json" [base_text]="GOSCOPE_BASE (text)")

# synth_ring's "key=value" line: the value of KEY.
kv() { tr ' ' '\n' <<<"$2" | awk -F= -v k="$1" '$1 == k { print $2; exit }'; }

run_mode() {
  local mode=$1 round=$2 log=$tmp/$1.$2.err g=$goscope pid tool line json=()
  [[ $mode == base_* ]] && g=$GOSCOPE_BASE
  [[ $mode == *json ]] && json=(--json)
  # -d: a bound in case the script dies; the round ends it with SIGINT.
  timeout -k 5 $((secs + 120)) "${pin_reader[@]}" "$g" trace "${json[@]}" -p "$producer" main.emit -d $((secs + 60)) \
    >/dev/null 2>"$log" &
  pid=$!
  bench_track "$pid"
  local waited=0
  until grep -q 'attached to' "$log" 2>/dev/null; do
    sleep 0.1
    ((++waited < 600)) || { cat "$log" >&2; die "$mode (round $round): not attached after 60 s"; }
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$mode (round $round): goscope exited before attaching"; }
  done
  tool=$(awk '{ print $1 }' "/proc/$pid/task/$pid/children" 2>/dev/null)  # timeout's child: goscope
  [[ -n $tool ]] || die "$mode (round $round): no goscope process under timeout ($pid)"
  # synth_ring waits for a call of the target in the ring (10 a second).
  line=$("${pin_producer[@]}" "$synth" --reader "$tool" --secs "$secs" --threads "$threads" --rate "$rate" --mark "$mark" \
    --wakeup "$wakeup" --wait 20 2>"$tmp/synth.err") ||
    { cat "$tmp/synth.err" "$log" >&2; die "$mode (round $round): synth_ring failed"; }
  kill -INT "$tool" 2>/dev/null || true
  wait "$pid" || { cat "$log" >&2; die "$mode (round $round): goscope did not exit 0"; }
  local lost refused
  lost=$(awk '/events lost/ { print $2 + 0; f = 1 } END { if (!f) print 0 }' "$log")
  refused=$(kv refused "$line")
  # Every refused record is in goscope's count; beyond them only the
  # target's own events may be lost (2 a call, FEED_RATE calls a second).
  awk -v l="$lost" -v r="$refused" -v extra=$((2 * feed_rate * (secs + 30))) 'BEGIN { exit !(l >= r && l <= r + extra) }' ||
    { echo "$line" >&2; cat "$log" >&2; die "$mode (round $round): goscope counted $lost events lost, the producer $refused refused"; }
  awk -v m="$mode" -v r="$round" -v w="$(kv secs "$line")" -v c="$(kv consumed "$line")" -v cpu="$(kv reader_cpu_s "$line")" \
    -v lost="$lost" -v refused="$refused" -v written="$(kv written "$line")" -v off="$(kv offered_per_s "$line")" \
    -v drained="$(kv drained_s "$line")" 'BEGIN {
      printf "%s %d %.0f %.6f %.1f %.0f %d %d %d %.0f %.3f\n", m, r, c / w, cpu / w, (c > 0 ? cpu / c * 1e9 : 0),
        (cpu > 0 ? c / cpu : 0), written, refused, lost, off, drained
    }' >>"$tmp/rows"
  tail -1 "$tmp/rows" | awk -v l="${label[$mode]}" '{ printf "  round %d  %-22s delivered %9s/s  CPU %.2f s/s  %6.1f ns/event  %9s events per CPU-s  written %d  refused %d  goscope lost %d  offered %s/s  drained in %.3f s\n", $2, l, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' >&2
}

echo "trace_throughput SYNTH=1: main.emit of $feed at $feed_rate calls/s, synth_ring ($threads thread(s), rate ${rate/#0/unthrottled}, wake-ups: $wakeup, pinned: $pin), $rounds rounds x $secs s per mode, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/rows"
run_rounds

col() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$tmp/rows" | stats; }
fmt3() { read -r a b c <<<"$1"; printf '%s [%s..%s]' "$(fmt_si "$a")" "$(fmt_si "$b")" "$(fmt_si "$c")"; }
offer="$rate records a second"
[[ $rate == 0 ]] && offer="unthrottled"
echo
echo "Trace throughput, synthetic producer (bench/synth_ring: copies of a real main.emit call written into goscope's ring in the kernel, $offer, $threads thread(s), wake-ups: $wakeup${pin_reader:+, goscope on CPU 0, the producer on CPU 1}), stdout to /dev/null; $rounds rounds x $secs s per mode, interleaved; median [min..max]"
echo "machine: $(nproc) vCPUs, Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after"
printf '%-22s %-26s %-22s %-22s %-26s %-30s %s\n' mode "events delivered/s" "goscope CPU s/s" "ns CPU per event" \
  "events per CPU-second" "lost/refused (per run)" "offered/s by the producer"
for m in "${modes[@]}"; do
  read -r c4 lo4 hi4 < <(col "$m" 4)
  read -r c5 lo5 hi5 < <(col "$m" 5)
  printf '%-22s %-26s %-22s %-22s %-26s %-30s %s\n' "${label[$m]}" "$(fmt3 "$(col "$m" 3)")" \
    "$(printf '%.2f [%.2f..%.2f]' "$c4" "$lo4" "$hi4")" "$(printf '%.0f [%.0f..%.0f]' "$c5" "$lo5" "$hi5")" \
    "$(fmt3 "$(col "$m" 6)")" "$(awk -v m="$m" '$1 == m { printf "%s%s/%s", (n++ ? "," : ""), $9, $8 }' "$tmp/rows")" \
    "$(fmt3 "$(col "$m" 10)")"
done
verdict=MET
for m in json text; do
  read -r dm dlo dhi < <(col "$m" 3)
  read -r cap _ _ < <(col "$m" 6)
  ok=$(awk -v x="$dm" -v t="$target" 'BEGIN { print (x + 0 >= t ? "MET" : "NOT MET") }')
  printf '%s: %s events delivered a second [%s..%s] (%s events per CPU-second), target %s: %s\n' "${label[$m]}" \
    "$(fmt_si "$dm")" "$(fmt_si "$dlo")" "$(fmt_si "$dhi")" "$(fmt_si "$cap")" "$(fmt_si "$target")" "$ok"
  [[ $ok == MET ]] || verdict="NOT MET"
done
echo "goscope json and text deliver >= $(fmt_si "$target") events a second from the synthetic producer: $verdict"
[[ $verdict == MET ]] || exit 3
exit 0
