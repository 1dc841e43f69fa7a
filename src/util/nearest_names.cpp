#include "util/nearest_names.hpp"

#include <algorithm>
#include <unordered_set>

namespace goscope {

size_t editDistance(std::string_view a, std::string_view b, size_t limit) {
  const size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > limit) return limit + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;  // every later row is at least this far
  }
  return std::min(row[b.size()], limit + 1);
}

size_t nearnessLimit(std::string_view wanted) { return std::clamp<size_t>(wanted.size() / 4, 1, 3); }

std::vector<std::string> nearestNames(std::string_view wanted,
                                      const std::function<void(const std::function<void(std::string_view)>&)>& forEach,
                                      size_t most) {
  const size_t limit = nearnessLimit(wanted);
  struct Near {
    size_t distance;
    size_t order;
    std::string name;
  };
  std::vector<Near> near;
  std::unordered_set<std::string> seen;
  size_t order = 0;
  forEach([&](std::string_view name) {
    ++order;
    if (name == wanted) return;
    const size_t d = editDistance(wanted, name, limit);
    if (d > limit || !seen.emplace(name).second) return;
    near.push_back({d, order, std::string(name)});
  });
  std::stable_sort(near.begin(), near.end(), [](const Near& x, const Near& y) {
    return x.distance != y.distance ? x.distance < y.distance : x.order < y.order;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < near.size() && out.size() < most; ++i) out.push_back(near[i].name);
  return out;
}

std::string didYouMean(const std::vector<std::string>& names) {
  if (names.empty()) return {};
  std::string out = "did you mean ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out + "?";
}

}  // namespace goscope
