// Engine: the high-frequency path's kernel side. Loads the precompiled generic
// uprobe program (bpf/goscope.bpf.c, embedded through its libbpf skeleton),
// configures probes at run time, attaches them to file offsets (uprobe_multi
// links; perf-event uprobes as the fallback), and reads what the kernel
// aggregated (counts, latency histograms, stack counts, global reads) and the
// events the user asked for (ring buffer).
//
// It receives file offsets and site kinds; it never parses Go binaries. The
// caller (src/cli, through src/binary) decides where probes go:
//   - SiteKind::EntryStackCheck on the `jbe` of a stack-check prologue (cheap,
//     counts a call whose stack grows once), else SiteKind::Entry;
//   - SiteKind::Return on every RET (latency and results need them all).
// Every address must be an instruction boundary that uprobes may patch; the
// kernel does not check (docs/kernel.md, "Hazards that crash the traced program").
//
// Usage:
//   auto eng = Engine::load({.goidOffset = 152});
//   eng->configureProbe(7, {.count = true, .latency = true});
//   eng->attach("/path/bin", pid, {{entryOff, 7, SiteKind::EntryStackCheck}, {retOff, 7, SiteKind::Return}});
//   ... eng->count(7), eng->latency(7), eng->poll(100, onEvent) ...
//   (the destructor detaches everything; so does the kernel if we are killed)
//
// Entry and return are paired per call by (process, g from R14, g.stack.hi -
// RSP): exact through recursion, goroutine migration and stack growth.
// Returns of calls already running at attach time have no entry: they count
// as mismatches.
//
// pid 0 attaches to every process of the file, including goscope itself:
// while such an attachment exists, any mapping of that file in this process
// (ElfFile's mmap included) shows int3 bytes at the probed addresses. Read
// code bytes before attaching, or with pread.
//
// Not synchronized: configure/attach/detach from one thread. poll() and the
// aggregate readers touch disjoint state and may run on different threads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/bpf/event.hpp"
#include "probe/latency_stats.hpp"
#include "backend/bpf/privileges.hpp"
#include "backend/bpf/probe_config.hpp"
#include "util/result.hpp"

namespace goscope::bpf {

enum class AttachMode {
  Auto,         // uprobe_multi links when the kernel has them, else perf-event uprobes
  UprobeMulti,  // fail when the kernel lacks uprobe_multi
  PerfEvent,    // one perf-event uprobe per address (old kernels; tests)
};

struct EngineOptions {
  uint32_t goidOffset = 152;          // offsetof(runtime.g, goid): 152 in Go 1.19 (from DWARF)
  uint32_t stackHiOffset = 8;         // offsetof(runtime.g, stack.hi)
  uint32_t maxProbes = 65536;         // probe ids 0 .. maxProbes-1 (per-CPU counts: 8 B x CPUs each, in blocks of 64)
  uint32_t maxLatencyProbes = 1024;   // probes with latency (5 KB of histogram each)
  uint32_t maxCaptureSpecs = 1024;    // sites with memory reads (entry and return lists count apart)
  uint32_t maxFilters = 1024;         // probes with a --filter (ProbeConfig::filter)
  uint32_t maxInFlight = 16384;       // calls waiting for their return (LRU: panics cannot pile up)
  uint32_t ringBytes = 4u << 20;      // event ring buffer, power of two >= 4096
  // Wake the reader when this many bytes wait in the ring (BPF_RB_NO_WAKEUP
  // below it); poll() also drains every `maxPollDelayMs`. 0 = ringBytes / 16.
  uint32_t wakeupBytes = 0;
  int maxPollDelayMs = 50;
  // Distinct stacks for stackCounts (0 = feature off), and (probe, stack,
  // caller) counters (0 = 2 x stackTraceEntries): bounds, both allocated as
  // they fill (a stack takes ~1 KB of kernel memory).
  uint32_t stackTraceEntries = 0;
  uint32_t stackCountEntries = 0;
  // What sessions that count stacks ask for (--folded, --svg).
  static constexpr uint32_t kFoldedStacks = 65536;
  AttachMode attachMode = AttachMode::Auto;
  // Turn on the kernel's BPF run-time statistics while the engine lives
  // (BPF_ENABLE_STATS: system-wide, a clock read more per program run) so
  // that programRunNs() can tell what the programs cost.
  bool measureProgramTime = false;
};

struct AttachOptions {
  // Read the first bytes at every offset and refuse instructions uprobes are
  // known to break or cannot take: `49 90` (xchg %rax,%r8, first instruction
  // of runtime.gcWriteBarrierR8: the kernel executes it as a NOP and the
  // program computes garbage) and int3. A safety net; placement is the
  // caller's job.
  bool checkHazards = true;
  // When the kernel refuses a uprobe_multi link (one bad offset fails them
  // all, e.g. a lock-prefixed instruction: errno 524), find the offsets it
  // refuses (extra, harmless attach attempts) and name them in the error.
  bool findRefused = true;
  // ... and attach all the others instead of failing, listing the refused
  // ones in AttachStats::refused.
  bool skipRefused = false;
};

struct RefusedPoint {
  AttachPoint point;
  std::string reason;
};

using AttachmentId = uint64_t;

struct AttachStats {
  AttachmentId id = 0;        // for detach(id)
  size_t points = 0;          // addresses attached
  size_t links = 0;           // kernel objects created (1 per uprobe_multi link, 1 per perf uprobe)
  bool uprobeMulti = false;   // which mechanism
  double attachMs = 0;        // wall time of the attach syscalls (bisection excluded)
  std::vector<RefusedPoint> refused;  // with skipRefused: points left out, and why
};

struct DetachStats {
  size_t points = 0;
  size_t links = 0;
  double detachMs = 0;
};

struct GlobalReading {
  uint64_t value = 0;  // little-endian, `size` bytes of readGlobal
  uint64_t tsNs = 0;   // CLOCK_MONOTONIC of the read; 0 = never read
  int errnoValue = 0;  // the last read's error (e.g. EFAULT: wrong address)
};

struct StackCount {
  uint32_t probeId = 0;
  uint64_t count = 0;
  // Innermost first, the probed address first and the direct caller second;
  // empty when the stack was not recorded.
  std::vector<uint64_t> frames;
  uint64_t caller = 0;    // the return address into the direct caller ([RSP]); 0 when not recorded
  bool recorded = false;  // false: the probe's hits whose stack could not be walked or stored (empty walk, the
                          // per-CPU scratch in use, the stack map full), all in one StackCount per probe
  bool cut = false;       // deeper than the kernel records: the outer frames are missing
};

// Engine-wide counters, summed over CPUs.
struct EngineStats {
  uint64_t hits = 0;          // program runs past the stack check of probes that do more than count (counts() has the others)
  uint64_t events = 0;        // events written to the ring
  uint64_t lostRingFull = 0;  // events dropped because the ring was full
  uint64_t lostBusy = 0;      // events dropped because a preempted run held the per-CPU buffer
  uint64_t morestack = 0;     // stack-check passes that went to morestack (skipped)
  uint64_t noConfig = 0;      // hits of probe ids without a configuration
  uint64_t readErrors = 0;    // failed user-memory reads (g, goid, captures, globals)
  uint64_t mismatches = 0;    // returns without an entry, all probes
  uint64_t sampledOut = 0;    // calls whose events sampling left out
  // Calls of processes goscope's user may not ptrace, dropped before they
  // were counted (not fully privileged: Engine::accessScope()).
  uint64_t foreignCalls = 0;
  uint64_t filteredOut = 0;   // calls whose arguments failed their probe's filter: nothing of them was sent
  // Stack-counting hits with no room left in the counts map, not even
  // among a probe's unrecorded stacks: in no StackCount.
  uint64_t stacksUncounted = 0;
  uint64_t stacksStored = 0;  // entries the probes added to the stack map (drainStacks' measure of its fill)
  uint64_t stackKeys = 0;     // entries the probes added to the stack-count map
  // Of those, what drainStacks() has taken out of the kernel so far.
  uint64_t stacksDrained = 0, stackKeysDrained = 0;
  uint64_t lost() const { return lostRingFull + lostBusy; }
};

class Engine {
 public:
  // Checks privileges and kernel support first (clear Permission/External
  // errors), then loads the programs and maps.
  static Result<std::unique_ptr<Engine>> load(const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineOptions& options() const;
  const KernelFeatures& features() const;
  bool usesUprobeMulti() const;
  // Whose processes the programs see (privileges.hpp): decided at load from
  // this process's privileges, never by an option.
  const AccessScope& accessScope() const;

  // (Re)configures a probe id and zeroes its aggregates. May be called while
  // attached; hits of unconfigured ids are ignored (EngineStats::noConfig).
  Result<void> configureProbe(uint32_t probeId, const ProbeConfig& config);
  // Stops a probe doing anything (its addresses stay attached).
  Result<void> disableProbe(uint32_t probeId);
  // Events of `probeId` for about one call in `every` (0 or 1: all), from
  // now on, its aggregates untouched (ProbeConfig::sampleEvery).
  Result<void> setSampleEvery(uint32_t probeId, uint32_t every);

  // Attaches addresses of one file, all in one uprobe_multi link. pid 0 =
  // every process running the file, including ones started later; pid > 0 =
  // that process only.
  Result<AttachStats> attach(const std::string& path, pid_t pid, std::span<const AttachPoint> points,
                             const AttachOptions& options = {});
  // The same, keeping `points` themselves (no copy: buf's 222,679 are 5 MB
  // at the start-up's peak RSS); for a caller done with them.
  Result<AttachStats> attach(const std::string& path, pid_t pid, std::vector<AttachPoint>&& points,
                             const AttachOptions& options = {});
  Result<AttachStats> attach(const std::string& path, pid_t pid, std::initializer_list<AttachPoint> points,
                             const AttachOptions& options = {}) {
    return attach(path, pid, std::span<const AttachPoint>(points.begin(), points.size()), options);
  }
  DetachStats detach(AttachmentId id);
  DetachStats detachAll();
  size_t attachedPoints() const;
  // Every point attached now, over all attachments.
  std::vector<AttachPoint> attachedPointList() const;
  // Removes the attached points `drop` selects while the rest keep counting,
  // exactly: every attachment is re-created without them in the other link
  // generation (attached, not counting), the generation flips in one write,
  // then the old links close — no call counted twice or missed. Attachment
  // ids change. DetachStats::points: how many were removed.
  Result<DetachStats> detachPoints(const std::function<bool(const AttachPoint&)>& drop);
  uint8_t activeGeneration() const;
  // The programs' total run time (ns) since load or the last resetStats(), with measureProgramTime.
  std::optional<uint64_t> programRunNs() const;
  // Set when the process holding the links died (link_holder.hpp) while
  // attached: every probe is gone; the text says so in one line. The engine
  // also asks the session to stop (requestStop) when that happens.
  std::optional<std::string> linksLost() const;
  pid_t linkHolderPid() const;  // -1: no holder (links created in forks of this process)

  // Aggregates. Counts are summed over CPUs.
  Result<uint64_t> count(uint32_t probeId) const;
  // Every probe's count, index = probe id, up to the highest configured id.
  Result<std::vector<uint64_t>> counts() const;
  // Per probe (index = probe id), the calls its filter dropped since load
  // (ProbeConfig::filter): trapped, then nothing more.
  Result<std::vector<uint64_t>> filteredCounts() const;
  Result<LatencyStats> latency(uint32_t probeId) const;
  Result<uint64_t> mismatches(uint32_t probeId) const;
  Result<GlobalReading> globalValue(uint32_t probeId) const;
  // With what drainStacks() took out of the kernel before.
  Result<std::vector<StackCount>> stackCounts() const;
  // Moves the stack counts and frames out of the kernel's maps into the
  // engine (stackCounts() adds them back), so that a long session's stacks
  // find room as they change instead of the first ones seen keeping it:
  // with onlyIfFilling, only when a map is half full. True if it drained.
  Result<bool> drainStacks(bool onlyIfFilling = true);
  // Returns once no BPF program that started before the call still runs
  // (an RCU grace period: milliseconds, more on a loaded machine).
  Result<void> waitForProgramsInFlight() const;
  EngineStats stats() const;
  // Zeroes the engine-wide counters (stats(), and programRunNs() from here
  // on), for an engine handed from one
  // user to the next (the rate probe's, taken over by a session: its
  // counters then start with that session). Call it while the probes only
  // count (counts() are kept apart): a run racing with the reset may keep
  // an increment or lose one of the few stats count-only probes touch.
  Result<void> resetStats();
  uint64_t lostEvents() const { return stats().lost(); }

  // Waits up to timeoutMs (0 = don't wait, < 0 = until an event) for events
  // and delivers the waiting ones to `onEvent`, in ring order, for at most
  // timeoutMs + kPollBudgetMs: a ring the kernel keeps filling is left for
  // the next poll rather than holding this one (and the session's end) for
  // ever. Returns how many were delivered; 0 on timeout or when a signal
  // interrupted the wait. Malformed records are counted, not delivered.
  static constexpr int kPollBudgetMs = 100;
  using EventCallback = std::function<void(const Event&)>;
  Result<size_t> poll(int timeoutMs, const EventCallback& onEvent);
  // An fd that becomes readable when the kernel wakes readers (for an
  // external event loop; then call poll(0, ...)).
  int eventFd() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace goscope::bpf
