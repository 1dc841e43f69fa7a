#include "session/bpf_access.hpp"

#include "backend/bpf/privileges.hpp"

namespace goscope::session {

Result<void> checkBpfPrivileges() { return bpf::checkPrivileges(); }

std::string hiddenCallsLine(uint64_t calls) { return calls ? bpf::foreignCallsLine(calls) : ""; }

}  // namespace goscope::session
