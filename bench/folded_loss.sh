#!/usr/bin/env bash
# How many hits --folded keeps with their stack on a busy real program:
# esbuild (from npm) minifying TypeScript's three bundles (from npm) while
# goscope folds runtime.mallocgc's stacks (~1.7 M hits, ~200,000 raw stacks:
# more than the kernel's stack map holds at once). Prints, per run, the hits,
# those counted under [lost] (no recorded stack) and the folded lines.
#
# Usage: sudo bench/folded_loss.sh
#   ROUNDS=N       runs per goscope (default 2)
#   GOSCOPE_B=PATH a second goscope, run in turn with the first (A B A B):
#                  e.g. one built from the commit before the stack maps were
#                  drained, for the loss without draining
#   ESBUILD_VERSION, TYPESCRIPT_VERSION  npm versions (0.28.2, 5.6.3)
# Downloads into build/bench-bins/npm once. Not a timing: the loss barely
# depends on the load; the load average is printed all the same.
set -euo pipefail
source "$(dirname -- "$0")/common.sh"
need npm
rounds=${ROUNDS:-2}
esv=${ESBUILD_VERSION:-0.28.2}
tsv=${TYPESCRIPT_VERSION:-5.6.3}
bins=$build/bench-bins/npm
mkdir -p "$bins"
fetch() {  # package version -> unpacked dir
  local dir=$bins/$1-$2
  if [[ ! -d $dir/package ]]; then
    mkdir -p "$dir"
    (cd "$dir" && npm pack "$1@$2" --silent >/dev/null 2>"$dir/.err" && tar xzf ./*.tgz) ||
      die "npm pack $1@$2 failed: $(tail -1 "$dir/.err")"
  fi
  echo "$dir/package"
}
esbuild=$(fetch @esbuild/linux-x64 "$esv")/bin/esbuild
ts=$(fetch typescript "$tsv")/lib
[[ -x $esbuild ]] || die "no esbuild in the npm package"
cmd="$esbuild $ts/typescript.js $ts/tsserver.js $ts/typingsInstaller.js --minify --outdir=$tmp/out"

echo "folded_loss: esbuild $esv minifying typescript $tsv; runtime.mallocgc --folded; load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  for label in A B; do
    g=$goscope
    if [[ $label == B ]]; then
      [[ -n ${GOSCOPE_B:-} ]] || continue
      g=$GOSCOPE_B
    fi
    "$g" trace --folded -c "$cmd" runtime.mallocgc >"$tmp/folded" 2>"$tmp/err" || die "$g failed: $(tail -1 "$tmp/err")"
    awk -v r="$r" -v l="$label" -v g="$g" '{n = $NF; t += n; if ($1 ~ /^\[lost\]/) lost += n}
      END {printf "round %d %s (%s): %d hits, %d without a recorded stack (%.2f%%), %d folded lines\n", r, l, g, t, lost, t ? 100 * lost / t : 0, NR}' "$tmp/folded"
  done
done
echo "folded_loss: load after $(cut -d' ' -f1-3 /proc/loadavg)"
