# Records what Delve answers to Eval for a set of expressions (the Variable
# objects) into one JSON object keyed by expression: the input of
# tests/unit/test_delve_values.cpp. Small load limits on purpose, so that
# truncated strings, slices and structs are recorded too. Needs root, dlv.
#   python3 scripts/record-delve-values.py PID OUT.json EXPR...
import json, socket, subprocess, sys, re
pid, out = sys.argv[1], sys.argv[2]
exprs = sys.argv[3:]
p=subprocess.Popen(["dlv","attach",pid,"--headless","--api-version=2","--listen=127.0.0.1:0"],stdout=subprocess.PIPE,stderr=subprocess.PIPE,text=True)
port=int(re.search(r":(\d+)\s*$",p.stdout.readline()).group(1))
s=socket.create_connection(("127.0.0.1",port)); f=s.makefile("rw")
cfg={"followPointers":True,"maxVariableRecurse":1,"maxStringLen":8,"maxArrayValues":4,"maxStructFields":-1}
res={}
for i,e in enumerate(exprs):
    f.write(json.dumps({"method":"RPCServer.Eval","params":[{"Scope":{"GoroutineID":-1},"Expr":e,"Cfg":cfg}],"id":i+1})); f.flush()
    r=json.loads(f.readline()); res[e]=r["result"]["Variable"]
f.write(json.dumps({"method":"RPCServer.Detach","params":[{"Kill":False}],"id":999})); f.flush(); f.readline(); p.wait()
json.dump(res, open(out,"w"), indent=1)
