#include "output/stdout_lines.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

#include "util/stop_signals.hpp"

namespace goscope::output {

namespace {

// How long one wait for room in stdout lasts before endPending() is looked
// at again: the bound on how late a -d end is seen by a writer that waits.
constexpr int kWaitSliceMs = 10;

// A pipe or a socket: where a write blocks for as long as the reader wants.
bool stdoutMayBlock() {
  struct stat st{};
  return ::fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

}  // namespace

StdoutLines::StdoutLines() : nowait_(stdoutMayBlock()) { buf_.reserve(2 * kChunk); }

ssize_t StdoutLines::writeSome(const char* data, size_t len) {
  if (nowait_) {
    // RWF_NOWAIT: this write only, not the open file description (shared
    // with the shell and the reader's side), does not block: it writes what
    // fits and fails with EAGAIN when nothing does (pipes and sockets,
    // docs/kernel.md "Writing to a pipe without blocking").
    iovec v{const_cast<char*>(data), len};
    const ssize_t n = ::pwritev2(STDOUT_FILENO, &v, 1, -1, RWF_NOWAIT);
    if (n >= 0 || (errno != EOPNOTSUPP && errno != EINVAL)) return n;
    nowait_ = false;  // a kernel without it: plain writes from now on
  }
  return ::write(STDOUT_FILENO, data, len);
}

void StdoutLines::flush() {
  if (buf_.empty()) return;
  std::cout.flush();  // records written through std::cout before these lines
  size_t done = 0;
  while (!closed_ && done < buf_.size()) {
    const ssize_t n = writeSome(buf_.data() + done, buf_.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
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
    if (err == EAGAIN) {  // RWF_NOWAIT, or a non-blocking stdout someone else set up: wait for room
      pollfd p{STDOUT_FILENO, POLLOUT, 0};
      ::poll(&p, 1, kWaitSliceMs);
    }
  }
  if (closed_ || done == buf_.size()) buf_.clear();  // keeps the capacity
  else buf_.erase(0, done);
  flushAt_ = buf_.size() + kChunk;
}

}  // namespace goscope::output
