#!/usr/bin/env bash
# The rate probe's engine reused (issue #14 goal 3): `trace -p PID main.scale
# -d 0.2` under --strategy auto, where goscope first counts the function's
# hits in the kernel (the rate probe: BPF programs loaded, probes attached,
# counted for 50 ms or more, detached) and then plans. On a hot function the
# plan is BPF, and the session now takes the rate probe's loaded engine over
# instead of loading the programs again; on a slow one the plan is Delve,
# and the engine is released before Delve attaches, as before.
#
# Targets: the pacer fixture (fixtures/go/pacer: main.scale at a set rate),
# hot (--rate 100000) and slow (--rate 10), one process each for the whole
# run. At the default budget (--max-overhead 1) even 10 calls a second are
# more than Delve may cost on a loaded 2-vCPU host (its limit was 0.5-2.7
# hits/s from the Delve stops measured there), so slow is planned onto BPF too; "delve" is the slow pacer
# traced with --max-overhead 25, which Delve fits: the path where the rate
# probe's engine is detached and released before Delve attaches.
#
# Per goscope run:
#   first probe ms   launch (just before exec) to goscope's attach line on
#                    stderr ("... attached to ..." on BPF, "... Delve
#                    breakpoint(s) in PID ..." on Delve), read through a pipe
#   own ms           the BPF attach line's "N ms after goscope started" ("-"
#                    on Delve: its line has none)
#   wall ms          launch to exit (the 0.2 s of tracing, the detach and the
#                    totals included)
#   CPU s            user+system CPU of the run (goscope and the children it
#                    reaped; /usr/bin/time, "nan" without it): the verifier's work
#                    on a load is CPU, which a reused engine does not spend
# and, from -v, whether the rate probe's engine was reused.
#
# Modes run interleaved (A B A B ...), ROUNDS times: this goscope on hot, the
# base on hot, this goscope on slow, the base on slow. GOSCOPE_BASE: another
# goscope binary (e.g. main's build before this change); without it only
# this build is measured. Medians with [min..max]; the 1-minute load average
# before and after; ratios base / this.
#
# Usage (root):  bench/rate_probe.sh     env: ROUNDS (7), GOSCOPE_BASE,
#                GOSCOPE_BUILD_DIR or GOSCOPE
# Exit: 0 measured, and on hot every run of this build reused the engine and
#       its median first probe is below the base's; 3 measured but not; 1 error.
set -euo pipefail
source "$(dirname -- "$(readlink -f -- "$0")")/common.sh"

rounds=${ROUNDS:-7}
base=${GOSCOPE_BASE:-}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be positive"
[[ -z $base || -x $base ]] || die "GOSCOPE_BASE=$base is not executable"

# The pacer fixture, built like the fixtures (scripts/build-fixtures.sh: default).
(cd "$root/fixtures/go" &&
  GOCACHE="$build/.bench-gocache" GOPATH="$build/.bench-gopath" GOENV=off GOPROXY=off \
    GOFLAGS=-buildvcs=false GO111MODULE=on GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 \
    go build -o "$tmp/pacer" ./pacer) >&2 || die "go build ./pacer failed"

# Sets pacer_pid (not a $(...) subshell: the process must stay this shell's
# child, killed and reaped at exit).
start_pacer() {
  local rate=$1 out=$tmp/pacer.$1.out
  "$tmp/pacer" --rate "$rate" >"$out" &
  pacer_pid=$!
  bench_track "$pacer_pid"
  for _ in $(seq 50); do grep -q '^ready' "$out" 2>/dev/null && break; sleep 0.1; done
  grep -q '^ready' "$out" || die "pacer --rate $rate did not start"
}
start_pacer 100000
hot=$pacer_pid
start_pacer 10
slow=$pacer_pid

xdg=$(private_xdg)

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "rate_probe: hot pacer $hot (100000/s), slow pacer $slow (10/s); $rounds rounds; load average $load_before" >&2

have_time=0
[[ -x /usr/bin/time ]] && have_time=1

# One run: "first_ms own_ms wall_ms reused cpu_s" on stdout (reused: 1, 0).
run() {
  local gs=$1 pid=$2 t0 t1 line first own reused=0 cpu=nan
  shift 2
  local -a timecmd=()
  ((have_time)) && timecmd=(/usr/bin/time -o "$tmp/time" -f '%U %S')
  t0=$EPOCHREALTIME
  XDG_CACHE_HOME=$xdg "${timecmd[@]}" "$gs" -v trace -p "$pid" main.scale -d 0.2 "$@" 2>&1 >/dev/null |
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$tmp/gs.log"
  t1=$EPOCHREALTIME
  line=$(grep -m1 -E ' attached to | Delve breakpoint\(s\) in PID ' "$tmp/gs.log") || {
    grep -v '\[debug\]' "$tmp/gs.log" | tail -3 >&2
    echo "rate_probe: $gs trace -p $pid attached nothing" >&2
    return 1
  }
  first=$(awk -v t0="$t0" '{ printf "%.1f", ($1 - t0) * 1000 }' <<<"$line")
  own=$(sed -n 's/.*, \([0-9.]*\) ms after goscope started.*/\1/p' <<<"$line")
  grep -q "rate probe's engine reused" "$tmp/gs.log" && reused=1
  ((have_time)) && cpu=$(awk '{ printf "%.3f", $1 + $2 }' "$tmp/time")
  awk -v f="$first" -v o="${own:-nan}" -v a="$t0" -v b="$t1" -v r="$reused" -v c="$cpu" \
    'BEGIN { printf "%s %s %.1f %d %s\n", f, o, (b - a) * 1000, r, c }'
}

for ((r = 1; r <= rounds; r++)); do
  run "$goscope" "$hot" >>"$tmp/r.this.hot" || die "goscope failed on hot"
  [[ -n $base ]] && { run "$base" "$hot" >>"$tmp/r.base.hot" || die "GOSCOPE_BASE failed on hot"; }
  run "$goscope" "$slow" >>"$tmp/r.this.slow" || die "goscope failed on slow"
  [[ -n $base ]] && { run "$base" "$slow" >>"$tmp/r.base.slow" || die "GOSCOPE_BASE failed on slow"; }
  run "$goscope" "$slow" --max-overhead 25 >>"$tmp/r.this.delve" || die "goscope failed on slow (Delve)"
  [[ -n $base ]] && { run "$base" "$slow" --max-overhead 25 >>"$tmp/r.base.delve" || die "GOSCOPE_BASE failed on slow (Delve)"; }
  echo "rate_probe: round $r of $rounds done" >&2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kill -0 "$hot" && kill -0 "$slow" || die "a pacer died during the runs"


echo
echo "Rate probe: trace -p PID main.scale -d 0.2 under auto, $rounds rounds interleaved, median [min..max]"
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), load average before $load_before, after $load_after"
printf '%-8s %-18s %-26s %-26s %-26s %-22s %s\n' "goscope" "target" "first probe ms" "own ms (after start)" "wall ms" "CPU s" "engine reused"
status=0
for t in hot slow delve; do
  label="pacer 100000/s"
  [[ $t == slow ]] && label="pacer 10/s"
  [[ $t == delve ]] && label="10/s, budget 25%"
  for mode in this base; do
    f=$tmp/r.$mode.$t
    [[ -s $f ]] || continue
    own=$(col "$f" 2)
    [[ $own == nan* ]] && own="- (Delve)"
    printf '%-8s %-18s %-26s %-26s %-26s %-22s %s\n' "$mode" "$label" "$(col "$f" 1)" "$own" "$(col "$f" 3)" \
      "$(col "$f" 5)" "$(awk '{ n += $4 } END { printf "%d of %d", n, NR }' "$f")"
  done
done
reused=$(awk '{ n += $4 } END { print n }' "$tmp/r.this.hot")
((reused == rounds)) || status=3
if [[ -n $base ]]; then
  for t in hot slow delve; do
    awk -v b1="$(med "$tmp/r.base.$t" 1)" -v g1="$(med "$tmp/r.this.$t" 1)" \
      -v b3="$(med "$tmp/r.base.$t" 3)" -v g3="$(med "$tmp/r.this.$t" 3)" \
      -v b5="$(med "$tmp/r.base.$t" 5)" -v g5="$(med "$tmp/r.this.$t" 5)" -v t="$t" 'BEGIN {
      printf "%s: base / this: first probe %.2fx, wall %.2fx", t, b1 / g1, b3 / g3
      if (g5 > 0) printf ", CPU %.2fx", b5 / g5
      printf "\n" }'
  done
  awk -v b="$(med "$tmp/r.base.hot" 1)" -v g="$(med "$tmp/r.this.hot" 1)" 'BEGIN { exit !(g < b) }' || status=3
fi
echo "target: on hot, every run reuses the engine$([[ -n $base ]] && echo " and the first probe comes sooner than the base's"): $([[ $status == 0 ]] && echo MET || echo MISSED)"
exit "$status"
