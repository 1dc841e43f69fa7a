// Trace's lines on their way to stdout: formatted straight into one buffer
// and written with write(2) in large chunks (issue #14: a million lines a
// second). The buffer goes out when it holds kChunk bytes or when the caller
// flushes (trace does every 50 ms, so a reader of a pipe or terminal sees
// lines promptly); lines are whole in every chunk but the last partial
// write's rest, which the next write completes.
//
// Why not std::cout: the stop signals are installed without SA_RESTART (so
// blocking waits return EINTR), and a write to a full pipe that a Ctrl-C
// interrupted failed with EINTR and left std::cout bad, dropping every line
// after it (commit a5286de). The stream was therefore written with the
// signals blocked around each line: two pthread_sigmask calls per event.
// Here EINTR and partial writes are simply resumed: nothing is masked
// (docs/overhead.md, "Trace throughput"). Writes to a pipe do not block
// (see the constructor), so that a full pipe never holds the session's end:
// Ctrl-C, SIGTERM and -d take the probes off first (issue #14 goal 6).
//
// Other records (bound actions, the session cost) still go through
// std::cout; flush() writes what std::cout holds first, so the order of
// lines on stdout is the order they were produced in.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace goscope::output {

class StdoutLines {
 public:
  static constexpr size_t kChunk = 64 * 1024;

  StdoutLines();
  ~StdoutLines();
  StdoutLines(const StdoutLines&) = delete;
  StdoutLines& operator=(const StdoutLines&) = delete;
  // Where a line is formatted; end it with '\n' and call lineDone().
  std::string& buffer() { return buf_; }
  void lineDone() {
    if (buf_.size() >= flushAt_) flush();
  }
  // Writes everything held (std::cout's buffer first). After a write error
  // (EPIPE: nobody reads any more) the lines are dropped and closed() is true.
  // While a session's probes are on and its end is due (util/stop_signals.hpp,
  // endPending), a write that would wait for the reader is left for later:
  // what was not written stays held, the next flush writes it first.
  //
  // Once the probes are off, flush waits for the reader as long as it
  // takes, and says so on stderr after a second; a stop signal that comes
  // then (util/stop_signals.hpp, dropHeldOutput) drops what is held, counted
  // and said on stderr, and every later flush drops what it cannot write at
  // once.
  void flush();
  bool closed() const { return closed_; }
  bool holding() const { return !buf_.empty(); }  // lines a flush could not write yet

 private:
  ssize_t writeSome(const char* data, size_t len);
  void noticeWait(size_t done);
  void dropRest(size_t done);

  std::string buf_;
  size_t flushAt_ = kChunk;  // lineDone flushes when this much is held
  int fd_ = 1;               // stdout, or goscope's own non-blocking description of its pipe
  bool nowait_ = false;      // a socket (or a pipe not reopened): RWF_NOWAIT writes
  bool closed_ = false;
  bool dropping_ = false;  // a stop signal after the probes came off: nothing waits any more
  uint64_t dropped_ = 0;   // lines dropped so far
  uint64_t droppedSaid_ = 0;  // of them, said on stderr when the dropping began
  bool waitNoticed_ = false;
  std::chrono::steady_clock::time_point waitSince_{};  // since when no byte went out (zero: it is going)
};

}  // namespace goscope::output
