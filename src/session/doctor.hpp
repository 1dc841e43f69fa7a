// goscope doctor: a process's code against its executable file, after a
// debugger died with its breakpoints in place (or anything else wrote there).
// Each differing byte is reported with the function it is in; an int3 (0xCC)
// where the file has another byte is a breakpoint left behind, and the next
// time the process runs it, it dies of SIGTRAP. With fix, those bytes are put
// back from the file while the process is briefly SIGSTOPped.
//
// Live uprobes are int3 bytes too, and belong to a running session (goscope's
// BPF path, bpftrace...): the bytes at the file offsets of every uprobe link
// on this file (uprobe_multi for this pid or every pid, perf-event uprobes)
// are reported as such and never written.
//
// A process a debugger holds (TracerPid non-zero: goscope's own dlv, a
// user's `dlv attach`, gdb, strace) has int3 bytes that are that debugger's
// live breakpoints, not leftovers: they are reported as the tracer's, and
// nothing is written, with or without fix (docs/security.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace goscope::session {

struct DoctorByte {
  uint64_t addr = 0;        // runtime address
  uint64_t fileOffset = 0;  // in the executable
  uint8_t memory = 0, file = 0;
  bool int3 = false;        // 0xCC where the file has another byte
  bool tracerOwned = false; // an int3 while a live debugger traces the process: its breakpoint (left alone)
  uint32_t uprobeLink = 0;  // a live uprobe link's id when one is placed here (left alone)
  bool restored = false;    // --fix wrote the file's byte back
};

struct DoctorFunction {
  std::string name;  // "?" outside every function the pclntab knows
  uint64_t entry = 0;  // runtime address
  std::vector<DoctorByte> bytes;
};

struct DoctorReport {
  pid_t pid = 0;
  std::string exe;
  size_t mappings = 0;          // executable mappings of the file compared
  uint64_t bytesCompared = 0;
  std::vector<DoctorFunction> functions;  // by address
  size_t differing = 0;         // bytes that differ (at the start)
  size_t int3 = 0;              // ... that are leftover int3 bytes
  size_t liveUprobe = 0;        // ... that are live uprobes
  size_t tracerInt3 = 0;        // ... that are int3 bytes of the live debugger (tracer)
  pid_t tracer = 0;             // the process tracing it (TracerPid's), 0 when none
  std::string tracerName;       // its /proc/PID/comm
  bool fix = false;             // --fix was asked
  size_t restored = 0;
  bool stopped = false;         // the process was SIGSTOPped (and SIGCONTed unless it was stopped before) for the writes
  std::vector<uint32_t> uprobeLinks;  // live uprobe links on this process's executable

  // Bytes that still differ and are not live uprobes: the code is not what
  // the file says.
  size_t remaining() const { return differing - liveUprobe - tracerInt3 - restored; }
};

// Compares; with `fix`, restores the leftover int3 bytes (only those: any
// other difference is reported and left). Errors: NotFound, Permission,
// TargetGone; with `fix`, Permission when the live uprobe links cannot be
// listed (without them a live uprobe could be taken for a leftover).
Result<DoctorReport> doctor(pid_t pid, bool fix);

}  // namespace goscope::session
