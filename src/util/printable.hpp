// Text that came from outside (a pattern, a path, a process's name) goes
// into goscope's one-line messages with its control characters escaped: a
// newline would forge a second line, an ESC sequence would drive the
// user's terminal. Bytes of 0x80 and above stay (UTF-8 names are names),
// except the C1 controls U+0080-U+009F, which terminals also obey.
#pragma once

#include <string>
#include <string_view>

namespace goscope {

// "\n", "\t", "\r", "\\x1b" ...: C escapes for every C0 control, DEL and
// (as "\\u0085") the C1 controls in UTF-8. Pure: unit-tested.
std::string escapeControl(std::string_view text);

}  // namespace goscope
