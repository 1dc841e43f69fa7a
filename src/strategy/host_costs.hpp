// What one hit of a probe costs the traced program on this host, by where
// the probe sits. Every plan, every --explain, every session's cost line and
// the overhead demo use these same figures. They are measured by a short
// calibration against a tiny process of goscope's own (api::hostCosts, cached
// per kernel and CPU); the defaults are the figures docs/kernel.md and
// docs/delve.md record, used only when nothing could be measured — the
// source says which.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace goscope {

// Where a probe sits decides what the kernel does on each hit.
enum class Placement {
  Emulated,  // an instruction the kernel emulates (the stack check's jbe, push, nop, call): no single-step
  Stepped,   // an instruction single-stepped out of line (a leaf function's first instruction)
  Return,    // a RET site: single-stepped too
};
const char* placementName(Placement p);
// The placement of a probe kind as `list --json` names it (probe_kind):
// "stepped-entry" is single-stepped, the others goscope places are
// emulated; none for "none" (not probed), "inlined" (it depends on the
// instruction in the caller) or a name it does not know.
std::optional<Placement> placementOfProbeKind(std::string_view kind);

struct HostCosts {
  // Per hit, the trap and goscope's smallest program (a count) together.
  double emulatedNs = 350;
  double steppedNs = 4000;
  double returnNs = 3700;
  // One Delve breakpoint hit: every thread stops, dlv evaluates, resumes.
  double delveStopNs = 1e6;
  std::string source = "defaults from docs/kernel.md (not measured here)";
  std::string delveSource = "default from docs/delve.md (no Delve session measured here yet)";
  bool delveMeasured = false;  // delveStopNs was measured by a session here (and is cached)

  double perHitNs(Placement p) const;
};

// "0.35 us", "4.1 us", "1.2 ms": a per-hit cost as people read it.
std::string describeNs(double ns);

}  // namespace goscope
