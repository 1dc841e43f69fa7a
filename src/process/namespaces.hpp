// Processes in other namespaces (containers). goscope always reaches a
// process's executable through /proc/PID/exe (Process::exeHandlePath), never
// by the path the process sees, so `-p HOSTPID` works for a process in its
// own mount and PID namespaces; this file only tells the user where they
// are (`info -p`) and explains a `-b` path that exists only inside a
// container (docs/containers.md).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace goscope {

struct ProcessNamespaces {
  bool otherMountNs = false;       // its mount namespace is not goscope's
  bool otherPidNs = false;         // its PID namespace is not goscope's
  std::optional<pid_t> innerPid;   // its pid in its own PID namespace (NSpid's last), when that differs
  std::string mountNs, pidNs;      // "mnt:[4026532...]" as /proc/PID/ns shows them
  std::string hostExePath;         // /proc/PID/root + its path: the file as goscope can name it
};

// What /proc says about `pid`'s namespaces (fields empty when unreadable).
ProcessNamespaces namespacesOf(pid_t pid, const std::string& exePathInside);

// Processes whose executable is `path` as seen in their own mount namespace
// while that namespace is not goscope's (at most `limit`).
std::vector<pid_t> processesRunningPathElsewhere(const std::string& path, size_t limit = 3);

}  // namespace goscope
