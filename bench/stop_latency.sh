#!/usr/bin/env bash
# A stop that stops (issue #14 goal 6): from Ctrl-C (SIGINT), SIGTERM, or
# the end of -d, to the moment goscope's probes are off the target, while
# goscope is behind: a hot function and a stdout pipe nobody reads (the
# pipe full, the ring filling behind it). Asked: within 200 ms.
#
# Producer: bench/go/tracefeed (GOROUTINES goroutines calling main.emit as
# fast as they can, ~80-90 k probed calls a second here). Per run:
#   goscope trace -p PID main.emit [-d D] > FIFO     (the FIFO held open, never read)
# "Probes off" is watched from outside goscope by bench/links_watch.c: no
# uprobe_multi link with the producer's pid left in the kernel's link list,
# polled every 200 us (the id goes in the same kernel call that takes the
# int3 out: docs/kernel.md, "When a link's id goes"). From:
#   SIGINT, SIGTERM  the kill(1) (the watcher is already polling)
#   -d D             the moment the link appeared + D: the session's -d clock
#                    starts after that (the announcement, the load bias), so
#                    this figure is an upper bound
# After the probes are off the script reads the FIFO; goscope must then
# exit 0 (docs/errors.md: a session ended by Ctrl-C or -d is exit 0) and the
# producer must be alive. Modes rotate (A B C, B C A, ...) for ROUNDS rounds;
# with GOSCOPE_BASE=/path/to/goscope that build runs the same three (a stop
# that never came within LIMIT s is shown as LIMIT s and counted).
#
# Usage (root): bench/stop_latency.sh   env: ROUNDS (5), D (2), GOROUTINES (2),
#               LIMIT (10 s), TARGET_MS (200), GOSCOPE_BASE
# Exit: 0 every run of this build stopped within TARGET_MS; 3 measured but
#       not; 1 error.
set -euo pipefail
source "$(dirname -- "$(readlink -f -- "$0")")/common.sh"

rounds=${ROUNDS:-5}
d=${D:-2}
goroutines=${GOROUTINES:-2}
limit=${LIMIT:-10}
target_ms=${TARGET_MS:-200}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
func=main.emit
need cc

watch=$tmp/links_watch
cc -O2 -o "$watch" "$root/bench/links_watch.c" || die "cc bench/links_watch.c failed"
feed=$(build_bench_go tracefeed)
"$feed" --goroutines "$goroutines" --out "$tmp/feed.report" >/dev/null 2>&1 &
producer=$!
bench_track "$producer"
sleep 1.2

modes=(sigint sigterm d)
[[ -n ${GOSCOPE_BASE:-} ]] && modes+=(base_sigint base_sigterm base_d)
declare -A label=([sigint]="goscope SIGINT" [sigterm]="goscope SIGTERM" [d]="goscope -d $d"
  [base_sigint]="GOSCOPE_BASE SIGINT" [base_sigterm]="GOSCOPE_BASE SIGTERM" [base_d]="GOSCOPE_BASE -d $d")

run_mode() {
  local mode=$1 round=$2 log=$tmp/$1.$2.err fifo=$tmp/out.fifo g=$goscope kind=${1#base_} dargs=() pid t_on t0 t_off w rc
  [[ $mode == base_* ]] && g=$GOSCOPE_BASE
  [[ $kind == d ]] && dargs=(-d "$d")
  rm -f "$fifo"
  mkfifo "$fifo"
  exec 7<>"$fifo"  # a reader that never reads: goscope's writes find the pipe full
  # 7>&-: nobody but this shell holds fd 7 (a writer left open anywhere
  # would keep the reader below from ever seeing the end).
  "$g" trace -p "$producer" "$func" "${dargs[@]}" >"$fifo" 2>"$log" 7>&- &
  pid=$!
  bench_track "$pid"
  t_on=$("$watch" on "$producer" 60) || { cat "$log" >&2; die "$mode (round $round): no link for the producer within 60 s"; }
  if [[ $kind == d ]]; then
    t0=$(awk -v a="$t_on" -v d="$d" 'BEGIN { printf "%.6f", a + d }')
    t_off=$("$watch" off "$producer" $((limit + ${d%.*} + 1))) || t_off=nan
  else
    sleep 1  # the backlog: the pipe is full within milliseconds, the ring fills behind it
    "$watch" off "$producer" "$limit" >"$tmp/off" 7>&- &
    w=$!
    sleep 0.05
    t0=$(now_s)
    kill -"${kind#sig}" "$pid"
    wait "$w" && t_off=$(cat "$tmp/off") || t_off=nan
  fi
  # Let goscope finish: read what it held, then it must exit 0.
  timeout 60 cat "$fifo" >/dev/null 7>&- &
  local reader=$!
  bench_track "$reader"
  exec 7>&-
  rc=0
  wait "$pid" || rc=$?
  wait "$reader" 2>/dev/null || true
  kill -0 "$producer" 2>/dev/null || die "$mode (round $round): the producer died"
  [[ $rc == 0 ]] || { cat "$log" >&2; echo "$mode (round $round): goscope exited $rc" >&2; }
  awk -v m="$mode" -v r="$round" -v t0="$t0" -v t1="$t_off" -v lim="$limit" -v rc="$rc" 'BEGIN {
      ms = (t1 == "nan") ? lim * 1000 : (t1 - t0) * 1000
      printf "%s %d %.1f %d %d\n", m, r, ms, (t1 == "nan"), rc }' >>"$tmp/rows"
  tail -1 "$tmp/rows" | awk -v l="${label[$mode]}" '{ printf "  round %d  %-22s stop to probes off %8.1f ms%s  exit %d\n", $2, l, $3, ($4 ? " (not within LIMIT)" : ""), $5 }' >&2
}

echo "stop_latency: $func in $feed ($goroutines goroutines), stdout a FIFO nobody reads; $rounds rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/rows"
run_rounds

echo
echo "Stop latency: trace -p PID $func, stdout a FIFO nobody reads; signal (or -d's end) to probes off; $rounds rounds, interleaved; median [min..max]"
echo "machine: $(nproc) vCPUs, Linux $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after"
printf '%-22s %-30s %-22s %s\n' mode "ms to probes off" "not within ${limit} s" "exit codes"
verdict=MET
for m in "${modes[@]}"; do
  read -r md lo hi < <(awk -v m="$m" '$1 == m { print $3 }' "$tmp/rows" | stats)
  printf '%-22s %-30s %-22s %s\n' "${label[$m]}" "$(printf '%.1f [%.1f..%.1f]' "$md" "$lo" "$hi")" \
    "$(awk -v m="$m" '$1 == m { n += $4 } END { print n + 0 }' "$tmp/rows")" \
    "$(awk -v m="$m" '$1 == m { printf "%s%d", (k++ ? "," : ""), $5 }' "$tmp/rows")"
  if [[ $m != base_* ]]; then
    awk -v h="$hi" -v t="$target_ms" 'BEGIN { exit !(h + 0 <= t) }' || verdict="NOT MET"
    awk -v m="$m" '$1 == m && $5 != 0 { bad = 1 } END { exit bad }' "$tmp/rows" || verdict="NOT MET"
  fi
done
echo "every stop of this build within $target_ms ms (worst run) and exit 0: $verdict"
[[ $verdict == MET ]] || exit 3
