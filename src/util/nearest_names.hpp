// "did you mean": the names of a table (a binary's functions) nearest to a
// name that matched none of them, by edit distance, and only those close
// enough to be a slip of the keyboard, not a different name.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace goscope {

// Levenshtein distance (insert, delete, substitute: 1 each), or `limit` + 1
// as soon as it is certain to exceed `limit`.
size_t editDistance(std::string_view a, std::string_view b, size_t limit);

// How far a name may be from `wanted` and still be offered: about one edit
// in four characters, at least 1, at most 3 (a short name is not "near" to
// every other short name).
size_t nearnessLimit(std::string_view wanted);

// Up to `most` of the names `forEach` gives within nearnessLimit(wanted),
// nearest first, then in the table's order; each once. `forEach` calls its
// argument with every name.
std::vector<std::string> nearestNames(std::string_view wanted,
                                      const std::function<void(const std::function<void(std::string_view)>&)>& forEach,
                                      size_t most = 3);

// "did you mean main.doWork?" / "did you mean main.a or main.b?"; empty
// when there is none to offer.
std::string didYouMean(const std::vector<std::string>& names);

}  // namespace goscope
