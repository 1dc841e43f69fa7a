#!/usr/bin/env bash
# dlv's death from outside, as a user would kill it: pacer calling main.scale
# ~1,000 times a second, `goscope break --strategy delve -p PID main.scale`,
# and once 20 hits are printed, after a random 0-1 s, SIGKILL to
# VICTIM: dlv, the guardian (dlv dies with it), or goscope, the guardian and
# dlv together. Then, per round: the target alive, untraced, not stopped
# (state T or t), `goscope doctor` exit 0 (its code equal to its file), its
# loop still printing, and this round's guardian and sentinel gone. One line
# per round (what goscope's stderr says the sentinel did, the load average),
# then "VICTIM: passed N of ROUNDS". The load is whatever the machine has:
# the loaded test (tests/runtime/test_dlv_death_loaded.cpp) makes its own.
#
# Usage (root):  bench/delve_kill_rounds.sh [dlv|guardian|all] [ROUNDS]   (dlv 20)
# Needs the fixtures (scripts/build-fixtures.sh BUILD/fixtures).
# Exit: 0 every round passed, 3 a round failed, 1 error.
set -uo pipefail
source "$(dirname -- "$0")/common.sh"
victim=${1:-dlv}
rounds=${2:-20}
pacer=$build/fixtures/default/pacer
[[ -x $pacer ]] || die "no $pacer (scripts/build-fixtures.sh $build/fixtures)"
case $victim in dlv | guardian | all) ;; *) die "victim: dlv, guardian or all" ;; esac

field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }
state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null; }
lines() { wc -l < "$1" 2>/dev/null || echo 0; }
waitfor() { local n=$1; shift; for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done; return 1; }
untraced() { [[ $(field "$1" TracerPid) == 0 ]]; }
running() { local s; s=$(state "$1"); [[ -n $s && $s != T && $s != t ]]; }
gone() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }

ok=0
for ((r = 0; r < rounds; r++)); do
  d=$tmp/round$r
  mkdir -p "$d"
  "$pacer" --rate 1000 > "$d/pacer.out" 2> "$d/pacer.err" & t=$!
  bench_pids=("$t")  # this round's target only: earlier ones are reaped, their PIDs free
  waitfor 100 grep -q ready "$d/pacer.out" || die "pacer did not start"
  "$goscope" break --strategy delve -p "$t" main.scale > "$d/gs.out" 2> "$d/gs.err" & g=$!
  waitfor 1200 eval '[[ $(lines "$d/gs.out") -ge 20 ]] || ! kill -0 $g 2>/dev/null'
  hits=$(lines "$d/gs.out")
  sleep "0.$(printf %03d $((RANDOM % 1000)))"
  dlv=$(field "$(field "$t" TracerPid)" Tgid)
  [[ -n $dlv ]] || { echo "round $r: no dlv attached after $hits hits: $(tail -1 "$d/gs.err")"; kill -9 "$g" 2>/dev/null; wait "$g"; kill -9 "$t"; wait "$t" 2>/dev/null; bench_pids=(); continue; }
  guardian=$(field "$dlv" PPid)
  sentinel=$(cat "/proc/$guardian/task/"*/children 2>/dev/null | tr ' ' '\n' | grep -vx "$dlv" | head -1)
  at_kill=$(state "$t")
  case $victim in
    dlv) kill -9 "$dlv" ;;
    guardian) kill -9 "$guardian" ;;
    all) kill -9 "$g" "$guardian" "$dlv" ;;
  esac
  waitfor 600 eval '! kill -0 $g 2>/dev/null'
  wait "$g" 2>/dev/null; rc=$?
  waitfor 100 untraced "$t"; waitfor 50 running "$t"
  waitfor 100 gone "$dlv" "$guardian" ${sentinel:+"$sentinel"}
  "$goscope" doctor -p "$t" > "$d/doctor.out" 2>&1; doctor=$?
  n0=$(lines "$d/pacer.out")
  waitfor 200 eval '[[ $(lines "$d/pacer.out") -gt $n0 ]]'
  verdict=pass
  kill -0 "$t" 2>/dev/null || verdict="FAIL (dead: $(grep -m1 -E 'SIG|fatal' "$d/pacer.err"))"
  [[ $verdict == pass ]] && ! untraced "$t" && verdict="FAIL (TracerPid $(field "$t" TracerPid))"
  [[ $verdict == pass ]] && ! running "$t" && verdict="FAIL (state $(state "$t"))"
  [[ $verdict == pass && $doctor != 0 ]] && verdict="FAIL (doctor exit $doctor: $(head -1 "$d/doctor.out"))"
  [[ $verdict == pass && $(lines "$d/pacer.out") -le $n0 ]] && verdict="FAIL (no progress)"
  [[ $verdict == pass ]] && ! gone "$dlv" "$guardian" ${sentinel:+"$sentinel"} && verdict="FAIL (dlv, guardian or sentinel left)"
  [[ $verdict == pass ]] && ok=$((ok + 1))
  echo "round $r: $verdict; $hits hits, target state $at_kill at the kill; goscope exit $rc; load $(cut -d' ' -f1 /proc/loadavg); $(grep -o 'sentinel .*' "$d/gs.err" | cut -d'(' -f1)"
  kill -9 "$t" 2>/dev/null; wait "$t" 2>/dev/null
  bench_pids=()  # reaped: its PID may name another process by the time this script exits
  rm -rf "$d"
done
echo "$victim: passed $ok of $rounds"
[[ $ok == "$rounds" ]] || exit 3
