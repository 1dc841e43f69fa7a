// The identity of a file as goscope opened it: its device and inode (what a
// rename over its path or a swapped symlink changes), its size and
// modification time (what a rewrite in place changes). A target is pinned
// by it from the analysis to the attach (docs/security.md, "One target from
// the analysis to the attach").
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace goscope {

struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  static FileIdentity of(const struct stat& st) { return {st.st_dev, st.st_ino, st.st_size, st.st_mtim}; }
  bool sameFile(const FileIdentity& o) const { return dev == o.dev && ino == o.ino; }
  bool operator==(const FileIdentity& o) const {
    return sameFile(o) && size == o.size && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

// What differs between two identities of a path, in words: "another file
// (inode 12 on device 8:1, was inode 11)" or "the same file rewritten (size
// 100, was 90; modified ...)"; empty when nothing does. Pure: unit-tested.
std::string describeChange(const FileIdentity& was, const FileIdentity& now);

}  // namespace goscope
