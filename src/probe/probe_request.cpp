#include "probe/probe_request.hpp"

namespace goscope {

namespace {

Result<std::vector<Pattern>> parseAll(const std::vector<std::string>& locations) {
  std::vector<Pattern> out;
  for (const auto& l : locations) {
    auto p = Pattern::parse(l);
    if (!p) return p.failure();
    out.push_back(std::move(*p));
  }
  return out;
}

}  // namespace

Result<void> parseLocations(ProbeRequest& r) {
  auto p = parseAll(r.locations);
  if (!p) return p.failure();
  r.patterns = std::move(*p);
  return {};
}

Result<std::vector<Pattern>> patternsOf(const ProbeRequest& r) {
  if (r.patterns.size() == r.locations.size() && !r.patterns.empty()) return r.patterns;
  return parseAll(r.locations);
}

}  // namespace goscope
