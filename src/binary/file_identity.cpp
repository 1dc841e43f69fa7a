#include "binary/file_identity.hpp"

#include <sys/sysmacros.h>

namespace goscope {

namespace {

std::string where(const FileIdentity& f) {
  return "inode " + std::to_string(f.ino) + " on device " + std::to_string(major(f.dev)) + ":" +
         std::to_string(minor(f.dev));
}

}  // namespace

std::string describeChange(const FileIdentity& was, const FileIdentity& now) {
  if (!was.sameFile(now)) return "another file (" + where(now) + ", was " + where(was) + ")";
  std::string what;
  if (now.size != was.size)
    what = "size " + std::to_string(now.size) + ", was " + std::to_string(was.size);
  if (now.mtime.tv_sec != was.mtime.tv_sec || now.mtime.tv_nsec != was.mtime.tv_nsec)
    what += std::string(what.empty() ? "" : "; ") + "modified since it was read";
  return what.empty() ? std::string() : "the same file rewritten (" + what + ")";
}

}  // namespace goscope
