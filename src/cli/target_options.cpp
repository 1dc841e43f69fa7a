#include "cli/target_options.hpp"

#include "cli/target_watch.hpp"

namespace goscope::cli {

Target openTargetOrRaise(const Args& args, const std::string& sub) {
  bool b = args.has("binary"), p = args.has("pid");
  if (b == p)
    raise({ErrorKind::Usage, sub + ": give exactly one target: -b BINARY or -p PID"});
  if (b) return orRaise(openBinaryTarget(*args.get("binary")));
  return orRaise(openProcessTarget(watchTarget(orRaise(parsePid(*args.get("pid"))))));
}

}  // namespace goscope::cli
