#include "backend/bpf/bpf_engine.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <map>
#include <mutex>
#include <condition_variable>
#include <thread>
#include <optional>
#include <set>
#include <tuple>
#include <sstream>
#include <unordered_map>

#include "backend/bpf/link_holder.hpp"
#include "backend/bpf/perf_uprobe_link.hpp"
#include "backend/bpf/uprobe_hazards.hpp"
#include "backend/bpf/uprobe_multi_link.hpp"
#include "goscope.skel.h"
#include "util/stop_signals.hpp"
#include "util/notice.hpp"

namespace goscope::bpf {

// The kernel and user side must agree on every shared layout.
static_assert(sizeof(gs_probe_cfg) == 40);
static_assert(sizeof(gs_filter_cond) == 24 + GS_FILTER_STR);
static_assert(sizeof(gs_filter) == 8 + GS_MAX_FILTER_CONDS * (24 + GS_FILTER_STR));
static_assert(sizeof(gs_read_step) == 24);
static_assert(sizeof(gs_capture_spec) == 8 + GS_MAX_STEPS * 24);
static_assert(sizeof(gs_start_key) == 32);
static_assert(sizeof(gs_stack_key) == 24);
static_assert(sizeof(gs_stack_frames) == GS_MAX_STACK_DEPTH * 8);
static_assert(sizeof(gs_global_value) == 32);
static_assert(sizeof(gs_event) == 160);
static_assert(sizeof(gs_block) == 8);
static_assert(sizeof(gs_lat_stats) == 64 + GS_HIST_BUCKETS * 8);
static_assert(sizeof(gs_count_block) == GS_COUNTS_PER_BLOCK * 8);
// The kernel builds an event in GS_EVENT_MAX bytes: header, every block at
// its cap, and a full stack must fit without wrapping.
static_assert(sizeof(gs_event) + GS_MAX_STEPS * (sizeof(gs_block) + GS_MAX_READ) +
                  GS_MAX_STACK_DEPTH * 8 <= GS_EVENT_MAX);

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A probe id that no configuration can have: attach attempts made only to
// find refused offsets carry it, so their hits do nothing.
constexpr uint32_t kInertProbeId = 0xFFFFFFu;

// libbpf's messages go to the debug log; while loading, the last ones are kept
// so that a verifier failure can be reported with its reason.
std::mutex gLibbpfLogMutex;
std::string* gLibbpfCapture = nullptr;

int libbpfPrint(enum libbpf_print_level level, const char* fmt, va_list args) {
  char buf[2048];
  int n = vsnprintf(buf, sizeof buf, fmt, args);
  std::string line(buf, n > 0 ? std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1) : 0);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  {
    std::lock_guard<std::mutex> lock(gLibbpfLogMutex);
    if (gLibbpfCapture && level != LIBBPF_DEBUG) {
      *gLibbpfCapture += line;
      *gLibbpfCapture += '\n';
      if (gLibbpfCapture->size() > 16384) gLibbpfCapture->erase(0, gLibbpfCapture->size() - 16384);
    }
  }
  if (level == LIBBPF_DEBUG) spdlog::trace("libbpf: {}", line);
  else spdlog::debug("libbpf: {}", line);
  return n;
}

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

bool isPowerOfTwo(uint64_t v) { return v && !(v & (v - 1)); }

// Errors that concern the whole link rather than one offset: no bisection.
bool wholeLinkError(int err) {
  return err == ESRCH || err == ENOENT || err == EPERM || err == EACCES || err == ENOMEM || err == E2BIG ||
         err == EBADF || err == EMFILE || err == ENFILE || err == EOPNOTSUPP;
}

}  // namespace

struct ProbeSlots {
  bool configured = false;
  std::optional<uint32_t> latSlot;
  uint32_t entrySpec = 0;   // 0 = none
  uint32_t returnSpec = 0;
  uint32_t filter = 0;      // index into "filters", 0 = none
};

struct Attachment {
  std::string path;
  pid_t pid = 0;
  size_t points = 0;
  std::vector<AttachPoint> attached;  // what is attached (refused points left out): detachPoints re-links from it
  std::optional<UprobeMultiLink> multi;
  std::vector<PerfUprobeLink> perf;
};

struct Engine::Impl {
  EngineOptions opt;
  KernelFeatures feat;
  AccessScope scope;
  goscope_bpf* skel = nullptr;
  ring_buffer* rb = nullptr;
  bool multiLoaded = false;
  bool perfLoaded = false;
  int ncpus = 1;

  std::unordered_map<uint32_t, ProbeSlots> probes;
  int64_t highestProbe = -1;
  // Counts are never written by user space (a read-modify-write of a shared
  // per-CPU block would lose neighbours' increments): a (re)configured probe
  // starts from the value it had then.
  std::unordered_map<uint32_t, uint64_t> countBase;
  uint32_t nextLatSlot = 0;
  std::vector<uint32_t> freeLatSlots;
  uint32_t nextSpec = 1;  // spec 0 means "none"
  std::vector<uint32_t> freeSpecs;
  uint32_t nextFilter = 1;  // filter 0 means "none"
  std::vector<uint32_t> freeFilters;

  std::map<AttachmentId, Attachment> attachments;
  AttachmentId nextAttachment = 1;
  // No link was ever made: no program has run, so every map still holds the
  // zeros it was created with, and a first configureProbe need not read a
  // count base nor zero the aggregates (3 bpf() calls a probe become 1:
  // 175,000 calls for 58,000 functions).
  bool mapsPristine = true;
  // Probe configurations written before the first attach, sent to the
  // kernel in one BPF_MAP_UPDATE_BATCH when attach() starts (no program can
  // read probe_cfg before then; docs/kernel.md, "Attaching many probes"):
  // 16,066 bpf() calls, one a probe, in a warm
  // `count '*'` start on the Go compiler.
  std::vector<uint32_t> pendingKeys;
  std::vector<gs_probe_cfg> pendingCfgs;
  // Owns every uprobe_multi link (link_holder.hpp); null: links are ours
  // (created and closed in forks of this process), the older way.
  std::shared_ptr<LinkHolder> holder;

  // Stack counts and frames moved out of the kernel's maps by
  // drainStacks(), so that those hold only what came since (docs/kernel.md,
  // "Stacks"). Frames are kept up to their last non-zero one.
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t>, uint64_t> drainedCounts;
  std::unordered_map<uint64_t, std::vector<uint64_t>> drainedFrames;
  uint64_t drainedStacks = 0, drainedKeys = 0;  // entries deleted, against the kernel's GS_STAT_STACKS_STORED/_KEYS
  uint64_t drainedFrameCount = 0;               // frames kept in drainedFrames, against kMaxDrainedFrames
  bool drainRefusalSaid = false;                // a drain could not wait for the programs in flight: said once
  bool drainBoundSaid = false;                  // kMaxDrainedFrames reached: said once

  const EventCallback* callback = nullptr;
  uint64_t malformed = 0;
  std::optional<Error> callbackError;
  // One poll's budget: libbpf's consume loop runs as long as the kernel
  // keeps writing, so a hot function held a poll for seconds and Ctrl-C and
  // -d came 5.8-8.5 s late. After `pollDeadline` the callback
  // cuts the loop short (the record it was given is consumed and delivered).
  std::chrono::steady_clock::time_point pollDeadline{};
  Event event;  // every record is decoded into this one (its vectors keep their capacity)
  size_t pollDelivered = 0;
  bool pollCut = false;

  ~Impl() {
    attachments.clear();
    holder.reset();
    if (rb) ring_buffer__free(rb);
    if (skel) goscope_bpf__destroy(skel);
    if (statsFd >= 0) ::close(statsFd);
  }

  int fd(bpf_map* m) const { return bpf_map__fd(m); }

  template <class T>
  Result<void> put(bpf_map* m, uint32_t key, const T& value) {
    if (bpf_map_update_elem(fd(m), &key, &value, BPF_ANY) != 0)
      return fail(ErrorKind::Internal, std::string("writing ") + bpf_map__name(m) + "[" + std::to_string(key) +
                                           "]: " + std::strerror(errno));
    return {};
  }

  // Writes the pending configurations (in order: a probe configured twice
  // keeps its last). One system call; element by element where the kernel
  // has no batch operation for arrays (before 5.6).
  Result<void> flushPendingCfgs() {
    if (pendingKeys.empty()) return {};
    uint32_t count = static_cast<uint32_t>(pendingKeys.size());
    LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
    if (bpf_map_update_batch(fd(skel->maps.probe_cfg), pendingKeys.data(), pendingCfgs.data(), &count, &opts) != 0 ||
        count != pendingKeys.size()) {
      for (size_t i = 0; i < pendingKeys.size(); i++)
        if (auto r = put(skel->maps.probe_cfg, pendingKeys[i], pendingCfgs[i]); !r) return r;
    }
    pendingKeys.clear();
    pendingCfgs.clear();
    return {};
  }

  Result<uint32_t> allocSpec() {
    if (!freeSpecs.empty()) {
      uint32_t s = freeSpecs.back();
      freeSpecs.pop_back();
      return s;
    }
    if (nextSpec > opt.maxCaptureSpecs)
      return fail(ErrorKind::Usage, "more than " + std::to_string(opt.maxCaptureSpecs) + " sites with memory reads",
                  "raise EngineOptions::maxCaptureSpecs");
    return nextSpec++;
  }

  // Sets (or clears, with no terms) a probe's filter.
  Result<void> setFilter(uint32_t& slot, const std::vector<BoundFilterTerm>& terms) {
    if (terms.empty()) {
      if (slot) freeFilters.push_back(slot);
      slot = 0;
      return {};
    }
    auto f = encodeFilter(terms);
    if (!f) return f.failure();
    if (!slot) {
      if (!freeFilters.empty()) {
        slot = freeFilters.back();
        freeFilters.pop_back();
      } else if (nextFilter > opt.maxFilters) {
        return fail(ErrorKind::Usage, "more than " + std::to_string(opt.maxFilters) + " probes with a filter",
                    "raise EngineOptions::maxFilters");
      } else {
        slot = nextFilter++;
      }
    }
    return put(skel->maps.filters, slot, *f);
  }

  Result<uint32_t> allocLatSlot() {
    if (!freeLatSlots.empty()) {
      uint32_t s = freeLatSlots.back();
      freeLatSlots.pop_back();
      return s;
    }
    if (nextLatSlot >= opt.maxLatencyProbes)
      return fail(ErrorKind::Usage, "more than " + std::to_string(opt.maxLatencyProbes) + " probes with latency",
                  "raise EngineOptions::maxLatencyProbes");
    return nextLatSlot++;
  }

  // Sets (or clears, with empty reads) one site's capture spec.
  Result<void> setSpec(uint32_t& slot, const std::vector<MemRead>& reads) {
    if (reads.empty()) {
      if (slot) freeSpecs.push_back(slot);
      slot = 0;
      return {};
    }
    auto spec = encodeSpec(reads);
    if (!spec) return spec.failure();
    if (!slot) {
      auto s = allocSpec();
      if (!s) return s.failure();
      slot = *s;
    }
    return put(skel->maps.capture_specs, slot, *spec);
  }

  Result<uint64_t> sumPerCpu(bpf_map* m, uint32_t key) const {
    std::vector<uint64_t> v(static_cast<size_t>(ncpus), 0);
    if (bpf_map_lookup_elem(bpf_map__fd(m), &key, v.data()) != 0)
      return fail(ErrorKind::Internal, std::string("reading ") + bpf_map__name(m) + ": " + std::strerror(errno));
    uint64_t s = 0;
    for (uint64_t x : v) s += x;
    return s;
  }

  // The raw (never reset) count of a probe, summed over CPUs.
  Result<uint64_t> rawCount(uint32_t probeId) const {
    uint32_t blk = probeId / GS_COUNTS_PER_BLOCK;
    std::vector<gs_count_block> v(static_cast<size_t>(ncpus));
    if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.counts), &blk, v.data()) != 0)
      return fail(ErrorKind::Internal, std::string("reading counts: ") + std::strerror(errno));
    uint64_t s = 0;
    for (const auto& b : v) s += b.c[probeId % GS_COUNTS_PER_BLOCK];
    return s;
  }

  uint64_t base(uint32_t probeId) const {
    auto it = countBase.find(probeId);
    return it == countBase.end() ? 0 : it->second;
  }

  int multiFd() const { return bpf_program__fd(skel->progs.gs_uprobe_multi); }
  // BPF_ENABLE_STATS(RUN_TIME), held while the engine lives (programRunNs).
  int statsFd = -1;
  uint64_t programRunBase = 0;  // run time before resetStats(): the previous user's
  int perfFd() const { return bpf_program__fd(skel->progs.gs_uprobe_perf); }

  // Which offsets does the kernel refuse in a uprobe_multi link it refused
  // as a whole? Chunks of 256, then bisection inside the refused ones, all
  // attempts with inert cookies. Closing a link waits for an RCU grace period
  // (30-70 ms measured, whatever its size), so attempts run on several
  // threads, where those waits overlap (8 create+close: 33 ms in all).
  // Returns indices into `offsets`, sorted; `complete` false if the attempt
  // budget ran out.
  std::vector<size_t> findRefused(const std::string& path, pid_t pid, const std::vector<uint64_t>& offsets,
                                  bool& complete) {
    constexpr size_t kChunk = 256;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::pair<size_t, size_t>> work;
    for (size_t lo = 0; lo < offsets.size(); lo += kChunk) work.emplace_back(lo, std::min(offsets.size(), lo + kChunk));
    std::vector<size_t> found;
    int budget = static_cast<int>(work.size()) + 256;
    int busy = 0;
    complete = true;
    const std::vector<uint64_t> inert(kChunk, cookieFor(kInertProbeId, SiteKind::Entry));
    auto worker = [&] {
      std::unique_lock<std::mutex> lock(mu);
      for (;;) {
        cv.wait(lock, [&] { return !work.empty() || busy == 0; });
        if (work.empty()) return;  // nothing queued and nobody can queue more
        auto [lo, hi] = work.back();
        work.pop_back();
        if (budget-- <= 0) {
          complete = false;
          continue;
        }
        busy++;
        lock.unlock();
        // Through the holder when there is one: no link is created or
        // released in this process.
        int fd = holder ? holder->create(multiFd(), path, pid, std::span(offsets.data() + lo, hi - lo),
                                         std::span(inert.data(), hi - lo), /*keep=*/false)
                        : rawUprobeMultiCreate(multiFd(), path.c_str(), offsets.data() + lo, inert.data(),
                                               static_cast<uint32_t>(hi - lo), 0, pid);
        if (fd >= 0 && !holder) ::close(fd);
        if (fd == -EPIPE && holder) {  // the holder is gone: stop searching
          lock.lock();
          busy--;
          complete = false;
          work.clear();
          cv.notify_all();
          continue;
        }
        lock.lock();
        busy--;
        if (fd < 0) {
          if (hi - lo == 1) {
            found.push_back(lo);
          } else {
            size_t mid = lo + (hi - lo) / 2;
            work.emplace_back(lo, mid);
            work.emplace_back(mid, hi);
          }
        }
        cv.notify_all();
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; t++) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    std::sort(found.begin(), found.end());
    return found;
  }

  static int onSample(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    auto ok = decodeEventInto({static_cast<const uint8_t*>(data), size}, self->event);
    if (!ok) {
      self->malformed++;
      spdlog::debug("bpf: {}", ok.error().message);
      return 0;
    }
    if (!self->callback || !*self->callback) return 0;
    try {
      (*self->callback)(self->event);
      // Checked every 256 records: a clock read per record would cost more
      // than the record.
      // endPending: a stop or -d's end while the probes are on cuts the poll
      // too, so that the session detaches now, not at the poll's budget.
      if (++self->pollDelivered % 256 == 0 &&
          (std::chrono::steady_clock::now() > self->pollDeadline || endPending())) {
        self->pollCut = true;
        return -EAGAIN;
      }
    } catch (const std::exception& e) {
      self->callbackError = Error{ErrorKind::Internal, std::string("event callback threw: ") + e.what(), {}};
      return -ECANCELED;
    } catch (...) {
      self->callbackError = Error{ErrorKind::Internal, "event callback threw", {}};
      return -ECANCELED;
    }
    return 0;
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  if (impl_) detachAll();
}

const EngineOptions& Engine::options() const { return impl_->opt; }
const KernelFeatures& Engine::features() const { return impl_->feat; }
bool Engine::usesUprobeMulti() const { return impl_->multiLoaded; }
const AccessScope& Engine::accessScope() const { return impl_->scope; }

Result<std::unique_ptr<Engine>> Engine::load(const EngineOptions& options) {
  static std::once_flag printOnce;
  std::call_once(printOnce, [] { libbpf_set_print(libbpfPrint); });

  const EngineOptions& o = options;
  if (o.maxProbes == 0 || o.maxProbes > (1u << 24))
    return fail(ErrorKind::Usage, "maxProbes must be 1..16777216 (the cookie holds 24 bits of probe id)");
  if (!isPowerOfTwo(o.ringBytes) || o.ringBytes < 4096)
    return fail(ErrorKind::Usage, "ringBytes must be a power of two of at least 4096, not " + std::to_string(o.ringBytes));
  if (o.maxLatencyProbes == 0 || o.maxCaptureSpecs == 0 || o.maxInFlight == 0 || o.maxFilters == 0)
    return fail(ErrorKind::Usage, "maxLatencyProbes, maxCaptureSpecs, maxFilters and maxInFlight must be positive");

  if (auto r = checkPrivileges(); !r) return r.failure();
  if (auto r = checkBpfAvailable(); !r) return r.failure();
  auto scope = currentAccessScope();
  if (!scope) return scope.failure();

  auto impl = std::make_unique<Impl>();
  impl->opt = o;
  impl->scope = *scope;
  impl->feat = probeKernelFeatures();
  int n = libbpf_num_possible_cpus();
  impl->ncpus = n > 0 ? n : 1;

  bool wantMulti = false, wantPerf = false;
  switch (o.attachMode) {
    case AttachMode::Auto:
      wantMulti = impl->feat.uprobeMulti;
      // Kernels whose uprobe_multi pid filter matched one thread instead of a
      // process: per-pid attaches go through perf-event uprobes.
      wantPerf = !impl->feat.uprobeMulti || !impl->feat.uprobeMultiPidFilter;
      break;
    case AttachMode::UprobeMulti:
      if (!impl->feat.uprobeMulti)
        return fail(ErrorKind::External, "this kernel has no uprobe_multi links (Linux 6.6+)",
                    "use the perf-event fallback (AttachMode::Auto)");
      wantMulti = true;
      break;
    case AttachMode::PerfEvent:
      wantPerf = true;
      break;
  }
  if (wantPerf && impl->feat.uprobePmuType < 0 && !wantMulti)
    return fail(ErrorKind::External, "this kernel has neither uprobe_multi links nor the uprobe perf PMU",
                "a kernel with CONFIG_UPROBES and CONFIG_UPROBE_EVENTS is needed");

  goscope_bpf* skel = goscope_bpf__open();
  if (!skel)
    return fail(ErrorKind::Internal, std::string("opening the embedded BPF object failed: ") + std::strerror(errno));
  impl->skel = skel;

  skel->rodata->goid_offset = o.goidOffset;
  skel->rodata->stack_hi_offset = o.stackHiOffset;
  uint32_t wakeup = o.wakeupBytes ? o.wakeupBytes : o.ringBytes / 16;
  skel->rodata->wakeup_bytes = wakeup;
  // Not fully privileged: the programs see only the processes this user may
  // ptrace (privileges.hpp, AccessScope).
  skel->rodata->access_filter = impl->scope.everyone ? 0 : 1;
  skel->rodata->access_uid = impl->scope.uid;
  skel->rodata->access_gid = impl->scope.gid;
  skel->rodata->access_caps = impl->scope.capsCeiling;

  uint32_t stackTraces = o.stackTraceEntries ? o.stackTraceEntries : 1;
  uint32_t stackCountEntries =
      o.stackCountEntries ? o.stackCountEntries : (o.stackTraceEntries ? 2 * o.stackTraceEntries : 1);
  struct Size {
    bpf_map* map;
    uint32_t entries;
  } sizes[] = {
      {skel->maps.probe_cfg, o.maxProbes},
      {skel->maps.counts, (o.maxProbes + GS_COUNTS_PER_BLOCK - 1) / GS_COUNTS_PER_BLOCK},
      {skel->maps.filtered_counts, (o.maxProbes + GS_COUNTS_PER_BLOCK - 1) / GS_COUNTS_PER_BLOCK},
      {skel->maps.globals, o.maxProbes},
      {skel->maps.capture_specs, o.maxCaptureSpecs + 1},
      {skel->maps.filters, o.maxFilters + 1},
      {skel->maps.lat_stats, o.maxLatencyProbes},
      {skel->maps.starts, o.maxInFlight},
      {skel->maps.stacks, stackTraces},
      {skel->maps.stack_counts, stackCountEntries},
      {skel->maps.stack_counts_b, stackCountEntries},
      {skel->maps.events, o.ringBytes},
  };
  for (const Size& s : sizes) {
    if (int e = bpf_map__set_max_entries(s.map, s.entries); e != 0)
      return fail(ErrorKind::Internal, std::string("sizing BPF map ") + bpf_map__name(s.map) + ": " + std::strerror(-e));
  }

  bpf_program__set_autoload(skel->progs.gs_uprobe_multi, wantMulti);
  bpf_program__set_autoload(skel->progs.gs_uprobe_perf, wantPerf);
  if (wantMulti)
    bpf_program__set_expected_attach_type(skel->progs.gs_uprobe_multi,
                                          static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));

  std::string log;
  {
    std::lock_guard<std::mutex> lock(gLibbpfLogMutex);
    gLibbpfCapture = &log;
  }
  auto t0 = Clock::now();
  int err = goscope_bpf__load(skel);
  {
    std::lock_guard<std::mutex> lock(gLibbpfLogMutex);
    gLibbpfCapture = nullptr;
  }
  if (err) {
    std::string tail = log.size() > 1500 ? log.substr(log.size() - 1500) : log;
    if (-err == EPERM || -err == EACCES)
      return fail(ErrorKind::Permission, std::string("loading the BPF programs was refused: ") + std::strerror(-err),
                  "run as root or with CAP_BPF and CAP_PERFMON");
    return fail(ErrorKind::Internal, std::string("loading the BPF programs failed: ") + std::strerror(-err) +
                                         (tail.empty() ? "" : "\n" + tail),
                "run with -v for libbpf's full log");
  }
  spdlog::debug("bpf: programs loaded in {:.1f} ms (uprobe_multi {}, perf fallback {}, {} CPUs, {})", msSince(t0),
                wantMulti, wantPerf, impl->ncpus,
                impl->scope.everyone ? "every process visible" : "only uid " + std::to_string(impl->scope.uid) + "'s processes visible");
  impl->multiLoaded = wantMulti;
  if (o.measureProgramTime) impl->statsFd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  impl->perfLoaded = wantPerf;

  if (wantMulti) {
    // One link holder per engine (link_holder.hpp). Without one, links are
    // created and closed in forks of this process, as before.
    auto h = LinkHolder::spawn();
    if (h) {
      impl->holder = std::move(*h);
      pid_t hp = impl->holder->pid();
      impl->holder->onLost([hp] {
        spdlog::debug("bpf: the link holder (pid {}) died: the kernel removed every probe", hp);
        requestStop();  // the session ends; it reports why (Engine::linksLost)
      });
    } else {
      spdlog::debug("bpf: {}; uprobe_multi links are created and closed in forks of goscope instead",
                    h.error().message);
    }
  }

  impl->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), &Impl::onSample, impl.get(), nullptr);
  if (!impl->rb)
    return fail(ErrorKind::Internal, std::string("setting up the event ring buffer failed: ") + std::strerror(errno));

  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Result<void> Engine::configureProbe(uint32_t probeId, const ProbeConfig& c) {
  Impl& I = *impl_;
  if (probeId >= I.opt.maxProbes)
    return fail(ErrorKind::Usage, "probe id " + std::to_string(probeId) + " is not below maxProbes (" +
                                      std::to_string(I.opt.maxProbes) + ")");
  if (c.stackCounts && I.opt.stackTraceEntries == 0)
    return fail(ErrorKind::Usage, "stack counts need EngineOptions::stackTraceEntries > 0");
  if (c.readGlobal && (c.readGlobal->size == 0 || c.readGlobal->size > 8))
    return fail(ErrorKind::Usage, "a global read is 1..8 bytes, not " + std::to_string(c.readGlobal->size));
  if (!c.entryReads.empty() && !c.eventAtEntry)
    return fail(ErrorKind::Usage, "entry reads without eventAtEntry would never be seen");
  if (!c.returnReads.empty() && !c.eventAtReturn)
    return fail(ErrorKind::Usage, "return reads without eventAtReturn would never be seen");

  ProbeSlots& ps = I.probes[probeId];
  if (auto r = I.setSpec(ps.entrySpec, c.entryReads); !r) return r;
  if (auto r = I.setSpec(ps.returnSpec, c.returnReads); !r) return r;
  if (auto r = I.setFilter(ps.filter, c.filter); !r) return r;
  if (c.latency && !ps.latSlot) {
    auto s = I.allocLatSlot();
    if (!s) return s.failure();
    ps.latSlot = *s;
  } else if (!c.latency && ps.latSlot) {
    I.freeLatSlots.push_back(*ps.latSlot);
    ps.latSlot.reset();
  }

  // Fresh aggregates for a (re)configured probe (already zero in pristine
  // maps: user space writes only zeros to them, and no program has run).
  const bool zeroAlready = I.mapsPristine;
  if (!zeroAlready) {
    auto now = I.rawCount(probeId);
    if (!now) return now.failure();
    I.countBase[probeId] = *now;
    if (auto r = I.put(I.skel->maps.globals, probeId, gs_global_value{}); !r) return r;
  }
  if (ps.latSlot && !zeroAlready) {
    auto zero = std::make_unique<gs_lat_stats>();
    std::memset(zero.get(), 0, sizeof *zero);
    if (auto r = I.put(I.skel->maps.lat_stats, *ps.latSlot, *zero); !r) return r;
  }

  gs_probe_cfg cfg{};
  cfg.actions = encodeActions(c);
  cfg.lat_slot = ps.latSlot.value_or(0);
  cfg.entry_spec = ps.entrySpec;
  cfg.return_spec = ps.returnSpec;
  if (c.readGlobal) {
    cfg.global_addr = c.readGlobal->address;
    cfg.global_len = c.readGlobal->size;
  }
  cfg.sample_every = c.sampleEvery;
  cfg.filter_idx = ps.filter;
  if (I.mapsPristine) {
    I.pendingKeys.push_back(probeId);
    I.pendingCfgs.push_back(cfg);
  } else if (auto r = I.put(I.skel->maps.probe_cfg, probeId, cfg); !r) {
    return r;
  }
  ps.configured = true;
  I.highestProbe = std::max<int64_t>(I.highestProbe, probeId);
  return {};
}

Result<void> Engine::setSampleEvery(uint32_t probeId, uint32_t every) {
  Impl& I = *impl_;
  if (probeId >= I.opt.maxProbes) return fail(ErrorKind::Usage, "probe id " + std::to_string(probeId) + " out of range");
  if (auto r = I.flushPendingCfgs(); !r) return r;
  gs_probe_cfg cfg{};
  if (bpf_map_lookup_elem(bpf_map__fd(I.skel->maps.probe_cfg), &probeId, &cfg) != 0)
    return fail(ErrorKind::External, "probe_cfg lookup failed: " + std::string(std::strerror(errno)));
  cfg.sample_every = every;
  return I.put(I.skel->maps.probe_cfg, probeId, cfg);
}

Result<void> Engine::disableProbe(uint32_t probeId) {
  Impl& I = *impl_;
  if (probeId >= I.opt.maxProbes) return fail(ErrorKind::Usage, "probe id " + std::to_string(probeId) + " out of range");
  if (auto r = I.flushPendingCfgs(); !r) return r;
  return I.put(I.skel->maps.probe_cfg, probeId, gs_probe_cfg{});
}

namespace {

std::string describePoints(const std::vector<RefusedPoint>& r) {
  std::string list;
  for (size_t k = 0; k < r.size() && k < 8; k++)
    list += (k ? ", " : "") + hex(r[k].point.fileOffset) + " (probe " + std::to_string(r[k].point.probeId) + ", " +
            siteKindName(r[k].point.site) + ")";
  if (r.size() > 8) list += ", ... (" + std::to_string(r.size()) + " in all)";
  return list;
}

// Reads the first bytes at each offset of the file. With pread, not mmap: a
// mapping of a file that has pid-0 uprobes gets their int3 bytes written into
// it by the kernel (uprobe_mmap), also in this process. In windows of 1 MiB
// over the offsets in ascending order, not one pread per point: 58,000
// probes were 58,000 system calls; a window costs one, and
// memory for one window only.
namespace {

// The file a path names, for messages: what /proc/self/fd/N (the open file
// a target is attached through: process/traced_target.hpp) links to.
std::string shownPath(const std::string& path) {
  if (!path.starts_with("/proc/self/fd/")) return path;
  char buf[4096];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : path;
}

}  // namespace

Result<std::vector<RefusedPoint>> scanHazards(const std::string& path, std::span<const AttachPoint> points) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return fail(ErrorKind::NotFound, "attach: cannot open " + shownPath(path) + ": " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || st.st_size <= 0)
    return fail(ErrorKind::BadTarget, "attach: " + shownPath(path) + " is empty or unreadable");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  constexpr uint64_t kWindow = 1 << 20, kInsnMax = 16;
  // Ascending: its one caller, Engine::attach, sorts them first.
  std::vector<uint8_t> window;
  uint64_t winStart = 0;
  std::vector<std::pair<size_t, std::string>> refused;  // (index into points, why)
  for (size_t i = 0; i < points.size(); i++) {
    const AttachPoint& p = points[i];
    if (p.fileOffset >= size) {
      refused.push_back({i, "offset " + hex(p.fileOffset) + " is past the end of the file"});
      continue;
    }
    // The window must hold the point's 16 bytes, or reach the end of the file.
    const uint64_t want = std::min(kInsnMax, size - p.fileOffset);
    if (window.empty() || p.fileOffset < winStart || p.fileOffset + want > winStart + window.size()) {
      winStart = p.fileOffset;
      window.resize(static_cast<size_t>(std::min(kWindow, size - winStart)));
      size_t got = 0;
      while (got < window.size()) {
        ssize_t n = ::pread(fd.get(), window.data() + got, window.size() - got, static_cast<off_t>(winStart + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(ErrorKind::Internal, "attach: cannot read " + shownPath(path) + ": " + std::strerror(errno));
        if (n == 0) break;  // the file shrank under us
        got += static_cast<size_t>(n);
      }
      window.resize(got);
      if (got == 0) return fail(ErrorKind::Internal, "attach: cannot read " + shownPath(path) + " at " + hex(winStart));
    }
    const uint64_t at = p.fileOffset - winStart;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kInsnMax, window.size() - at));
    std::string why = uprobeHazard({window.data() + at, n});
    if (!why.empty()) refused.push_back({i, std::move(why)});
  }
  std::vector<RefusedPoint> out;
  out.reserve(refused.size());
  for (auto& [i, why] : refused) out.push_back({points[i], std::move(why)});
  return out;
}

}  // namespace

Result<AttachStats> Engine::attach(const std::string& path, pid_t pid, std::span<const AttachPoint> points,
                                   const AttachOptions& ao) {
  return attach(path, pid, std::vector<AttachPoint>(points.begin(), points.end()), ao);
}

Result<AttachStats> Engine::attach(const std::string& path, pid_t pid, std::vector<AttachPoint>&& pointsIn,
                                   const AttachOptions& ao) {
  Impl& I = *impl_;
  if (pointsIn.empty()) return fail(ErrorKind::Usage, "attach: no addresses to attach to in " + shownPath(path));
  for (const AttachPoint& p : pointsIn) {
    if (p.probeId >= I.opt.maxProbes)
      return fail(ErrorKind::Usage, "attach: probe id " + std::to_string(p.probeId) + " is not below maxProbes");
    if (static_cast<unsigned>(p.site) >= GS_SITE_KIND_COUNT)
      return fail(ErrorKind::Usage, "attach: unknown site kind " + std::to_string(static_cast<unsigned>(p.site)));
  }
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    return fail(ErrorKind::NotFound, "attach: cannot open " + shownPath(path) + ": " + std::strerror(errno));
  if (pid < 0) return fail(ErrorKind::Usage, "attach: invalid pid " + std::to_string(pid));
  if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH)
    return fail(ErrorKind::TargetGone, "attach: no process with pid " + std::to_string(pid));

  if (auto r = I.flushPendingCfgs(); !r) return fail(r.error());
  AttachStats stats;
  std::vector<AttachPoint> points = std::move(pointsIn);
  // In ascending file offset: the kernel inserts each uprobe into one tree
  // keyed by (inode, offset), and in order its path stays in the CPU's
  // caches. 222,679 offsets of buf: 95-199 ms sorted against 262-308 ms
  // shuffled (docs/kernel.md, "The order of a uprobe_multi link's offsets").
  // In place (a stable sort's buffer of buf's points was 5 MB more at the
  // start-up's peak RSS); ties in a total order, so the order is the same
  // every run.
  std::sort(points.begin(), points.end(), [](const AttachPoint& a, const AttachPoint& b) {
    return std::tuple(a.fileOffset, a.probeId, a.site, a.generation) <
           std::tuple(b.fileOffset, b.probeId, b.site, b.generation);
  });
  I.mapsPristine = false;  // from here on programs may run (even if this attach fails half-way)

  // Leaves out `refused` (or fails, without skipRefused).
  auto leaveOut = [&](std::vector<RefusedPoint> refused, ErrorKind kind, const std::string& what) -> Result<void> {
    if (refused.empty()) return {};
    if (!ao.skipRefused)
      return fail(kind, what + describePoints(refused) + ": " + refused.front().reason,
                  "leave those addresses out (AttachOptions::skipRefused does it), or choose other instructions");
    std::set<std::pair<uint64_t, uint64_t>> bad;
    for (const auto& r : refused) bad.insert({r.point.fileOffset, cookieFor(r.point)});
    std::erase_if(points, [&](const AttachPoint& p) { return bad.count({p.fileOffset, cookieFor(p)}) > 0; });
    for (auto& r : refused) stats.refused.push_back(std::move(r));
    if (points.empty())
      return fail(kind, "attach: every address in " + shownPath(path) + " was refused; the first: " + stats.refused.front().reason);
    return {};
  };

  if (ao.checkHazards) {
    auto hz = scanHazards(path, points);
    if (!hz) return hz.failure();
    if (auto r = leaveOut(std::move(*hz), ErrorKind::Usage, "attach: refusing to probe " + shownPath(path) + " at "); !r)
      return r.failure();
  }

  bool useMulti = I.multiLoaded && (pid == 0 || I.feat.uprobeMultiPidFilter || !I.perfLoaded);
  Attachment a;
  a.path = path;
  a.pid = pid;
  stats.uprobeMulti = useMulti;

  if (useMulti) {
    auto build = [&](std::vector<uint64_t>& offsets, std::vector<uint64_t>& cookies) {
      offsets.clear();
      cookies.clear();
      for (const AttachPoint& p : points) {
        offsets.push_back(p.fileOffset);
        cookies.push_back(cookieFor(p));
      }
    };
    std::vector<uint64_t> offsets, cookies;
    build(offsets, cookies);
    int err = 0;
    auto t0 = Clock::now();
    auto link = UprobeMultiLink::attach(I.multiFd(), path, pid, offsets, cookies, &err, I.holder);
    stats.attachMs = msSince(t0);
    if (!link && err && !wholeLinkError(err) && ao.findRefused && points.size() > 1) {
      bool complete = true;
      auto tb = Clock::now();
      std::vector<size_t> found = I.findRefused(path, pid, offsets, complete);
      spdlog::debug("bpf: the search found {} refused offset(s) in {:.1f} ms", found.size(), msSince(tb));
      if (!found.empty()) {
        std::vector<RefusedPoint> refused;
        for (size_t i : found) refused.push_back({points[i], describeUprobeErrno(err)});
        std::string head = link.error().message + "; the kernel refuses file offset(s) ";
        if (!complete) head = link.error().message + "; (search stopped early) the kernel refuses file offset(s) ";
        if (auto r = leaveOut(std::move(refused), ErrorKind::External, head); !r) return r.failure();
        build(offsets, cookies);
        auto t1 = Clock::now();
        link = UprobeMultiLink::attach(I.multiFd(), path, pid, offsets, cookies, &err, I.holder);
        stats.attachMs = msSince(t1);
      }
    }
    if (!link) return link.failure();
    a.multi = std::move(*link);
    stats.links = 1;
    stats.points = a.multi->size();
  } else {
    auto t0 = Clock::now();
    a.perf.reserve(points.size());
    for (const AttachPoint& p : points) {
      int err = 0;
      auto l = PerfUprobeLink::attach(I.perfFd(), I.feat.uprobePmuType, path, p.fileOffset, pid,
                                      cookieFor(p), &err);
      if (!l) {
        if (ao.skipRefused && err && !wholeLinkError(err)) {
          stats.refused.push_back({p, l.error().message});
          continue;
        }
        return l.failure();  // the links made so far are closed by `a`
      }
      a.perf.push_back(std::move(*l));
    }
    stats.attachMs = msSince(t0);
    stats.links = a.perf.size();
    stats.points = a.perf.size();
    if (a.perf.empty()) return fail(ErrorKind::External, "attach: the kernel refused every address in " + shownPath(path));
  }
  a.points = stats.points;
  a.attached = std::move(points);
  if (!stats.refused.empty() && !useMulti)  // perf links: the refused ones were skipped one by one
    std::erase_if(a.attached, [&](const AttachPoint& p) {
      return std::any_of(stats.refused.begin(), stats.refused.end(), [&](const RefusedPoint& r) {
        return r.point.fileOffset == p.fileOffset && cookieFor(r.point) == cookieFor(p);
      });
    });
  stats.id = I.nextAttachment++;
  spdlog::debug("bpf: attached {} address(es) of {} (pid {}) with {} in {:.2f} ms", stats.points, shownPath(path), pid,
                stats.uprobeMulti ? "uprobe_multi" : "perf-event uprobes", stats.attachMs);
  I.attachments.emplace(stats.id, std::move(a));
  return stats;
}

namespace {
// Closing a perf-event uprobe waits for RCU grace periods under the kernel's
// event_mutex (~100 ms each here): closing on several threads measured no
// faster (7 probes: 716 ms serial, 688 ms on 7 threads). uprobe_multi links
// do not have this cost.
void closeAttachment(Attachment& a) {
  if (a.multi) a.multi->detach();
  a.perf.clear();
}

// Links of the session's LinkHolder are released by the holder
// (link_holder.hpp); what follows is the path without one.
// Closing the last reference to a uprobe_multi link unregisters its uprobes
// in the closing task. If that task has a fatal signal pending — goscope
// SIGKILLed while it detaches — the kernel's walk of the target's pages fails
// with EINTR and it leaks the uprobe: the int3 stays in the target for good
// (dmesg: "failed to unregister, leaking uprobe"; 954 of 1,125 probes in
// tests/runtime/test_kill_safety.cpp). So the last reference is dropped by a
// short-lived child that goscope's SIGKILL does not reach: it holds copies of
// the link fds, goscope closes its own (which only drops references), then
// the child exits, which drops its copies, while goscope waits for it. A killed
// goscope exiting with its links open is safe by itself: the kernel clears
// the pending SIGKILL before exit closes the fds. Async-signal-safe in the
// child (fork of a possibly threaded process): system calls only.
void closeAttachmentsOffProcess(std::map<AttachmentId, Attachment>& attachments, const std::vector<AttachmentId>& ids) {
  std::vector<int> linkFds;
  for (auto id : ids)
    if (auto it = attachments.find(id);
        it != attachments.end() && it->second.multi && it->second.multi->attached() && it->second.multi->fd() >= 0)
      linkFds.push_back(it->second.multi->fd());  // (links of a holder: it releases them, see link_holder.hpp)
  int go[2] = {-1, -1};
  pid_t child = -1;
  if (!linkFds.empty() && ::pipe2(go, O_CLOEXEC) == 0) child = ::fork();
  if (child == 0) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::sigaction(sig, &ign, nullptr);
    ::setpgid(0, 0);  // out of the terminal's foreground group: Ctrl-C is for goscope
    ::close(go[1]);
    char c;
    while (::read(go[0], &c, 1) < 0 && errno == EINTR) {
    }  // EOF: goscope closed its copies (or died)
    ::_exit(0);  // the last references go in this exit, never in a close(2) (docs/kernel.md)
  }
  for (auto id : ids)
    if (auto it = attachments.find(id); it != attachments.end()) closeAttachment(it->second);
  if (child < 0) {  // no child (or nothing to hand over): closed here, as before
    if (go[0] >= 0) ::close(go[0]);
    if (go[1] >= 0) ::close(go[1]);
    return;
  }
  ::close(go[0]);
  ::close(go[1]);
  int status;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
}
}  // namespace

DetachStats Engine::detach(AttachmentId id) {
  DetachStats d;
  auto it = impl_->attachments.find(id);
  if (it == impl_->attachments.end()) return d;
  auto t0 = Clock::now();
  Attachment& a = it->second;
  d.points = a.points;
  d.links = a.multi ? 1 : a.perf.size();
  closeAttachmentsOffProcess(impl_->attachments, {id});  // closing the links detaches
  impl_->attachments.erase(it);
  d.detachMs = msSince(t0);
  return d;
}

DetachStats Engine::detachAll() {
  DetachStats d;
  auto t0 = Clock::now();
  std::vector<AttachmentId> ids;
  for (auto& [id, a] : impl_->attachments) {
    d.points += a.points;
    d.links += a.multi ? 1 : a.perf.size();
    ids.push_back(id);
  }
  closeAttachmentsOffProcess(impl_->attachments, ids);
  impl_->attachments.clear();
  d.detachMs = msSince(t0);
  return d;
}

std::optional<uint64_t> Engine::programRunNs() const {
  const Impl& I = *impl_;
  if (I.statsFd < 0) return std::nullopt;
  uint64_t total = 0;
  for (int fd : {I.multiLoaded ? I.multiFd() : -1, I.perfLoaded ? I.perfFd() : -1}) {
    if (fd < 0) continue;
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) return std::nullopt;
    total += info.run_time_ns;
  }
  return total >= I.programRunBase ? total - I.programRunBase : 0;
}

uint8_t Engine::activeGeneration() const { return static_cast<uint8_t>(impl_->skel->bss->active_gen); }

Result<DetachStats> Engine::detachPoints(const std::function<bool(const AttachPoint&)>& drop) {
  Impl& I = *impl_;
  DetachStats d;
  auto t0 = Clock::now();
  const uint8_t next = activeGeneration() ? 0 : 1;
  // 1. The replacements, in the other generation: attached but not counting.
  std::vector<std::pair<AttachmentId, std::vector<AttachPoint>>> plans;
  for (auto& [id, a] : I.attachments) {
    std::vector<AttachPoint> keep;
    for (AttachPoint p : a.attached)
      if (!drop(p)) {
        p.generation = next;
        keep.push_back(p);
      }
    d.points += a.attached.size() - keep.size();
    plans.push_back({id, std::move(keep)});
  }
  if (d.points == 0) return d;
  std::vector<AttachmentId> old;
  std::vector<AttachmentId> added;
  for (auto& [id, keep] : plans) {
    old.push_back(id);
    if (keep.empty()) continue;
    const Attachment& a = I.attachments.at(id);
    auto stats = attach(a.path, a.pid, keep, AttachOptions{.checkHazards = false, .findRefused = false});
    if (!stats) {
      for (auto n : added) detach(n);  // nothing changed: the old links still count
      return stats.failure();
    }
    added.push_back(stats->id);
  }
  // 2. One write: from now on the new links count and the old ones do not.
  I.skel->bss->active_gen = next;
  __sync_synchronize();
  // 3. The old links go.
  for (auto id : old) {
    auto s = detach(id);
    d.links += s.links;
  }
  d.detachMs = msSince(t0);
  return d;
}

std::optional<std::string> Engine::linksLost() const {
  if (!impl_->holder || !impl_->holder->lost()) return std::nullopt;
  return "the link holder (pid " + std::to_string(impl_->holder->pid()) +
         ") died: the kernel removed every probe, so the session ended early";
}

pid_t Engine::linkHolderPid() const { return impl_->holder ? impl_->holder->pid() : -1; }

size_t Engine::attachedPoints() const {
  size_t n = 0;
  for (auto& [id, a] : impl_->attachments) n += a.points;
  return n;
}

std::vector<AttachPoint> Engine::attachedPointList() const {
  std::vector<AttachPoint> out;
  for (auto& [id, a] : impl_->attachments) out.insert(out.end(), a.attached.begin(), a.attached.end());
  return out;
}

Result<uint64_t> Engine::count(uint32_t probeId) const {
  if (probeId >= impl_->opt.maxProbes) return fail(ErrorKind::Usage, "probe id " + std::to_string(probeId) + " out of range");
  auto v = impl_->rawCount(probeId);
  if (!v) return v.failure();
  return *v - std::min(*v, impl_->base(probeId));
}

Result<std::vector<uint64_t>> Engine::filteredCounts() const {
  const Impl& I = *impl_;
  std::vector<uint64_t> out;
  if (I.highestProbe < 0) return out;
  const uint32_t n = static_cast<uint32_t>(I.highestProbe + 1);
  out.assign(n, 0);
  std::vector<gs_count_block> perCpu(static_cast<size_t>(I.ncpus));
  for (uint32_t blk = 0; blk * GS_COUNTS_PER_BLOCK < n; blk++) {
    if (bpf_map_lookup_elem(bpf_map__fd(I.skel->maps.filtered_counts), &blk, perCpu.data()) != 0)
      return fail(ErrorKind::Internal, std::string("reading filtered_counts: ") + std::strerror(errno));
    for (uint32_t k = 0; k < GS_COUNTS_PER_BLOCK && blk * GS_COUNTS_PER_BLOCK + k < n; k++)
      for (const auto& b : perCpu) out[blk * GS_COUNTS_PER_BLOCK + k] += b.c[k];
  }
  return out;
}

Result<std::vector<uint64_t>> Engine::counts() const {
  const Impl& I = *impl_;
  std::vector<uint64_t> out;
  if (I.highestProbe < 0) return out;
  uint32_t n = static_cast<uint32_t>(I.highestProbe + 1);
  uint32_t blocks = (n + GS_COUNTS_PER_BLOCK - 1) / GS_COUNTS_PER_BLOCK;
  out.assign(n, 0);
  int fd = bpf_map__fd(I.skel->maps.counts);
  const size_t ncpus = static_cast<size_t>(I.ncpus);
  std::vector<uint32_t> keys(blocks);
  std::vector<gs_count_block> values(static_cast<size_t>(blocks) * ncpus);
  auto add = [&](uint32_t blk, const gs_count_block* perCpu) {
    for (uint32_t k = 0; k < GS_COUNTS_PER_BLOCK; k++) {
      uint64_t id = static_cast<uint64_t>(blk) * GS_COUNTS_PER_BLOCK + k;
      if (id >= n) break;
      uint64_t s = 0;
      for (size_t c = 0; c < ncpus; c++) s += perCpu[c].c[k];
      out[id] = s;
    }
  };
  uint32_t got = blocks;
  uint32_t outBatch = 0;
  LIBBPF_OPTS(bpf_map_batch_opts, bo);
  int err = bpf_map_lookup_batch(fd, nullptr, &outBatch, keys.data(), values.data(), &got, &bo);
  if (err == 0 || (errno == ENOENT && got == blocks)) {
    for (uint32_t i = 0; i < got; i++)
      if (keys[i] < blocks) add(keys[i], &values[static_cast<size_t>(i) * ncpus]);
  } else {
    // No batch operations (old kernel): one lookup per block.
    for (uint32_t b = 0; b < blocks; b++) {
      if (bpf_map_lookup_elem(fd, &b, &values[static_cast<size_t>(b) * ncpus]) != 0)
        return fail(ErrorKind::Internal, std::string("reading counts: ") + std::strerror(errno));
      add(b, &values[static_cast<size_t>(b) * ncpus]);
    }
  }
  for (uint32_t id = 0; id < n; id++) out[id] -= std::min(out[id], I.base(id));
  return out;
}

Result<LatencyStats> Engine::latency(uint32_t probeId) const {
  auto it = impl_->probes.find(probeId);
  if (it == impl_->probes.end() || !it->second.latSlot)
    return fail(ErrorKind::Usage, "probe " + std::to_string(probeId) + " was not configured with latency");
  auto k = std::make_unique<gs_lat_stats>();
  uint32_t slot = *it->second.latSlot;
  if (bpf_map_lookup_elem(bpf_map__fd(impl_->skel->maps.lat_stats), &slot, k.get()) != 0)
    return fail(ErrorKind::Internal, std::string("reading latency stats: ") + std::strerror(errno));
  return LatencyStats::fromKernel(*k);
}

Result<uint64_t> Engine::mismatches(uint32_t probeId) const {
  auto l = latency(probeId);
  if (!l) return l.failure();
  return l->mismatches;
}

Result<GlobalReading> Engine::globalValue(uint32_t probeId) const {
  if (probeId >= impl_->opt.maxProbes) return fail(ErrorKind::Usage, "probe id " + std::to_string(probeId) + " out of range");
  gs_global_value v{};
  if (bpf_map_lookup_elem(bpf_map__fd(impl_->skel->maps.globals), &probeId, &v) != 0)
    return fail(ErrorKind::Internal, std::string("reading a global value: ") + std::strerror(errno));
  GlobalReading g;
  g.value = v.value;
  g.tsNs = v.ts_ns;
  g.errnoValue = v.err < 0 ? static_cast<int>(-v.err) : static_cast<int>(v.err);
  return g;
}

namespace {

using StackKeyTuple = std::tuple<uint32_t, uint32_t, uint64_t, uint64_t>;
StackKeyTuple tupleOf(const gs_stack_key& k) { return {k.probe_id, k.recorded, k.stack_hash, k.ret_addr}; }

// Every key of a hash map, read before any is deleted (deleting while
// walking with get_next_key restarts the walk).
template <class Key>
std::vector<Key> keysOf(int fd) {
  std::vector<Key> keys;
  Key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    keys.push_back(next);
    key = next;
    prev = &key;
  }
  return keys;
}

constexpr uint32_t kDrainBatch = 4096;
// What goscope keeps of drained stacks: 8 M frames (64 MB of addresses,
// about what the kernel's own stack map holds when full; the folded lines
// made of them take several times that). Past it the
// kernel's maps are left to fill, and what finds no room is counted as
// lost, as without draining: a program of ever new deep stacks (a type
// checker) would otherwise take gigabytes.
constexpr uint64_t kMaxDrainedFrames = 8u << 20;

// Takes every entry out of a hash map, kDrainBatch at a time, into `keys`
// and `values` (room for kDrainBatch each), handing each batch to `take`.
// False when the kernel has no batch operation for it (nothing was taken).
// Stops between batches once the session's end is due (endPending: a stop
// signal, or -d's end), setting *cut: a full map takes a few hundred
// milliseconds on a loaded machine, and the detach must not wait for it.
// What is left stays in the map, where stackCounts() reads it.
template <class Take>
bool drainBatches(int fd, void* keys, void* values, const Take& take, bool* cut) {
  uint32_t cursor = 0;
  bool first = true;
  for (;;) {
    if (!first && endPending()) {
      *cut = true;
      return true;
    }
    uint32_t n = kDrainBatch;
    const int r = bpf_map_lookup_and_delete_batch(fd, first ? nullptr : &cursor, &cursor, keys, values, &n, nullptr);
    const int err = r == 0 ? 0 : errno;
    if (r != 0 && err != ENOENT) {
      if (first && n == 0 && (err == EINVAL || err == ENOTSUP || err == EOPNOTSUPP)) return false;
      spdlog::debug("stacks: draining a map stopped: {}", std::strerror(err));
      if (n > 0) take(n);
      return true;
    }
    first = false;
    if (n > 0) take(n);
    if (err == ENOENT) return true;  // the last batch
  }
}

}  // namespace

Result<void> Engine::waitForProgramsInFlight() const {
  // An update of a map-in-map's slot returns after synchronize_rcu(), which
  // waits for every non-sleepable BPF program running (docs/kernel.md,
  // "Stacks"). The kernel's own selftests use it the same way.
  const uint32_t zero = 0;
  const int inner = bpf_map__fd(impl_->skel->maps.rcu_barrier_inner);
  if (bpf_map_update_elem(bpf_map__fd(impl_->skel->maps.rcu_barrier), &zero, &inner, BPF_ANY) != 0)
    return fail(ErrorKind::Internal, std::string("waiting for the BPF programs in flight: ") + std::strerror(errno));
  return {};
}

Result<bool> Engine::drainStacks(bool onlyIfFilling) {
  Impl& I = *impl_;
  if (I.opt.stackTraceEntries == 0) return false;
  const int sfd = bpf_map__fd(I.skel->maps.stacks);
  if (onlyIfFilling) {
    const EngineStats s = stats();
    const uint64_t stacksIn = s.stacksStored > I.drainedStacks ? s.stacksStored - I.drainedStacks : 0;
    const uint64_t keysIn = s.stackKeys > I.drainedKeys ? s.stackKeys - I.drainedKeys : 0;
    if (stacksIn < bpf_map__max_entries(I.skel->maps.stacks) / 2 &&
        keysIn < bpf_map__max_entries(I.skel->maps.stack_counts) / 2)
      return false;
  }
  if (I.drainedFrameCount >= kMaxDrainedFrames) {
    spdlog::debug("stacks: {} kept ({} frames), no more drained", I.drainedFrames.size(), I.drainedFrameCount);
    // Why later hits go to [lost]: the count says how many, this says why.
    if (!I.drainBoundSaid)
      notify(std::to_string(I.drainedFrames.size()) + " distinct stacks kept, " +
             std::to_string(I.drainedFrameCount >> 20) + " M frames, past goscope's memory bound of " +
             std::to_string(kMaxDrainedFrames >> 20) +
             " M for them: from now on a stack that finds the kernel's maps full is counted as not recorded");
    I.drainBoundSaid = true;
    return false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t keys0 = I.drainedKeys, stacks0 = I.drainedStacks;
  // The probes move to the other counts map, and the one they leave is
  // emptied once no program can be in it: a program holds a pointer to
  // its entry between its lookup and its increment, and an entry deleted
  // in that window took the increment with it. Where the wait cannot be
  // had nothing is drained: both maps keep their counts (stackCounts reads
  // both), and a stack that finds them full is counted as not recorded,
  // which the session says, rather than a hit lost without a word.
  const uint32_t side = __atomic_load_n(&I.skel->bss->counts_side, __ATOMIC_RELAXED);
  __atomic_store_n(&I.skel->bss->counts_side, side ? 0u : 1u, __ATOMIC_SEQ_CST);
  if (auto w = waitForProgramsInFlight(); !w) {
    if (!I.drainRefusalSaid)
      notify("stacks are not drained while the session runs (" + w.error().message +
             "): what does not fit the kernel's maps is counted as not recorded");
    I.drainRefusalSaid = true;
    return false;
  }
  const double waitMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int cfd = bpf_map__fd(side ? I.skel->maps.stack_counts_b : I.skel->maps.stack_counts);
  // The counts first, then the frames: a count taken here names a stack
  // that is still in "stacks" (a probe stores the frames before it counts
  // them), and is read below before it is deleted. A hit whose frames are
  // deleted between its check and its count is counted under a hash whose
  // frames are kept here.
  // In batches of a few thousand (BPF_MAP_LOOKUP_AND_DELETE_BATCH): one
  // call per entry took over a second for a full map on a loaded machine,
  // while new stacks found no room.
  std::vector<gs_stack_key> ckeys(kDrainBatch);
  std::vector<uint64_t> cvals(kDrainBatch);
  auto takeCounts = [&](size_t n) {
    for (size_t k = 0; k < n; k++) I.drainedCounts[tupleOf(ckeys[k])] += cvals[k];
    I.drainedKeys += n;
  };
  bool cut = false;
  if (!drainBatches(cfd, ckeys.data(), cvals.data(), takeCounts, &cut)) {
    for (const gs_stack_key& k : keysOf<gs_stack_key>(cfd)) {  // a kernel without batches for hash maps
      if (bpf_map_lookup_and_delete_elem(cfd, &k, cvals.data()) != 0) continue;
      ckeys[0] = k;
      takeCounts(1);
    }
  }
  std::vector<uint64_t> skeys(kDrainBatch);
  std::vector<gs_stack_frames> svals(kDrainBatch);
  auto takeFrames = [&](size_t n) {
    for (size_t k = 0; k < n; k++) {
      if (I.drainedFrames.count(skeys[k])) continue;
      const gs_stack_frames& st = svals[k];
      size_t depth = GS_MAX_STACK_DEPTH;
      while (depth > 0 && st.frames[depth - 1] == 0) depth--;
      I.drainedFrames.emplace(skeys[k], std::vector<uint64_t>(st.frames, st.frames + depth));
      I.drainedFrameCount += depth;
    }
    I.drainedStacks += n;
  };
  if (!cut && !drainBatches(sfd, skeys.data(), svals.data(), takeFrames, &cut)) {
    for (uint64_t h : keysOf<uint64_t>(sfd)) {
      if (bpf_map_lookup_and_delete_elem(sfd, &h, svals.data()) != 0) continue;
      skeys[0] = h;
      takeFrames(1);
    }
  }
  spdlog::debug("stacks: drained {} counts and {} stacks in {:.1f} ms, {:.1f} of them waiting for the programs in "
                "flight ({} stacks kept){}",
                I.drainedKeys - keys0, I.drainedStacks - stacks0,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), waitMs,
                I.drainedFrames.size(), cut ? "; cut short: the session's end is due" : "");
  return true;
}

Result<std::vector<StackCount>> Engine::stackCounts() const {
  const Impl& I = *impl_;
  std::vector<StackCount> out;
  int sfd = bpf_map__fd(I.skel->maps.stacks);
  // What drainStacks() took out, and what the kernel holds now (in the
  // counts map the probes use; the other one is empty after a whole drain,
  // and holds what a drain cut short or refused left).
  std::map<StackKeyTuple, uint64_t> counts = I.drainedCounts;
  for (const bpf_map* m : {I.skel->maps.stack_counts, I.skel->maps.stack_counts_b}) {
    const int cfd = bpf_map__fd(m);
    for (const gs_stack_key& k : keysOf<gs_stack_key>(cfd)) {
      uint64_t c = 0;
      if (bpf_map_lookup_elem(cfd, &k, &c) == 0) counts[tupleOf(k)] += c;  // else deleted meanwhile
    }
  }
  // Frames of the stacks still in the kernel, each read once (many keys
  // share a stack); drained ones are used where they are, not copied.
  std::unordered_map<uint64_t, std::vector<uint64_t>> live;
  gs_stack_frames st{};
  const std::vector<uint64_t> none;
  for (const auto& [key, count] : counts) {
    const auto& [probeId, recorded, hash, retAddr] = key;
    StackCount sc;
    sc.probeId = probeId;
    sc.count = count;
    if (recorded) {
      const std::vector<uint64_t>* frames = &none;
      if (auto d = I.drainedFrames.find(hash); d != I.drainedFrames.end()) {
        frames = &d->second;
      } else {
        auto it = live.find(hash);
        if (it == live.end()) {
          std::vector<uint64_t> read;
          if (bpf_map_lookup_elem(sfd, &hash, &st) == 0) read.assign(std::begin(st.frames), std::end(st.frames));
          it = live.emplace(hash, std::move(read)).first;
        }
        frames = &it->second;
      }
      if (!frames->empty()) {
        sc.recorded = true;
        sc.caller = retAddr;
        sc.frames = completeStack(*frames, retAddr);
        sc.cut = stackIsCut(*frames);
      }
    }
    out.push_back(std::move(sc));
  }
  return out;
}

EngineStats Engine::stats() const {
  EngineStats s;
  auto get = [&](uint32_t k) -> uint64_t {
    auto v = impl_->sumPerCpu(impl_->skel->maps.stats, k);
    return v ? *v : 0;
  };
  s.hits = get(GS_STAT_HITS);
  s.events = get(GS_STAT_EVENTS);
  s.lostRingFull = get(GS_STAT_LOST);
  s.lostBusy = get(GS_STAT_BUSY);
  s.morestack = get(GS_STAT_MORESTACK);
  s.noConfig = get(GS_STAT_NO_CONFIG);
  s.readErrors = get(GS_STAT_READ_ERRORS);
  s.mismatches = get(GS_STAT_MISMATCHES);
  s.sampledOut = get(GS_STAT_SAMPLED_OUT);
  s.foreignCalls = get(GS_STAT_FOREIGN);
  s.filteredOut = get(GS_STAT_FILTERED_OUT);
  s.stacksUncounted = get(GS_STAT_STACKS_UNCOUNTED);
  s.stacksStored = get(GS_STAT_STACKS_STORED);
  s.stackKeys = get(GS_STAT_STACK_KEYS);
  s.stacksDrained = impl_->drainedStacks;
  s.stackKeysDrained = impl_->drainedKeys;
  return s;
}

Result<void> Engine::resetStats() {
  Impl& I = *impl_;
  const std::vector<uint64_t> zeros(static_cast<size_t>(I.ncpus), 0);
  for (uint32_t k = 0; k < GS_STAT_COUNT; k++)
    if (bpf_map_update_elem(I.fd(I.skel->maps.stats), &k, zeros.data(), BPF_ANY) != 0)
      return fail(ErrorKind::Internal, "resetting stats[" + std::to_string(k) + "]: " + std::strerror(errno));
  I.drainedStacks = I.drainedKeys = 0;  // measured against the counters just zeroed
  // The kernel's run time cannot be zeroed: from now on it is read from here.
  I.programRunBase = 0;
  if (auto ns = programRunNs()) I.programRunBase = *ns;
  return {};
}

Result<size_t> Engine::poll(int timeoutMs, const EventCallback& onEvent) {
  Impl& I = *impl_;
  I.callback = &onEvent;
  I.callbackError.reset();
  struct Reset {
    Impl& i;
    ~Reset() { i.callback = nullptr; }
  } reset{I};

  size_t total = 0;
  I.pollDelivered = 0;
  I.pollCut = false;
  I.pollDeadline = Clock::now() + std::chrono::milliseconds(std::max(timeoutMs, 0) + kPollBudgetMs);
  auto drain = [&]() -> Result<void> {
    int n = ring_buffer__consume(I.rb);
    if (I.callbackError) return fail(*I.callbackError);
    if (n < 0 && !I.pollCut) return fail(ErrorKind::Internal, std::string("reading events: ") + std::strerror(-n));
    total = I.pollDelivered;
    return {};
  };
  // Records written with BPF_RB_NO_WAKEUP wait without waking anyone: look first.
  if (auto r = drain(); !r) return r.failure();
  if (I.pollCut) return total;
  if (total || timeoutMs == 0) return total;

  auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs < 0 ? 0 : timeoutMs);
  for (;;) {
    int wait = I.opt.maxPollDelayMs > 0 ? I.opt.maxPollDelayMs : 50;
    if (timeoutMs > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return total;
      wait = static_cast<int>(std::min<long long>(wait, left));
    }
    int n = ring_buffer__poll(I.rb, wait);
    if (I.callbackError) return fail(*I.callbackError);
    if (n == -EINTR) return I.pollDelivered;
    if (n < 0 && !I.pollCut) return fail(ErrorKind::Internal, std::string("waiting for events: ") + std::strerror(-n));
    total = I.pollDelivered;
    if (I.pollCut) return total;
    if (auto r = drain(); !r) return r.failure();
    if (total) return total;
  }
}

int Engine::eventFd() const { return ring_buffer__epoll_fd(impl_->rb); }

}  // namespace goscope::bpf
