// The dlv process and its guardian, from goscope's side.
//
//   goscope --fork--> guardian --fork/exec--> dlv attach PID --headless ...
//
// - dlv's PR_SET_PDEATHSIG=SIGTERM points at the guardian, not at goscope:
//   dlv's own shutdown (on SIGTERM or when its client goes away) can kill a
//   target whose breakpoints are being hit (guardian.hpp). If goscope dies,
//   the guardian detaches carefully on goscope's connection; only if the
//   guardian dies too does dlv fall back to its own shutdown.
// - dlv and the guardian get their own process group: a terminal's Ctrl-C
//   reaches goscope only, which then detaches in order.
// - dlv's stdout/stderr go to memfds, not pipes: dlv can never block on a
//   full pipe (which would leave the target stopped) while nobody reads.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "process/text_restore.hpp"
#include "process/tracer_release.hpp"
#include "binary/file_identity.hpp"
#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace goscope::delve {

using Millis = std::chrono::milliseconds;

class DlvProcess {
 public:
  // The dlv to run: `explicitPath` if set, else $GOSCOPE_DLV, else "dlv" on
  // $PATH. External (with an install hint) when there is none.
  static Result<std::string> locate(const std::string& explicitPath);
  // Starts the guardian, which starts `path args...` for target `target`.
  // `program`: the executable the target must run (ino 0: whatever it runs
  // now); the guardian refuses dlv every write once the target runs another.
  static Result<std::unique_ptr<DlvProcess>> spawn(const std::string& path, const std::vector<std::string>& args,
                                                   pid_t target, const FileIdentity& program = {});

  // Unless stood down: hands over to the guardian and waits for both to exit.
  ~DlvProcess();
  DlvProcess(const DlvProcess&) = delete;
  DlvProcess& operator=(const DlvProcess&) = delete;

  pid_t pid() const { return pid_; }  // dlv
  pid_t guardianPid() const { return guardian_; }
  // Waits for "API server listening at: 127.0.0.1:PORT"; fails when dlv
  // exits first or after `timeout`.
  Result<uint16_t> waitForPort(Millis timeout);
  std::string output() const;  // dlv's stdout so far
  std::string errors() const;  // dlv's stderr so far

  bool running();                 // dlv has not exited
  bool waitExit(Millis timeout);  // true once dlv has exited

  // Gives the guardian its own handle on the connection to dlv (call at once
  // after connecting), and tells it each breakpoint goscope creates.
  void guard(int connectionFd);
  void noteBreakpoint(int64_t id);
  // An address where Delve wrote an int3, and the executable file's byte
  // there: the guardian restores it if dlv dies without detaching.
  void notePatch(uint64_t addr, uint8_t original);
  // dlv's thread that traces the target: its exit is when the kernel lets
  // the target run again, before dlv as a whole is reported gone. The
  // guardian's sentinel traces it from then on (guardian.hpp).
  void noteTracer(pid_t tid);
  // The entry of the target's SIGTRAP handler (runtime.sigtramp): where a
  // SIGTRAP that dlv never collected would start to run when dlv dies.
  void noteHandler(uint64_t addr);
  // What the sentinel did when dlv died holding the target, once it is done
  // (waits up to `timeout` for it); none when there was no sentinel or it
  // had nothing to hold (dlv had let go).
  std::optional<ReleaseReport> releaseReport(Millis timeout);
  // dlv died without detaching and the guardian is gone too (killed with
  // it): goscope puts the file's bytes back itself. A no-op when nothing is
  // left to restore.
  void restoreIfOrphaned();
  // The target was stopped (state T: kill -STOP) when dlv was started.
  bool targetStoppedBefore() const { return targetStoppedBefore_; }
  // Writes the executable's byte back at every int3 Delve was told to have
  // written (its own breakpoints and goscope's), while dlv still holds the
  // target: the first step of leaving a stopped target stopped
  // (DelveSession::detach). The number of bytes that were still int3, and
  // of those written back.
  std::pair<int, int> writeBackPatches();
  // goscope detached cleanly: the guardian reaps dlv and exits.
  void standDown();
  // goscope could not detach cleanly: the guardian does it (halt, drain,
  // Detach Kill=false), as if goscope had died. Waits up to `timeout`.
  void handOver(Millis timeout = Millis(40'000));
  // dlv must not touch the target any more (it exec'd another program):
  // SIGKILL dlv, whose tracees the kernel then detaches, and reap both.
  void kill();

 private:
  DlvProcess() = default;
  static std::string readAll(int fd);
  void send(char type, const void* payload, size_t len, int fd = -1);
  void reapGuardian(Millis timeout);

  pid_t pid_ = -1;
  pid_t guardian_ = -1;
  UniqueFd out_, err_, pidfd_, control_, report_;
  bool tracerNoted_ = false;
  bool stoodDown_ = false;
  pid_t target_ = -1;
  bool targetStoppedBefore_ = false;
  uint64_t exeDev_ = 0, exeIno_ = 0;
  std::vector<TextPatch> patches_;
};

}  // namespace goscope::delve
