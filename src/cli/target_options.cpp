#include "cli/target_options.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "cli/probe_options.hpp"
#include "cli/target_watch.hpp"
#include "binary/separate_debug_info.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

void applyDebugInfoOptions(const Args& args) {
  DebugInfoSearch search;
  if (auto f = args.get("debug-file")) search.debugFile = *f;  // (parseArgs refuses an empty value)
  if (args.has("debug-dir")) {
    search.debugDirs = args.all("debug-dir");
    // A directory, or nothing: a FIFO, a device or a file here was taken
    // silently and searched as if it were one.
    for (const auto& d : search.debugDirs) {
      struct stat st{};
      if (::stat(d.c_str(), &st) != 0)
        raise({errno == ENOENT ? ErrorKind::NotFound : ErrorKind::Usage,
               "--debug-dir " + d + ": " + std::strerror(errno)});
      if (!S_ISDIR(st.st_mode))
        raise({ErrorKind::Usage, "--debug-dir " + d + " is not a directory",
               "give the directory that holds .build-id/ (gdb's debug-file-directory, e.g. /usr/lib/debug)"});
    }
  }
  setDebugInfoSearch(std::move(search));
}

Target openTargetOrRaise(const Args& args, const std::string& sub) {
  applyDebugInfoOptions(args);
  bool b = args.has("binary"), p = args.has("pid");
  if (b == p)
    raise({ErrorKind::Usage, sub + ": give exactly one target: -b BINARY or -p PID"});
  // info and list (the only callers) read a truncated file and show what
  // is left, after one warning that says what is lost (docs/errors.md).
  Target t = b ? orRaise(openBinaryTarget(*args.get("binary"), true))
               : orRaise(openProcessTarget(watchTarget(orRaise(parsePid(*args.get("pid")))), true));
  if (const auto& cut = t.binary->truncation())
    output::noticeToStderr("warning: " + cut->text + " (" + sub + " shows what is left)");
  return t;
}

}  // namespace goscope::cli
