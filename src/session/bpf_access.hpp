// What every in-kernel session needs and what the kernel side hid: the BPF
// privileges, and the line said of other users' calls it dropped.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.hpp"

namespace goscope::session {

// CAP_BPF and CAP_PERFMON (or root), and a kernel with uprobes: what every
// in-kernel session needs. Permission or External errors say which is missing.
Result<void> checkBpfPrivileges();
// The line said at the end of a BPF session whose kernel side dropped
// `calls` calls of other users' processes (docs/security.md); empty for 0.
std::string hiddenCallsLine(uint64_t calls);

}  // namespace goscope::session
