#include "backend/delve/delve_finder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "util/cache_dir.hpp"

namespace goscope::delve {

namespace {

constexpr const char* kOnPath = "$PATH";
constexpr const char* kInCache = "the toolchain cache";

bool executableFile(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// goscope runs the dlv it finds with its own privileges (root, usually): one
// from the cache must be this user's, in directories nobody else may write
// to, or another user could put a program there for goscope to run.
bool ownedAndPrivate(const std::string& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0 && (st.st_uid == ::geteuid() || st.st_uid == 0) &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

bool trustedInCache(const std::string& cache, const std::string& dlv) {
  namespace fs = std::filesystem;
  if (!ownedAndPrivate(cache)) return false;
  for (fs::path p = dlv; p.string().size() > cache.size(); p = p.parent_path())
    if (!ownedAndPrivate(p.string())) return false;
  return true;
}

// `path version`, without a shell, its output read for up to 5 s.
std::string runVersion(const std::string& path) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  std::string arg0 = path, arg1 = "version";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 2);
    ::execv(argv[0], argv);
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) break;
    char buf[512];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return out;
}

// A Delve's window, asked once per path and process.
std::optional<DelveWindow> windowOf(const FoundDelve& d) {
  static std::mutex mu;
  static std::map<std::string, std::optional<DelveWindow>> known;
  std::lock_guard lock(mu);
  if (auto it = known.find(d.path); it != known.end()) return it->second;
  std::optional<DelveWindow> w;
  // toolchains.sh records the version it read from `dlv version` in
  // <item>/.complete, beside usr/bin/dlv.
  if (d.origin == kInCache) {
    std::ifstream in(std::filesystem::path(d.path).parent_path().parent_path().parent_path() / ".complete");
    std::string v;
    if (std::getline(in, v) && !v.empty()) w = parseDelveWindow("Version: " + v);
  }
  if (!w) w = parseDelveWindow(runVersion(d.path));
  known[d.path] = w;
  return w;
}

std::string windowText(const DelveWindow& w) {
  return "Go 1." + std::to_string(w.minGoMinor) + " to 1." + std::to_string(w.maxGoMinor);
}

std::vector<int> versionParts(const std::string& v) {
  std::vector<int> parts;
  size_t at = 0;
  while (at < v.size()) {
    parts.push_back(std::atoi(v.c_str() + at));
    at = v.find('.', at);
    if (at == std::string::npos) break;
    at++;
  }
  return parts;
}

}  // namespace

std::string FoundDelve::describe() const {
  std::string v = window ? "Delve " + window->delveVersion : std::string("dlv");
  return v + " (" + path + ", " + origin + ")";
}

std::string toolchainCacheDir() {
  if (const char* t = std::getenv("GOSCOPE_TOOLCHAINS"); t && *t) return t;
  std::string c = cacheDir();
  return c.empty() ? c : c + "/toolchains";
}

std::vector<FoundDelve> findDelves() {
  std::vector<FoundDelve> found;
  auto seen = [&](const std::string& real) {
    return std::any_of(found.begin(), found.end(), [&](const FoundDelve& d) { return realPath(d.path) == real; });
  };
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string cand = (dir.empty() ? std::string(".") : dir) + "/dlv";
    if (executableFile(cand) && !seen(realPath(cand))) found.push_back({cand, kOnPath, std::nullopt});
    start = end + 1;
  }
  const std::string cache = toolchainCacheDir();
  std::vector<FoundDelve> cached;
  std::error_code ec;
  if (!cache.empty() && std::filesystem::is_directory(cache, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(cache, ec)) {
      std::string cand = (e.path() / "usr/bin/dlv").string();
      if (!executableFile(cand) || !trustedInCache(cache, cand) || seen(realPath(cand))) continue;
      FoundDelve d{cand, kInCache, std::nullopt};
      d.window = windowOf(d);  // from the recorded version: no process
      cached.push_back(std::move(d));
    }
  }
  std::sort(cached.begin(), cached.end(), [](const FoundDelve& a, const FoundDelve& b) {
    auto va = a.window ? versionParts(a.window->delveVersion) : std::vector<int>{};
    auto vb = b.window ? versionParts(b.window->delveVersion) : std::vector<int>{};
    return va != vb ? va > vb : a.path < b.path;
  });
  found.insert(found.end(), cached.begin(), cached.end());
  return found;
}

bool anyDelve(const std::string& named) {
  std::string want = named;
  if (want.empty())
    if (const char* env = std::getenv("GOSCOPE_DLV"); env && *env) want = env;
  if (!want.empty()) return executableFile(want);
  return !findDelves().empty();
}

std::string delveFetchHint(int goMinor) {
  const std::string go = "Go 1." + std::to_string(goMinor);
  // The Delves Debian carries (scripts/toolchains.sh's table): 1.20.2 in
  // bookworm, 1.24.0 in trixie, 1.27.1 in sid.
  if (goMinor >= 18 && goMinor <= 20) return "Delve 1.20 reads " + go + ": apt-get install delve (Debian 12)";
  if (goMinor >= 22 && goMinor <= 24)
    return "Delve 1.24 reads " + go + ": scripts/toolchains.sh dlv1.24 fetches it (Debian trixie's) into the toolchain cache, where goscope finds it";
  if (goMinor >= 25 && goMinor <= 27)
    return "Delve 1.27 reads " + go + ": scripts/toolchains.sh dlv1.27 fetches it (Debian sid's) into the toolchain cache, where goscope finds it";
  // Outside Debian: Delve 1.N to 1.(N+2) read Go 1.N.
  const std::string newest = "v1." + std::to_string(goMinor + 2) + ".0";
  return "Delve 1." + std::to_string(goMinor) + " to 1." + std::to_string(goMinor + 2) + " read " + go +
         " (Debian has none of them): go install github.com/go-delve/delve/cmd/dlv@" + newest +
         ", then --dlv PATH or GOSCOPE_DLV=PATH";
}

DelveChoice chooseDelve(const std::string& named, const std::string& goVersion) {
  DelveChoice c;
  const std::optional<int> minor = goMinorOf(goVersion);
  const std::string built = goVersion.empty() ? std::string("an unknown Go release") : goVersion;
  auto covering = [&](const FoundDelve& d) { return !minor || (d.window && d.window->accepts(*minor)); };
  auto reads = [&](const FoundDelve& d) {
    return d.window ? " reads " + windowText(*d.window) : std::string(" (its version unknown: `dlv version` said nothing usable)");
  };

  std::string want = named, origin = "--dlv";
  if (want.empty())
    if (const char* env = std::getenv("GOSCOPE_DLV"); env && *env) want = env, origin = "GOSCOPE_DLV";
  if (!want.empty()) {
    if (!executableFile(want)) {
      c.tried = want + " (" + origin + ")";
      c.why = "no dlv: " + origin + " names " + want + ", which is not an executable file";
      return c;
    }
    FoundDelve d{want, origin, std::nullopt};
    d.window = windowOf(d);
    c.covers = covering(d);
    c.why = d.describe() + reads(d) + (minor ? (c.covers ? ", which covers " : ", which does not cover ") + built : "") +
            ": named by " + origin;
    if (!c.covers && minor) c.hint = delveFetchHint(*minor);
    c.chosen = std::move(d);
    return c;
  }

  std::vector<FoundDelve> found = findDelves();
  if (found.empty()) {
    c.tried = "dlv on $PATH" + (toolchainCacheDir().empty() ? std::string() : " or in " + toolchainCacheDir());
    c.why = "no dlv on $PATH" + (toolchainCacheDir().empty() ? std::string() : " nor in " + toolchainCacheDir());
    if (minor) c.hint = delveFetchHint(*minor);
    return c;
  }
  std::string others;
  for (auto& d : found) {
    if (!d.window) d.window = windowOf(d);
    if (covering(d)) {
      c.covers = true;
      c.why = d.describe() + reads(d) + (minor ? ", which covers " + built : ", the first found (the Go release is unknown)");
      if (!others.empty()) c.why += "; not " + others;
      c.chosen = d;
      return c;
    }
    others += (others.empty() ? "" : ", ") + d.describe() + reads(d);
    if (d.window) c.windows += (c.windows.empty() ? "" : ", ") + d.window->describe();
  }
  c.chosen = found.front();
  c.why = "no Delve found reads " + built + ": " + others;
  c.hint = delveFetchHint(*minor);
  return c;
}

}  // namespace goscope::delve
