#!/usr/bin/env bash
# What --max-overhead buys: the counter fixture's own throughput (a tight loop
# calling main.doWork, a leaf whose probe the kernel single-steps) with no
# probe, under an unbounded `goscope trace` of main.doWork (no --max-overhead:
# the default budget only warns, so every call is traced whatever it costs;
# an explicit 100 is enforced, and a trap that costs more than the call
# gets its probe dropped) and under `--max-overhead 5`, interleaved
# A B C A B C for ROUNDS rounds of SECS seconds. The counter prints its own
# rate once a second; each mode's figure is the mean of the lines printed
# while that mode ran. Prints median and range per mode, the ratio to "none",
# and the load average. Target: the bounded run keeps >= 0.90 of the rate.
#
#   sudo bench/overhead_bound.sh          # ROUNDS=3 SECS=20 (the bound acts after a second over budget)
set -euo pipefail
source "$(dirname -- "$0")/common.sh"

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-20}

counter_bin=$tmp/counter
(cd "$root/fixtures/go" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -o "$counter_bin" ./counter) ||
  die "building the counter fixture failed"

log=$tmp/counter.log
"$counter_bin" --report >"$log" &
cpid=$!
bench_track "$cpid"
sleep 2

lines() { wc -l <"$log"; }
# mean rate of the counter's lines after line $1 (the first one is partial)
mean_since() {
  awk -v from="$1" 'NR > from + 1 { gsub(/[()]/, ""); s += $3; n++ } END { if (n) printf "%.0f\n", s / n; else print 0 }' "$log"
}

declare -A results
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS"); do
  for mode in none unbounded bounded; do
    echo "round $round/$ROUNDS: $mode" >&2
    from=$(lines)
    case $mode in
      none) sleep "$SECS" ;;
      unbounded) "$goscope" trace -p "$cpid" main.doWork -d "$SECS" >/dev/null 2>"$tmp/$mode.err" ||
                   die "goscope failed: $(tail -1 "$tmp/$mode.err")" ;;
      bounded) "$goscope" trace -p "$cpid" main.doWork -d "$SECS" --max-overhead 5 >/dev/null 2>"$tmp/$mode.err" ||
                 die "goscope failed: $(tail -1 "$tmp/$mode.err")" ;;
    esac
    sleep 1.2  # the line covering the session's last second
    results[$mode]+="$(mean_since "$from") "
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
grep -h "over budget\|cost to the target" "$tmp/bounded.err" >&2 || true

median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
range() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo " - " hi }'; }
base=$(median "${results[none]}")
printf "%-10s %14s %8s   %s\n" MODE "OPS/S (median)" "x NONE" "RANGE"
status=0
for mode in none unbounded bounded; do
  m=$(median "${results[$mode]}")
  ratio=$(awk -v m="$m" -v b="$base" 'BEGIN { printf "%.3f", b ? m / b : 0 }')
  printf "%-10s %14s %8s   %s\n" "$mode" "$m" "$ratio" "$(range "${results[$mode]}")"
  [[ $mode == bounded ]] && awk -v r="$ratio" 'BEGIN { exit !(r < 0.90) }' && status=3
done
echo "rounds: $ROUNDS x ${SECS}s, interleaved; load average before $load_before, after $load_after"
exit $status
