#include "process/proc_stat.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace goscope {

namespace {
const std::string kNone;
}

const std::string& ProcStat::field(int n) const {
  if (n < 3 || static_cast<size_t>(n - 3) >= fields_.size()) return kNone;
  return fields_[static_cast<size_t>(n - 3)];
}

uint64_t ProcStat::number(int n) const { return std::strtoull(field(n).c_str(), nullptr, 10); }

char ProcStat::state() const {
  const std::string& s = field(3);
  return s.empty() ? '?' : s[0];
}

std::optional<ProcStat> readProcStat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(std::move(f));
  if (fields.empty()) return std::nullopt;
  return ProcStat(std::move(fields));
}

}  // namespace goscope
