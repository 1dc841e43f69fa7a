// SafeDir: the one way goscope writes a file (caches, the flame graph) and
// reads one back that it wrote (the caches): through a directory it holds
// open and has checked, never through a path a rename or a symlink could
// redirect after the check (docs/security.md, "Files goscope writes").
//
//   - the directory is opened with O_DIRECTORY|O_NOFOLLOW and checked on the
//     open fd: for goscope's own files (Private), owned by the effective
//     user with no group or other write; for a file the user names (Output),
//     owned by the effective user or root and not writable by group or
//     others unless sticky (/tmp: others cannot rename or delete what goscope
//     creates there);
//   - a file is created under a temporary name with O_CREAT|O_EXCL|O_NOFOLLOW
//     relative to that fd, filled, and renamed into place relative to it: a
//     planted symlink or file under either name is never followed or
//     truncated (rename replaces a symlink itself, not what it names);
//   - a file read back is opened O_NOFOLLOW|O_NONBLOCK relative to the fd and
//     must be a regular file owned by the effective user, not writable by
//     group or others.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace goscope {

class SafeDir {
 public:
  enum class Trust {
    Private,  // goscope's own files: owned by the effective user, no group/other write
    Output,   // a file the user names: owned by the effective user or root, no group/other write unless sticky
  };
  // Opens `path` (with `create`, makes it and its missing parent 0700 first).
  // Errors: NotFound (no such directory), Permission (foreign-owned, or
  // writable by others: the message says whose and which mode).
  static Result<SafeDir> open(const std::string& path, Trust trust, bool create = false);
  // The directory of a file the user names (--svg PATH), opened with
  // Trust::Output, and the file's name in it. Refused (Usage, with the
  // reason) when the directory is not trusted, or when the name exists as
  // anything but a regular file: a symbolic link, a device (/dev/null), a
  // FIFO, a directory (a rename over it would replace or fail on it).
  struct OutputFile;
  static Result<OutputFile> forOutputFile(const std::string& path);
  // `name` inside this directory (one component), checked as open() does.
  Result<SafeDir> sub(std::string_view name, bool create = false) const;

  const std::string& path() const { return path_; }
  std::string pathOf(std::string_view name) const { return path_ + "/" + std::string(name); }
  int fd() const { return fd_.get(); }

  // Writes `name` whole or not at all: a temporary NAME.PID.N created
  // O_EXCL|O_NOFOLLOW (mode 0600 for Private, 0644 for Output), filled by
  // `fill` (false: give up), renamed over `name`. The temporary file is
  // removed on every failure.
  Result<void> writeFile(std::string_view name, const std::function<bool(int fd)>& fill) const;
  Result<void> writeFile(std::string_view name, std::string_view bytes) const;

  // Opens `name` for reading: a regular file owned by the effective user,
  // not writable by group or others, at most maxBytes long. NotFound when it
  // does not exist; Permission (with the reason) when it is not such a file.
  Result<UniqueFd> openOwnFile(std::string_view name, size_t maxBytes) const;
  // The whole of such a file.
  Result<std::string> readOwnFile(std::string_view name, size_t maxBytes) const;

 private:
  UniqueFd fd_;
  std::string path_;
  Trust trust_ = Trust::Private;
};

struct SafeDir::OutputFile {
  SafeDir dir;
  std::string name;
};

// Why a directory (or file) status is not acceptable for `trust`, in words
// ("owned by uid 1000, not by goscope's user (uid 0)"); empty when it is.
// Pure: unit-tested.
std::string whyNotTrusted(uid_t owner, mode_t mode, uid_t euid, SafeDir::Trust trust, bool isDirectory);

// Every write(2) of `bytes` to `fd`, retrying short writes and EINTR.
bool writeAll(int fd, std::string_view bytes);

}  // namespace goscope
