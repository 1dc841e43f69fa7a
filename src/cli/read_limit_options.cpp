#include "cli/read_limit_options.hpp"

#include "cli/command.hpp"

namespace goscope::cli {

// The bounds keep one value's load within what a person reads and what one
// Delve reply carries; Delve has no bound of its own and would try.
constexpr long long kMaxStringBytes = 1 << 20;
constexpr long long kMaxElements = 100000;
constexpr long long kMaxDepth = 16;

std::vector<OptionSpec> readLimitSpecs(const ReadLimits& d) {
  return {
      {"max-string", 0, true,
       "bytes of each string to load (1-" + std::to_string(kMaxStringBytes) + ", default " + std::to_string(d.maxString) + ")"},
      {"max-elements", 0, true,
       "elements of each slice, array or map to load (1-" + std::to_string(kMaxElements) + ", default " +
           std::to_string(d.maxElements) + ")"},
      {"max-depth", 0, true,
       "levels of nested values to load below each one (0-" + std::to_string(kMaxDepth) + ", default " +
           std::to_string(d.maxDepth) + ")"},
  };
}

ReadLimits readLimitsOrRaise(const Args& args, const ReadLimits& defaults) {
  ReadLimits l = defaults;
  l.maxString = static_cast<uint32_t>(orRaise(args.getInt("max-string", l.maxString, 1, kMaxStringBytes)));
  l.maxElements = static_cast<uint32_t>(orRaise(args.getInt("max-elements", l.maxElements, 1, kMaxElements)));
  l.maxDepth = static_cast<int>(orRaise(args.getInt("max-depth", l.maxDepth, 0, kMaxDepth)));
  return l;
}

}  // namespace goscope::cli
