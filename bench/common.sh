# Shared by the bench scripts (sourced, not run). Sets: root, build, goscope,
# tmp (a private directory removed at exit); defines die, need, stats, fmt_si,
# now_s and the cleanup machinery (bench_track PID: killed and reaped at exit).
# shellcheck shell=bash

root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/.." && pwd)
build=${GOSCOPE_BUILD_DIR:-$root/build}
goscope=${GOSCOPE:-$build/goscope}

die() { echo "$(basename -- "$0"): $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "'$1' not found (bash scripts/setup.sh installs it)"; }

[[ $(id -u) -eq 0 ]] || die "run as root (uprobes and BPF need it)"
need awk; need go; need bpftrace; need readelf; need timeout
if [[ ! -x $goscope ]]; then
  echo "$(basename -- "$0"): building goscope into $build" >&2
  bash "$root/scripts/build.sh" >&2 || die "build failed"
fi
[[ -x $goscope ]] || die "no goscope binary at $goscope (set GOSCOPE or GOSCOPE_BUILD_DIR)"

tmp=$(mktemp -d /tmp/goscope-bench.XXXXXX)
bench_pids=()
bench_track() { bench_pids+=("$1"); }
bench_cleanup() {
  local p
  for p in "${bench_pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      kill -TERM "$p" 2>/dev/null || true
      # give it a moment to detach cleanly, then insist
      for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
      kill -KILL "$p" 2>/dev/null || true
    fi
    wait "$p" 2>/dev/null || true
  done
  rm -rf -- "$tmp"
}
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Seconds since the epoch with microseconds (bash 5).
now_s() { echo "$EPOCHREALTIME"; }

# npm_fetch PACKAGE VERSION: the package unpacked under build/bench-bins/npm
# (downloaded once); prints its directory ("package" inside it).
npm_fetch() {
  local dir=$build/bench-bins/npm/$1-$2
  if [[ ! -d $dir/package ]]; then
    mkdir -p "$dir"
    (cd "$dir" && npm pack "$1@$2" --silent >/dev/null 2>"$dir/.err" && tar xzf ./*.tgz) ||
      die "npm pack $1@$2 failed: $(tail -1 "$dir/.err")"
  fi
  echo "$dir/package"
}

# stdin: one number a line. stdout: "median min max".
stats() {
  sort -g | awk '{ a[NR] = $1 } END {
    if (NR == 0) { print "nan nan nan"; exit }
    med = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.6g %.6g %.6g\n", med, a[1], a[NR] }'
}

# A private XDG_CACHE_HOME under $tmp (its path on stdout) holding the
# host's calibrated probe costs, so that no run calibrates and no run reads
# or writes the user's analysis cache.
private_xdg() {
  local xdg=$tmp/xdg costs=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/goscope/host-costs.json
  mkdir -p "$xdg/goscope"
  [[ -r $costs ]] && cp -- "$costs" "$xdg/goscope/"
  echo "$xdg"
}

# Column C of a file of per-run rows, runs that failed ("nan") left out:
# "median [min..max]" (col) or the median alone (med); "nan" when every run failed.
col() { awk -v c="$2" '$c != "nan" { print $c }' "$1" | stats | awk '{ printf "%s [%s..%s]", $1, $2, $3 }'; }
med() { awk -v c="$2" '$c != "nan" { print $c }' "$1" | stats | awk '{ print $1 }'; }

# A number with a k/M/G suffix, 3 significant digits.
fmt_si() {
  awk -v x="$1" 'BEGIN {
    # (999,960 is 1M, not "1e+03k": the unit is chosen after rounding)
    if (x >= 999.5e6) printf "%.3gG", x / 1e9; else if (x >= 999.5e3) printf "%.3gM", x / 1e6;
    else if (x >= 999.5) printf "%.3gk", x / 1e3; else printf "%.3g", x }'
}

# Builds a program under bench/go into $tmp (the Go build cache lives in $build).
build_bench_go() {
  build_bench_go_as "$1" "$1"
}
# `build_bench_go_as NAME OUT [GO BUILD FLAGS...]`: the same, into $tmp/OUT
# with extra flags (e.g. -ldflags='-s -w' for a stripped build).
build_bench_go_as() {
  local name=$1 out=$tmp/$2
  shift 2
  (cd "$root/bench/go" &&
    GOCACHE="$build/.bench-gocache" GOPATH="$build/.bench-gopath" GOENV=off GOPROXY=off \
      GOFLAGS=-buildvcs=false GO111MODULE=on GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 \
      go build "$@" -o "$out" "./$name") >&2 || die "go build ./$name failed"
  echo "$out"
}

# The kernel's BPF statistics (run_time_ns, run_cnt per program) on for the
# script's run, restored at exit (with the cleanup above).
bpf_stats_on() {
  need bpftool
  need python3
  bench_old_stats=$(sysctl -n kernel.bpf_stats_enabled)
  trap 'sysctl -qw kernel.bpf_stats_enabled="$bench_old_stats" || true; bench_cleanup' EXIT
  sysctl -qw kernel.bpf_stats_enabled=1
}
# The ids of every BPF program loaded now, on one line (for "new since").
bpf_prog_ids() {
  bpftool -j prog show | python3 -c 'import json,sys; print(" ".join(str(p["id"]) for p in json.load(sys.stdin)))'
}

# `run_mode MODE ROUND` (the caller's) for every one of `modes` in each of
# `rounds` rounds, the order rotated by one each round (A B C, B C A, ...):
# side by side, no mode always first.
run_rounds() {
  local r i
  for ((r = 1; r <= rounds; r++)); do
    for ((i = 0; i < ${#modes[@]}; i++)); do
      run_mode "${modes[(i + r - 1) % ${#modes[@]}]}" "$r"
    done
  done
}
