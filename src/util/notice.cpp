#include "util/notice.hpp"

#include <spdlog/spdlog.h>

#include <mutex>

namespace goscope {

namespace {
std::mutex& mu() {
  static std::mutex m;
  return m;
}
NoticeHook& hook() {
  static NoticeHook h;
  return h;
}
}  // namespace

void setNoticeHook(NoticeHook h) {
  std::lock_guard lock(mu());
  hook() = std::move(h);
}

void notify(const std::string& line) {
  std::lock_guard lock(mu());
  if (hook()) hook()(line);
  else spdlog::debug("{}", line);
}

}  // namespace goscope
