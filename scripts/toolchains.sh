#!/usr/bin/env bash
# Fetches the Go toolchains 1.21 to 1.27 and the Delves 1.24 and 1.27 from
# Debian's other suites (bookworm-backports, trixie, trixie-backports, sid)
# into a cache outside the repository, without changing the system's apt
# state, and prints where each is. Go 1.19 and Delve 1.20 are bookworm's own
# (the system's golang-go and delve packages).
#
#   scripts/toolchains.sh [--cache DIR] [--offline] [ITEM...]
#
# ITEM: go1.21 .. go1.27, dlv1.24, dlv1.27, `go` (every Go), `dlv` (every
# Delve), `all` (the default). The cache is --cache DIR, else
# $GOSCOPE_TOOLCHAINS, else ${XDG_CACHE_HOME:-$HOME/.cache}/goscope/toolchains;
# goscope itself looks for dlv there (docs/delve.md, "Which Delve").
#
# Output, one line per item on stdout:
#   go1.24 go1.24.4 /root/.cache/goscope/toolchains/go1.24/usr/lib/go-1.24
#   dlv1.24 1.24.0 /root/.cache/goscope/toolchains/dlv1.24/usr/bin/dlv
# For Go the path is the GOROOT: build with
#   GOROOT=PATH GOTOOLCHAIN=local PATH/bin/go build ...
#
# How: a private apt configuration in DIR/.apt (its own sources list naming
# the suites, its own Dir::State::Lists, Dir::Cache and an empty dpkg status,
# no sources.list.d, no preferences) on the mirror the system's apt already
# uses; `apt-get update` checks the suites' signatures against Debian's
# archive keyring, `apt-get download` fetches a package of a chosen version,
# `dpkg -x` unpacks it into DIR/ITEM. Nothing is installed; /var/lib/apt and
# /var/lib/dpkg are not touched. An item already unpacked is not fetched
# again (DIR/ITEM/.complete), so a second run uses no network. Concurrent
# runs wait for each other (flock on DIR/.lock).
#
# --offline: fetch nothing; print what is there, exit 1 if an item is not.
# Exit status: 0 when every item asked for is there, 1 when one could not be
# fetched (each failure said on stderr; items that arrived stay usable),
# 2 on a usage error.
set -euo pipefail

usage() {
  sed -n '/^#   scripts\/toolchains.sh/p' "${BASH_SOURCE[0]}" | sed 's/^#   /usage: /' >&2
  exit 2
}

cache=${GOSCOPE_TOOLCHAINS:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/goscope/toolchains}
offline=0
asked=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --cache) [[ $# -ge 2 && -n $2 ]] || usage; cache=$2; shift 2 ;;
    --cache=*) cache=${1#--cache=}; [[ -n $cache ]] || usage; shift ;;
    --offline) offline=1; shift ;;
    -h|--help) usage ;;
    -*) echo "toolchains.sh: unknown option $1" >&2; usage ;;
    *) asked+=("$1"); shift ;;
  esac
done

# ITEM -> "packages|version pattern (extended regex on the Debian version)".
# Go: the -go package (compiler, tools) and the -src package (the standard
# library's sources, which go build needs) of one version. Delve: the release
# whose three-Go-release window the item names (Delve 1.N reads Go 1.(N-2) to
# 1.N), wherever apt finds it.
declare -A spec=(
  [go1.21]="golang-1.21-go golang-1.21-src|.*"
  [go1.22]="golang-1.22-go golang-1.22-src|.*"
  [go1.23]="golang-1.23-go golang-1.23-src|.*"
  [go1.24]="golang-1.24-go golang-1.24-src|.*"
  [go1.25]="golang-1.25-go golang-1.25-src|.*"
  [go1.26]="golang-1.26-go golang-1.26-src|.*"
  [go1.27]="golang-1.27-go golang-1.27-src|.*"
  [dlv1.24]="delve|^1\.24\."
  [dlv1.27]="delve|^1\.27\."
)
all_go=(go1.21 go1.22 go1.23 go1.24 go1.25 go1.26 go1.27)
all_dlv=(dlv1.24 dlv1.27)
# Where Debian has them (checked 2026-11): Go 1.21-1.23 in bookworm-backports,
# 1.24 and Delve 1.24.0 in trixie, 1.25-1.27 in trixie-backports, 1.26, 1.27
# and Delve 1.27.1 in sid. apt picks the newest version matching the pattern
# across all of them.
suites=${GOSCOPE_TOOLCHAIN_SUITES:-"bookworm-backports trixie trixie-backports sid"}

items=()
[[ ${#asked[@]} -eq 0 ]] && asked=(all)
for a in "${asked[@]}"; do
  case $a in
    all) items+=("${all_go[@]}" "${all_dlv[@]}") ;;
    go) items+=("${all_go[@]}") ;;
    dlv) items+=("${all_dlv[@]}") ;;
    *) [[ -n ${spec[$a]+x} ]] || { echo "toolchains.sh: unknown item '$a' (go1.21..go1.27, dlv1.24, dlv1.27, go, dlv, all)" >&2; exit 2; }
       items+=("$a") ;;
  esac
done

mkdir -p -- "$cache"
cache=$(cd -- "$cache" && pwd)
exec 9>"$cache/.lock"
flock 9

# The path an item's line names, from its unpacked tree.
item_path() {
  local item=$1 root=$cache/$1
  case $item in
    go*) echo "$root/usr/lib/go-${item#go}" ;;
    dlv*) echo "$root/usr/bin/dlv" ;;
  esac
}

report() {
  local item=$1
  echo "$item $(cat -- "$cache/$item/.complete") $(item_path "$item")"
}

missing=()
for item in "${items[@]}"; do
  if [[ -s $cache/$item/.complete ]]; then report "$item"; else missing+=("$item"); fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $offline -eq 1 ]]; then
  echo "toolchains.sh: not in $cache (run without --offline to fetch): ${missing[*]}" >&2
  exit 1
fi
for tool in apt-get apt-cache dpkg flock; do
  command -v "$tool" >/dev/null || { echo "toolchains.sh: '$tool' not found (a Debian system is needed)" >&2; exit 1; }
done

# The Debian mirror the system's apt uses: the first deb URI of a suite that
# is not a -security one, from deb822 .sources or one-line .list files.
system_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r $f ]] || continue
    awk 'BEGIN{RS=""; FS="\n"}
         { uri=""; suites=""; deb=0
           for (i = 1; i <= NF; i++) {
             if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) deb=1
             if ($i ~ /^URIs:/) { split($i, w, /[ \t]+/); uri=w[2] }
             if ($i ~ /^Suites:/) suites=$i }
           if (deb && uri != "" && suites !~ /-security/) { print uri; exit } }' "$f"
  done
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } |
    awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++
                       if ($(i+1) !~ /-security/) { print $i; exit } }'
}
mirror=${GOSCOPE_DEBIAN_MIRROR:-$(system_mirror | sed -n 1p)}
if [[ -z $mirror ]]; then
  echo "toolchains.sh: no Debian mirror in /etc/apt/sources.list*; set GOSCOPE_DEBIAN_MIRROR to one" >&2
  exit 1
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r $keyring ]] || { echo "toolchains.sh: $keyring missing (apt-get install debian-archive-keyring)" >&2; exit 1; }

apt_dir=$cache/.apt
mkdir -p -- "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
: >"$apt_dir/status"
{
  echo "# written by goscope's scripts/toolchains.sh"
  for s in $suites; do echo "deb [signed-by=$keyring] $mirror $s main"; done
} >"$apt_dir/sources.list.new"
# The system's apt.conf.d still applies (proxies, timeouts); the sources,
# pins, state and caches are these alone.
apt_opts=(
  -o "Dir::Etc::sourcelist=$apt_dir/sources.list"
  -o Dir::Etc::sourceparts=/dev/null
  -o Dir::Etc::preferences=/dev/null
  -o Dir::Etc::preferencesparts=/dev/null
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::State::status=$apt_dir/status"
  -o "Dir::Cache=$apt_dir/cache"
  -o Dir::Cache::pkgcache=
  -o Dir::Cache::srcpkgcache=
  -o APT::Architecture=amd64
  -o APT::Architectures::=amd64
  -o Acquire::Languages=none
)
# The sandbox user (_apt) may not reach a cache under a private $HOME; apt
# then downloads as the caller and says so on every file.
if [[ $(id -u) -eq 0 ]] && ! runuser -u _apt -- test -w "$apt_dir/lists/partial" 2>/dev/null; then
  apt_opts+=(-o APT::Sandbox::User=root)
fi

# The indexes are fetched again when the suites changed or they are older
# than a day (a package superseded in sid disappears from the mirror).
if ! cmp -s "$apt_dir/sources.list.new" "$apt_dir/sources.list" 2>/dev/null ||
   [[ -z $(find "$apt_dir/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit) ]]; then
  mv -f -- "$apt_dir/sources.list.new" "$apt_dir/sources.list"
  echo "toolchains.sh: apt-get update ($suites) into $apt_dir" >&2
  if ! apt-get "${apt_opts[@]}" -q update >"$apt_dir/update.log" 2>&1; then
    tail -5 "$apt_dir/update.log" >&2
    echo "toolchains.sh: apt-get update failed (log: $apt_dir/update.log)" >&2
    exit 1
  fi
  # apt-get update exits 0 when a suite could not be fetched or verified.
  if grep -E '^(W|E): ' "$apt_dir/update.log" >&2; then
    echo "toolchains.sh: apt-get update warned (log: $apt_dir/update.log)" >&2
  fi
else
  rm -f -- "$apt_dir/sources.list.new"
fi

# The newest version of PACKAGE matching the extended regex, from the private
# indexes; empty when none.
newest_version() {
  apt-cache "${apt_opts[@]}" madison "$1" 2>/dev/null |
    awk -F' [|] ' -v pat="$2" '{ gsub(/ /, "", $2); if ($2 ~ pat) print $2 }' |
    sort -V -r | head -1
}

# dpkg -x keeps a package's absolute symlinks (golang-1.NN-go's
# usr/lib/go-1.NN/src -> /usr/share/go-1.NN/src): point them inside ROOT.
relink_inside() {
  local root=$1 link target
  while IFS= read -r -d '' link; do
    target=$(readlink -- "$link")
    [[ $target == /* ]] || continue
    ln -sfn -- "$(realpath -m --relative-to="$(dirname -- "$link")" "$root$target")" "$link"
  done < <(find "$root" -type l -print0)
}

fetch_item() {
  local item=$1 pkgs pattern first version p deb tmp
  pkgs=${spec[$item]%%|*}
  pattern=${spec[$item]#*|}
  first=${pkgs%% *}
  version=$(newest_version "$first" "$pattern")
  if [[ -z $version ]]; then
    echo "toolchains.sh: $item: no $first matching '$pattern' in $suites" >&2
    return 1
  fi
  tmp=$(mktemp -d "$cache/.$item.XXXXXX")
  for p in $pkgs; do
    deb=$(ls "$apt_dir/debs/${p}_${version//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
    if [[ -z $deb ]]; then
      if ! (cd -- "$apt_dir/debs" && apt-get "${apt_opts[@]}" -q download "$p=$version") >"$apt_dir/download.log" 2>&1; then
        tail -3 "$apt_dir/download.log" >&2
        echo "toolchains.sh: $item: apt-get download $p=$version failed" >&2
        rm -rf -- "$tmp"
        return 1
      fi
      deb=$(ls "$apt_dir/debs/${p}_${version//:/%3a}_"*.deb | head -1)
    fi
    dpkg -x "$deb" "$tmp"
  done
  relink_inside "$tmp"
  local shown
  case $item in
    go*)
      local goroot=$tmp/usr/lib/go-${item#go}
      # `go version` of the toolchain itself: go1.24.4.
      shown=$(GOROOT=$goroot GOTOOLCHAIN=local GOENV=off "$goroot/bin/go" env GOVERSION 2>/dev/null || true)
      [[ $shown == go1.* ]] || shown=$(head -1 "$goroot/VERSION" 2>/dev/null || true)
      ;;
    dlv*)
      shown=$("$tmp/usr/bin/dlv" version 2>/dev/null | sed -n 's/^Version: //p')
      ;;
  esac
  if [[ -z $shown ]]; then
    echo "toolchains.sh: $item: unpacked $pkgs $version but it does not run (see $tmp)" >&2
    return 1
  fi
  echo "$shown" >"$tmp/.complete"
  rm -rf -- "$cache/$item"
  mv -- "$tmp" "$cache/$item"
  # The .debs are not needed once unpacked.
  for p in $pkgs; do rm -f -- "$apt_dir/debs/${p}_${version//:/%3a}_"*.deb; done
}

status=0
for item in "${missing[@]}"; do
  if fetch_item "$item"; then report "$item"; else status=1; fi
done
exit $status
