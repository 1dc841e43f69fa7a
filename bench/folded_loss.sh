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
#   WORKLOAD=tsgo  instead: TypeScript's Go compiler (npm
#                  @typescript/native-preview-linux-x64) type-checking
#                  typescript.js (allowJs, checkJs): stacks twice as deep
#   ESBUILD_VERSION, TYPESCRIPT_VERSION, TSGO_VERSION  npm versions
#                  (0.28.2, 5.6.3, 7.0.0-dev.20260707.2)
# Downloads into build/bench-bins/npm once. Not a timing: the loss barely
# depends on the load; the load average is printed all the same.
set -euo pipefail
source "$(dirname -- "$0")/common.sh"
need npm
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"
rounds=${ROUNDS:-2}
esv=${ESBUILD_VERSION:-0.28.2}
tsv=${TYPESCRIPT_VERSION:-5.6.3}
ts=$(npm_fetch typescript "$tsv")/lib
if [[ ${WORKLOAD:-esbuild} == tsgo ]]; then
  tgv=${TSGO_VERSION:-7.0.0-dev.20260707.2}
  tsgo=$(npm_fetch @typescript/native-preview-linux-x64 "$tgv")/lib/tsgo
  [[ -x $tsgo ]] || die "no tsgo in the npm package"
  printf '{"compilerOptions":{"noEmit":true,"allowJs":true,"checkJs":true,"target":"es2022","lib":["es2022"],"types":[]},"files":["%s"]}\n' \
    "$ts/typescript.js" >"$tmp/tsconfig.json"
  cmd="$tsgo -p $tmp/tsconfig.json"
  what="tsgo $tgv type-checking typescript $tsv"
else
  esbuild=$(npm_fetch @esbuild/linux-x64 "$esv")/bin/esbuild
  [[ -x $esbuild ]] || die "no esbuild in the npm package"
  cmd="$esbuild $ts/typescript.js $ts/tsserver.js $ts/typingsInstaller.js --minify --outdir=$tmp/out"
  what="esbuild $esv minifying typescript $tsv"
fi

echo "folded_loss: $what; runtime.mallocgc --folded; load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  for label in A B; do
    g=$goscope
    if [[ $label == B ]]; then
      [[ -n ${GOSCOPE_B:-} ]] || continue
      g=$GOSCOPE_B
    fi
    # goscope exits with the command's status (tsgo: 1, the errors it found)
    /usr/bin/time -f %M -o "$tmp/rss" "$g" trace --folded -c "$cmd" runtime.mallocgc >"$tmp/folded" 2>"$tmp/err" || true
    [[ -s $tmp/folded ]] || die "$g printed no stacks: $(tail -1 "$tmp/err")"
    awk -v r="$r" -v l="$label" -v g="$g" -v rss="$(tail -1 "$tmp/rss")" -v bytes="$(wc -c <"$tmp/folded")" \
      '{n = $NF; t += n; if ($1 ~ /^\[lost\]/) lost += n}
      END {printf "round %d %s (%s): %d hits, %d without a recorded stack (%.2f%%), %d folded lines (%.0f MB), peak RSS %.0f MB\n",
           r, l, g, t, lost, t ? 100 * lost / t : 0, NR, bytes / 1e6, rss / 1024}' "$tmp/folded"
  done
done
echo "folded_loss: load after $(cut -d' ' -f1-3 /proc/loadavg)"
