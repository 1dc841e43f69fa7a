// Every line goscope says to the person at the terminal: notices, totals,
// the progress of a long attach. They all pass here so that a progress line
// shown in place ("\r...") is erased before any other line is written, and
// lines from the library's threads (notices) never interleave with the CLI's.
// A write that fails (stderr closed, /dev/full) is dropped: stderr is where
// goscope would have said so, and the exit status reports stdout's errors
// (output/stdout_writer.hpp).
#pragma once

#include <string>

namespace goscope::output {

// printf-style; the caller ends the line ("...\n").
void toStderr(const char* format, ...) __attribute__((format(printf, 1, 2)));
// LINE and a newline.
void lineToStderr(const std::string& line);
// "goscope: LINE" and a newline: the form of every notice.
void noticeToStderr(const std::string& line);
// A line rewritten in place (only where stderr is a terminal); the next line
// written by any of the above erases it first.
void progressToStderr(const std::string& text);
void eraseProgress();

}  // namespace goscope::output
