#include "process/process_cpu.hpp"

#include <unistd.h>

#include "process/proc_stat.hpp"

namespace goscope {

std::optional<uint64_t> processCpuNs(pid_t pid) {
  const auto stat = readProcStat(pid);
  if (!stat || stat->field(15).empty()) return std::nullopt;
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz <= 0) return std::nullopt;
  const uint64_t ticks = stat->number(14) + stat->number(15);  // utime + stime
  return ticks * (1'000'000'000ULL / static_cast<unsigned long long>(hz));
}

}  // namespace goscope
