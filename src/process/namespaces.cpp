#include "process/namespaces.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

namespace goscope {

namespace {

std::string link(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

ProcessNamespaces namespacesOf(pid_t pid, const std::string& exePathInside) {
  ProcessNamespaces ns;
  const std::string proc = "/proc/" + std::to_string(pid);
  ns.mountNs = link(proc + "/ns/mnt");
  ns.pidNs = link(proc + "/ns/pid");
  const std::string ownMnt = link("/proc/self/ns/mnt"), ownPid = link("/proc/self/ns/pid");
  ns.otherMountNs = !ns.mountNs.empty() && !ownMnt.empty() && ns.mountNs != ownMnt;
  ns.otherPidNs = !ns.pidNs.empty() && !ownPid.empty() && ns.pidNs != ownPid;
  // NSpid: the pid in each PID namespace it is in, goscope's (outermost
  // visible) first, its own last (proc(5)).
  std::ifstream status(proc + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream in(line.substr(6));
    long v = 0, last = 0;
    int count = 0;
    while (in >> v) last = v, count++;
    if (count > 1) ns.innerPid = static_cast<pid_t>(last);
  }
  if (ns.otherMountNs && !exePathInside.empty() && exePathInside[0] == '/') ns.hostExePath = proc + "/root" + exePathInside;
  return ns;
}

std::vector<pid_t> processesRunningPathElsewhere(const std::string& path, size_t limit) {
  std::vector<pid_t> out;
  const std::string ownMnt = link("/proc/self/ns/mnt");
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc"), ::closedir);
  if (!dir || ownMnt.empty()) return out;
  while (dirent* e = ::readdir(dir.get())) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end) continue;
    const std::string proc = std::string("/proc/") + e->d_name;
    // A deleted or replaced file reads "PATH (deleted)": not this one.
    if (link(proc + "/exe") != path) continue;
    const std::string mnt = link(proc + "/ns/mnt");
    if (mnt.empty() || mnt == ownMnt) continue;
    out.push_back(static_cast<pid_t>(pid));
    if (out.size() >= limit) break;
  }
  return out;
}

}  // namespace goscope
