// The implementations of Output, one per format. Internal to src/output.
#pragma once

#include "output/output.hpp"

namespace goscope::output {

std::unique_ptr<Output> makeTextOutput();
std::unique_ptr<Output> makeJsonOutput();

}  // namespace goscope::output
