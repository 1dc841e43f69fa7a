#include "backend/delve/delve_session.hpp"
#include "binary/elf_file.hpp"
#include "process/exe_text.hpp"
#include "process/process.hpp"
#include "process/run_state.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "backend/delve/dlv_startup.hpp"
#include "backend/delve/pending_signals.hpp"
#include "process/thread_tracers.hpp"
#include "process/proc_stat.hpp"

namespace goscope::delve {

using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

Millis left(Clock::time_point deadline) {
  auto l = std::chrono::duration_cast<Millis>(deadline - Clock::now());
  return l.count() > 0 ? l : Millis(1);
}


// What tells one program image from the next in the same process: the
// executable's device and inode, and where its code starts (/proc/PID/stat
// field 26, startcode: an exec of the same PIE file moves it). Empty when
// the process is gone.
std::string imageIdentity(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  struct stat st{};
  if (::stat((dir + "/exe").c_str(), &st) != 0) return {};
  const auto stat = readProcStat(pid);
  if (!stat) return {};
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + stat->field(26);
}

// One byte of the target's memory, through /proc/PID/mem.
std::optional<uint8_t> readByte(pid_t pid, uint64_t addr) {
  int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  uint8_t b = 0;
  ssize_t n = ::pread(fd, &b, 1, static_cast<off_t>(addr));
  ::close(fd);
  if (n != 1) return std::nullopt;
  return b;
}

std::string exePath(pid_t pid) {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  return ec ? std::string("?") : p.string();
}

// The target runs another executable than the one goscope analysed (an exec
// since): the refusal, which dlv's attach must end with; none otherwise.
std::optional<Error> replacedSinceAnalysis(pid_t pid, const FileIdentity& program) {
  struct stat st {};
  if (program.ino == 0 || ::stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &st) != 0 ||
      FileIdentity::of(st).sameFile(program))
    return std::nullopt;
  return Error{ErrorKind::TargetGone,
               "PID " + std::to_string(pid) + " replaced its program before the probes were attached (exec of " +
                   exePath(pid) + "; " + describeChange(program, FileIdentity::of(st)) + "); dlv let it go, nothing was set",
               "run goscope again to probe the program it runs now"};
}

}  // namespace

std::string describeRelease(pid_t pid, const ReleaseReport& r) {
  std::string s = "dlv died holding PID " + std::to_string(pid) + "; goscope's sentinel";
  if (r.execed) return s + " wrote nothing (the process runs another program now)";
  if (r.gone) return s + " found it gone";
  std::vector<std::string> did;
  if (r.bytesFound > 0) did.push_back("restored " + std::to_string(r.bytesRestored) + " of " + std::to_string(r.bytesFound) + " breakpoint bytes");
  // Not "had not collected": that names the SIGTRAP stops counted below; these
  // are deliveries the kernel began once dlv was gone.
  if (r.framesUndone > 0)
    did.push_back("undid " + std::to_string(r.framesUndone) +
                  " SIGTRAP delivery(ies) begun as dlv died (a signal frame, before the handler ran)");
  if (r.rewound > 0) did.push_back("moved " + std::to_string(r.rewound) + " thread(s) back onto their breakpoint");
  if (r.stepFlagsCleared > 0) did.push_back("cleared " + std::to_string(r.stepFlagsCleared) + " single-step flag(s)");
  if (r.trapsDrained > 0) did.push_back("discarded " + std::to_string(r.trapsDrained) + " pending SIGTRAP(s)");
  if (r.resumed) did.push_back("resumed it");
  if (did.empty()) did.push_back("found nothing to undo");
  for (size_t i = 0; i < did.size(); ++i) s += (i == 0 ? " " : i + 1 == did.size() ? " and " : ", ") + did[i];
  if (r.ambiguous > 0) s += "; " + std::to_string(r.ambiguous) + " thread(s) just past a one-byte instruction were left as they were";
  if (r.unreleased > 0) s += "; " + std::to_string(r.unreleased) + " thread(s) could not be examined";
  s += " (" + std::to_string(r.threads) + " threads: " + std::to_string(r.tracedStops) + " in ptrace stops, " +
       std::to_string(r.trapStops) + " in a SIGTRAP stop dlv had not collected; " + std::to_string(r.examined) + " examined)";
  if (r.trapStops > 0)
    spdlog::debug("delve: the SIGTRAP thread was found at {:#x} (signal {} in a frame there); {} handler address(es) known",
                  r.trapThreadPc, r.trapFrameSigno, r.handlers);
  return s;
}

const char* stateName(SessionState s) {
  switch (s) {
    case SessionState::Stopped: return "stopped";
    case SessionState::Running: return "running";
    case SessionState::Detached: return "detached";
    case SessionState::Dead: return "dead";
  }
  return "?";
}

std::vector<BreakpointHit> hitsOf(const rpc::DebuggerState& state) {
  std::vector<BreakpointHit> hits;
  for (const auto& t : state.threads) {
    if (!t.breakpoint || t.breakpoint->id <= 0) continue;  // ids < 0 are Delve's own
    BreakpointHit h;
    h.breakpointId = t.breakpoint->id;
    h.goroutineId = t.goroutineID;
    h.threadId = t.id;
    h.function = t.function ? t.function->name : t.breakpoint->functionName;
    h.file = t.file;
    h.line = t.line;
    if (t.breakpointInfo) h.captured = *t.breakpointInfo;
    hits.push_back(std::move(h));
  }
  return hits;
}

// ---- attach ----

Result<std::unique_ptr<DelveSession>> DelveSession::attach(pid_t pid, const DelveOptions& options) {
  DelveTimings earlier;  // of the attempts let go: the target paid for them too
  // Said when every attempt raced the target's threads.
  auto refusal = [pid](const std::string& last) {
    return fail(ErrorKind::External,
                "dlv could not hold every thread of PID " + std::to_string(pid) + " in " +
                    std::to_string(kAttachAttempts) + " attempts (threads start or end while it attaches; the last: " +
                    last + "): an untraced thread would run into Delve's breakpoints with no debugger to catch it, "
                    "so nothing was set and the process was let go",
                "the process starts and ends threads faster than dlv attaches to them; the BPF path (goscope "
                "count/latency/trace, or --strategy bpf) does not attach to threads");
  };
  for (int attempt = 1;; ++attempt) {
    ThreadHold missed;
    auto s = attachOnce(pid, options, missed);
    if (!s && threadEndedWhileAttaching(s.error())) {
      spdlog::debug("delve: attempt {}: {}", attempt, s.error().message);
      if (attempt == kAttachAttempts) return refusal("dlv " + s.error().message.substr(s.error().message.find(": ") + 2));
      continue;
    }
    if (!s) return s;
    if (missed.allHeld()) {
      (*s)->timings_.attachMs += earlier.attachMs + earlier.detachMs;
      (*s)->timings_.stoppedMs += earlier.stoppedMs;
      return s;
    }
    std::string which;
    for (size_t i = 0; i < missed.untraced.size() && i < 8; ++i) which += (i ? ", " : "") + std::to_string(missed.untraced[i]);
    if (missed.untraced.size() > 8) which += ", ...";
    which = missed.untraced.empty() ? "threads started or ended after it attached"
                                    : std::to_string(missed.untraced.size()) + " thread(s) untraced (" + which + ")";
    auto let = (*s)->detach();
    const DelveTimings t = (*s)->timings();
    earlier.attachMs += t.attachMs;
    earlier.detachMs += t.detachMs;
    earlier.stoppedMs += t.stoppedMs;
    s->reset();
    if (!let) return let.failure();
    spdlog::debug("delve: attempt {}: dlv attached to PID {} with {}; let go with nothing set", attempt, pid, which);
    if (attempt == kAttachAttempts) return refusal(which);
  }
}

Result<std::unique_ptr<DelveSession>> DelveSession::attachOnce(pid_t pid, const DelveOptions& options,
                                                                ThreadHold& missed) {
  for (const auto& a : options.extraArgs) {
    // Multiclient leaves a halted target stopped when goscope dies; --continue
    // needs multiclient. Both defeat the guards above.
    if (a.starts_with("--accept-multiclient") || a.starts_with("--continue") || a.starts_with("--headless")) {
      return fail(ErrorKind::Usage, "refusing dlv option " + a + ": goscope runs dlv single-client and headless");
    }
    // The API port can stop, read and write the target: it stays on
    // loopback, for goscope's own user only (docs/security.md).
    if (a.starts_with("--listen") || a.starts_with("-l") || a.starts_with("--only-same-user")) {
      return fail(ErrorKind::Usage, "refusing dlv option " + a +
                                        ": dlv's API port stays on 127.0.0.1 and refuses other users (docs/security.md)");
    }
    // goscope learns the port from dlv's "API server listening at" line and
    // claims it at once: an option that moves that line elsewhere left the
    // target frozen while goscope waited, with the port open to any local
    // root client. --init runs dlv commands goscope does not see.
    if (a.starts_with("--log-dest") || a.starts_with("--init")) {
      return fail(ErrorKind::Usage, "refusing dlv option " + a +
                                        ": goscope reads dlv's port line and drives dlv alone (docs/security.md)");
    }
  }
  if (pid <= 0 || !processIsAlive(pid)) return fail(ErrorKind::NotFound, "no process " + std::to_string(pid));
  auto path = DlvProcess::locate(options.dlvPath);
  if (!path) return path.failure();

  std::unique_ptr<DelveSession> s(new DelveSession());
  s->pid_ = pid;
  s->options_ = options;
  std::vector<std::string> args = {"attach", std::to_string(pid), "--headless", "--api-version=2",
                                   "--listen=127.0.0.1:0", "--only-same-user=true"};
  args.insert(args.end(), options.extraArgs.begin(), options.extraArgs.end());

  const auto t0 = Clock::now();
  const auto deadline = t0 + options.startTimeout;
  auto dlv = DlvProcess::spawn(*path, args, pid, options.program);
  if (!dlv) return dlv.failure();
  s->dlv_ = std::move(*dlv);

  // dlv prints its port before it attaches; failures to attach come after.
  auto startFailed = [&](const Error& e) -> Failure {
    if (s->dlv_->waitExit(Millis(2'000))) {
      const std::string err = s->dlv_->errors();
      s->state_ = SessionState::Dead;
      // An exec during dlv's attach fails it ("no child processes"): say the exec.
      if (auto r = replacedSinceAnalysis(pid, options.program)) return fail(*r);
      if (!err.empty()) return fail(explainAttachRefusal(pid, classifyAttachFailure(pid, err)));
    }
    s->state_ = SessionState::Dead;
    return fail(e);  // the destructor hands a dlv that is still there to the guardian
  };
  // The port line comes before dlv attaches (and before it reads DWARF):
  // seconds at most, not the start timeout, and dlv is never left listening
  // unclaimed (startFailed hands it to the guardian, which ends it).
  auto port = s->dlv_->waitForPort(std::min(options.startTimeout, options.listenTimeout));
  if (!port) return startFailed(port.error());
  s->timings_.listenMs = msSince(t0);
  s->stoppedSince_ = Clock::now();  // dlv is about to stop the target

  // Connect at once: single-client dlv serves the first connection only.
  auto rpc = rpc::JsonRpcClient::connect(*port, left(deadline));
  if (!rpc) return startFailed(rpc.error());
  s->client_ = std::make_unique<rpc::DelveClient>(std::move(*rpc), options.callTimeout);
  s->dlv_->guard(s->client_->transport().nativeHandle());  // from now on goscope's death is covered

  // Readiness is the first reply: dlv answers only once it has attached.
  auto st = s->client_->state(/*nonBlocking=*/true, /*interruptible=*/false, left(deadline));
  if (!st) return startFailed(st.error());
  s->timings_.attachMs = msSince(t0);
  if (st->running) {
    // Never seen with 1.20.2 (attach leaves the target stopped). Without a
    // continue of ours to halt, the destructor hands over to the guardian,
    // which halts, drains and detaches.
    s->state_ = SessionState::Dead;
    return fail(ErrorKind::External, "dlv reports PID " + std::to_string(pid) + " running right after attaching");
  }
  s->state_ = SessionState::Stopped;
  s->keepStopped_ = s->dlv_->targetStoppedBefore();
  // An exec since goscope's analysis: dlv attached to a program goscope did
  // not read (and the guardian gave it no write). Let go, nothing set.
  if (auto r = replacedSinceAnalysis(pid, options.program)) {
    (void)s->abandon();
    return fail(*r);
  }
  s->image_ = imageIdentity(pid);
  s->noteDelveOwnBreakpoints();
  // Delve attaches thread by thread from one listing of the threads: a
  // thread it missed runs on, untraced, for the whole session
  // (process/thread_tracers.hpp). The caller lets this attempt go.
  if (auto hold = threadHold(pid); hold && !hold->allHeld()) {
    missed = std::move(*hold);
    return s;
  } else if (!hold) {
    spdlog::debug("delve: could not check PID {}'s threads: {}", pid, hold.error().message);
  }
  if (options.checkGoVersion &&
      std::find(options.extraArgs.begin(), options.extraArgs.end(), "--check-go-version=false") == options.extraArgs.end()) {
    auto v = s->client_->getVersion();
    if (!v) return fail(v.error());  // the destructor detaches
    if (auto refusal = goVersionRefusal(pid, *v)) {
      if (auto d = s->detach(); !d) spdlog::warn("delve: {}", d.error().message);
      if (!options.fetchHint.empty()) refusal->hint = options.fetchHint + "; or use the BPF path (goscope count/latency/trace), which does not depend on it";
      return fail(*refusal);
    }
  }
  spdlog::debug("delve: attached to {} in {:.0f} ms (dlv pid {}, port {})", pid, s->timings_.attachMs,
                s->dlv_->pid(), *port);
  return s;
}

void DelveSession::noteDelveOwnBreakpoints() {
  // The target's TracerPid is dlv's ptrace thread (a tid of dlv).
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("TracerPid:", 0) != 0) continue;
    pid_t tid = static_cast<pid_t>(std::atol(line.c_str() + 10));
    std::error_code ec;
    if (tid > 0 && std::filesystem::exists("/proc/" + std::to_string(dlv_->pid()) + "/task/" + std::to_string(tid), ec))
      dlv_->noteTracer(tid);
    break;
  }
  // Delve sets its own at attach (unrecovered-panic, runtime-fatal-throw:
  // negative ids); they are int3 bytes like ours if dlv dies. Sent first:
  // until the guardian knows them, a goscope killed now leaves it only
  // Delve's Detach (which SIGCONTs a stopped target).
  auto maps = exeTextMappings(pid_);
  auto all = client_->listBreakpoints(true, /*interruptible=*/false);
  if (all && maps) {
    for (const auto& b : *all) {
      if (b.id >= 0) continue;
      std::vector<uint64_t> set = b.addrs;
      if (set.empty() && b.addr) set.push_back(b.addr);
      for (uint64_t a : set)
        if (auto byte = exeFileByte(pid_, *maps, a)) dlv_->notePatch(a, *byte);
    }
  }
  // Where a SIGTRAP dlv never collected would start to run if dlv died: the
  // Go runtime's signal handler (runtime.sigtramp; runtime.cgoSigtramp when
  // cgo installed it). The sentinel undoes such a frame before it runs.
  if (maps) {
    if (auto elf = ElfFile::open("/proc/" + std::to_string(pid_) + "/exe")) {
      for (const auto& sym : (*elf)->symbols()) {
        // Assembly functions are named with ".abi0" in the symbol table (Go 1.17+).
        if (sym.name != "runtime.sigtramp" && sym.name != "runtime.sigtramp.abi0" && sym.name != "runtime.cgoSigtramp" &&
            sym.name != "runtime.cgoSigtramp.abi0")
          continue;
        auto off = (*elf)->vaddrToOffset(sym.value);
        if (!off) continue;
        for (const auto& m : *maps)
          if (*off >= m.offset && *off < m.offset + (m.end - m.start)) {
            spdlog::debug("delve: {} at {:#x} (the SIGTRAP handler the sentinel recognises)", sym.name, m.start + (*off - m.offset));
            dlv_->noteHandler(m.start + (*off - m.offset));
          }
      }
    }
  }
}

DelveSession::~DelveSession() {
  if (auto r = detach(); !r) spdlog::warn("delve: {}", r.error().message);
}

DelveTimings DelveSession::timings() const {
  DelveTimings t = timings_;
  if (state_ == SessionState::Stopped) t.stoppedMs += msSince(stoppedSince_);
  return t;
}

void DelveSession::setState(SessionState s) {
  if (state_ == SessionState::Stopped && s != SessionState::Stopped) timings_.stoppedMs += msSince(stoppedSince_);
  if (state_ != SessionState::Stopped && s == SessionState::Stopped) stoppedSince_ = Clock::now();
  state_ = s;
}

void DelveSession::interrupt() {
  if (client_) client_->transport().interrupt();
}

Failure DelveSession::lost(const Error& e) {
  setState(SessionState::Dead);
  continueId_.reset();
  if (!processIsAlive(pid_)) {
    return fail(ErrorKind::TargetGone, "the target (PID " + std::to_string(pid_) + ") exited during the session");
  }
  if (dlv_ && dlv_->waitExit(Millis(500))) {
    // The sentinel held dlv's tracer thread as it died and let the target go
    // safely; its account, once it is done.
    if (auto rel = dlv_->releaseReport(Millis(8'000))) spdlog::warn("delve: {}", describeRelease(pid_, *rel));
    dlv_->restoreIfOrphaned();  // dlv and its guardian both gone: nobody else will
    std::string err = dlv_->errors();
    return fail(ErrorKind::External, "dlv exited unexpectedly" + (err.empty() ? std::string() : ": " + err.substr(0, err.find('\n'))));
  }
  return fail(e);
}

bool DelveSession::imageReplaced() const {
  if (image_.empty()) return false;
  std::string now = imageIdentity(pid_);
  return !now.empty() && now != image_;
}

Failure DelveSession::replaced() const {
  return fail(ErrorKind::TargetGone,
              "PID " + std::to_string(pid_) + " replaced its program during the session (exec of " + exePath(pid_) +
                  "); dlv was stopped instead of detaching, which would write the old program's breakpoint bytes into the new one",
              "everything recorded before the exec is printed above");
}

Result<void> DelveSession::abandon() {
  if (client_) client_->transport().close();
  if (dlv_) dlv_->kill();
  // A halt of ours may have left a SIGSTOP for the kernel to deliver once
  // the tracer is gone: the new program must not stay stopped because of us.
  for (int i = 0; i < 50 && processIsAlive(pid_); ++i) {
    const auto stat = readProcStat(pid_);
    const char st = stat ? stat->state() : '?';
    if (st == 'T' || st == 't') {
      if (!keepStopped_) ::kill(pid_, SIGCONT);  // a stop the user made stays
      break;
    }
    std::this_thread::sleep_for(Millis(2));
  }
  continueId_.reset();
  state_ = processIsAlive(pid_) ? SessionState::Detached : SessionState::Dead;
  return replaced();
}

Result<void> DelveSession::leaveStopped() {
  // Delve 1.20.2's Detach PTRACE_DETACHes every thread, which puts them back
  // into the group-stop, then sleeps 50 ms and SIGCONTs a process it finds in
  // state T (pkg/proc/native/proc_linux.go, detach): the user's stop undone.
  // A tracer's death detaches too (the kernel's exit_ptrace) and leaves a
  // group-stopped tracee stopped, SIGCONTing nobody. So: put the file's
  // bytes back at every int3 of Delve's while it still holds the target
  // (every thread in a ptrace-stop: nothing runs), then SIGKILL dlv.
  // This session never resumed the target (resume() refuses), so no thread
  // is half-way over a breakpoint and no halt's SIGTRAP can be pending; a
  // pending signal is the user's and stays theirs. docs/kernel.md, "A
  // stopped target".
  Result<void> result;
  timings_.stoppedMs += msSince(stoppedSince_);
  auto [found, restored] = dlv_->writeBackPatches();
  if (restored < found)
    result = fail(ErrorKind::Internal, "could not write back " + std::to_string(found - restored) + " of Delve's " +
                                           std::to_string(found) + " breakpoint bytes in PID " + std::to_string(pid_),
                  "goscope doctor -p " + std::to_string(pid_) + " --fix restores them");
  if (client_) client_->transport().close();
  dlv_->kill();  // SIGKILL, reaped; the guardian stands down (it SIGCONTs nothing: stoppedBefore)
  // The threads go back into the group-stop as they are released (woken,
  // briefly R in /proc, then T before any user code): wait to see the leader
  // there. A SIGCONT that came meanwhile is the user's: then it runs.
  for (int i = 0; i < 100 && runStateOf(pid_) != RunState::Stopped && processIsAlive(pid_); ++i)
    std::this_thread::sleep_for(Millis(2));
  leftStopped_ = runStateOf(pid_) == RunState::Stopped;
  continueId_.reset();
  state_ = processIsAlive(pid_) ? SessionState::Detached : SessionState::Dead;
  spdlog::debug("delve: left PID {} {} ({} of {} int3 bytes written back)", pid_,
                leftStopped_ ? "stopped" : "running", restored, found);
  return result;
}

Result<void> DelveSession::requireStopped(const char* what) const {
  // Every call that reads or writes the target's memory comes here first:
  // after an exec, Delve's addresses are the old program's.
  if (state_ != SessionState::Detached && imageReplaced()) return replaced();
  switch (state_) {
    case SessionState::Stopped: return {};
    case SessionState::Running:
      return fail(ErrorKind::Usage, std::string(what) + " needs a stopped target", "call halt() first");
    case SessionState::Detached: return fail(ErrorKind::Usage, std::string(what) + " after detach()");
    case SessionState::Dead: return fail(ErrorKind::TargetGone, std::string(what) + ": the session is over (dlv or the target exited)");
  }
  return {};
}

// ---- running and stopping ----

Result<rpc::DebuggerState> DelveSession::awaitContinue(Millis timeout, bool interruptible) {
  auto st = client_->finishCommand(*continueId_, timeout, interruptible);
  if (!st) {
    switch (client_->transport().lastFailure()) {
      case rpc::RpcFailure::Timeout:
      case rpc::RpcFailure::Interrupted: return st.failure();  // still running, continue still in flight
      case rpc::RpcFailure::Disconnected: return lost(st.error());
      default: break;
    }
    // dlv answered the continue with an error: ask where things stand.
    continueId_.reset();
    if (st.error().kind == ErrorKind::TargetGone) return lost(st.error());
    auto now = client_->state(true, false);
    if (!now) return lost(now.error());
    setState(now->running ? SessionState::Dead : SessionState::Stopped);
    return st.failure();
  }
  continueId_.reset();
  if (st->exited) {
    setState(SessionState::Dead);
    return fail(ErrorKind::TargetGone, "the target exited with status " + std::to_string(st->exitStatus));
  }
  // dlv answers a pending continue on its way out (SIGTERM: halt, reply,
  // detach, exit): a stop is only ours if dlv is still there.
  if (!dlv_->running()) return lost({ErrorKind::External, "dlv exited", {}});
  setState(SessionState::Stopped);
  return st;
}

Result<rpc::DebuggerState> DelveSession::haltRunning(bool interruptible) {
  // The continue may have ended by itself (a breakpoint): then no halt.
  if (client_->transport().ready(*continueId_)) return awaitContinue(options_.callTimeout, interruptible);
  auto now = client_->state(/*nonBlocking=*/true, interruptible);
  if (!now) {
    if (client_->transport().lastFailure() == rpc::RpcFailure::Disconnected) return lost(now.error());
    return now.failure();
  }
  if (!now->running) return awaitContinue(options_.callTimeout, interruptible);  // stopped, reply on its way
  // Running for sure a moment ago. If it stops at a breakpoint in between,
  // the halt's SIGTRAP stays pending: drainPendingTrap() handles that.
  auto haltId = client_->startCommand(rpc::DebuggerCommand{rpc::kHalt});
  if (!haltId) return lost(haltId.error());
  auto st = awaitContinue(options_.callTimeout, interruptible);
  // The halt's own reply (same state) arrives around the continue's.
  if (auto h = client_->finishCommand(*haltId, options_.callTimeout, false); !h) {
    spdlog::debug("delve: halt reply: {}", h.error().message);
    client_->transport().forget(*haltId);
  }
  return st;
}

Result<rpc::DebuggerState> DelveSession::halt() {
  switch (state_) {
    case SessionState::Stopped: {  // never halt a stopped target
      auto st = client_->state(false);
      if (!st && !client_->transport().connected()) return lost(st.error());
      return st;
    }
    case SessionState::Running: return haltRunning(true);
    default: return requireStopped("halt").failure();
  }
}

Result<void> DelveSession::resume() {
  if (state_ == SessionState::Running) return {};
  if (auto ok = requireStopped("resume"); !ok) return ok;
  // Ptrace can run a group-stopped process (PTRACE_CONT ignores the stop):
  // the user's kill -STOP would be undone behind their back.
  if (keepStopped_) return fail(stoppedTargetRefusal(pid_, "a breakpoint"));
  auto id = client_->startCommand(rpc::DebuggerCommand{rpc::kContinue});
  if (!id) return lost(id.error());
  continueId_ = *id;
  setState(SessionState::Running);
  return {};
}

Result<StopEvent> DelveSession::continueToBreakpoint(Millis timeout) {
  if (state_ != SessionState::Running) {
    if (auto r = resume(); !r) return r.failure();
  }
  StopEvent ev;
  auto st = awaitContinue(timeout, true);
  if (!st) {
    if (state_ != SessionState::Running || client_->transport().lastFailure() != rpc::RpcFailure::Timeout) {
      return st.failure();
    }
    st = haltRunning(true);  // no hit in time
    if (!st) return st.failure();
    ev.timedOut = true;
  }
  ev.state = std::move(*st);
  ev.hits = hitsOf(ev.state);
  if (!ev.hits.empty()) ev.timedOut = false;  // the halt crossed a hit: report it
  return ev;
}

// ---- requests that need a stopped target ----

Result<rpc::Variable> DelveSession::eval(const std::string& expr, const rpc::LoadConfig& cfg, int64_t goroutine) {
  if (auto ok = requireStopped("eval"); !ok) return ok.failure();
  rpc::EvalScope scope;
  scope.goroutineID = goroutine;
  auto v = client_->eval(rpc::EvalIn{scope, expr, cfg});
  if (!v && (v.error().kind == ErrorKind::TargetGone || !client_->transport().connected())) return lost(v.error());
  return v;
}

Result<void> DelveSession::set(const std::string& symbol, const std::string& value) {
  if (auto ok = requireStopped("set"); !ok) return ok;
  auto r = client_->set(rpc::SetIn{{}, symbol, value});
  if (!r && (r.error().kind == ErrorKind::TargetGone || !client_->transport().connected())) return lost(r.error());
  return r;
}

Result<std::vector<rpc::Location>> DelveSession::findLocation(const std::string& loc) {
  if (auto ok = requireStopped("findLocation"); !ok) return ok.failure();
  auto r = client_->findLocation(rpc::FindLocationIn{{}, loc, false, {}});
  if (!r && !client_->transport().connected()) return lost(r.error());
  return r;
}

Result<rpc::Breakpoint> DelveSession::createBreakpoint(const BreakpointSpec& spec) {
  if (auto ok = requireStopped("createBreakpoint"); !ok) return ok.failure();
  // Like Delve's terminal: resolve the location first (a clear NoMatch, and
  // no silent pick among several), then create at its addresses.
  auto locs = findLocation(spec.location);
  if (!locs) return locs.failure();
  if (locs->size() != 1) {
    return fail(locs->empty() ? ErrorKind::NoMatch : ErrorKind::Usage,
                "location " + spec.location + " matches " + std::to_string(locs->size()) + " places",
                "name one function or file:line");
  }
  rpc::CreateBreakpointIn in;
  in.breakpoint.addr = (*locs)[0].pc;
  in.breakpoint.addrs = (*locs)[0].pcs;
  in.breakpoint.variables = spec.variables;
  if (spec.args) in.breakpoint.loadArgs = spec.load;
  if (spec.locals) in.breakpoint.loadLocals = spec.load;
  in.breakpoint.stacktrace = spec.stackDepth;
  in.breakpoint.goroutine = spec.goroutine;
  in.breakpoint.cond = spec.cond;
  in.breakpoint.hitCond = spec.hitCond;
  in.locExpr = spec.location;
  // The bytes Delve is about to replace, as memory and the file have them:
  // the guardian writes the file's byte back if dlv dies without detaching.
  // An address whose memory already differs from the file (someone else's
  // uprobe) is not ours to restore.
  std::vector<std::pair<uint64_t, uint8_t>> originals;
  if (auto maps = exeTextMappings(pid_)) {
    std::vector<uint64_t> pcs = in.breakpoint.addrs;
    if (pcs.empty()) pcs.push_back(in.breakpoint.addr);
    for (uint64_t pc : pcs) {
      auto file = exeFileByte(pid_, *maps, pc);
      auto mem = readByte(pid_, pc);
      if (file && mem && *file == *mem) originals.emplace_back(pc, *file);
    }
  }
  auto bp = client_->createBreakpoint(in);
  if (!bp && !client_->transport().connected()) return lost(bp.error());
  // An exec while Delve wrote: its threads are gone and it says only
  // "input/output error".
  if (!bp && imageReplaced()) return replaced();
  if (bp) {
    dlv_->noteBreakpoint(bp->id);
    std::vector<uint64_t> set = bp->addrs;
    if (set.empty()) set.push_back(bp->addr);
    for (uint64_t a : set)
      for (const auto& [pc, byte] : originals)
        if (pc == a) dlv_->notePatch(pc, byte);
  }
  return bp;
}

Result<void> DelveSession::clearBreakpoint(int64_t id) {
  if (auto ok = requireStopped("clearBreakpoint"); !ok) return ok;
  auto r = client_->clearBreakpoint(id);
  if (!r) return client_->transport().connected() ? r.failure() : lost(r.error());
  return {};
}

Result<std::vector<rpc::Breakpoint>> DelveSession::breakpoints() {
  if (auto ok = requireStopped("breakpoints"); !ok) return ok.failure();
  auto all = client_->listBreakpoints(false);
  if (!all) return client_->transport().connected() ? all.failure() : lost(all.error());
  std::vector<rpc::Breakpoint> ours;
  for (auto& b : *all)
    if (b.id > 0) ours.push_back(std::move(b));
  return ours;
}

Result<std::vector<rpc::Variable>> DelveSession::packageVars(const std::string& filter) {
  if (auto ok = requireStopped("packageVars"); !ok) return ok.failure();
  return client_->listPackageVars(filter);
}

Result<std::vector<rpc::Stackframe>> DelveSession::stacktrace(int64_t goroutineId, int depth) {
  if (auto ok = requireStopped("stacktrace"); !ok) return ok.failure();
  rpc::StacktraceIn in;
  in.id = goroutineId;
  in.depth = depth;
  return client_->stacktrace(in);
}

// ---- leaving ----

// A halt that reached an already stopped target left a SIGTRAP pending;
// Detach would deliver it and kill the target. Delve swallows a stray SIGTRAP
// when it resumes the target, so: clear our breakpoints (nothing but our
// halt may stop it now), continue briefly, halt the running target, re-check.
Result<void> DelveSession::drainPendingTrap() {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto pending = sigtrapPending(pid_);
    if (!pending) return pending.failure();
    if (!*pending) return {};
    // Expected when a halt races a breakpoint hit (break -d, sample timeouts): handled, not news.
    spdlog::debug("delve: a SIGTRAP is pending in PID {} (a halt crossed a stop); letting Delve consume it", pid_);
    if (auto bps = client_->listBreakpoints(false, false)) {
      for (const auto& b : *bps)
        if (b.id > 0) (void)client_->clearBreakpoint(b.id, false);
    }
    auto id = client_->startCommand(rpc::DebuggerCommand{rpc::kContinue});
    if (!id) return lost(id.error());
    continueId_ = *id;
    setState(SessionState::Running);
    // Give Delve time to resume and swallow the stray signal before our halt
    // adds a new one; a reply in this window means it stopped by itself.
    const auto until = Clock::now() + Millis(20);
    while (Clock::now() < until && !client_->transport().ready(*continueId_))
      std::this_thread::sleep_for(Millis(1));
    if (auto st = haltRunning(false); !st) return st.failure();
  }
  return fail(ErrorKind::Internal, "a SIGTRAP stays pending in PID " + std::to_string(pid_));
}

Result<void> DelveSession::detach() {
  if (state_ == SessionState::Detached || detaching_) return {};
  detaching_ = true;
  const auto t0 = Clock::now();
  Result<void> result;
  if (imageReplaced()) {  // Delve's Detach would restore the old program's bytes into the new one
    if (state_ == SessionState::Stopped) timings_.stoppedMs += msSince(stoppedSince_);
    result = abandon();
    timings_.detachMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return result;
  }

  if (keepStopped_ && state_ == SessionState::Stopped) {
    result = leaveStopped();
    timings_.detachMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return result;
  }
  if (state_ == SessionState::Running && continueId_) {
    if (auto st = haltRunning(false); !st) result = st.failure();
  }
  if (state_ == SessionState::Stopped) {
    if (auto d = drainPendingTrap(); !d) spdlog::warn("delve: {}", d.error().message);
  }
  bool clean = false;
  if (state_ == SessionState::Stopped) {
    if (auto d = client_->detach(options_.detachTimeout); !d) {
      result = d.failure();
    } else {
      clean = true;
      if (dlv_ && !dlv_->waitExit(Millis(2'000))) spdlog::debug("delve: dlv still running after Detach");
    }
  }
  if (client_) client_->transport().close();
  // Not detached cleanly (a failed halt or Detach, or dlv gone): the guardian
  // still holds the connection and does the careful detach itself.
  if (dlv_) clean ? dlv_->standDown() : dlv_->handOver();
  const bool targetAlive = processIsAlive(pid_);
  if (state_ == SessionState::Stopped) timings_.stoppedMs += msSince(stoppedSince_);
  state_ = targetAlive ? SessionState::Detached : SessionState::Dead;
  timings_.detachMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  continueId_.reset();
  spdlog::debug("delve: detached from {} in {:.0f} ms", pid_, timings_.detachMs);
  return result;
}

}  // namespace goscope::delve
