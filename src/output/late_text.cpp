// The words after a late interval's header, and the cause of a late
// reading: shared by the text output and the CLI's -d line.
#include <algorithm>
#include <cstdio>

#include "output/output.hpp"

namespace goscope::output {

std::string lateCause(double waitS, double ownS) {
  // Most of it goscope's own work (a long reading, e.g. naming ~100,000
  // stacks): the scheduler is not to blame, and a larger -i is the remedy.
  if (waitS > 0 && ownS >= 0.5 * waitS) {
    char text[80];
    std::snprintf(text, sizeof text, "goscope's own work took %.2f s", ownS);
    return text;
  }
  return "goscope was not run on time";
}

std::string lateText(const Output::Interval& in) {
  if (in.lateS <= 0 && in.skipped == 0) return "";
  char text[200];
  const std::string cause = lateCause(std::max(in.lateS, in.overdueS), in.ownS);
  if (in.skipped > 0)
    std::snprintf(text, sizeof text, " (%.2f s late, covering %d intervals: %s)", in.lateS, in.skipped + 1,
                  cause.c_str());
  else
    std::snprintf(text, sizeof text, " (%.2f s late: %s)", in.lateS, cause.c_str());
  return text;
}

}  // namespace goscope::output
