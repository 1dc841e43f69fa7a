// Every byte goscope writes to stdout, whoever writes it (printf, std::cout,
// trace's line buffer), goes out through this one writer, so that three
// things hold for every subcommand:
//
// - A reader that does not read never holds goscope: writes to a pipe do
//   not block (goscope's own non-blocking description of the pipe, or
//   RWF_NOWAIT: docs/kernel.md, "Writing to a pipe without blocking"); a
//   write that finds it full waits in short slices and looks at the stop
//   state between them (util/stop_signals.hpp): while a session's probes are
//   on and its end is due, what cannot be written is held for later (the
//   detach comes first); once they are off it waits for the reader as long as
//   the user does — a second Ctrl-C, or a SIGTERM after a short grace, drops
//   what is held (counted, said on stderr) and goscope ends.
// - EINTR is resumed here: a stop signal never cuts a line or a report in
//   half, so nothing needs the stop signals masked around a write (a masked
//   signal could not end a write that waits for ever).
// - A write error is kept and reported: the reader gone (EPIPE; SIGPIPE is
//   ignored) ends the output quietly, exit 0 by design; anything else
//   (ENOSPC, EIO, EBADF, EFBIG, EDQUOT...) ends it with the reason and a
//   non-zero exit (finishStdout, docs/errors.md).
//
// C stdio's `stdout` becomes a stream whose writes come here (fopencookie),
// buffered as stdout was (lines on a terminal, blocks elsewhere), and
// std::cout writes into that stream, so the order of bytes on stdout is the
// order they were produced in, whichever API produced them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace goscope::output {

class StdoutWriter {
 public:
  // The process's one writer (never destroyed: stdio flushes into it at exit).
  static StdoutWriter& instance();
  // Routes stdio's stdout and std::cout through instance(). Once, first
  // thing in main. `stdoutClosedAtStart`: goscope started with fd 1 closed
  // (main put /dev/null there so that nothing else takes the number): the
  // output is closed from the start, EBADF, as if fd 1 were still closed.
  static void install(bool stdoutClosedAtStart = false);

  // Writes `len` bytes (what cannot go out now is held, in order).
  void write(const char* data, size_t len);
  // Writes what is held, under the rules above.
  void flush();
  // Nothing more goes out: the reader went away, or a write failed.
  bool closed() const;
  // Bytes held that a write could not take yet.
  bool holding() const;
  // The errno of a write that failed for another reason than the reader
  // going away (EPIPE); 0: none.
  int error() const;
  // Bytes that never reached stdout because of that error.
  uint64_t lostBytes() const;
  // Lines dropped because the reader did not read (see above).
  uint64_t droppedLines() const;

  StdoutWriter(const StdoutWriter&) = delete;
  StdoutWriter& operator=(const StdoutWriter&) = delete;

 private:
  StdoutWriter();
  static inline bool closedAtStart_ = false;  // set by install() before instance() is built
  void drain();  // mu_ held
  ssize_t writeSome(const char* data, size_t len);
  bool giveUpWaiting() const;
  void noticeWait();
  void dropHeld();

  mutable std::mutex mu_;
  std::string held_;
  int fd_ = 1;            // stdout, or goscope's own non-blocking description of its pipe
  bool nowait_ = false;   // a socket (or a pipe not reopened): RWF_NOWAIT writes
  bool closed_ = false;
  int error_ = 0;
  uint64_t lost_ = 0;
  bool dropping_ = false;     // the user will not wait: nothing waits any more
  uint64_t dropped_ = 0;      // lines dropped so far
  bool waitNoticed_ = false;
  std::chrono::steady_clock::time_point waitSince_{};  // since when no byte went out (zero: it is going)
};

// At goscope's end: everything still buffered or held goes out (under the
// rules above); drops are totalled on stderr. A write error is said on
// stderr with what was lost, and turns an exit code of 0 into 1
// (docs/errors.md); any other code is kept.
int finishStdout(int exitCode);

}  // namespace goscope::output
