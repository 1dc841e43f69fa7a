// The flame graph's SVG text from folded stacks (src/output/flame_svg.hpp):
// widths by count, every frame present, names escaped. That the file parses
// as XML and matches a real run's stacks is tests/runtime/test_flame_graph.cpp.
#include <doctest/doctest.h>

#include <string>

#include "output/flame_svg.hpp"

using goscope::output::flameGraphSvg;

namespace {
size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
  return n;
}
}  // namespace

TEST_CASE("flame graph: one rectangle per merged frame, widths by count, root at the bottom") {
  const std::string svg = flameGraphSvg({{"runtime.main;main.main;main.add", 30}, {"runtime.main;main.main;main.sub", 10}},
                                        {"t", "", 1200});
  CHECK(svg.starts_with("<?xml"));
  CHECK(occurrences(svg, "<g class=\"f\"") == 5);  // all, runtime.main, main.main, main.add, main.sub
  CHECK(svg.find("<title>all (40 samples, 100.00%)</title>") != std::string::npos);
  CHECK(svg.find("data-x=\"0\" data-w=\"40\" data-d=\"2\"><title>main.main (40 samples, 100.00%)") != std::string::npos);
  CHECK(svg.find("data-x=\"0\" data-w=\"30\" data-d=\"3\"><title>main.add (30 samples, 75.00%)") != std::string::npos);
  CHECK(svg.find("data-x=\"30\" data-w=\"10\" data-d=\"3\"><title>main.sub (10 samples, 25.00%)") != std::string::npos);
  // 1180 usable pixels: main.add 885 wide, main.sub after it; the deepest row is the top one.
  CHECK(svg.find("<rect x=\"10.00\" y=\"48.00\" width=\"885.00\"") != std::string::npos);
  CHECK(svg.find("<rect x=\"895.00\" y=\"48.00\" width=\"295.00\"") != std::string::npos);
  CHECK(svg.find("<script") != std::string::npos);
  CHECK(svg.ends_with("</svg>\n"));
}

TEST_CASE("flame graph: names are XML-escaped, an empty input is a valid picture") {
  const std::string svg = flameGraphSvg({{"main.(*T[int]).f;x<&\"'>y", 1}});
  CHECK(svg.find("x&lt;&amp;&quot;&apos;&gt;y (1 sample,") != std::string::npos);
  CHECK(svg.find("x<&") == std::string::npos);
  CHECK(goscope::output::xmlEscape("a\x01" "b") == "a?b");
  const std::string none = flameGraphSvg({});
  CHECK(none.find("(no stacks)") != std::string::npos);
  CHECK(occurrences(none, "<g class=\"f\"") == 0);
}
