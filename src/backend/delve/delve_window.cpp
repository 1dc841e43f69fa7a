#include "backend/delve/delve_window.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>

#include "util/launched_child.hpp"

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

bool dlvOnPath() { return resolveProgram("dlv").has_value(); }

std::optional<DelveWindow> installedDelveWindow() {
  static std::once_flag once;
  static std::optional<DelveWindow> window;
  std::call_once(once, [] {
    if (!dlvOnPath()) return;
    std::unique_ptr<FILE, int (*)(FILE*)> p(::popen("dlv version 2>/dev/null", "r"), ::pclose);
    if (!p) return;
    std::string out;
    char buf[256];
    while (size_t n = std::fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
    window = parseDelveWindow(out);
  });
  return window;
}

std::optional<int> goMinorOf(const std::string& goVersion) {
  int major = 0, minor = 0;
  if (std::sscanf(goVersion.c_str(), "go%d.%d", &major, &minor) != 2 || major != 1) return std::nullopt;
  return minor;
}

}  // namespace goscope::delve
