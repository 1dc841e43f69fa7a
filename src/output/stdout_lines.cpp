#include "output/stdout_lines.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

namespace goscope::output {

void StdoutLines::flush() {
  if (buf_.empty()) return;
  std::cout.flush();  // records written through std::cout before these lines
  size_t done = 0;
  while (!closed_ && done < buf_.size()) {
    ssize_t n = ::write(STDOUT_FILENO, buf_.data() + done, buf_.size() - done);
    if (n > 0) done += static_cast<size_t>(n);
    else if (n < 0 && errno == EINTR) continue;  // a stop signal: the session ends after this write
    else if (n < 0 && errno == EAGAIN) {         // a non-blocking stdout someone else set up: wait for room
      pollfd p{STDOUT_FILENO, POLLOUT, 0};
      ::poll(&p, 1, 100);
    }
    else closed_ = true;                         // EPIPE (SIGPIPE is ignored), EBADF, ENOSPC...
  }
  buf_.clear();  // keeps the capacity
}

}  // namespace goscope::output
