#!/usr/bin/env bash
# Installs every Debian package goscope needs to build, test and demo.
# Idempotent; run as root on Debian 12 (bookworm). `apt-get update` first, always:
# a fresh machine has no package lists.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
  echo "setup.sh: must run as root (it installs Debian packages)" >&2
  exit 1
fi

packages=(
  # build
  build-essential cmake pkg-config git
  # C++ libraries (Boost 1.81: 1.74, the default, has no Boost.JSON)
  libboost1.81-dev libboost-json1.81-dev
  libspdlog-dev libfmt-dev doctest-dev
  # linear-time regular expressions for /regex/ patterns
  libre2-dev
  # ELF, DWARF, disassembly
  libelf-dev libdw-dev libzydis-dev zlib1g-dev
  # content hashes keying the analysis cache
  libxxhash-dev
  # BPF: objects compiled by clang, skeletons by bpftool, loaded by libbpf
  clang llvm libbpf-dev bpftool
  # fuzzing (scripts/fuzz.sh): libFuzzer and the sanitizer runtimes of clang 14
  libclang-rt-14-dev
  # Go fixtures and the low-frequency path
  golang-go delve
  # comparisons, tests (objdump for RET sites) and bench
  binutils bpftrace procps psmisc
  # error tests: setpriv runs goscope with capabilities dropped
  util-linux
  # tests that parse what goscope wrote (the flame graph's XML) or patch a
  # copied binary use python3; bench/startup.sh measures CPU and RSS with
  # /usr/bin/time. Named here so a minimal image has them too.
  python3 time
  # the --prometheus tests: Debian's Prometheus server scrapes goscope
  # (tests/runtime/test_prometheus.cpp). The tests start their own server on
  # free ports; the package's service (:9090, where systemd runs it) is unused.
  prometheus
  # scripts/readme-check.py scrapes the README's Prometheus examples with it
  curl
  # goscope top draws with ncurses; its tests run it in a tmux pane
  libncurses-dev tmux
  # the README's goscope mcp example picks the answer out of the JSON-RPC reply with it
  jq
)

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
# npm fetches the prebuilt Go programs of other releases (scripts/fetch-go-samples.sh).
# Debian's npm only where none is there: a nodejs from elsewhere (NodeSource)
# brings its own, which Debian's package would conflict with.
if ! command -v npm >/dev/null 2>&1; then
  apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
echo "setup.sh: installed ${#packages[@]} packages"
