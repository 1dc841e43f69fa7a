#include "output/stdout_writer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ext/stdio_sync_filebuf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "util/stop_signals.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::output {

namespace {

// How long one wait for room in stdout lasts before the stop state is
// looked at again: the bound on how late a -d end or a signal is seen by a
// write that waits.
constexpr int kWaitSliceMs = 10;
// After a SIGTERM, how long a reader that takes nothing is waited for once
// the probes are off, before what is held is dropped.
constexpr auto kTerminateGrace = std::chrono::milliseconds(300);

ssize_t cookieWrite(void*, const char* data, size_t len) {
  StdoutWriter::instance().write(data, len);
  return static_cast<ssize_t>(len);  // taken: written, held or (after an error) counted as lost
}

}  // namespace

StdoutWriter& StdoutWriter::instance() {
  static StdoutWriter* writer = new StdoutWriter();  // outlives stdio's flush at exit
  return *writer;
}

// Writes that do not block, without O_NONBLOCK on stdout's own open file
// description (shared with the shell and whoever else holds it):
// - a pipe, a FIFO or a terminal is opened once more, non-blocking, through
//   /proc/self/fd/1 (a description of goscope's own);
// - a socket (or a pipe that could not be reopened) gets pwritev2's
//   RWF_NOWAIT per write;
// - anything else (a file, /dev/null, /dev/full) is written as it is.
StdoutWriter::StdoutWriter() {
  struct stat st{};
  if (closedAtStart_ || ::fstat(STDOUT_FILENO, &st) != 0) {
    // Closed (`>&-`): an error to say, and fd 1 is never written, as the
    // next file goscope opens may take that number.
    closed_ = true;
    error_ = closedAtStart_ ? EBADF : errno;
    fd_ = -1;
    return;
  }
  const bool terminal = S_ISCHR(st.st_mode) && ::isatty(STDOUT_FILENO);
  if (S_ISFIFO(st.st_mode) || terminal) {
    const int fd = ::open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0) {
      fd_ = fd;
      return;
    }
  }
  nowait_ = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

void StdoutWriter::install(bool stdoutClosedAtStart) {
  closedAtStart_ = stdoutClosedAtStart;
  // A reader that went away is EPIPE here, an end of the output like any
  // other (exit 0), not a death by SIGPIPE halfway through a session's
  // detach. Children that goscope starts get SIGPIPE back (util/launched_child.cpp).
  ::signal(SIGPIPE, SIG_IGN);
  StdoutWriter& w = instance();
  (void)w;
  cookie_io_functions_t io{};
  io.write = cookieWrite;
  FILE* f = ::fopencookie(nullptr, "w", io);
  if (!f) return;  // stdio's own stdout stays (no memory: nothing else would work either)
  // Buffered as stdio buffers stdout: by line on a terminal, by block elsewhere.
  ::setvbuf(f, nullptr, ::isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
  std::fflush(stdout);
  stdout = f;
  static __gnu_cxx::stdio_sync_filebuf<char> coutBuf(f);
  std::cout.rdbuf(&coutBuf);
}

ssize_t StdoutWriter::writeSome(const char* data, size_t len) {
  if (nowait_) {
    iovec v{const_cast<char*>(data), len};
    const ssize_t n = ::pwritev2(fd_, &v, 1, -1, RWF_NOWAIT);
    if (n >= 0 || (errno != EOPNOTSUPP && errno != EINVAL)) return n;
    nowait_ = false;  // not on this stdout: plain writes from now on
  }
  return ::write(fd_, data, len);
}

void StdoutWriter::write(const char* data, size_t len) {
  std::lock_guard lock(mu_);
  if (closed_) {
    lost_ += len;
    return;
  }
  if (dropping_) {
    dropped_ += static_cast<uint64_t>(std::count(data, data + len, '\n'));
    return;
  }
  if (held_.empty()) {
    // Straight from the caller's buffer: only what does not fit is copied.
    while (len > 0) {
      const ssize_t n = writeSome(data, len);
      if (n <= 0) break;
      data += n;
      len -= static_cast<size_t>(n);
    }
    if (len == 0) return;
  }
  held_.append(data, len);
  drain();
}

void StdoutWriter::flush() {
  std::lock_guard lock(mu_);
  drain();
}

bool StdoutWriter::giveUpWaiting() const {
  if (dropping_ || dropHeldOutput()) return true;
  // A SIGTERM (a service manager's stop, `timeout`): a short grace for a
  // reader that takes nothing at all, not an endless wait.
  return terminateRequested() && waitSince_ != std::chrono::steady_clock::time_point{} &&
         std::chrono::steady_clock::now() - waitSince_ >= kTerminateGrace;
}

void StdoutWriter::drain() {
  size_t done = 0;
  while (!closed_ && done < held_.size()) {
    const ssize_t n = writeSome(held_.data() + done, held_.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      waitSince_ = {};
      // A blocking write that a stop signal cut returns what it wrote, not
      // EINTR: the end is looked at here too.
      if (done < held_.size() && endPending()) break;
      continue;
    }
    const int err = n < 0 ? errno : EIO;
    if (err != EINTR && err != EAGAIN) {
      // EPIPE: nobody reads any more (exit 0 by design); anything else is an
      // error said at the end. Either way nothing more goes out.
      closed_ = true;
      if (err != EPIPE) {
        error_ = err;
        lost_ += held_.size() - done;
      }
      break;
    }
    // Nobody reads (a full pipe), or a stop signal interrupted the write.
    // While the probes are on and the session is due to end (Ctrl-C,
    // SIGTERM, -d), this wait would hold the detach until the reader reads,
    // the target paying for every call meanwhile: the rest is held and
    // written once the probes are off.
    if (endPending()) break;
    if (waitSince_ == std::chrono::steady_clock::time_point{}) waitSince_ = std::chrono::steady_clock::now();
    if (giveUpWaiting()) {
      held_.erase(0, done);
      done = 0;
      dropHeld();
      break;
    }
    if (err == EAGAIN) {
      noticeWait();
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, kWaitSliceMs);
    }
  }
  if (closed_ || done == held_.size()) held_.clear();
  else held_.erase(0, done);
}

void StdoutWriter::noticeWait() {
  if (waitNoticed_ || endPending()) return;
  if (std::chrono::steady_clock::now() - waitSince_ < std::chrono::seconds(1)) return;
  // Only once a session is over: during it a slow reader only slows the
  // lines down, and the probes stay on as long as asked.
  if (!probesCameOff()) return;
  waitNoticed_ = true;
  const auto lines = std::count(held_.begin(), held_.end(), '\n');
  output::toStderr(
               "goscope: the probes are off; %td held line%s wait for stdout's reader (Ctrl-C again drops them)\n",
               lines, lines == 1 ? "" : "s");
}

void StdoutWriter::dropHeld() {
  const auto lines = std::count(held_.begin(), held_.end(), '\n');
  held_.clear();
  dropped_ += static_cast<uint64_t>(lines);
  if (dropping_) return;
  dropping_ = true;
  setOutputDropped();
  output::toStderr("goscope: stdout's reader did not read: %td held line%s dropped at the stop signal%s\n", lines,
               lines == 1 ? "" : "s",
               probesCameOff() ? " that came after the probes were off" : "");
}

bool StdoutWriter::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

bool StdoutWriter::holding() const {
  std::lock_guard lock(mu_);
  return !held_.empty();
}

int StdoutWriter::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

uint64_t StdoutWriter::lostBytes() const {
  std::lock_guard lock(mu_);
  return lost_;
}

uint64_t StdoutWriter::droppedLines() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

int finishStdout(int exitCode) {
  std::cout.flush();
  std::fflush(stdout);
  StdoutWriter& w = StdoutWriter::instance();
  w.flush();
  if (const uint64_t dropped = w.droppedLines())
    output::toStderr("goscope: %llu held line%s dropped in all (stdout's reader did not read)\n",
                 static_cast<unsigned long long>(dropped), dropped == 1 ? "" : "s");
  if (const int err = w.error()) {
    output::toStderr("goscope: cannot write the output to stdout: %s (%llu bytes not written)\n", std::strerror(err),
                 static_cast<unsigned long long>(w.lostBytes()));
    return exitCode == 0 ? 1 : exitCode;
  }
  return exitCode;
}

}  // namespace goscope::output
