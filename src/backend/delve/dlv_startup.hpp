// What dlv prints when it starts or refuses to: the port line on stdout, and
// the reasons on stderr, turned into one-line errors with hints. Pure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rpc/delve_types.hpp"
#include "util/result.hpp"

namespace goscope::delve {

// "API server listening at: 127.0.0.1:40123" -> 40123 (any line of `out`).
std::optional<uint16_t> parseListeningPort(std::string_view out);

// Why `dlv attach PID` failed, from what it wrote to stderr (Delve 1.20.2's
// wording): a stripped binary, a Go version it refuses, a missing PID, ptrace
// refused; anything else becomes an External error quoting dlv.
Error classifyAttachFailure(pid_t pid, std::string_view dlvStderr);

// The start of the error for an attach that failed because a thread of the
// target ended while dlv attached: worth another attempt.
inline constexpr std::string_view kThreadEndedWhileAttaching = "a thread ended while dlv attached to";
inline bool threadEndedWhileAttaching(const Error& e) {
  return e.kind == ErrorKind::External && std::string_view(e.message).starts_with(kThreadEndedWhileAttaching);
}

// dlv's "operation not permitted" looked again at the target: when another
// debugger holds it now, or took it in the same moment (two goscope Delve
// sessions started at once), the target is busy (exit 4), not a privilege
// missing (exit 6 would tell it to run as root).
Error explainAttachRefusal(pid_t pid, Error classified);

// `dlv attach` does not check the target's Go version (Delve 1.20.2 checks
// it only when it launches a program or opens a core: measured, and so in
// its service/debugger), yet reads the runtime's structures with the layouts
// of the Go releases it knows. GetVersion names the range it supports and
// the target's compiler (its DWARF producer): a refusal when the target's
// Go minor version is outside, nullopt when it is inside or either side
// cannot be parsed.
std::optional<Error> goVersionRefusal(pid_t pid, const rpc::GetVersionOut& v);

// The hint for a missing dlv executable.
Error dlvNotFound(const std::string& tried);

}  // namespace goscope::delve
