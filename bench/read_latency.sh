#!/usr/bin/env bash
# How long a one-off `goscope read` takes, end to end, on the zero-pause
# direct path (the value read from /proc/PID/mem, no Delve) against the Delve
# path (`--strategy delve`: dlv attaches, evaluates, detaches), and how long
# the Delve read stops the target.
#
# Targets: the counter fixture (main.counter, an int64) and the zoo fixture
# (main.items, a slice of strings, and main.primary, a pointer to a struct: the
# direct read's deepest types). Per target, ROUNDS rounds of A B A B
# (direct, Delve, direct, Delve), each command timed from before its exec to
# its exit (bash's EPOCHREALTIME); both paths must print values of the same
# shape. Reported per path: median [min..max] end to end and CPU time
# (goscope's and its children's: dlv's for Delve; what a loaded machine
# cannot inflate the way it inflates wall time); for the direct path the
# read itself as goscope times it, for Delve the stop as goscope times it
# (dlv's attach to its detach); and the ratio Delve / direct of each
# round's end-to-end medians. The machine is shared: read the ratios, not
# the absolute times; the load average is printed before and after.
#
# Usage (root):  bench/read_latency.sh
#   env: ROUNDS (5), TARGET_MS (20), GOSCOPE_BUILD_DIR (./build) or GOSCOPE
#        (the binary), GOSCOPE_BEFORE (another goscope, e.g. an older build:
#        its direct read is a third mode in every round, A B C A B C)
# Exit: 0 measured and the direct read's median end to end < TARGET_MS (20)
# on every target, 3 measured but missed, 1 error.
set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/common.sh"
need dlv

rounds=${ROUNDS:-5}
target_ms=${TARGET_MS:-20}
before=${GOSCOPE_BEFORE:-}  # optional: another goscope build whose direct read is timed alongside
[[ -z $before || -x $before ]] || die "GOSCOPE_BEFORE=$before is not an executable"
fixtures=$build/fixtures/default
if [[ ! -x $fixtures/counter || ! -x $fixtures/zoo ]]; then
  bash "$root/scripts/build-fixtures.sh" "$build/fixtures" >&2 || die "building the fixtures failed"
fi

"$fixtures/counter" >/dev/null &
counter=$!
bench_track "$counter"
# zoo prints "ready" once its variables are set.
mkfifo "$tmp/zoo.out"
"$fixtures/zoo" >"$tmp/zoo.out" &
zoo=$!
bench_track "$zoo"
exec 3<"$tmp/zoo.out"
read -r -t 10 ready <&3 || die "zoo did not start"
[[ $ready == ready ]] || die "zoo said '$ready', not 'ready'"
cat <&3 >/dev/null &  # its once-a-second status lines must not fill the pipe
bench_track $!
exec 3<&-
sleep 0.3

load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# CPU seconds (user + system) of this shell's reaped children (and theirs)
# as bash's `times` prints them (getrusage, to the millisecond). `times`
# runs in this shell, not in a $(...) subshell, which has no children.
cpu_of() { awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } } END { printf "%.6f", t }' "$1"; }

# One read; appends its wall ms, its CPU ms (goscope and every process it
# started: dlv) and goscope's own figure to $tmp/NAME.MODE.*.
# $1: name, $2: pid, $3: direct|delve|before, the rest: expressions.
one_read() {
  local name=$1 pid=$2 mode=$3 t0 t1 c0 c1 bin=$goscope flags=()
  shift 3
  [[ $mode == delve ]] && flags=(--strategy delve)
  [[ $mode == before ]] && bin=$before
  times >"$tmp/times0"
  t0=$EPOCHREALTIME
  "$bin" read "${flags[@]}" -p "$pid" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; die "goscope read ($mode) failed"; }
  t1=$EPOCHREALTIME
  times >"$tmp/times1"
  c0=$(cpu_of "$tmp/times0")
  c1=$(cpu_of "$tmp/times1")
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >>"$tmp/$name.$mode.e2e"
  awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >>"$tmp/$name.$mode.cpu"
  if [[ $mode != delve ]]; then
    sed -n 's/.*was not stopped: read directly from its memory in \([0-9.]*\) ms.*/\1/p' "$tmp/err" >>"$tmp/$name.$mode.own"
    grep -q "was not stopped" "$tmp/err" || { cat "$tmp/err" >&2; die "the direct read ($mode) did not say it left PID $pid running"; }
  else
    sed -n 's/.* was stopped \([0-9.]*\) ms.*/\1/p' "$tmp/err" >>"$tmp/$name.$mode.own"
    grep -q " was stopped " "$tmp/err" || { cat "$tmp/err" >&2; die "the Delve read did not say how long it stopped PID $pid"; }
  fi
  # Values that change (a counter) differ between reads; their types and
  # shapes must not.
  sed -E 's/[0-9]+/N/g' "$tmp/out" >"$tmp/$name.$mode.shape"
}

# "median [min..max]" of a file of numbers, and the same for ratios
summary() { stats <"$1" | awk '{ printf "%s [%s..%s]", $1, $2, $3 }'; }
ratios() { stats <"$1" | awk '{ printf "%.2fx [%.2fx..%.2fx]", $1, $2, $3 }'; }

modes=(direct delve)
[[ -n $before ]] && modes+=(before)
missed=0
results=()
run_target() {
  local name=$1 pid=$2
  shift 2
  local r m d v
  : >"$tmp/$name.ratio"
  for ((r = 1; r <= rounds; r++)); do
    for m in "${modes[@]}" "${modes[@]}"; do one_read "$name" "$pid" "$m" "$@"; sleep 0.2; done
    for m in "${modes[@]}"; do
      cmp -s "$tmp/$name.direct.shape" "$tmp/$name.$m.shape" ||
        { diff "$tmp/$name.direct.shape" "$tmp/$name.$m.shape" >&2 || true; die "$name: the direct read and $m print different values"; }
    done
    # this round's two reads of each path
    d=$(tail -n 2 "$tmp/$name.direct.e2e" | stats | awk '{ print $1 }')
    v=$(tail -n 2 "$tmp/$name.delve.e2e" | stats | awk '{ print $1 }')
    awk -v d="$d" -v v="$v" 'BEGIN { printf "%.3f\n", v / d }' >>"$tmp/$name.ratio"
    printf "  %s round %d: direct %.1f ms, Delve %.1f ms end to end (median of 2 each)\n" "$name" "$r" "$d" "$v" >&2
  done
  for m in "${modes[@]}"; do
    local what own
    case $m in
      direct) what="goscope read (direct)"; own="the read itself $(summary "$tmp/$name.$m.own") ms, target not stopped" ;;
      delve) what="goscope read --strategy delve"; own="target stopped $(summary "$tmp/$name.$m.own") ms" ;;
      before) what="GOSCOPE_BEFORE read (direct)"; own="the read itself $(summary "$tmp/$name.$m.own") ms" ;;
    esac
    results+=("$(printf "%-8s %-30s %-28s %-24s %s" "$name" "$what" "$(summary "$tmp/$name.$m.e2e")" \
      "$(summary "$tmp/$name.$m.cpu")" "$own")")
  done
  results+=("$(printf "%-8s Delve / direct, end to end, per round: %s" "$name" "$(ratios "$tmp/$name.ratio")")")
  if [[ -n $before ]]; then
    # per read pair: the before build's CPU over this build's, in order
    paste "$tmp/$name.before.cpu" "$tmp/$name.direct.cpu" | awk '$2 > 0 { printf "%.3f\n", $1 / $2 }' >"$tmp/$name.cpuratio"
    results+=("$(printf "%-8s GOSCOPE_BEFORE / direct, CPU, per read pair: %s" "$name" "$(ratios "$tmp/$name.cpuratio")")")
  fi
  local verdict=MET
  awk -v m="$(stats <"$tmp/$name.direct.e2e" | awk '{ print $1 }')" -v t="$target_ms" 'BEGIN { exit !(m < t) }' ||
    { verdict=MISSED; missed=1; }
  results+=("$(printf "%-8s direct read end to end < %s ms (median): %s" "$name" "$target_ms" "$verdict")")
}

echo "goscope read: direct (no stop) vs Delve (--strategy delve), $rounds rounds of ${modes[*]} ${modes[*]} per target" >&2
run_target counter "$counter" main.counter
run_target zoo "$zoo" main.items main.primary
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "One-off read: direct read (no stop) vs Delve; $rounds rounds of ${modes[*]} ${modes[*]}, median [min..max]"
echo "machine: $(nproc) vCPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); load average $load_before before, $load_after after"
echo "goscope: $goscope${before:+; GOSCOPE_BEFORE: $before}; $(dlv version | sed -n 's/^Version: /Delve /p')"
echo "counter: main.counter (int64); zoo: main.items main.primary ([]string, *main.Server)"
printf "%-8s %-30s %-28s %-24s %s\n" "target" "command" "end to end ms" "CPU ms (with children)" "goscope's own figures"
for l in "${results[@]}"; do echo "$l"; done
awk -v l="${load_before%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n) }' &&
  echo "(load average above the CPU count: end-to-end times include waiting for a CPU; CPU ms is what a read costs)"
exit $((missed ? 3 : 0))
