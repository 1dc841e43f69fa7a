// Which Go releases a Delve reads, known before starting it, so the strategy
// layer can weigh "Go version against Delve's window" without an attach
// (delve_finder.hpp picks the Delve). `dlv version` gives Delve's version;
// the window follows Delve's
// release rule (each 1.N supports the three latest Go releases, 1.(N-2) to
// 1.N: 1.20.2 answers GetVersion with 1.18.0 .. 1.20.0). The exact check is
// still dlv's own at attach (DelveSession refuses outside its GetVersion
// window), which the fallback covers.
#pragma once

#include <optional>
#include <string>

namespace goscope::delve {

struct DelveWindow {
  std::string delveVersion;  // "1.20.2"
  int minGoMinor = 0;        // 18
  int maxGoMinor = 0;        // 20
  bool accepts(int goMinor) const { return goMinor >= minGoMinor && goMinor <= maxGoMinor; }
  std::string describe() const;  // "Delve 1.20.2 reads Go 1.18 to 1.20"
};

// From `dlv version`'s output ("Version: 1.20.2"); nullopt when unparsable.
std::optional<DelveWindow> parseDelveWindow(const std::string& dlvVersionOutput);

// 19 for "go1.19.8"; nullopt otherwise.
std::optional<int> goMinorOf(const std::string& goVersion);

}  // namespace goscope::delve
