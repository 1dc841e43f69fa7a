// Which dlv goscope would run for a target, and why, in goscope's own types
// (the Delve backend's finder stays behind the API): what `goscope info`
// shows. The rule is backend/delve/delve_finder.hpp's (docs/delve.md,
// "Which Delve").
#pragma once

#include <optional>
#include <string>

#include "binary/go_binary.hpp"

namespace goscope::session {

struct DelveChoiceInfo {
  std::optional<std::string> path;     // the dlv goscope would run; none: no dlv, or Delve cannot read the binary
  std::optional<std::string> version;  // "1.24.0"
  std::optional<int> minGoMinor, maxGoMinor;  // the Go releases it reads: 1.22 to 1.24
  std::string origin;                  // "--dlv", "GOSCOPE_DLV", "$PATH", "the toolchain cache"
  bool covers = false;                 // it reads the binary's Go release
  std::string why;                     // one line
  std::string hint;                    // when nothing covers: which Delve would, and the command that gets it
};

// `dlvPath`: --dlv (empty: $GOSCOPE_DLV, else the search). Asks `dlv
// version` of the dlvs it looks at until one covers (docs/delve.md); asks
// nothing for a binary without DWARF in it, which no Delve reads.
DelveChoiceInfo chooseDelveFor(const GoBinary& binary, const std::string& dlvPath);

}  // namespace goscope::session
