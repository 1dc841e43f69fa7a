#include "util/progress.hpp"

#include <chrono>

namespace goscope {

namespace {
const auto kStart = std::chrono::steady_clock::now();
ProgressHook& hook() {
  static ProgressHook h;
  return h;
}
}  // namespace

void setProgressHook(ProgressHook h) { hook() = std::move(h); }

void reportProgress(const std::string& what, size_t done, size_t total) {
  if (hook()) hook()(what, done, total);
}

double secondsSinceProcessStart() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - kStart).count();
}

}  // namespace goscope
