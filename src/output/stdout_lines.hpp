// Trace's lines on their way to stdout: formatted straight into one buffer
// and handed to the stdout writer (output/stdout_writer.hpp) in large chunks
// (docs/overhead.md, "Trace throughput"). The buffer goes out when it holds
// kChunk bytes or when the caller flushes (trace does every 50 ms, so a
// reader of a pipe or terminal sees lines promptly); lines are whole in
// every chunk.
//
// The writer does the rest: writes that do not block, EINTR resumed, what a
// full pipe cannot take held while the session's end is due and the probes
// are on, dropped when the user will not wait, write errors kept for the
// exit status. Records written through stdio or std::cout (bound actions,
// the session cost) go through the same writer, so the order of lines on
// stdout is the order they were produced in.
#pragma once

#include <cstddef>
#include <string>

namespace goscope::output {

class StdoutLines {
 public:
  static constexpr size_t kChunk = 64 * 1024;

  StdoutLines();
  StdoutLines(const StdoutLines&) = delete;
  StdoutLines& operator=(const StdoutLines&) = delete;
  // Where a line is formatted; end it with '\n' and call lineDone().
  std::string& buffer() { return buf_; }
  void lineDone() {
    if (buf_.size() >= kChunk) flush();
  }
  // Hands everything buffered to the writer (what stdio holds first), which
  // writes it or holds it (output/stdout_writer.hpp).
  void flush();
  // Nothing more goes out: the reader went away (`| head`) or a write failed.
  bool closed() const;
  bool holding() const;  // bytes the writer could not write yet

 private:
  std::string buf_;
};

}  // namespace goscope::output
