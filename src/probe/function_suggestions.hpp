// "did you mean X": for function names that matched nothing, the binary's
// functions nearest to each (util/nearest_names.hpp). Only a name typed in
// full (a literal pattern) is offered anything: a glob or a regular
// expression that matches nothing is not a misspelling of one name.
#pragma once

#include <string>
#include <vector>

#include "probe/pattern.hpp"
#include "binary/go_binary.hpp"

namespace goscope {

// "did you mean main.doWork?", or with several names that matched nothing,
// "main.doWrok: did you mean main.doWork?; ..."; empty when no name is close.
std::string functionSuggestions(const GoBinary& bin, const std::vector<Pattern>& unmatched);

// A hint for an error saying the names matched nothing: the offer with
// `otherwise` after it in parentheses, or `otherwise` alone when there is
// nothing to offer.
std::string suggestionHint(const GoBinary& bin, const std::vector<Pattern>& unmatched, const std::string& otherwise);

}  // namespace goscope
