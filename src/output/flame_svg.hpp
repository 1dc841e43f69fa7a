// An interactive flame graph of folded stack counts, as one self-contained
// SVG file in the style of Brendan Gregg's FlameGraph (flamegraph.pl): a
// rectangle per frame, root at the bottom, widths by count, a tooltip
// (<title>) on each, and a little embedded JavaScript: click a frame to zoom
// into it, "Search" to highlight frames by regular expression, "Reset Zoom".
// A pure function: folded lines in, SVG text out; no Perl needed.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace goscope::output {

struct FlameOptions {
  std::string title = "Flame Graph";
  std::string subtitle;  // e.g. what was probed, in which process
  int width = 1200;      // pixels
};

// `folded`: "root;caller;callee" -> count (AggregateSession::foldedStacks).
// Every frame of every stack is drawn, however narrow, so search finds it.
std::string flameGraphSvg(const std::map<std::string, uint64_t>& folded, const FlameOptions& options = {});

// Text made safe inside XML character data and attribute values.
std::string xmlEscape(const std::string& text);

}  // namespace goscope::output
