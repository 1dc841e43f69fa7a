// zoo --json prints its own call counts as status lines; run under goscope's
// `-c ... --json`, they go to goscope's stderr. The last one wins.
#pragma once

#include <boost/json.hpp>
#include <string>

#include "support/run.hpp"

namespace goscope::test {

inline boost::json::object lastZooStatus(const std::string& text) {
  boost::json::object last;
  for (const auto& l : splitLines(text))
    if (l.starts_with("{\"ok\"")) last = boost::json::parse(l).as_object();
  return last;
}

}  // namespace goscope::test
