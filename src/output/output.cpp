#include "output/output.hpp"

#include "output/outputs.hpp"

namespace goscope::output {

std::unique_ptr<Output> makeOutput(bool json) { return json ? makeJsonOutput() : makeTextOutput(); }

}  // namespace goscope::output
