// goscope's entry point: dispatch to a subcommand; turn the one fatal error
// type into one line on stderr and its documented exit code.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/target_watch.hpp"
#include "output/stderr_lines.hpp"
#include "output/stdout_writer.hpp"
#include "util/log.hpp"
#include "util/notice.hpp"
#include "util/printable.hpp"
#include "util/result.hpp"

namespace {

// Started with stdin, stdout or stderr closed (`goscope ... >&- 2>&-`), the
// first descriptors goscope opens would become 0, 1 and 2: a socket to dlv
// or a memfd written to as if it were the output, a pipe closed by a
// redirection meant for a child. /dev/null takes those numbers first, before
// any static initializer opens anything (priority 101 runs first). A
// closed stdout is still an error to say (the output went nowhere): the
// stdout writer is told, and never writes to that /dev/null.
bool stdoutClosedAtStart = false;

__attribute__((constructor(101))) void occupyStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == STDOUT_FILENO) stdoutClosedAtStart = true;
    const int n = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (n >= 0 && n != fd) {  // a lower one was free after all: put it where it belongs
      ::dup2(n, fd);
      ::close(n);
    }
  }
}

void printUsage(FILE* to) {
  std::fprintf(to, "usage: goscope COMMAND [OPTIONS]   (goscope COMMAND --help for its options)\n\ncommands:\n");
  for (const auto& c : goscope::cli::commands()) std::fprintf(to, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(to, "\nexit codes: 0 ok, 1 internal error (or stdout not written), 2 usage, 3 not found, 4 bad target,\n"
                   "            5 no match, 6 permission, 7 external tool failed, 8 target exec'd (or exited, with --strict),\n"
                   "            9 doctor: the code differs from the file; a -c command that ends the session: its own\n"
                   "\n-v or --verbose, anywhere on the line, logs what goscope does on stderr\n");
}

int run(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    printUsage(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::printf("goscope %s\n", GOSCOPE_VERSION);
    return 0;
  }
  try {
    for (const auto& c : goscope::cli::commands())
      if (args[0] == c.name) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
    throw goscope::FatalError{{goscope::ErrorKind::Usage, "unknown command '" + args[0] + "'", "goscope --help lists them"}};
  } catch (const goscope::FatalError& fatal) {
    const goscope::Error e = goscope::cli::explainFailure(fatal.error);
    std::string line = "goscope: " + e.message;
    if (!e.hint.empty()) line += " (hint: " + e.hint + ")";
    // One line, whatever the message quotes (a pattern, a path).
    goscope::output::lineToStderr(goscope::escapeControl(line));
    return goscope::exitCodeFor(e.kind);
  } catch (const std::exception& e) {
    goscope::output::noticeToStderr("internal error: " + goscope::escapeControl(e.what()));
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // `goscope __link-holder FD ...`: the process that holds a session's BPF
  // links (src/backend/bpf/link_holder.hpp), before anything else runs.
  if (int code = goscope::api::linkHolderMain(argc, argv); code >= 0) return code;
  // Every write to stdout from here goes through one writer: never held by
  // a reader that does not read, write errors kept for the exit status.
  goscope::output::StdoutWriter::install(stdoutClosedAtStart);
  std::vector<std::string> args(argv + 1, argv + argc);
  goscope::setupLogging(args);  // consumes -v / --verbose
  goscope::setNoticeHook(goscope::output::noticeToStderr);
  return goscope::output::finishStdout(run(args));
}
