#include "util/cache_dir.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

namespace goscope {

std::string cacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/goscope";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/goscope";
  return {};
}

namespace {

CacheDirectory choose() {
  CacheDirectory c;
  const std::string preferred = cacheDir();
  if (preferred.empty()) {
    c.note = "no $XDG_CACHE_HOME or $HOME";
  } else if (auto d = SafeDir::open(preferred, SafeDir::Trust::Private, true)) {
    c.dir = std::move(*d);
    return c;
  } else {
    c.note = d.error().message;
  }
  // TMPDIR as the C library gives it to a privileged program: unset under
  // AT_SECURE (setcap or setuid), where /tmp is used.
  std::string tmp = "/tmp";
  if (const char* t = ::secure_getenv("TMPDIR"); t && *t == '/') tmp = t;
  const std::string perUser = tmp + "/goscope-" + std::to_string(::geteuid());
  if (auto d = SafeDir::open(perUser, SafeDir::Trust::Private, true)) {
    c.dir = std::move(*d);
    return c;
  } else {
    c.note += "; " + d.error().message;
  }
  std::string tmpl = tmp + "/goscope-" + std::to_string(::geteuid()) + "-XXXXXX";
  if (::mkdtemp(tmpl.data())) {
    if (auto d = SafeDir::open(tmpl, SafeDir::Trust::Private, false)) {
      c.dir = std::move(*d);
      return c;
    } else {
      c.note += "; " + d.error().message;
    }
  }
  return c;
}

}  // namespace

const CacheDirectory& cacheDirectory() {
  static std::once_flag once;
  static CacheDirectory c;
  std::call_once(once, [] { c = choose(); });
  return c;
}

}  // namespace goscope
