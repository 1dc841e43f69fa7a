#include "backend/delve/delve_window.hpp"

#include <cstdio>

namespace goscope::delve {

std::string DelveWindow::describe() const {
  return "Delve " + delveVersion + " reads Go 1." + std::to_string(minGoMinor) + " to 1." + std::to_string(maxGoMinor);
}

std::optional<DelveWindow> parseDelveWindow(const std::string& out) {
  auto at = out.find("Version: ");
  if (at == std::string::npos) return std::nullopt;
  std::string v = out.substr(at + 9);
  v = v.substr(0, v.find_first_of(" \n\r"));
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(v.c_str(), "%d.%d.%d", &major, &minor, &patch) < 2 || major != 1) return std::nullopt;
  return DelveWindow{v, minor - 2, minor};
}

std::optional<int> goMinorOf(const std::string& goVersion) {
  int major = 0, minor = 0;
  if (std::sscanf(goVersion.c_str(), "go%d.%d", &major, &minor) != 2 || major != 1) return std::nullopt;
  return minor;
}

}  // namespace goscope::delve
