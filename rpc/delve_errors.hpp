// Turns an error string from dlv's RPC server into goscope's one-line Error
// with a kind and a hint. Pure, so the recorded messages can be unit-tested.
#pragma once

#include <string_view>

#include "util/result.hpp"

namespace goscope::rpc {

// `method` is the RPC (e.g. "Eval"), `message` what dlv answered.
Error delveError(std::string_view method, std::string_view message);

}  // namespace goscope::rpc
