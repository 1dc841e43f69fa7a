#include "util/safe_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace goscope {

namespace {

std::string modeText(mode_t mode) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(mode & 07777));
  return b;
}

Result<void> openChecked(int dirfd, const std::string& name, const std::string& display, SafeDir::Trust trust,
                            bool create, UniqueFd& out) {
  if (create) ::mkdirat(dirfd, name.c_str(), 0700);
  out.reset(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!out.valid()) {
    const int err = errno;
    if (err == ENOENT) return fail(ErrorKind::NotFound, display + ": no such directory");
    // O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR (or ELOOP): which it is.
    struct stat lst{};
    if ((err == ELOOP || err == ENOTDIR) && ::fstatat(dirfd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(lst.st_mode))
      return fail(ErrorKind::Permission, display + " is a symbolic link, not a directory");
    if (err == ENOTDIR || err == ELOOP) return fail(ErrorKind::Permission, display + " is not a directory");
    return fail(ErrorKind::Permission, display + ": " + std::strerror(err));
  }
  struct stat st{};
  if (::fstat(out.get(), &st) != 0) return fail(ErrorKind::Internal, display + ": fstat: " + std::strerror(errno));
  if (std::string why = whyNotTrusted(st.st_uid, st.st_mode, ::geteuid(), trust, true); !why.empty())
    return fail(ErrorKind::Permission, display + " is " + why);
  return {};
}

std::atomic<unsigned> gTempCounter{0};

}  // namespace

std::string whyNotTrusted(uid_t owner, mode_t mode, uid_t euid, SafeDir::Trust trust, bool isDirectory) {
  if (isDirectory && !S_ISDIR(mode)) return "not a directory";
  if (!isDirectory && !S_ISREG(mode)) return "not a regular file";
  const bool ownerOk = owner == euid || (trust == SafeDir::Trust::Output && owner == 0);
  if (!ownerOk)
    return "owned by uid " + std::to_string(owner) + ", not by goscope's user (uid " + std::to_string(euid) + ")";
  const bool othersWrite = (mode & (S_IWGRP | S_IWOTH)) != 0;
  const bool sticky = isDirectory && (mode & S_ISVTX) != 0;
  if (othersWrite && !(trust == SafeDir::Trust::Output && sticky))
    return "writable by group or others (mode " + modeText(mode) + ")";
  return {};
}

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

Result<SafeDir> SafeDir::open(const std::string& path, Trust trust, bool create) {
  if (path.empty()) return fail(ErrorKind::NotFound, "no directory given");
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  // The parent is only created (mkdir -p of the last two levels, as
  // ~/.cache may not exist yet); what is checked is the directory itself,
  // held open from here on.
  const size_t slash = dir.rfind('/');
  std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
  std::string leaf = slash == std::string::npos ? dir : dir.substr(slash + 1);
  if (leaf.empty()) leaf = ".";  // "/" itself
  if (create && slash != std::string::npos && slash > 0) ::mkdir(parent.c_str(), 0700);
  UniqueFd parentFd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parentFd.valid()) {
    const int err = errno;
    return fail(err == ENOENT ? ErrorKind::NotFound : ErrorKind::Permission, parent + ": " + std::strerror(err));
  }
  SafeDir d;
  d.path_ = dir;
  d.trust_ = trust;
  if (auto r = openChecked(parentFd.get(), leaf, dir, trust, create, d.fd_); !r) return r.failure();
  return d;
}

Result<SafeDir::OutputFile> SafeDir::forOutputFile(const std::string& path) {
  if (path.empty()) return fail(ErrorKind::Usage, "an empty file name");
  if (path.back() == '/') return fail(ErrorKind::Usage, path + " names a directory, not a file");
  const size_t slash = path.rfind('/');
  const std::string dirPath = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name == "." || name == "..") return fail(ErrorKind::Usage, path + " names a directory, not a file");
  auto dir = SafeDir::open(dirPath, Trust::Output, false);
  if (!dir) return fail(dir.error().kind == ErrorKind::NotFound ? ErrorKind::Usage : dir.error().kind,
                        dir.error().message);
  struct stat st{};
  if (::fstatat(dir->fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) return fail(ErrorKind::Usage, path + " is a symbolic link: give the file it names");
    if (S_ISDIR(st.st_mode)) return fail(ErrorKind::Usage, path + " is a directory, not a file");
    if (!S_ISREG(st.st_mode)) return fail(ErrorKind::Usage, path + " is a special file (a device, FIFO or socket), not a regular file");
  } else if (errno != ENOENT) {
    return fail(ErrorKind::Usage, path + ": " + std::strerror(errno));
  }
  if (::faccessat(dir->fd(), ".", W_OK, AT_EACCESS) != 0)
    return fail(ErrorKind::Usage, dirPath + ": " + std::strerror(errno));
  return OutputFile{std::move(*dir), name};
}

Result<SafeDir> SafeDir::sub(std::string_view name, bool create) const {
  if (name.empty() || name.find('/') != std::string_view::npos || name == "." || name == "..")
    return fail(ErrorKind::Usage, "not a name inside a directory: " + std::string(name));
  SafeDir d;
  d.path_ = pathOf(name);
  d.trust_ = trust_;
  if (auto r = openChecked(fd_.get(), std::string(name), d.path_, trust_, create, d.fd_); !r) return r.failure();
  return d;
}

Result<void> SafeDir::writeFile(std::string_view name, const std::function<bool(int fd)>& fill) const {
  if (name.empty() || name.find('/') != std::string_view::npos)
    return fail(ErrorKind::Usage, "not a file name inside a directory: " + std::string(name));
  const std::string target(name);
  const std::string tmp = target + "." + std::to_string(::getpid()) + "." + std::to_string(gTempCounter++);
  const mode_t mode = trust_ == Trust::Private ? 0600 : 0644;
  UniqueFd f(::openat(fd_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!f.valid()) return fail(ErrorKind::Permission, "cannot create " + pathOf(tmp) + ": " + std::strerror(errno));
  bool ok = fill(f.get());
  int err = ok ? 0 : (errno ? errno : EIO);
  if (ok && ::renameat(fd_.get(), tmp.c_str(), fd_.get(), target.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlinkat(fd_.get(), tmp.c_str(), 0);
    return fail(ErrorKind::Permission, "cannot write " + pathOf(target) + ": " + std::strerror(err));
  }
  return {};
}

Result<void> SafeDir::writeFile(std::string_view name, std::string_view bytes) const {
  return writeFile(name, [&](int fd) { return writeAll(fd, bytes); });
}

Result<UniqueFd> SafeDir::openOwnFile(std::string_view name, size_t maxBytes) const {
  const std::string n(name);
  UniqueFd f(::openat(fd_.get(), n.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!f.valid()) {
    const int err = errno;
    if (err == ENOENT) return fail(ErrorKind::NotFound, pathOf(n) + ": no such file");
    if (err == ELOOP) return fail(ErrorKind::Permission, pathOf(n) + " is a symbolic link");
    return fail(ErrorKind::Permission, pathOf(n) + ": " + std::strerror(err));
  }
  struct stat st{};
  if (::fstat(f.get(), &st) != 0) return fail(ErrorKind::Internal, pathOf(n) + ": fstat: " + std::strerror(errno));
  if (std::string why = whyNotTrusted(st.st_uid, st.st_mode, ::geteuid(), Trust::Private, false); !why.empty())
    return fail(ErrorKind::Permission, pathOf(n) + " is " + why);
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return fail(ErrorKind::Permission, pathOf(n) + " is larger than " + std::to_string(maxBytes) + " bytes");
  return f;
}

Result<std::string> SafeDir::readOwnFile(std::string_view name, size_t maxBytes) const {
  auto f = openOwnFile(name, maxBytes);
  if (!f) return f.failure();
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(f->get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(ErrorKind::Internal, pathOf(std::string(name)) + ": " + std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > maxBytes) return fail(ErrorKind::Permission, pathOf(std::string(name)) + " grew while read");
  }
  return out;
}

}  // namespace goscope
