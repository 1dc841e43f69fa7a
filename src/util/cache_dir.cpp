#include "util/cache_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace goscope {

std::string cacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/goscope";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/goscope";
  return {};
}

bool makePrivateDir(const std::string& dir) {
  if (dir.empty() || dir.front() != '/') return false;
  if (auto slash = dir.rfind('/'); slash > 0) ::mkdir(dir.substr(0, slash).c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  return st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

}  // namespace goscope
