# Records the Variables a Delve breakpoint captures at one hit (Delve's own
# per-hit load config, MaxVariableRecurse 1: docs/delve.md "Values Delve did
# not load") into one JSON object keyed by expression: an input of
# tests/unit/test_delve_values.cpp. The target is killed afterwards (a
# detach right after a hit may leave a SIGTRAP pending). Needs root, dlv.
#   python3 scripts/record-delve-hit.py PID FUNC OUT.json EXPR...
import json, os, re, signal, socket, subprocess, sys
pid, func, out = sys.argv[1], sys.argv[2], sys.argv[3]
exprs = sys.argv[4:]
p = subprocess.Popen(["dlv", "attach", pid, "--headless", "--api-version=2", "--listen=127.0.0.1:0"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
port = int(re.search(r":(\d+)\s*$", p.stdout.readline()).group(1))
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rw")
n = 0
def call(method, params):
    global n
    n += 1
    f.write(json.dumps({"method": "RPCServer." + method, "params": [params], "id": n}))
    f.flush()
    r = json.loads(f.readline())
    if r.get("error"):
        sys.exit(method + ": " + r["error"])
    return r["result"]
call("CreateBreakpoint", {"Breakpoint": {"functionName": func, "Variables": exprs}})
hit = None
while hit is None:  # a stop without a hit (another thread's signal): continue again
    state = call("Command", {"name": "continue"})["State"]
    for t in state.get("Threads") or state.get("threads") or []:
        if t.get("breakPointInfo"):
            hit = t["breakPointInfo"]["variables"]
json.dump(dict(zip(exprs, hit)), open(out, "w"), indent=1)
os.kill(int(pid), signal.SIGKILL)
p.kill()
