// A Go string literal for text output, as both paths print strings: the
// BPF path's captured bytes and Delve's values. Printable ASCII and valid
// multi-byte UTF-8 are kept; quotes, backslashes and \n \t \r are escaped
// the Go way; every other byte (controls, invalid UTF-8) as \xNN.
#pragma once

#include <string>
#include <string_view>

namespace goscope {

std::string quoteGo(std::string_view bytes);

}  // namespace goscope
