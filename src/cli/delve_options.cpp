#include "cli/delve_options.hpp"

#include "cli/target_options.hpp"
#include "cli/target_watch.hpp"
#include "process/target.hpp"

namespace goscope::cli {

std::vector<OptionSpec> delveOptionSpecs(std::vector<OptionSpec> extra) {
  std::vector<OptionSpec> specs = {
      {"pid", 'p', true, "the running Go process"},
      {"json", 0, false, "one JSON object per line"},
      {"dlv-arg", 0, true, "pass an option to dlv attach (e.g. --dlv-arg=--check-go-version=false)", true},
      kDlvOption,
      kDebugFileOption,
      kDebugDirOption,
      {"help", 'h', false, "this help"},
  };
  specs.insert(specs.end(), extra.begin(), extra.end());
  return specs;
}

pid_t delvePidOrRaise(const Args& args, const std::string& sub) {
  auto p = args.get("pid");
  if (!p) raise({ErrorKind::Usage, sub + ": name the process: -p PID"});
  applyDebugInfoOptions(args);
  return watchTarget(orRaise(parsePid(*p)));
}

}  // namespace goscope::cli
