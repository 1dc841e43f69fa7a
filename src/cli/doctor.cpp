// goscope doctor: is a process's code what its executable file says? After a
// debugger died with its breakpoints in place (dlv SIGKILLed while the
// target sat at a hit: docs/delve.md), int3 bytes stay in the code and the
// next call of that function kills the process with SIGTRAP. doctor lists
// every differing byte by function; --fix writes the file's bytes back
// (leftover int3 only; live uprobes are left alone).
#include <cstdio>
#include <iostream>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/target_options.hpp"
#include "output/output.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {
const std::vector<OptionSpec> kSpecs = {
    kPidOption,
    {"fix", 0, false, "write the file's bytes back over leftover int3 bytes (the process is stopped meanwhile)"},
    {"json", 0, false, "one JSON object"},
    {"help", 'h', false, "this help"}};
}

int runDoctor(const std::vector<std::string>& argv) {
  auto args = orRaise(parseArgs("doctor", kSpecs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope doctor -p PID [--fix] [--json]", kSpecs);
    return 0;
  }
  auto p = args.get("pid");
  if (!p) raise({ErrorKind::Usage, "doctor: name the process: -p PID"});
  if (!args.positional().empty())
    raise({ErrorKind::Usage, "doctor: unexpected argument '" + args.positional()[0] + "'",
           "goscope doctor -p PID [--fix]"});
  const pid_t pid = orRaise(parsePid(*p));
  auto report = orRaise(api::doctor(pid, args.has("fix")));
  auto out = output::makeOutput(args.has("json"));
  out->doctor(report);
  out->flush();
  if (report.tracer) {
    // Whatever int3 bytes it has are that debugger's live breakpoints: not
    // leftovers, and never written under it.
    output::toStderr(
                 "goscope: doctor: PID %d is traced by PID %d (%s): its int3 bytes are taken as that debugger's "
                 "breakpoints and nothing was changed%s\n",
                 static_cast<int>(pid), static_cast<int>(report.tracer), report.tracerName.c_str(),
                 report.fix ? " (hint: run doctor --fix once no debugger holds it)" : "");
  }
  if (const size_t left = report.remaining(); left > 0) {
    std::string msg = "doctor: PID " + std::to_string(pid) + "'s code differs from its executable in " +
                      std::to_string(left) + (left == 1 ? " byte" : " bytes");
    std::string hint;
    if (report.int3 > report.restored) {
      msg += " (" + std::to_string(report.int3 - report.restored) + " leftover int3)";
      hint = report.fix ? "some could not be written back" : "goscope doctor -p " + std::to_string(pid) + " --fix restores them";
    } else {
      hint = "not int3 bytes: doctor leaves them alone";
    }
    output::toStderr("goscope: %s (hint: %s)\n", msg.c_str(), hint.c_str());
    return 9;
  }
  return 0;
}

}  // namespace goscope::cli
