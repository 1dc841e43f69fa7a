#include "output/stdout_lines.hpp"

#include <cstdio>

#include "output/stdout_writer.hpp"

namespace goscope::output {

StdoutLines::StdoutLines() { buf_.reserve(2 * kChunk); }

void StdoutLines::flush() {
  std::fflush(stdout);  // records written through stdio or std::cout before these lines
  StdoutWriter& w = StdoutWriter::instance();
  if (!buf_.empty()) w.write(buf_.data(), buf_.size());
  else w.flush();
  buf_.clear();  // keeps the capacity
}

bool StdoutLines::closed() const { return StdoutWriter::instance().closed(); }

bool StdoutLines::holding() const { return !buf_.empty() || StdoutWriter::instance().holding(); }

}  // namespace goscope::output
