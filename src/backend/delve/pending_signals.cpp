#include "backend/delve/pending_signals.hpp"

#include <signal.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace goscope::delve {

std::optional<uint64_t> parseSignalMask(std::string_view text, std::string_view key) {
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    std::string_view line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = (nl == std::string_view::npos) ? text.size() : nl + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') continue;
    std::string_view hex = line.substr(key.size() + 1);
    while (!hex.empty() && (hex.front() == ' ' || hex.front() == '\t')) hex.remove_prefix(1);
    uint64_t mask = 0;
    auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), mask, 16);
    if (ec != std::errc()) return std::nullopt;
    return mask;
  }
  return std::nullopt;
}

namespace {

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr uint64_t kTrapBit = uint64_t(1) << (SIGTRAP - 1);

}  // namespace

Result<bool> sigtrapPending(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  auto status = slurp(proc + "/status");
  if (!status) return fail(ErrorKind::TargetGone, "process " + std::to_string(pid) + " is gone");
  if (auto shared = parseSignalMask(*status, "ShdPnd"); shared && (*shared & kTrapBit)) return true;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(proc + "/task", ec)) {
    auto ts = slurp(task.path().string() + "/status");
    if (!ts) continue;  // a thread that just exited
    if (auto own = parseSignalMask(*ts, "SigPnd"); own && (*own & kTrapBit)) return true;
  }
  return false;
}

}  // namespace goscope::delve
