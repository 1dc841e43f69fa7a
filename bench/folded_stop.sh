#!/usr/bin/env bash
# How soon a --folded session's probes come off a busy program with many
# stacks when asked: TypeScript's Go compiler (npm
# @typescript/native-preview-linux-x64, "tsgo") type-checking typescript.js
# while `goscope trace --folded -p PID runtime.mallocgc` folds its
# allocations' stacks (~120,000 distinct stacks, the kernel's maps drained
# several times). SIGINT 2-6 s after the attach (random); "probes off" is
# seen from outside by bench/links_watch.c (no uprobe_multi link with the
# target's pid left), as in bench/stop_latency.sh. Per run: the time from
# the signal to the probes off, goscope's exit status, the drains and
# whether one was cut short by the stop (-v).
#
# Usage: sudo bench/folded_stop.sh
#   ROUNDS=N         runs per goscope (default 5)
#   GOSCOPE_B=PATH   a second goscope run in turn (A B, B A, ...), e.g. one built
#                    before the probes came off ahead of the stacks' reading
#   INTERVAL=SECS    add -i SECS to the session (its readings while the
#                    probes are on must give way to the stop too)
#   LIMIT=SECS       how long to wait for the probes off (default 60)
#   TYPESCRIPT_VERSION, TSGO_VERSION  npm versions (5.6.3, 7.0.0-dev.20260707.2)
# Exit: 0 every run of the first goscope took its probes off within 200 ms;
# 3 measured but not; 1 error.
set -euo pipefail
source "$(dirname -- "$0")/common.sh"
need npm
need cc
rounds=${ROUNDS:-5}
limit=${LIMIT:-60}
tsv=${TYPESCRIPT_VERSION:-5.6.3}
tgv=${TSGO_VERSION:-7.0.0-dev.20260707.2}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
ts=$(npm_fetch typescript "$tsv")/lib
tsgo=$(npm_fetch @typescript/native-preview-linux-x64 "$tgv")/lib/tsgo
[[ -x $tsgo ]] || die "no tsgo in the npm package"
printf '{"compilerOptions":{"noEmit":true,"allowJs":true,"checkJs":true,"target":"es2022","lib":["es2022"],"types":[]},"files":["%s"]}\n' \
  "$ts/typescript.js" >"$tmp/tsconfig.json"
watch=$tmp/links_watch
cc -O2 -o "$watch" "$root/bench/links_watch.c" || die "cc bench/links_watch.c failed"
iargs=()
[[ -n ${INTERVAL:-} ]] && iargs=(-i "$INTERVAL")

echo "folded_stop: tsgo $tgv type-checking typescript $tsv; trace --folded ${iargs[*]} -p PID runtime.mallocgc; SIGINT 2-6 s in"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
over=0
# run_mode LABEL ROUND: one session of the goscope LABEL names (A: this
# build, B: GOSCOPE_B), stopped by a SIGINT; run by run_rounds (common.sh),
# which rotates the order each round.
run_mode() {
  local label=$1 r=$2 g=$goscope target gs w t0 t_off rc ms
  [[ $label == B ]] && g=$GOSCOPE_B
  "$tsgo" -p "$tmp/tsconfig.json" >/dev/null 2>&1 &
  target=$!
  bench_track "$target"
  "$g" trace --folded "${iargs[@]}" -v -p "$target" runtime.mallocgc >"$tmp/folded" 2>"$tmp/err" &
  gs=$!
  bench_track "$gs"
  "$watch" on "$target" 30 >/dev/null || die "round $r $label: no link for tsgo within 30 s: $(tail -1 "$tmp/err")"
  sleep "$(awk -v s="$RANDOM" 'BEGIN { printf "%.2f", 2 + (s % 400) / 100 }')"
  if ! kill -0 "$target" 2>/dev/null; then
    echo "round $r $label: tsgo ended before the signal (not counted)"
    wait "$gs" || true
    return
  fi
  "$watch" off "$target" "$limit" >"$tmp/off" &
  w=$!
  sleep 0.02
  t0=$(now_s)
  kill -INT "$gs"
  t_off=nan
  wait "$w" && t_off=$(cat "$tmp/off")
  rc=0
  wait "$gs" || rc=$?
  kill "$target" 2>/dev/null || true
  wait "$target" 2>/dev/null || true
  ms=$(awk -v a="$t0" -v b="$t_off" 'BEGIN { if (b == "nan") print "nan"; else printf "%.0f", (b - a) * 1000 }')
  echo "round $r $label ($g): probes off $ms ms after SIGINT; exit $rc; $(grep -c 'stacks: drained' "$tmp/err") drains, $(grep -c 'cut short' "$tmp/err") cut short; load $(cut -d' ' -f1 /proc/loadavg)"
  if [[ $label == A ]] && { [[ $ms == nan ]] || ((ms > 200)) || ((rc != 0)); }; then over=$((over + 1)); fi
  return 0
}
modes=(A)
[[ -n ${GOSCOPE_B:-} ]] && modes+=(B)
run_rounds
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
((over == 0)) || { echo "folded_stop: $over run(s) of $goscope above 200 ms (or failed): NOT MET"; exit 3; }
echo "folded_stop: every run of $goscope within 200 ms: MET"
