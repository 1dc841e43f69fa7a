// The one place Delve's JSON keys are spelled: each describe() lists a type's
// fields in Go's declaration order with the key from its Go struct tag
// (service/api/types.go, service/rpc2/server.go of Delve 1.20.2), and
// JsonReader / JsonWriter walk that list to decode or encode.
#include "rpc/delve_types.hpp"

#include "rpc/json_codec.hpp"

namespace goscope::rpc {

// Declared up front so every describe() is visible wherever a nested type is
// read or written (the Described concept is checked at first use).
#define DECLARE(T) template <class V> void describe(V& v, T& x);
DECLARE(LoadConfig)
DECLARE(EvalScope)
DECLARE(Function)
DECLARE(Location)
DECLARE(Variable)
DECLARE(Goroutine)
DECLARE(Defer)
DECLARE(Stackframe)
DECLARE(BreakpointInfo)
DECLARE(Breakpoint)
DECLARE(Thread)
DECLARE(DebuggerState)
DECLARE(DebuggerCommand)
DECLARE(ListGoroutinesFilter)
DECLARE(GoroutineGroup)
DECLARE(StateIn)
DECLARE(StateOut)
DECLARE(CommandOut)
DECLARE(FindLocationIn)
DECLARE(FindLocationOut)
DECLARE(CreateBreakpointIn)
DECLARE(CreateBreakpointOut)
DECLARE(ClearBreakpointIn)
DECLARE(ClearBreakpointOut)
DECLARE(ListBreakpointsIn)
DECLARE(ListBreakpointsOut)
DECLARE(EvalIn)
DECLARE(EvalOut)
DECLARE(SetIn)
DECLARE(SetOut)
DECLARE(ListGoroutinesIn)
DECLARE(ListGoroutinesOut)
DECLARE(StacktraceIn)
DECLARE(StacktraceOut)
DECLARE(ListFunctionsIn)
DECLARE(ListFunctionsOut)
DECLARE(ListPackageVarsIn)
DECLARE(ListPackageVarsOut)
DECLARE(DetachIn)
DECLARE(DetachOut)
DECLARE(GetVersionIn)
DECLARE(GetVersionOut)
#undef DECLARE

constexpr Go omit = Go::OmitEmpty;

// ---- service/api ----

template <class V> void describe(V& v, LoadConfig& x) {
  v("FollowPointers", x.followPointers);
  v("MaxVariableRecurse", x.maxVariableRecurse);
  v("MaxStringLen", x.maxStringLen);
  v("MaxArrayValues", x.maxArrayValues);
  v("MaxStructFields", x.maxStructFields);
}

template <class V> void describe(V& v, EvalScope& x) {
  v("GoroutineID", x.goroutineID);
  v("Frame", x.frame);
  v("DeferredCall", x.deferredCall);
}

template <class V> void describe(V& v, Function& x) {
  v("name", x.name);
  v("value", x.value);
  v("type", x.type);
  v("goType", x.goType);
  v("optimized", x.optimized);
}

template <class V> void describe(V& v, Location& x) {
  v("pc", x.pc);
  v("file", x.file);
  v("line", x.line);
  v("function", x.function, omit);
  v("pcs", x.pcs, omit);
  v("pcpids", x.pcPids, omit);
}

template <class V> void describe(V& v, Variable& x) {
  v("name", x.name);
  v("addr", x.addr);
  v("onlyAddr", x.onlyAddr);
  v("type", x.type);
  v("realType", x.realType);
  v("flags", x.flags);
  v("kind", x.kind);
  v("value", x.value);
  v("len", x.len);
  v("cap", x.cap);
  v("children", x.children);
  v("base", x.base);
  v("unreadable", x.unreadable);
  v("LocationExpr", x.locationExpr);
  v("DeclLine", x.declLine);
}

template <class V> void describe(V& v, Goroutine& x) {
  v("id", x.id);
  v("currentLoc", x.currentLoc);
  v("userCurrentLoc", x.userCurrentLoc);
  v("goStatementLoc", x.goStatementLoc);
  v("startLoc", x.startLoc);
  v("threadID", x.threadID);
  v("status", x.status);
  v("waitSince", x.waitSince);
  v("waitReason", x.waitReason);
  v("unreadable", x.unreadable);
  v("labels", x.labels, omit);
}

template <class V> void describe(V& v, Defer& x) {
  v("DeferredLoc", x.deferredLoc);
  v("DeferLoc", x.deferLoc);
  v("SP", x.sp);
  v("Unreadable", x.unreadable);
}

template <class V> void describe(V& v, Stackframe& x) {
  describe(v, x.location);  // embedded: its keys at this level
  v("Locals", x.locals);
  v("Arguments", x.arguments);
  v("FrameOffset", x.frameOffset);
  v("FramePointerOffset", x.framePointerOffset);
  v("Defers", x.defers);
  v("Bottom", x.bottom, omit);
  v("Err", x.err);
}

template <class V> void describe(V& v, BreakpointInfo& x) {
  v("stacktrace", x.stacktrace, omit);
  v("goroutine", x.goroutine, omit);
  v("variables", x.variables, omit);
  v("arguments", x.arguments, omit);
  v("locals", x.locals, omit);
}

template <class V> void describe(V& v, Breakpoint& x) {
  v("id", x.id);
  v("name", x.name);
  v("addr", x.addr);
  v("addrs", x.addrs);
  v("addrpid", x.addrPid);
  v("file", x.file);
  v("line", x.line);
  v("functionName", x.functionName, omit);
  v("Cond", x.cond);
  v("HitCond", x.hitCond);
  v("HitCondPerG", x.hitCondPerG);
  v("continue", x.tracepoint);
  v("traceReturn", x.traceReturn);
  v("goroutine", x.goroutine);
  v("stacktrace", x.stacktrace);
  v("variables", x.variables, omit);
  v("LoadArgs", x.loadArgs);
  v("LoadLocals", x.loadLocals);
  v("WatchExpr", x.watchExpr);
  v("WatchType", x.watchType);
  v("VerboseDescr", x.verboseDescr, omit);
  v("hitCount", x.hitCount);
  v("totalHitCount", x.totalHitCount);
  v("disabled", x.disabled);
}

template <class V> void describe(V& v, Thread& x) {
  v("id", x.id);
  v("pc", x.pc);
  v("file", x.file);
  v("line", x.line);
  v("function", x.function, omit);
  v("goroutineID", x.goroutineID);
  v("breakPoint", x.breakpoint, omit);
  v("breakPointInfo", x.breakpointInfo, omit);
  v("ReturnValues", x.returnValues);
  v("CallReturn", x.callReturn);
}

template <class V> void describe(V& v, DebuggerState& x) {
  v("Pid", x.pid);
  v("Running", x.running);
  v("Recording", x.recording);
  v("CoreDumping", x.coreDumping);
  v("currentThread", x.currentThread, omit);
  v("currentGoroutine", x.selectedGoroutine, omit);
  v("Threads", x.threads);
  v("NextInProgress", x.nextInProgress);
  v("WatchOutOfScope", x.watchOutOfScope);
  v("exited", x.exited);
  v("exitStatus", x.exitStatus);
  v("When", x.when);
}

template <class V> void describe(V& v, DebuggerCommand& x) {
  v("name", x.name);
  v("threadID", x.threadID, omit);
  v("goroutineID", x.goroutineID, omit);
  v("ReturnInfoLoadConfig", x.returnInfoLoadConfig);
  v("expr", x.expr, omit);
  v("unsafeCall", x.unsafeCall, omit);
}

template <class V> void describe(V& v, ListGoroutinesFilter& x) {
  v("Kind", x.kind);
  v("Negated", x.negated);
  v("Arg", x.arg);
}

template <class V> void describe(V& v, GoroutineGroup& x) {
  v("Name", x.name);
  v("Offset", x.offset);
  v("Count", x.count);
  v("Total", x.total);
}

// ---- service/rpc2 ----

template <class V> void describe(V& v, StateIn& x) { v("NonBlocking", x.nonBlocking); }
template <class V> void describe(V& v, StateOut& x) { v("State", x.state); }
template <class V> void describe(V& v, CommandOut& x) { v("State", x.state); }

template <class V> void describe(V& v, FindLocationIn& x) {
  v("Scope", x.scope);
  v("Loc", x.loc);
  v("IncludeNonExecutableLines", x.includeNonExecutableLines);
  v("SubstitutePathRules", x.substitutePathRules);
}
template <class V> void describe(V& v, FindLocationOut& x) { v("Locations", x.locations); }

template <class V> void describe(V& v, CreateBreakpointIn& x) {
  v("Breakpoint", x.breakpoint);
  v("LocExpr", x.locExpr);
  v("SubstitutePathRules", x.substitutePathRules);
  v("Suspended", x.suspended);
}
template <class V> void describe(V& v, CreateBreakpointOut& x) { v("Breakpoint", x.breakpoint); }

template <class V> void describe(V& v, ClearBreakpointIn& x) {
  v("Id", x.id);
  v("Name", x.name);
}
template <class V> void describe(V& v, ClearBreakpointOut& x) { v("Breakpoint", x.breakpoint); }

template <class V> void describe(V& v, ListBreakpointsIn& x) { v("All", x.all); }
template <class V> void describe(V& v, ListBreakpointsOut& x) { v("Breakpoints", x.breakpoints); }

template <class V> void describe(V& v, EvalIn& x) {
  v("Scope", x.scope);
  v("Expr", x.expr);
  v("Cfg", x.cfg);
}
template <class V> void describe(V& v, EvalOut& x) { v("Variable", x.variable); }

template <class V> void describe(V& v, SetIn& x) {
  v("Scope", x.scope);
  v("Symbol", x.symbol);
  v("Value", x.value);
}
template <class V> void describe(V&, SetOut&) {}

template <class V> void describe(V& v, ListGoroutinesIn& x) {
  v("Start", x.start);
  v("Count", x.count);
  v("Filters", x.filters);
  v("GroupBy", x.groupBy);  // embedded GoroutineGroupingOptions
  v("GroupByKey", x.groupByKey);
  v("MaxGroupMembers", x.maxGroupMembers);
  v("MaxGroups", x.maxGroups);
}
template <class V> void describe(V& v, ListGoroutinesOut& x) {
  v("Goroutines", x.goroutines);
  v("Nextg", x.nextg);
  v("Groups", x.groups);
  v("TooManyGroups", x.tooManyGroups);
}

template <class V> void describe(V& v, StacktraceIn& x) {
  v("Id", x.id);
  v("Depth", x.depth);
  v("Full", x.full);
  v("Defers", x.defers);
  v("Opts", x.opts);
  v("Cfg", x.cfg);
}
template <class V> void describe(V& v, StacktraceOut& x) { v("Locations", x.locations); }

template <class V> void describe(V& v, ListFunctionsIn& x) { v("Filter", x.filter); }
template <class V> void describe(V& v, ListFunctionsOut& x) { v("Funcs", x.funcs); }

template <class V> void describe(V& v, ListPackageVarsIn& x) {
  v("Filter", x.filter);
  v("Cfg", x.cfg);
}
template <class V> void describe(V& v, ListPackageVarsOut& x) { v("Variables", x.variables); }

template <class V> void describe(V& v, DetachIn& x) { v("Kill", x.kill); }
template <class V> void describe(V&, DetachOut&) {}

template <class V> void describe(V&, GetVersionIn&) {}
template <class V> void describe(V& v, GetVersionOut& x) {
  v("DelveVersion", x.delveVersion);
  v("APIVersion", x.apiVersion);
  v("Backend", x.backend);
  v("TargetGoVersion", x.targetGoVersion);
  v("MinSupportedVersionOfGo", x.minSupportedVersionOfGo);
  v("MaxSupportedVersionOfGo", x.maxSupportedVersionOfGo);
}

// ---- the entry points ----

#define DEFINE(T)                                                                    \
  void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const T& x) {  \
    jv = JsonWriter::write(x);                                                       \
  }                                                                                  \
  Result<void> decodeInto(const boost::json::value& jv, T& out) {                    \
    JsonReader r;                                                                    \
    return r.decode(jv, out, #T);                                                    \
  }
DEFINE(LoadConfig)
DEFINE(EvalScope)
DEFINE(Function)
DEFINE(Location)
DEFINE(Variable)
DEFINE(Goroutine)
DEFINE(Defer)
DEFINE(Stackframe)
DEFINE(BreakpointInfo)
DEFINE(Breakpoint)
DEFINE(Thread)
DEFINE(DebuggerState)
DEFINE(DebuggerCommand)
DEFINE(ListGoroutinesFilter)
DEFINE(GoroutineGroup)
DEFINE(StateIn)
DEFINE(StateOut)
DEFINE(CommandOut)
DEFINE(FindLocationIn)
DEFINE(FindLocationOut)
DEFINE(CreateBreakpointIn)
DEFINE(CreateBreakpointOut)
DEFINE(ClearBreakpointIn)
DEFINE(ClearBreakpointOut)
DEFINE(ListBreakpointsIn)
DEFINE(ListBreakpointsOut)
DEFINE(EvalIn)
DEFINE(EvalOut)
DEFINE(SetIn)
DEFINE(SetOut)
DEFINE(ListGoroutinesIn)
DEFINE(ListGoroutinesOut)
DEFINE(StacktraceIn)
DEFINE(StacktraceOut)
DEFINE(ListFunctionsIn)
DEFINE(ListFunctionsOut)
DEFINE(ListPackageVarsIn)
DEFINE(ListPackageVarsOut)
DEFINE(DetachIn)
DEFINE(DetachOut)
DEFINE(GetVersionIn)
DEFINE(GetVersionOut)
#undef DEFINE

}  // namespace goscope::rpc
