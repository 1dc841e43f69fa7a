#include "util/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

namespace goscope {

void setupLogging(std::vector<std::string>& args) {
  auto logger = spdlog::stderr_color_mt("goscope");
  logger->set_pattern("goscope [%l] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);
  if (const char* env = std::getenv("GOSCOPE_LOG")) spdlog::set_level(spdlog::level::from_str(env));
  auto erase = [&](const char* flag, spdlog::level::level_enum lvl) {
    // Not after `--`: those words are a command's own (`count F -- ./prog -v`).
    const auto end = std::find(args.begin(), args.end(), std::string("--"));
    auto it = std::find(args.begin(), end, flag);
    if (it == end) return;
    args.erase(it);
    spdlog::set_level(lvl);
  };
  erase("-v", spdlog::level::debug);
  erase("--verbose", spdlog::level::debug);
  erase("-vv", spdlog::level::trace);
}

}  // namespace goscope
