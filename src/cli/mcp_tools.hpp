// The tools `goscope mcp` offers an agent, and how each call becomes one
// goscope subcommand: its JSON Schema, its arguments checked against the
// server's limits, and the command line that serves it. Pure: the server
// (mcp_server.hpp) runs the command and shapes its output.
//
// Every call is a goscope subcommand with --json, so an agent gets exactly
// what the command line gives (the same plan, the same refusals, the same
// budget enforcement), and a probing call always carries the server's
// --max-overhead and, unless the server was started with --allow-stop,
// --no-stop: nothing an agent asks can stop the program.
#pragma once

#include <sys/types.h>

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace goscope::cli::mcp {

// What the server was started with (goscope mcp --help).
struct Limits {
  double budgetPct = 1.0;          // --max-overhead: every probing call's budget
  bool allowStop = false;          // --allow-stop: Delve breakpoints and reads that stop the target
  bool allowWrite = false;         // --allow-write: the set tool
  std::vector<pid_t> pids;         // --pid: only these processes (empty: any the user may trace)
  std::vector<std::string> binaries;  // --binary: only processes running (or files that are) these
  double maxDurationS = 60;        // --max-duration: the longest a call may probe
  double defaultDurationS = 5;     // a probing call's duration when the agent names none
  int64_t maxEvents = 1000;        // --max-events: the most calls a trace or break returns
  int64_t maxProbes = 1000;        // --max-probes: the most functions one call may probe
  size_t maxOutputBytes = 1 << 20; // --max-output: the most bytes of records one call returns
};

// One tool call, ready to run.
struct Command {
  std::vector<std::string> args;   // after `goscope`
  // Before a probing call: the `list` that counts the functions it would
  // probe (its rows with a probe address), refused above maxProbes.
  std::vector<std::string> listArgs;
  double probeSeconds = 0;         // how long it probes (progress and the watchdog), 0: no probing
  pid_t pid = 0;                   // the target, 0: a file
  std::string binary;              // the file, for list/info -b
  int64_t maxRecords = 0;          // list: rows kept (the rest counted), 0: no limit
  // overhead_estimate: `args` is a list; its rows are priced by the server
  // (what one hit of each costs here, and at this rate, the share of a CPU).
  bool estimate = false;
  bool estimateLatency = false;    // latency's RET probes priced too
  std::optional<double> estimateRate;
};

// The tools/list result's "tools": those the limits allow.
boost::json::array toolList(const Limits& limits);

// The command serving tool `name` with `arguments`, or why not (Usage: a
// bad argument, Permission: outside what the server allows, NotFound: no
// such tool). The PID and binary allow-lists are checked by the server,
// which can read /proc (allowedTarget).
Result<Command> commandFor(const std::string& name, const boost::json::object& arguments, const Limits& limits);

// Whether the allow-lists admit `pid` running `exe` (its /proc/PID/exe), or
// the file `binary` (pid 0); "" when they do, else the refusal.
std::string refusalByAllowLists(const Limits& limits, pid_t pid, const std::string& exe);

// The protocol versions the server speaks, newest first, and the one it
// answers an initialize with: the client's when spoken, else the newest.
const std::vector<std::string>& protocolVersions();
std::string negotiatedVersion(const std::string& requested);

}  // namespace goscope::cli::mcp
