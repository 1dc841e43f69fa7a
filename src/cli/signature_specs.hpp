// The SPECs trace and break take: a function pattern, or a signature the
// user gives for a stripped binary (`main.add(x int, y int) int`), parsed,
// laid out and checked against the binary here, once, for both.
#pragma once

#include <string>
#include <vector>

#include "probe/probe_request.hpp"
#include "binary/go_binary.hpp"

namespace goscope::cli {

// Each SPEC becomes a location; a signature also goes into r.signatures
// under its function's name. Usage errors: a signature that does not parse
// or lay out, two different signatures for one function.
void addLocations(const std::vector<std::string>& specs, ProbeRequest& r);

// A signature for a function the binary's DWARF describes differently is
// dropped for DWARF's, with a warning, unless `forced`; one that does not
// fit pclntab's argument frame is an error either way.
void checkSignatures(ProbeRequest& r, const GoBinary& bin, bool forced);

}  // namespace goscope::cli
