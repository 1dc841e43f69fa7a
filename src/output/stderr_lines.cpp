#include "stderr_lines.hpp"

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace goscope::output {
namespace {

std::mutex& stderrMutex() {
  static std::mutex m;
  return m;
}
bool progressShown = false;  // guarded by stderrMutex()

// Erases the progress line, if one is shown; called with the mutex held.
void eraseShownProgress() {
  if (!progressShown) return;
  std::fputs("\r\033[K", stderr);
  progressShown = false;
}

}  // namespace

void toStderr(const char* format, ...) {
  std::lock_guard lock(stderrMutex());
  eraseShownProgress();
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
}

void lineToStderr(const std::string& line) { toStderr("%s\n", line.c_str()); }

void noticeToStderr(const std::string& line) { toStderr("goscope: %s\n", line.c_str()); }

void progressToStderr(const std::string& text) {
  std::lock_guard lock(stderrMutex());
  std::fprintf(stderr, "\r%s\033[K", text.c_str());
  progressShown = true;
}

void eraseProgress() {
  std::lock_guard lock(stderrMutex());
  eraseShownProgress();
}

}  // namespace goscope::output
