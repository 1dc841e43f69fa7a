#!/usr/bin/env bash
# Start-up: the time from launching `goscope count -b BIN '*'` to its probes
# being attached (issue #14, goal 1), for big Go binaries, against bpftrace's
# `uprobe:...{ @ = count(); }` on the same binary.
#
# Per goscope run (`goscope count -b COPY '*' -d 0.01`, COPY a private copy of
# the binary, so no one else's process is probed):
#   first probe ms   launch (just before exec) to goscope's "... probes attached"
#                    stderr line, read through a pipe by this script: what a user
#                    waits for. goscope prints that line right after the attach
#                    system call returns.
#   own ms           the same line's "N ms after goscope started" (from goscope's
#                    first static initialiser: without exec and dynamic linking)
#   CPU s, RSS MB    user+system CPU and peak RSS of the whole run (/usr/bin/time;
#                    "-" without it), detach and exit included
# Cold and warm analysis cache (docs/analysis-cache.md): goscope runs with
# XDG_CACHE_HOME in this script's temporary directory (the host's calibrated
# probe costs copied in, so no run calibrates). "cold": its analysis/ removed
# just before the run, which then searches the binary and writes the record;
# "warm": the run right after, which reads it. (The file's pages are in the
# OS page cache after the first round either way.) GOSCOPE_BASE runs get the
# same directory, cold and then warm (the record format is the same).
#
# bpftrace: `bpftrace --unsafe` on BPFTRACE_N functions spread over the
# binary, given as file offsets (Debian's compiler is stripped, so bpftrace
# cannot resolve names), each with `{ @ = count(); }`, and
# `BEGIN { printf("attached\n"); exit(); }`: BEGIN runs once every probe is
# attached. first probe ms = launch to that line. bpftrace 0.17 makes one
# perf-event uprobe per function (~0.3 ms each to attach, ~110 ms each to
# detach, bench/attach_many.sh): all 14,000 would take 25 minutes to detach,
# so it is run on 1 and on BPFTRACE_N functions, and the row for all
# functions is EXTRAPOLATED from those two (fixed part + per-probe part times
# the count) and labelled so.
#
# Modes run interleaved (A B A B ...), ROUNDS times: goscope on each binary,
# GOSCOPE_BASE (another goscope binary, e.g. main's build, if set) on each
# binary, then bpftrace. Medians with [min..max]; the 1-minute load average
# before and after.
#
# Usage (root):  bench/startup.sh     env: ROUNDS (5), BPFTRACE_N (200; 0 = skip),
#                COMPILE (Go's compiler), BINS (more binaries, space-separated),
#                GOSCOPE_BASE, GOSCOPE_BUILD_DIR or GOSCOPE, TARGET_MS (1000)
# Exit: 0 measured and goscope's median first probe on COMPILE < 500 ms cold
#       and < 200 ms warm, and on every binary of BINS < TARGET_MS cold and
#       < 200 ms warm; 3 measured but not; 1 error.
set -euo pipefail
source "$(dirname -- "$(readlink -f -- "$0")")/common.sh"

rounds=${ROUNDS:-5}
bt_n=${BPFTRACE_N:-200}
target_ms=${TARGET_MS:-1000}
compile=${COMPILE:-$(go env GOTOOLDIR)/compile}
base=${GOSCOPE_BASE:-}
[[ $rounds =~ ^[1-9][0-9]*$ && $bt_n =~ ^[0-9]+$ ]] || die "ROUNDS must be positive, BPFTRACE_N a number"
[[ -x $compile ]] || die "no Go compiler at $compile (set COMPILE)"
[[ -z $base || -x $base ]] || die "GOSCOPE_BASE=$base is not executable"
have_time=0
[[ -x /usr/bin/time ]] && have_time=1

# Private copies: a count -b probes every process that runs the file.
names=() copies=()
for b in "$compile" ${BINS:-}; do
  [[ -r $b ]] || die "cannot read $b"
  n=$(basename -- "$b")
  cp -- "$b" "$tmp/$n"
  names+=("$n")
  copies+=("$tmp/$n")
done
declare -A nfuncs
for i in "${!copies[@]}"; do
  nfuncs[${names[$i]}]=$("$goscope" list --json -b "${copies[$i]}" '*' | grep -vc '"inlined_into"')
done

xdg=$(private_xdg)

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "startup: ${names[*]}; $rounds rounds; load average $load_before" >&2

# One goscope run: "first_ms own_ms cpu_s rss_mb" on stdout.
run_goscope() {
  local gs=$1 bin=$2 t0 line first own
  local -a timecmd=()
  ((have_time)) && timecmd=(/usr/bin/time -o "$tmp/time" -f '%U %S %M')
  t0=$EPOCHREALTIME
  XDG_CACHE_HOME=$xdg "${timecmd[@]}" "$gs" count -b "$bin" '*' -d 0.01 2>&1 >/dev/null |
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$tmp/gs.log"
  line=$(grep -m1 ' probes\? attached to ' "$tmp/gs.log") || {
    tail -3 "$tmp/gs.log" >&2
    echo "startup: $gs count -b $bin attached nothing" >&2
    return 1
  }
  first=$(awk -v t0="$t0" '{ printf "%.1f", ($1 - t0) * 1000 }' <<<"$line")
  own=$(sed -n 's/.*, \([0-9.]*\) ms after goscope started.*/\1/p' <<<"$line")
  if ((have_time)); then
    awk -v f="$first" -v o="${own:-nan}" '{ printf "%s %s %.3f %.1f\n", f, o, $1 + $2, $3 / 1024 }' "$tmp/time"
  else
    echo "$first ${own:-nan} nan nan"
  fi
}

# bpftrace on COMPILE: programs for 1 and for bt_n functions spread evenly.
if ((bt_n > 0)); then
  need bpftrace
  bin=${copies[0]}
  seg=$(readelf -lW "$bin" | awk '$1 == "LOAD" && / E / { print $2, $3; exit }')
  [[ -n $seg ]] || die "no executable PT_LOAD in $bin"
  read -r seg_off seg_vaddr <<<"$seg"
  total=${nfuncs[${names[0]}]}
  ((bt_n <= total)) || bt_n=$total
  ((bt_n >= 2)) || bt_n=2
  "$goscope" list --json -b "$bin" '*' | grep -v '"inlined_into"' | sed -n 's/.*"entry":"\(0x[0-9a-f]*\)".*/\1/p' >"$tmp/entries"
  for n in 1 "$bt_n"; do
    awk -v n="$n" -v t="$total" 'BEGIN { step = t / n; next_i = 0 } NR - 1 >= next_i && c < n { print; c++; next_i += step }' \
      "$tmp/entries" |
      {
        first=1
        while read -r a; do
          ((first)) || printf ',\n'
          first=0
          printf 'uprobe:%s:0x%x' "$bin" $((a - seg_vaddr + seg_off))
        done
        printf '\n{ @ = count(); }\nBEGIN { printf("attached\\n"); exit(); }\n'
      } >"$tmp/startup.$n.bt"
  done
fi
# One bpftrace run on `n` functions: first_ms on stdout.
run_bpftrace() {
  local n=$1 t0 ts
  t0=$EPOCHREALTIME
  BPFTRACE_MAX_PROBES=$((n + 16)) timeout 600 bpftrace --unsafe "$tmp/startup.$n.bt" 2>"$tmp/bt.err" |
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$tmp/bt.log"
  ts=$(awk '$2 == "attached" { print $1; exit }' "$tmp/bt.log")
  [[ -n $ts ]] || { cat "$tmp/bt.log" "$tmp/bt.err" >&2; die "bpftrace did not attach"; }
  awk -v t0="$t0" -v ts="$ts" 'BEGIN { printf "%.1f\n", (ts - t0) * 1000 }'
}

# A B A B: every mode once per round.
for ((r = 1; r <= rounds; r++)); do
  for i in "${!copies[@]}"; do
    rm -rf -- "$xdg/goscope/analysis"
    run_goscope "$goscope" "${copies[$i]}" >>"$tmp/r.goscope.${names[$i]}" || die "goscope failed"
    run_goscope "$goscope" "${copies[$i]}" >>"$tmp/r.warm.${names[$i]}" || die "goscope failed"
    # The base may fail where this build does not (kubectl's 79,884 functions
    # were more than main's 65,536 probe ids): a row of "nan" then.
    if [[ -n $base ]]; then
      rm -rf -- "$xdg/goscope/analysis"
      run_goscope "$base" "${copies[$i]}" >>"$tmp/r.base.${names[$i]}" || echo "nan nan nan nan" >>"$tmp/r.base.${names[$i]}"
      run_goscope "$base" "${copies[$i]}" >>"$tmp/r.basewarm.${names[$i]}" || echo "nan nan nan nan" >>"$tmp/r.basewarm.${names[$i]}"
    fi
  done
  if ((bt_n > 0)); then
    run_bpftrace 1 >>"$tmp/r.bpftrace.1"
    run_bpftrace "$bt_n" >>"$tmp/r.bpftrace.n"
  fi
  echo "startup: round $r of $rounds done" >&2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)


echo
echo "Start-up: launch to first probe attached, $rounds rounds interleaved, median [min..max]"
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), load average before $load_before, after $load_after"
printf '%-26s %-22s %-9s %-26s %-26s %-20s %s\n' "tool" "binary" "functions" "first probe ms" "own ms (after start)" "CPU s" "peak RSS MB"
status=0
for i in "${!copies[@]}"; do
  n=${names[$i]}
  for mode in goscope warm base basewarm; do
    f=$tmp/r.$mode.$n
    [[ -s $f ]] || continue
    label="goscope count '*' cold"
    [[ $mode == warm ]] && label="goscope count '*' warm"
    [[ $mode == base ]] && label="GOSCOPE_BASE count '*' cold"
    [[ $mode == basewarm ]] && label="GOSCOPE_BASE count '*' warm"
    printf '%-26s %-22s %-9s %-26s %-26s %-20s %s\n' "$label" "$n" "${nfuncs[$n]}" "$(col "$f" 1)" "$(col "$f" 2)" "$(col "$f" 3)" "$(col "$f" 4)"
  done
  limit=$target_ms
  ((i == 0)) && limit=500
  m=$(med "$tmp/r.goscope.$n" 1)
  if awk -v m="$m" -v l="$limit" 'BEGIN { exit !(m < l) }'; then :; else status=3; fi
  m=$(med "$tmp/r.warm.$n" 1)
  if awk -v m="$m" 'BEGIN { exit !(m < 200) }'; then :; else status=3; fi
done
if ((bt_n > 0)); then
  n=${names[0]}
  bt1=$(med "$tmp/r.bpftrace.1" 1)
  btn=$(med "$tmp/r.bpftrace.n" 1)
  printf '%-26s %-22s %-9s %-26s\n' "bpftrace @=count()" "$n" 1 "$(col "$tmp/r.bpftrace.1" 1)"
  printf '%-26s %-22s %-9s %-26s\n' "bpftrace @=count()" "$n" "$bt_n" "$(col "$tmp/r.bpftrace.n" 1)"
  # A line through the two medians: fixed part + per-probe part x N.
  # On a loaded machine the N-probe run can come out faster than the
  # 1-probe run: no slope, no extrapolation then.
  bt_all=$(awk -v a="$bt1" -v b="$btn" -v n="$bt_n" -v N="${nfuncs[$n]}" 'BEGIN {
    if (b > a) printf "%.0f", a + (b - a) * (N - 1) / (n - 1); else print "n/a" }')
  if [[ $bt_all == n/a ]]; then
    printf '%-26s %-22s %-9s %s\n' "bpftrace (EXTRAPOLATED)" "$n" "${nfuncs[$n]}" "n/a: the $bt_n-probe median was not above the 1-probe one (too noisy; raise BPFTRACE_N)"
  else
    printf '%-26s %-22s %-9s %-26s\n' "bpftrace (EXTRAPOLATED)" "$n" "${nfuncs[$n]}" "$bt_all"
  fi
  gs_med=$(med "$tmp/r.goscope.$n" 1)
  awk -v b1="$bt1" -v b="$btn" -v ba="$bt_all" -v g="$gs_med" -v n="$bt_n" -v N="${nfuncs[$n]}" 'BEGIN {
    printf "bpftrace on 1 function / goscope on all %d: %.2fx; bpftrace on %d functions / goscope on all: %.2fx", N, b1 / g, n, b / g
    if (ba != "n/a") printf "; bpftrace extrapolated to all %d / goscope: %.1fx", N, ba / g
    printf "\n" }'
fi
if [[ -n $base ]]; then
  for n in "${names[@]}"; do
    awk -v b="$(med "$tmp/r.base.$n" 1)" -v g="$(med "$tmp/r.goscope.$n" 1)" \
      -v bw="$(med "$tmp/r.basewarm.$n" 1)" -v gw="$(med "$tmp/r.warm.$n" 1)" \
      -v br="$(med "$tmp/r.base.$n" 4)" -v gr="$(med "$tmp/r.goscope.$n" 4)" \
      -v bwr="$(med "$tmp/r.basewarm.$n" 4)" -v gwr="$(med "$tmp/r.warm.$n" 4)" -v n="$n" 'BEGIN {
      printf "%s: GOSCOPE_BASE / goscope first probe: cold %.2fx, warm %.2fx; peak RSS: cold %.2fx, warm %.2fx\n",
        n, b / g, bw / gw, br / gr, bwr / gwr }'
  done
fi
echo "(nan: every run of that goscope failed, e.g. main's on more than 65,536 functions; its stderr is above the table)"
for n in "${names[@]}"; do
  awk -v c="$(med "$tmp/r.goscope.$n" 1)" -v w="$(med "$tmp/r.warm.$n" 1)" -v n="$n" 'BEGIN {
    printf "%s: cold / warm first probe: %.2fx\n", n, c / w }'
done
echo "targets: first probe cold < 500 ms on ${names[0]}, < $target_ms ms on the others; warm < 200 ms on each: $([[ $status == 0 ]] && echo MET || echo MISSED)"
exit "$status"
