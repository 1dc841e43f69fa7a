// goscope mcp: goscope for agents, as a Model Context Protocol server on
// stdin and stdout (docs/commands/mcp.md). The flags set what every call may
// do: the overhead budget each probe runs under, whether anything may stop
// or write to the program, which processes, and per-call limits.
#include <signal.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "cli/args.hpp"
#include "cli/command.hpp"
#include "cli/mcp_server.hpp"

namespace goscope::cli {

namespace {

volatile std::sig_atomic_t stopRequested = 0;
void onStop(int) { stopRequested = 1; }

const std::vector<OptionSpec> kSpecs = {
    {"max-overhead", 0, true, "the share of a target's time every probing call may take, in % (default 1), enforced"},
    {"allow-stop", 0, false, "offer break, and let read use Delve: calls that stop the program"},
    {"allow-write", 0, false, "offer set: writes to the program's variables (through Delve: it stops)"},
    {"pid", 0, true, "only this process (repeatable)", true},
    {"binary", 0, true, "only processes running this file, and this file (repeatable)", true},
    {"max-duration", 0, true, "the longest a call may probe, in seconds (default 60)"},
    {"max-events", 0, true, "the most calls a trace or break returns (default 1000)"},
    {"max-probes", 0, true, "the most functions one call may probe (default 1000)"},
    {"max-output", 0, true, "the most bytes of records one call returns (default 1048576)"},
    {"max-calls", 0, true, "calls run at once (default 4)"},
    {"help", 'h', false, "this help"},
};

double percentArg(const Args& args, const std::string& name, double dflt, double max) {
  auto v = args.get(name);
  if (!v) return dflt;
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(*v, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != v->size() || !(d > 0) || d > max)
    raise({ErrorKind::Usage, "--" + name + " wants a number above 0 and at most " + std::to_string(static_cast<long long>(max)) +
                                 ", not '" + *v + "'"});
  return d;
}

}  // namespace

int runMcp(const std::vector<std::string>& argv) {
  auto args = orRaise(parseArgs("mcp", kSpecs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope mcp [--max-overhead PCT] [--allow-stop] [--allow-write] [--pid PID]... [--binary FILE]...",
                         kSpecs)
              << "\nAn MCP server on stdin/stdout for agents: tools list, info, count, latency, trace, read,\n"
                 "overhead_estimate (and break, set when allowed). Register it with a client as\n"
                 "  {\"mcpServers\": {\"goscope\": {\"command\": \"goscope\", \"args\": [\"mcp\"]}}}\n";
    return 0;
  }
  if (!args.positional().empty())
    raise({ErrorKind::Usage, "mcp: unexpected argument '" + args.positional()[0] + "'", "goscope mcp --help"});
  mcp::Limits l;
  l.budgetPct = percentArg(args, "max-overhead", 1, 100);
  l.allowStop = args.has("allow-stop");
  l.allowWrite = args.has("allow-write");
  for (const auto& p : args.all("pid")) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(p, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != p.size() || v <= 0) raise({ErrorKind::Usage, "--pid wants a process id, not '" + p + "'"});
    l.pids.push_back(static_cast<pid_t>(v));
  }
  l.binaries = args.all("binary");
  l.maxDurationS = percentArg(args, "max-duration", 60, 86400);
  l.defaultDurationS = std::min(l.defaultDurationS, l.maxDurationS);
  l.maxEvents = orRaise(args.getInt("max-events", 1000, 1, 1000000));
  l.maxProbes = orRaise(args.getInt("max-probes", 1000, 1, 1000000));
  l.maxOutputBytes = static_cast<size_t>(orRaise(args.getInt("max-output", 1 << 20, 1024, 1LL << 30)));
  const auto maxCalls = static_cast<size_t>(orRaise(args.getInt("max-calls", 4, 1, 64)));

  // SIGINT and SIGTERM end the server (its calls interrupted first); no
  // SA_RESTART, so the wait for stdin sees them.
  struct sigaction sa {};
  sa.sa_handler = onStop;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  mcp::Server server(l, maxCalls);
  server.run(stopRequested);
  return 0;
}

}  // namespace goscope::cli
