#!/bin/bash
# One measurement of dlv's death (docs/delve.md, "When dlv dies"): starts
# zoo, `goscope break --strategy delve` on FN (default main.(*Server).Handle),
# SIGKILLs the dlv goscope started DELAY seconds after the breakpoint is set,
# and prints one line: doctor's exit code afterwards (0: zoo's code equals the
# file), the states of zoo's threads just before the kill (t: ptrace stop),
# goscope's exit code, the guardian's name, whether zoo lived 1.5 s later, and
# why it died (zoo's stderr).
#   usage: FN=main.worker GS=path/to/goscope scripts/dlv-kill-once.sh DELAY
set -u
B=${GOSCOPE_BUILD_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build}
GS=${GS:-$B/goscope}
Z=$B/fixtures/default/zoo
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$Z > "$T/zoo.out" 2> "$T/zoo.err" &
ZP=$!
sleep 0.3
$GS break --strategy delve -p $ZP "${FN:-main.(*Server).Handle}" > "$T/gs.out" 2> "$T/gs.err" &
GP=$!
DLV=
for _ in $(seq 200); do
  [ -s "$T/gs.err" ] && DLV=$(pgrep -f "^[^ ]*dlv attach $ZP ") && [ -n "$DLV" ] && break
  sleep 0.1
done
if [ -z "$DLV" ]; then echo "no dlv"; kill -INT $GP; sleep 3; kill -9 $ZP; exit 1; fi
G=$(awk '{print $4}' /proc/$DLV/stat)
GC=$(cat /proc/$G/comm)
sleep "${1:-0.5}"
ST=$(for t in /proc/$ZP/task/*/stat; do awk '{print $3}' $t; done | sort | uniq -c | tr -s ' \n' ' ')
kill -9 $DLV
wait $GP; RC=$?
sleep 1.5
if [ -e /proc/$ZP ] && [ "$(awk '{print $3}' /proc/$ZP/stat)" != Z ]; then A=alive; else A=DEAD; fi
DR=$($B/goscope doctor -p $ZP > /dev/null 2>&1; echo $?)
echo "doctor=$DR threads=[$ST] goscope-rc=$RC guardian=$GC zoo=$A hits=$(wc -l < "$T/gs.out") $(grep -m1 -E '^(SIG|fatal|panic|unexpected)' "$T/zoo.err")"
kill -9 $ZP 2>/dev/null
wait $ZP 2>/dev/null
exit 0
