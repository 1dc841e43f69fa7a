#include "strategy/host_costs.hpp"

#include <cstdio>

namespace goscope {

std::optional<Placement> placementOfProbeKind(std::string_view kind) {
  if (kind == "stepped-entry") return Placement::Stepped;
  if (kind == "stack-check-branch" || kind == "emulated-entry" || kind == "call-sites")
    return Placement::Emulated;
  return std::nullopt;
}

const char* placementName(Placement p) {
  switch (p) {
    case Placement::Emulated: return "emulated";
    case Placement::Stepped: return "single-stepped";
    case Placement::Return: return "RET";
  }
  return "?";
}

double HostCosts::perHitNs(Placement p) const {
  switch (p) {
    case Placement::Emulated: return emulatedNs;
    case Placement::Stepped: return steppedNs;
    case Placement::Return: return returnNs;
  }
  return steppedNs;
}

std::string describeNs(double ns) {
  char buf[32];
  if (ns >= 1e6) std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
  else if (ns >= 1e4) std::snprintf(buf, sizeof buf, "%.0f us", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%.2g us", ns / 1e3);
  return buf;
}

}  // namespace goscope
