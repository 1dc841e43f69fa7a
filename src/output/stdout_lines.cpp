#include "output/stdout_lines.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <iostream>

#include "util/stop_signals.hpp"

namespace goscope::output {

namespace {

// How long one wait for room in stdout lasts before endPending() is looked
// at again: the bound on how late a -d end is seen by a writer that waits.
constexpr int kWaitSliceMs = 10;

}  // namespace

// Writes that do not block, without O_NONBLOCK on stdout's own open file
// description (shared with the shell and whoever else holds it):
// - a pipe or FIFO is opened once more, non-blocking, through
//   /proc/self/fd/1 (a description of goscope's own on the same pipe);
// - a socket (or a pipe that could not be reopened) gets pwritev2's
//   RWF_NOWAIT per write (6.18: anonymous pipes and sockets take it, a FIFO
//   opened by name does not: EOPNOTSUPP);
// - anything else (a file, a terminal, /dev/null) is written as it is.
// docs/kernel.md, "Writing to a pipe without blocking".
StdoutLines::StdoutLines() {
  buf_.reserve(2 * kChunk);
  struct stat st{};
  if (::fstat(STDOUT_FILENO, &st) != 0) return;
  if (S_ISFIFO(st.st_mode)) {
    const int fd = ::open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      fd_ = fd;
      return;
    }
  }
  nowait_ = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

StdoutLines::~StdoutLines() {
  if (dropped_ > droppedSaid_)
    std::fprintf(stderr, "goscope: %llu held line%s dropped in all (stdout's reader did not read)\n",
                 static_cast<unsigned long long>(dropped_), dropped_ == 1 ? "" : "s");
  if (fd_ != STDOUT_FILENO) ::close(fd_);
}

ssize_t StdoutLines::writeSome(const char* data, size_t len) {
  if (nowait_) {
    iovec v{const_cast<char*>(data), len};
    const ssize_t n = ::pwritev2(fd_, &v, 1, -1, RWF_NOWAIT);
    if (n >= 0 || (errno != EOPNOTSUPP && errno != EINVAL)) return n;
    nowait_ = false;  // not on this stdout: plain writes from now on
  }
  return ::write(fd_, data, len);
}

void StdoutLines::flush() {
  if (buf_.empty()) return;
  if (!dropping_) std::cout.flush();  // records written through std::cout before these lines
  size_t done = 0;
  while (!closed_ && done < buf_.size()) {
    const ssize_t n = writeSome(buf_.data() + done, buf_.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      waitSince_ = {};
      // A blocking write that a stop signal cut returns what it wrote, not
      // EINTR: the end is looked at here too.
      if (done < buf_.size() && endPending()) break;
      continue;
    }
    const int err = n < 0 ? errno : EIO;
    if (err != EINTR && err != EAGAIN) {
      closed_ = true;  // EPIPE (SIGPIPE is ignored), EBADF, ENOSPC...
      break;
    }
    // Nobody reads (a full pipe), or a stop signal interrupted the write.
    // While the probes are on and the session is due to end (Ctrl-C,
    // SIGTERM, -d), this wait would hold the detach until the reader reads,
    // the target paying for every call meanwhile (issue #14 goal 6): the
    // rest is held and written once the probes are off.
    if (endPending()) break;
    // The probes are off and a stop signal came since: the user will not
    // wait for this reader (util/stop_signals.hpp, dropHeldOutput).
    if (dropping_ || dropHeldOutput()) {
      dropRest(done);
      break;
    }
    if (err == EAGAIN) {  // RWF_NOWAIT, or a non-blocking stdout someone else set up: wait for room
      noticeWait(done);
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, kWaitSliceMs);
    }
  }
  if (closed_ || done == buf_.size()) buf_.clear();  // keeps the capacity
  else buf_.erase(0, done);
  flushAt_ = buf_.size() + kChunk;
}

void StdoutLines::noticeWait(size_t done) {
  if (waitNoticed_ || endPending()) return;
  const auto now = std::chrono::steady_clock::now();
  if (waitSince_ == std::chrono::steady_clock::time_point{}) {
    waitSince_ = now;
    return;
  }
  if (now - waitSince_ < std::chrono::seconds(1)) return;
  // Only once the session is over: during it a slow reader only slows the
  // lines down, and the probes stay on as long as asked.
  if (!probesCameOff()) return;
  waitNoticed_ = true;
  const auto lines = std::count(buf_.begin() + static_cast<std::ptrdiff_t>(done), buf_.end(), '\n');
  std::fprintf(stderr,
               "goscope: the probes are off; %td held line%s wait for stdout's reader (Ctrl-C again drops them)\n",
               lines, lines == 1 ? "" : "s");
}

void StdoutLines::dropRest(size_t done) {
  const auto lines = std::count(buf_.begin() + static_cast<std::ptrdiff_t>(done), buf_.end(), '\n');
  dropped_ += static_cast<uint64_t>(lines);
  if (dropping_) return;  // the total is said at the end (~StdoutLines)
  dropping_ = true;
  droppedSaid_ = dropped_;
  std::fprintf(stderr,
               "goscope: stdout's reader did not read: %td held line%s dropped at the stop signal that came after the "
               "probes were off\n",
               lines, lines == 1 ? "" : "s");
  // What goes through std::cout or stdio (the session_cost record) would
  // wait in a blocking write to the same reader: stdout becomes goscope's
  // own non-blocking description of the pipe, so such a write fails at once
  // (the shell's description keeps its flags).
  if (fd_ != STDOUT_FILENO) ::dup2(fd_, STDOUT_FILENO);
}
}  // namespace goscope::output
