// Calibration: what one probe hit costs on this kernel and CPU, measured
// against a tiny process of goscope's own (a fork that calls three small
// functions of goscope's text in a loop), for each placement goscope uses:
// an emulated instruction (push), a single-stepped one (mov reg, reg) and a
// RET. Each figure is (loop time with a count probe - loop time without) /
// hits, the median of a few rounds: the trap and goscope's smallest program
// together, as a Go function's probe would pay them. Why measure instead of
// quoting docs/kernel.md: the same probe cost 0.35 us on one machine and
// 0.9 us on another, and single-stepping varies 4-60 us with the load
// (docs/overhead.md).
#pragma once

#include "util/result.hpp"

namespace goscope::bpf {

// Per hit, in nanoseconds: the trap and a count program together.
struct Calibrated {
  double emulatedNs = 0;
  double steppedNs = 0;
  double returnNs = 0;
};

struct CalibrationOptions {
  int rounds = 3;
  int hits = 10000;  // calls per placement per round
};

// Needs BPF privileges. Takes about 0.3 s. Errors: Permission, External
// (no uprobes), Internal (the probes did not fire as expected).
Result<Calibrated> calibrate(const CalibrationOptions& options = {});

}  // namespace goscope::bpf
