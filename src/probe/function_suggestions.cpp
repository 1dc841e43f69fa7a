#include "probe/function_suggestions.hpp"

#include "util/nearest_names.hpp"

namespace goscope {

std::string functionSuggestions(const GoBinary& bin, const std::vector<Pattern>& unmatched) {
  std::vector<std::pair<std::string, std::string>> offers;  // name typed, what to offer
  for (const auto& p : unmatched) {
    if (!p.isLiteral()) continue;
    auto near = nearestNames(p.text(), [&](const auto& each) {
      for (const auto& fn : bin.pclntab().functions()) each(fn.name);
    });
    if (!near.empty()) offers.emplace_back(p.text(), didYouMean(near));
  }
  if (offers.size() == 1 && unmatched.size() == 1) return offers.front().second;
  std::string out;
  for (const auto& [typed, offer] : offers) out += (out.empty() ? "" : "; ") + typed + ": " + offer;
  return out;
}

std::string suggestionHint(const GoBinary& bin, const std::vector<Pattern>& unmatched, const std::string& otherwise) {
  std::string offer = functionSuggestions(bin, unmatched);
  if (offer.empty()) return otherwise;
  return otherwise.empty() ? offer : offer + " (" + otherwise + ")";
}

}  // namespace goscope
