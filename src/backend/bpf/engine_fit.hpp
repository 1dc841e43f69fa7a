// Can an engine already loaded serve a session that would load its own
// with other options? The rate probe's engine is loaded before the rate, and
// so the session's ring, is known (session/prepared_engine.hpp): a session takes
// it over only when every map is at least as large as the session's own
// would be and the programs were loaded for the same target (the offsets in
// runtime.g, the attach mode, the run-time statistics). One place for that
// rule.
#pragma once

#include <string>

#include "backend/bpf/bpf_engine.hpp"

namespace goscope::bpf {

// Empty when an engine loaded with `loaded` serves a session wanting
// `wanted`; else why not, in a few words ("its 32 MB ring is smaller than
// the 64 MB the rate asks for").
std::string whyEngineDoesNotFit(const EngineOptions& loaded, const EngineOptions& wanted);

}  // namespace goscope::bpf
