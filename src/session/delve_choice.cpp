#include "session/delve_choice.hpp"

#include "backend/delve/delve_finder.hpp"

namespace goscope::session {

DelveChoiceInfo chooseDelveFor(const GoBinary& binary, const std::string& dlvPath) {
  DelveChoiceInfo info;
  if (!binary.hasEmbeddedDwarf()) {
    info.why = binary.hasDwarf() ? "none: the DWARF is in a separate debug file, and dlv reads only the executable's own"
                                 : "none: the binary has no DWARF, which Delve needs";
    return info;
  }
  const BuildInfo* bi = binary.buildInfo();
  delve::DelveChoice c = delve::chooseDelve(dlvPath, bi ? bi->goVersion : std::string());
  info.why = c.why;
  info.covers = c.covers;
  info.hint = c.covers ? std::string() : c.hint;
  // A dlv found that does not read this release is not the one goscope
  // runs (only --check-go-version=false would try it): none is named.
  if (!c.chosen || (!c.covers && c.chosen->origin != "--dlv" && c.chosen->origin != "GOSCOPE_DLV")) return info;
  info.path = c.chosen->path;
  info.origin = c.chosen->origin;
  if (const auto& w = c.chosen->window) {
    info.version = w->delveVersion;
    info.minGoMinor = w->minGoMinor;
    info.maxGoMinor = w->maxGoMinor;
  }
  return info;
}

}  // namespace goscope::session
