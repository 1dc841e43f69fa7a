// Delve's JSON-RPC API v2 types, mirrored one to one from Delve 1.20.2's
// service/api/types.go and service/rpc2/server.go. Each field carries its Go
// JSON key in a comment where that key differs from the Go field name; the
// codec (delve_types.cpp) is the single place the keys are spelled, and
// tests/unit/test_rpc_codec.cpp checks them against JSON recorded from dlv.
//
// C++ stand-ins for Go: an empty std::vector / std::map is a nil slice / map
// (encoded as null), std::optional is a pointer (nullopt is nil).
#pragma once

#include <boost/json.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace goscope::rpc {

// ---- service/api ------------------------------------------------------------

// How much of a value Delve reads from the target's memory.
struct LoadConfig {
  bool followPointers = false;
  int64_t maxVariableRecurse = 0;
  int64_t maxStringLen = 0;
  int64_t maxArrayValues = 0;
  int64_t maxStructFields = 0;  // -1: all fields
};
// What Delve's own server uses when Eval gets no Cfg (service/rpc2.Eval).
inline constexpr LoadConfig kDefaultLoadConfig{true, 1, 64, 64, -1};

// Where an expression is evaluated. GoroutineID -1 is "the selected
// goroutine" (what Delve's terminal sends; Go's zero value would be 0).
struct EvalScope {
  int64_t goroutineID = -1;
  int64_t frame = 0;
  int64_t deferredCall = 0;
};

struct Function {
  std::string name;  // "name" (Go field Name_)
  uint64_t value = 0;
  uint8_t type = 0;
  uint64_t goType = 0;
  bool optimized = false;
};

struct Location {
  uint64_t pc = 0;
  std::string file;
  int64_t line = 0;
  std::optional<Function> function;  // omitempty
  std::vector<uint64_t> pcs;         // omitempty
  std::vector<int64_t> pcPids;       // "pcpids", omitempty
};

// reflect.Kind values Delve puts in Variable::kind.
enum class GoKind : uint64_t {
  Invalid = 0, Bool, Int, Int8, Int16, Int32, Int64, Uint, Uint8, Uint16, Uint32, Uint64,
  Uintptr, Float32, Float64, Complex64, Complex128, Array, Chan, Func, Interface, Map,
  Pointer, Slice, String, Struct, UnsafePointer,
};

struct Variable {
  std::string name;
  uint64_t addr = 0;
  bool onlyAddr = false;
  std::string type;
  std::string realType;
  uint16_t flags = 0;  // VariableEscaped=1, Shadowed=2, Constant=4, Argument=8, ReturnArgument=16, FakeAddress=32, ...
  uint64_t kind = 0;   // a GoKind
  std::string value;   // strings are capped at MaxStringLen: len holds the real length
  int64_t len = 0;
  int64_t cap = 0;
  std::vector<Variable> children;
  uint64_t base = 0;
  std::string unreadable;
  std::string locationExpr;  // "LocationExpr"
  int64_t declLine = 0;      // "DeclLine"
};

struct Goroutine {
  int64_t id = 0;
  Location currentLoc;
  Location userCurrentLoc;
  Location goStatementLoc;
  Location startLoc;
  int64_t threadID = 0;
  uint64_t status = 0;
  int64_t waitSince = 0;
  int64_t waitReason = 0;
  std::string unreadable;
  std::map<std::string, std::string> labels;  // omitempty
};

struct Defer {
  Location deferredLoc;  // "DeferredLoc"
  Location deferLoc;     // "DeferLoc"
  uint64_t sp = 0;       // "SP"
  std::string unreadable;
};

// Go embeds Location: its keys sit at the frame's top level.
struct Stackframe {
  Location location;
  std::vector<Variable> locals;     // "Locals"
  std::vector<Variable> arguments;  // "Arguments"
  int64_t frameOffset = 0;
  int64_t framePointerOffset = 0;
  std::vector<Defer> defers;
  bool bottom = false;  // "Bottom", omitempty
  std::string err;      // "Err"
};

// What a breakpoint captured when it was hit.
struct BreakpointInfo {
  std::vector<Stackframe> stacktrace;  // all omitempty
  std::optional<Goroutine> goroutine;
  std::vector<Variable> variables;
  std::vector<Variable> arguments;
  std::vector<Variable> locals;
};

struct Breakpoint {
  int64_t id = 0;  // negative ids are Delve's own (unrecovered-panic, fatal-throw)
  std::string name;
  uint64_t addr = 0;
  std::vector<uint64_t> addrs;
  std::vector<int64_t> addrPid;  // "addrpid"
  std::string file;
  int64_t line = 0;
  std::string functionName;  // omitempty
  std::string cond;          // "Cond"
  std::string hitCond;       // "HitCond"
  bool hitCondPerG = false;  // "HitCondPerG"
  bool tracepoint = false;   // "continue"
  bool traceReturn = false;
  bool goroutine = false;
  int64_t stacktrace = 0;
  std::vector<std::string> variables;  // omitempty
  std::optional<LoadConfig> loadArgs;    // "LoadArgs"
  std::optional<LoadConfig> loadLocals;  // "LoadLocals"
  std::string watchExpr;                 // "WatchExpr"
  uint8_t watchType = 0;                 // "WatchType"
  std::vector<std::string> verboseDescr;  // "VerboseDescr", omitempty
  std::map<std::string, uint64_t> hitCount;  // per goroutine id
  uint64_t totalHitCount = 0;
  bool disabled = false;
  // UserData is `json:"-"`: never sent.
};

struct Thread {
  int64_t id = 0;
  uint64_t pc = 0;
  std::string file;
  int64_t line = 0;
  std::optional<Function> function;  // omitempty
  int64_t goroutineID = 0;
  std::optional<Breakpoint> breakpoint;          // "breakPoint", omitempty
  std::optional<BreakpointInfo> breakpointInfo;  // "breakPointInfo", omitempty
  std::vector<Variable> returnValues;            // "ReturnValues"
  bool callReturn = false;                       // "CallReturn"
};

struct DebuggerState {
  int64_t pid = 0;  // "Pid"
  bool running = false;
  bool recording = false;
  bool coreDumping = false;
  std::optional<Thread> currentThread;         // "currentThread", omitempty
  std::optional<Goroutine> selectedGoroutine;  // "currentGoroutine", omitempty
  std::vector<Thread> threads;                 // "Threads"
  bool nextInProgress = false;
  std::vector<Breakpoint> watchOutOfScope;  // "WatchOutOfScope"
  bool exited = false;                      // "exited"
  int64_t exitStatus = 0;                   // "exitStatus"
  std::string when;                         // "When"
  // Err is `json:"-"`: Delve's client fills it from the reply's error string.
  std::string err;
};

// Command names (service/api DebuggerCommand.Name). goscope uses only these two.
inline constexpr const char* kContinue = "continue";
inline constexpr const char* kHalt = "halt";

struct DebuggerCommand {
  std::string name;
  int64_t threadID = 0;     // omitempty
  int64_t goroutineID = 0;  // omitempty
  std::optional<LoadConfig> returnInfoLoadConfig;  // "ReturnInfoLoadConfig"
  std::string expr;         // omitempty
  bool unsafeCall = false;  // omitempty
};

struct ListGoroutinesFilter {
  uint8_t kind = 0;  // a GoroutineField
  bool negated = false;
  std::string arg;
};

struct GoroutineGroup {
  std::string name;
  int64_t offset = 0;
  int64_t count = 0;
  int64_t total = 0;
};

// ---- service/rpc2: one In/Out pair per method ----------------------------------

struct StateIn {
  bool nonBlocking = false;  // true: answer at once even while the target runs
};
struct StateOut {
  std::optional<DebuggerState> state;
};

using CommandIn = DebuggerCommand;
struct CommandOut {
  DebuggerState state;
};

struct FindLocationIn {
  EvalScope scope;
  std::string loc;
  bool includeNonExecutableLines = false;
  std::vector<std::array<std::string, 2>> substitutePathRules;
};
struct FindLocationOut {
  std::vector<Location> locations;
};

struct CreateBreakpointIn {
  Breakpoint breakpoint;
  std::string locExpr;  // 1.20.2 also takes a location expression here
  std::vector<std::array<std::string, 2>> substitutePathRules;
  bool suspended = false;
};
struct CreateBreakpointOut {
  Breakpoint breakpoint;
};

struct ClearBreakpointIn {
  int64_t id = 0;
  std::string name;  // used instead of id when set
};
struct ClearBreakpointOut {
  std::optional<Breakpoint> breakpoint;
};

struct ListBreakpointsIn {
  bool all = false;  // Delve's internal ones (ids < 0) are listed either way in 1.20.2
};
struct ListBreakpointsOut {
  std::vector<Breakpoint> breakpoints;
};

struct EvalIn {
  EvalScope scope;
  std::string expr;
  std::optional<LoadConfig> cfg;  // nullopt: kDefaultLoadConfig
};
struct EvalOut {
  std::optional<Variable> variable;
};

struct SetIn {
  EvalScope scope;
  std::string symbol;
  std::string value;
};
struct SetOut {};

struct ListGoroutinesIn {
  int64_t start = 0;
  int64_t count = 0;  // 0: all
  std::vector<ListGoroutinesFilter> filters;
  // embedded api.GoroutineGroupingOptions
  uint8_t groupBy = 0;
  std::string groupByKey;
  int64_t maxGroupMembers = 0;
  int64_t maxGroups = 0;
};
struct ListGoroutinesOut {
  std::vector<Goroutine> goroutines;
  int64_t nextg = 0;  // -1: no more
  std::vector<GoroutineGroup> groups;
  bool tooManyGroups = false;
};

struct StacktraceIn {
  int64_t id = 0;  // goroutine id
  int64_t depth = 0;
  bool full = false;  // also locals and arguments of every frame
  bool defers = false;
  uint16_t opts = 0;  // StacktraceOptions
  std::optional<LoadConfig> cfg;
};
struct StacktraceOut {
  std::vector<Stackframe> locations;
};

struct ListFunctionsIn {
  std::string filter;  // a regular expression
};
struct ListFunctionsOut {
  std::vector<std::string> funcs;
};

struct ListPackageVarsIn {
  std::string filter;  // a regular expression
  LoadConfig cfg;
};
struct ListPackageVarsOut {
  std::vector<Variable> variables;
};

// Kill=true on an attached process sends it SIGINT (docs/delve.md): goscope's
// client never sets it, the type keeps it only to mirror Delve.
struct DetachIn {
  bool kill = false;
};
struct DetachOut {};

struct GetVersionIn {};
struct GetVersionOut {
  std::string delveVersion;
  int64_t apiVersion = 0;
  std::string backend;
  std::string targetGoVersion;
  std::string minSupportedVersionOfGo;
  std::string maxSupportedVersionOfGo;
};

// ---- codec -------------------------------------------------------------------
// value_from() encodes with Delve's keys; decode() never throws.

#define GOSCOPE_RPC_CODEC(T)                                                     \
  void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const T& x); \
  Result<void> decodeInto(const boost::json::value& jv, T& out);

GOSCOPE_RPC_CODEC(LoadConfig)
GOSCOPE_RPC_CODEC(EvalScope)
GOSCOPE_RPC_CODEC(Function)
GOSCOPE_RPC_CODEC(Location)
GOSCOPE_RPC_CODEC(Variable)
GOSCOPE_RPC_CODEC(Goroutine)
GOSCOPE_RPC_CODEC(Defer)
GOSCOPE_RPC_CODEC(Stackframe)
GOSCOPE_RPC_CODEC(BreakpointInfo)
GOSCOPE_RPC_CODEC(Breakpoint)
GOSCOPE_RPC_CODEC(Thread)
GOSCOPE_RPC_CODEC(DebuggerState)
GOSCOPE_RPC_CODEC(DebuggerCommand)
GOSCOPE_RPC_CODEC(ListGoroutinesFilter)
GOSCOPE_RPC_CODEC(GoroutineGroup)
GOSCOPE_RPC_CODEC(StateIn)
GOSCOPE_RPC_CODEC(StateOut)
GOSCOPE_RPC_CODEC(CommandOut)
GOSCOPE_RPC_CODEC(FindLocationIn)
GOSCOPE_RPC_CODEC(FindLocationOut)
GOSCOPE_RPC_CODEC(CreateBreakpointIn)
GOSCOPE_RPC_CODEC(CreateBreakpointOut)
GOSCOPE_RPC_CODEC(ClearBreakpointIn)
GOSCOPE_RPC_CODEC(ClearBreakpointOut)
GOSCOPE_RPC_CODEC(ListBreakpointsIn)
GOSCOPE_RPC_CODEC(ListBreakpointsOut)
GOSCOPE_RPC_CODEC(EvalIn)
GOSCOPE_RPC_CODEC(EvalOut)
GOSCOPE_RPC_CODEC(SetIn)
GOSCOPE_RPC_CODEC(SetOut)
GOSCOPE_RPC_CODEC(ListGoroutinesIn)
GOSCOPE_RPC_CODEC(ListGoroutinesOut)
GOSCOPE_RPC_CODEC(StacktraceIn)
GOSCOPE_RPC_CODEC(StacktraceOut)
GOSCOPE_RPC_CODEC(ListFunctionsIn)
GOSCOPE_RPC_CODEC(ListFunctionsOut)
GOSCOPE_RPC_CODEC(ListPackageVarsIn)
GOSCOPE_RPC_CODEC(ListPackageVarsOut)
GOSCOPE_RPC_CODEC(DetachIn)
GOSCOPE_RPC_CODEC(DetachOut)
GOSCOPE_RPC_CODEC(GetVersionIn)
GOSCOPE_RPC_CODEC(GetVersionOut)

#undef GOSCOPE_RPC_CODEC

template <class T>
Result<T> decode(const boost::json::value& jv) {
  T out{};
  if (auto r = decodeInto(jv, out); !r) return r.failure();
  return out;
}

}  // namespace goscope::rpc
