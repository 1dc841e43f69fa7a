// What dlv prints when it starts or refuses to: the port line on stdout, and
// the reasons on stderr, turned into one-line errors with hints. Pure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace goscope::delve {

// "API server listening at: 127.0.0.1:40123" -> 40123 (any line of `out`).
std::optional<uint16_t> parseListeningPort(std::string_view out);

// Why `dlv attach PID` failed, from what it wrote to stderr (Delve 1.20.2's
// wording): a stripped binary, a Go version it refuses, a missing PID, ptrace
// refused; anything else becomes an External error quoting dlv.
Error classifyAttachFailure(pid_t pid, std::string_view dlvStderr);

// The hint for a missing dlv executable.
Error dlvNotFound(const std::string& tried);

}  // namespace goscope::delve
