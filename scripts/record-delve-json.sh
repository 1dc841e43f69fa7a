#!/usr/bin/env bash
# Re-records the Delve JSON-RPC exchanges that tests/unit/test_rpc_codec.cpp
# decodes, from the installed dlv against the counter and functions fixtures.
#
#   scripts/record-delve-json.sh [OUTDIR]      (default: fixtures/delve)
#
# For each exchange NAME (<Method>.<case>) it writes:
#   NAME.reply.json    the raw reply line exactly as dlv sent it on the socket
#   NAME.request.json  the request's params as dlv's own server re-encoded them
#                      (its rpc log marshals the decoded Go In struct: every key
#                      of the Go type, spelled and typed as Go spells them)
# so the codec test checks our encoding against Go's, not against our guess.
#
# Needs: root (ptrace), go, dlv. Uses bash's /dev/tcp: no python, no jq, no nc.
# Fixtures are built with -trimpath so file paths in the replies are stable.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/fixtures/delve}
mkdir -p "$out"
tmp=$(mktemp -d /tmp/record-delve.XXXXXX)
pids=()
cleanup() {
  exec 3>&- 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$root/fixtures/go" && go build -trimpath -o "$tmp/counter" ./counter \
  && go build -trimpath -o "$tmp/functions" ./functions)

next_id=0
log=""

# start_dlv PID: attaches a headless dlv that logs every RPC, connects fd 3.
start_dlv() {
  log=$tmp/rpc-$1.log
  dlv attach "$1" --headless --api-version=2 --listen=127.0.0.1:0 \
    --log --log-output=rpc --log-dest="$log" >"$tmp/dlv.out" 2>"$tmp/dlv.err" &
  pids+=($!)
  local port=""
  for _ in $(seq 100); do  # with --log-dest the listening line goes to the log
    port=$(grep -m1 -o 'API server listening at: 127.0.0.1:[0-9]*' "$log" 2>/dev/null | grep -o '[0-9]*$' || true)
    [[ -n $port ]] && break
    sleep 0.1
  done
  [[ -n $port ]] || { echo "record: dlv did not start: $(cat "$tmp/dlv.err")" >&2; exit 1; }
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  # dlv's log names async calls by its per-connection sequence number (Go's
  # jsonrpc codec renumbers requests 1, 2, ...): keep our ids equal to it.
  next_id=0
}

# send METHOD PARAMS: writes one request, sets $sent_id.
send() {
  next_id=$((next_id + 1))
  sent_id=$next_id
  printf '{"method":"RPCServer.%s","params":[%s],"id":%d}' "$1" "$2" "$sent_id" >&3
}

# recv: reads one reply line into $reply and its id into $reply_id.
recv() {
  IFS= read -r -t 30 reply <&3 || { echo "record: no reply from dlv" >&2; exit 1; }
  reply_id=$(printf '%s' "$reply" | grep -o '^{"id":[0-9]*' | grep -o '[0-9]*$')
}

# save NAME METHOD ID REPLY: writes the reply and the request as dlv logged it.
# Command and State run asynchronously in dlv and are logged with their id.
save() {
  local name=$1 method=$2 id=$3 reply=$4 line=""
  printf '%s\n' "$reply" >"$out/$name.reply.json"
  for _ in $(seq 50); do
    if [[ $method == Command || $method == State ]]; then
      line=$(grep -F "(async $id) <- RPCServer.$method(" "$log" | tail -n1 || true)
    else
      line=$(grep -F "<- RPCServer.$method(" "$log" | grep -vF '(async' | tail -n1 || true)
    fi
    [[ -n $line ]] && break
    sleep 0.05
  done
  [[ -n $line ]] || { echo "record: $method not in dlv's log" >&2; exit 1; }
  printf '%s\n' "$line" | sed -E "s/^.*<- RPCServer\.$method\([^{]*//; s/\)$//" >"$out/$name.request.json"
}

# call NAME METHOD PARAMS: one synchronous exchange.
call() {
  send "$2" "$3"
  recv
  [[ $reply_id == "$sent_id" ]] || { echo "record: reply $reply_id for request $sent_id" >&2; exit 1; }
  save "$1" "$2" "$sent_id" "$reply"
}

cfg='{"FollowPointers":true,"MaxVariableRecurse":1,"MaxStringLen":64,"MaxArrayValues":64,"MaxStructFields":-1}'
scope='{"GoroutineID":-1,"Frame":0,"DeferredCall":0}'

# ---- counter: a stopped target after attach, reads, a breakpoint hit, halt ----
"$tmp/counter" --report >"$tmp/counter.out" &
counter=$!
pids+=($counter)
sleep 1
start_dlv "$counter"
call State.stopped State '{"NonBlocking":true}'
call State.blocking State '{"NonBlocking":false}'
call GetVersion.default GetVersion '{}'
call Eval.int64 Eval "{\"Scope\":$scope,\"Expr\":\"main.counter\",\"Cfg\":null}"
call Eval.unknown Eval "{\"Scope\":$scope,\"Expr\":\"main.nosuch\",\"Cfg\":null}"
call Eval.syntax Eval "{\"Scope\":$scope,\"Expr\":\"main.counter +\",\"Cfg\":null}"
call Eval.unqualified Eval "{\"Scope\":$scope,\"Expr\":\"nosuch\",\"Cfg\":null}"
call Eval.string Eval "{\"Scope\":$scope,\"Expr\":\"runtime.buildVersion\",\"Cfg\":null}"
call Eval.slice Eval "{\"Scope\":$scope,\"Expr\":\"os.Args\",\"Cfg\":$cfg}"
call Eval.struct Eval "{\"Scope\":$scope,\"Expr\":\"runtime.debug\",\"Cfg\":$cfg}"
call Set.int64 Set "{\"Scope\":$scope,\"Symbol\":\"main.counter\",\"Value\":\"5\"}"
call FindLocation.function FindLocation "{\"Scope\":$scope,\"Loc\":\"main.doWork\",\"IncludeNonExecutableLines\":false,\"SubstitutePathRules\":null}"
call FindLocation.unknown FindLocation "{\"Scope\":$scope,\"Loc\":\"main.nosuch\",\"IncludeNonExecutableLines\":false,\"SubstitutePathRules\":null}"
call ListFunctions.main ListFunctions '{"Filter":"^main\\."}'
call ListPackageVars.main ListPackageVars "{\"Filter\":\"^main\\\\.counter\",\"Cfg\":$cfg}"
call ListGoroutines.first ListGoroutines '{"Start":0,"Count":10}'
call Stacktrace.full Stacktrace "{\"Id\":1,\"Depth\":3,\"Full\":true,\"Defers\":false,\"Opts\":0,\"Cfg\":$cfg}"
# As DelveSession creates them: at FindLocation's address, with the expression.
pc=$(grep -o '"pc":[0-9]*' "$out/FindLocation.function.reply.json" | head -n1 | grep -o '[0-9]*$')
call CreateBreakpoint.locexpr CreateBreakpoint "{\"Breakpoint\":{\"addr\":$pc,\"addrs\":[$pc],\"Cond\":\"main.counter < 0\"},\"LocExpr\":\"main.doWork\"}"
call ClearBreakpoint.locexpr ClearBreakpoint "{\"Id\":$(grep -o '"Breakpoint":{"id":[0-9]*' "$out/CreateBreakpoint.locexpr.reply.json" | grep -o '[0-9]*$'),\"Name\":\"\"}"
call CreateBreakpoint.capture CreateBreakpoint "{\"Breakpoint\":{\"functionName\":\"main.doWork\",\"goroutine\":true,\"stacktrace\":2,\"variables\":[\"main.counter\"],\"LoadArgs\":$cfg,\"LoadLocals\":$cfg}}"
bp=$(grep -o '"Breakpoint":{"id":[0-9]*' "$out/CreateBreakpoint.capture.reply.json" | grep -o '[0-9]*$')
call CreateBreakpoint.exists CreateBreakpoint '{"Breakpoint":{"functionName":"main.doWork"}}'
call CreateBreakpoint.unknown CreateBreakpoint '{"Breakpoint":{"functionName":"main.nosuch"}}'
call ListBreakpoints.user ListBreakpoints '{"All":false}'
call ListBreakpoints.all ListBreakpoints '{"All":true}'
call Command.continue-hit Command '{"name":"continue"}'
call ClearBreakpoint.id ClearBreakpoint "{\"Id\":$bp,\"Name\":\"\"}"
call ClearBreakpoint.unknown ClearBreakpoint '{"Id":9999,"Name":""}'
# Halting a running target: continue, a non-blocking State, then halt. Both
# Command replies arrive once the target stopped, matched by id.
send Command '{"name":"continue"}'
cont=$sent_id
sleep 0.3
send State '{"NonBlocking":true}'
st=$sent_id
recv
save State.running State "$st" "$reply"
send Command '{"name":"halt"}'
halt=$sent_id
for _ in 1 2; do
  recv
  if [[ $reply_id == "$cont" ]]; then save Command.continue-halted Command "$cont" "$reply"; fi
  if [[ $reply_id == "$halt" ]]; then save Command.halt Command "$halt" "$reply"; fi
done
call Detach.keep Detach '{"Kill":false}'
exec 3>&-
kill "$counter"

# ---- functions: a hit with arguments, locals and a condition ----
"$tmp/functions" --loop >"$tmp/functions.out" &
functions=$!
pids+=($functions)
sleep 0.5
start_dlv "$functions"
call CreateBreakpoint.cond CreateBreakpoint "{\"Breakpoint\":{\"functionName\":\"main.add\",\"Cond\":\"x == 42\",\"HitCond\":\"> 1\",\"stacktrace\":1,\"LoadArgs\":$cfg,\"LoadLocals\":$cfg}}"
call Command.continue-args Command '{"name":"continue"}'
call Detach.functions Detach '{"Kill":false}'
exec 3>&-
kill "$functions"

# ---- counter --duration: the target exits while Delve continues it ----
"$tmp/counter" --duration 2 >/dev/null &
short=$!
pids+=($short)
start_dlv "$short"
call Command.continue-exited Command '{"name":"continue"}'
call State.exited State '{"NonBlocking":true}'
call Detach.exited Detach '{"Kill":false}'
exec 3>&-

echo "record: $(ls "$out" | wc -l) files in $out"
