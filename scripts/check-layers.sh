#!/usr/bin/env bash
# Proves that the layers are enforced by the build, not by review: a file in
# one layer that includes a header of a layer it may not see does not
# compile. Uses the real compile command of a file of each layer (from
# compile_commands.json) on a probe source that includes one header.
#   usage: check-layers.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check-layers.sh BUILD_DIR}
db=$build/compile_commands.json
probe=$(mktemp --suffix=.cpp)
trap 'rm -f "$probe"' EXIT

# compiles LAYER_FILE HEADER: 0 when a file compiled like LAYER_FILE may include HEADER.
compiles() {
  local cmd
  cmd=$(python3 - "$db" "$1" <<'PY'
import json, sys, shlex
db, wanted = sys.argv[1], sys.argv[2]
for e in json.load(open(db)):
    if e["file"].endswith(wanted):
        args = shlex.split(e["command"])
        out = []
        skip = False
        for a in args:
            if skip: skip = False; continue
            if a in ("-o", "-c"): skip = a == "-o"; continue
            if a.endswith(wanted): continue
            out.append(a)
        print(shlex.join(out)); break
PY
)
  [[ -n $cmd ]] || { echo "check-layers: no compile command for $1" >&2; exit 2; }
  printf '#include "%s"\n' "$2" > "$probe"
  local err
  if err=$(cd "$build" && eval "$cmd -fsyntax-only $probe" 2>&1); then return 0; fi
  # Refused for the right reason: the header is not visible from this layer.
  grep -q "$2: No such file or directory" <<<"$err" && return 1
  echo "check-layers: compiling a probe like $1 failed otherwise:" >&2
  echo "$err" | head -5 >&2
  exit 2
}

fail=0
expect() {  # expect yes|no LAYER_FILE HEADER
  if compiles "$2" "$3"; then got=yes; else got=no; fi
  local verb; [[ $1 == yes ]] && verb="can" || verb="cannot"
  if [[ $got == "$1" ]]; then echo "ok: $2 $verb include $3"
  else echo "FAIL: $2 including $3: expected '$1', got '$got'"; fail=1; fi
}

expect yes src/cli/trace.cpp        api/goscope.hpp
expect no  src/cli/trace.cpp        backend/bpf/bpf_engine.hpp
expect no  src/cli/trace.cpp        backend/delve/delve_session.hpp
expect no  src/cli/read.cpp         rpc/delve_types.hpp
expect no  src/output/output.cpp    backend/bpf/event.hpp
expect no  src/probe/pattern.cpp    session/call.hpp
expect no  src/binary/elf_file.cpp  probe/pattern.hpp
expect no  src/binary/elf_file.cpp  process/process.hpp
expect yes src/process/process.cpp  binary/elf_file.hpp
expect no  src/process/process.cpp  probe/pattern.hpp
expect no  src/value/render.cpp     rpc/delve_types.hpp
expect yes src/session/event_session.cpp backend/bpf/bpf_engine.hpp
# The executor layer alone reaches the backends; the façade above it does
# not, and the executors do not see the façade.
expect no  src/api/plan.cpp         backend/bpf/bpf_engine.hpp
expect no  src/api/plan.cpp         backend/delve/delve_session.hpp
expect no  src/session/event_session.cpp api/goscope.hpp
# The kernel's ABI header: the BPF backend's, not the public API's users'.
expect yes src/backend/bpf/probe_config.cpp goscope_shared.h
expect no  src/output/output.cpp    goscope_shared.h
expect no  src/strategy/strategy.cpp goscope_shared.h
# Above the façade, the executors' types are reached through api/goscope.hpp
# alone (api:: names them): the session headers are on the include path of
# what links api (its types are the façade's), so this is checked here.
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
if direct=$(grep -rln '#include "session/' "$root/src/cli" "$root/src/output" "$root/src/main.cpp" "$root/examples"); then
  echo "FAIL: above api, included session/ directly: $direct"; fail=1
else
  echo "ok: above api, nothing includes session/ but through api/goscope.hpp"
fi
exit $fail
