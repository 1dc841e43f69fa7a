// What every Delve test checks at its end: the fixture is alive, nobody
// traces it any more (no dlv, no guardian), no int3 is left anywhere in its
// code (its .text in memory equals the file's), and it runs at speed again.
// Header-only (the runtime tests link tests/support/run.cpp only); include it
// from doctest test files.
#pragma once

#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/run.hpp"
#include "binary/elf_file.hpp"

namespace goscope::test {

using namespace std::chrono_literals;

// Alive and not a zombie (kill(pid, 0) succeeds for zombies).
// A /proc file of a process, "" once it is gone. Not std::ifstream:
// libstdc++'s filebuf throws when read(2) fails, and a read of a process
// that exits meanwhile fails (ESRCH), which happens all the time when other
// tests run beside this one.
inline std::string procFile(pid_t pid, const char* name) {
  const std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

inline bool alive(pid_t pid) {
  const std::string stat = procFile(pid, "stat");
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' && stat[close + 2] != 'X';
}

// The state letter of /proc/PID/stat: 'R', 'S', 't' (stopped by a tracer)...
inline char procState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return '?';
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '?';
}

inline bool waitGone(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// TracerPid from /proc/PID/status: 0 when nobody ptraces it.
inline pid_t tracerPid(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("TracerPid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(10)));
  return -1;
}

// Live processes running `dlv attach TARGET ...`.
inline std::vector<pid_t> dlvAttachedTo(pid_t target) {
  std::vector<pid_t> out;
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc) return out;
  while (dirent* e = readdir(proc.get())) {
    pid_t p = static_cast<pid_t>(std::atoi(e->d_name));
    if (p <= 0) continue;
    const std::string cmd = procFile(p, "cmdline");
    std::vector<std::string> argv;
    for (size_t at = 0; at < cmd.size();) {
      size_t end = cmd.find('\0', at);
      argv.push_back(cmd.substr(at, end - at));
      at = end == std::string::npos ? cmd.size() : end + 1;
    }
    if (argv.size() >= 3 && argv[0].ends_with("dlv") && argv[1] == "attach" && argv[2] == std::to_string(target) &&
        alive(p))
      out.push_back(p);
  }
  return out;
}

// Waits until no dlv is attached to `target` and it has no tracer.
inline bool waitUntraced(pid_t target, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!dlvAttachedTo(target).empty() || tracerPid(target) != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

inline std::vector<uint8_t> readMem(pid_t pid, uint64_t addr, size_t n) {
  std::vector<uint8_t> buf(n);
  int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  size_t got = 0;
  while (fd >= 0 && got < n) {
    ssize_t r = ::pread(fd, buf.data() + got, n - got, static_cast<off_t>(addr + got));
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  if (fd >= 0) ::close(fd);
  buf.resize(got);
  return buf;
}

// A non-PIE fixture's .text as the file has it and as the process's memory
// has it now (mem shorter than file when the memory cannot be read whole:
// the process died, or has not mapped it yet).
struct TextBytes {
  uint64_t addr = 0;
  std::vector<uint8_t> file, mem;
  bool whole() const { return !file.empty() && mem.size() == file.size(); }
};
inline TextBytes textBytes(pid_t pid, const ElfFile& elf) {
  TextBytes t;
  const auto* text = elf.section(".text");
  if (!text) return t;
  t.addr = text->addr;
  const auto bytes = elf.sectionBytes(*text);
  t.file.assign(bytes.begin(), bytes.end());
  t.mem = readMem(pid, text->addr, t.file.size());
  return t;
}

// The whole .text in memory equals the file: no int3 (or anything else)
// left behind. Returns the first differing address, 0 if none (1 when it
// cannot be read).
inline uint64_t textDifference(pid_t pid, const ElfFile& elf) {
  const TextBytes t = textBytes(pid, elf);
  if (!t.whole()) return 1;
  auto [a, b] = std::mismatch(t.mem.begin(), t.mem.end(), t.file.begin());
  return a == t.mem.end() ? 0 : t.addr + static_cast<uint64_t>(a - t.mem.begin());
}

// How many bytes of the process's .text differ from the file (SIZE_MAX when
// its memory cannot be read).
inline size_t textBytesDiffering(pid_t pid, const ElfFile& elf) {
  const TextBytes t = textBytes(pid, elf);
  if (!t.whole()) return SIZE_MAX;
  size_t n = 0;
  for (size_t i = 0; i < t.mem.size(); i++) n += t.mem[i] != t.file[i];
  return n;
}

// For a failure's message: how many bytes of the process's .text differ
// from the file, and the first few (address, function+offset, byte in
// memory, byte in the file): an uprobe's or a breakpoint's int3 reads 0xcc.
// Says so when the process's memory cannot be read (it died).
inline std::string describeTextDifference(pid_t pid, const ElfFile& elf) {
  const TextBytes t = textBytes(pid, elf);
  if (t.file.empty()) return "no .text in the file";
  if (!t.whole()) return "the process's .text could not be read (" + std::string(alive(pid) ? "alive" : "dead") + ")";
  const auto& mem = t.mem;
  const auto& file = t.file;
  std::vector<const ElfFile::Symbol*> funcs;
  for (const auto& s : elf.symbols())
    if (s.type == 2 /* STT_FUNC */ && s.size) funcs.push_back(&s);
  std::ostringstream out;
  size_t n = 0;
  for (size_t i = 0; i < mem.size(); i++) {
    if (mem[i] == file[i]) continue;
    if (n++ >= 8) continue;
    const uint64_t addr = t.addr + i;
    std::string where = "?";
    for (const auto* f : funcs)
      if (addr >= f->value && addr < f->value + f->size) where = f->name + "+" + std::to_string(addr - f->value);
    char bytes[32];
    std::snprintf(bytes, sizeof bytes, " %02x (file %02x)", mem[i], file[i]);
    out << " [0x" << std::hex << addr << std::dec << " " << where << bytes << "]";
  }
  return std::to_string(n) + " byte(s) differ:" + out.str();
}

inline ElfFile::Symbol symbolOf(const ElfFile& elf, const std::string& name) {
  for (const auto& s : elf.symbols())
    if (s.name == name) return s;
  return {};
}

// The counter fixture with --report: its reports, its counter, its speed.
struct Counter {
  Child child;
  std::shared_ptr<ElfFile> elf;
  ElfFile::Symbol doWork, mainMain, counter;

  explicit Counter(std::vector<std::string> extra = {}, const std::string& binary = fixture("counter"))
      : child(argv(binary, extra), /*captureStdout=*/true) {
    auto e = ElfFile::open(binary);
    REQUIRE_MESSAGE(e.has_value(), "build the fixtures first: scripts/build-fixtures.sh BUILD/fixtures");
    elf = *e;
    doWork = symbolOf(*elf, "main.doWork");
    mainMain = symbolOf(*elf, "main.main");
    counter = symbolOf(*elf, "main.counter");
    REQUIRE(doWork.value != 0);
    REQUIRE(counter.value != 0);
    std::string first;
    REQUIRE_MESSAGE(child.readLine(first, 5000), "the counter fixture did not report");
  }
  static std::vector<std::string> argv(const std::string& binary, const std::vector<std::string>& extra) {
    std::vector<std::string> a = {binary, "--report"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  pid_t pid() const { return child.pid(); }

  int64_t value() const {
    auto b = readMem(pid(), counter.value, 8);
    int64_t v = -1;
    if (b.size() == 8) std::memcpy(&v, b.data(), 8);
    return v;
  }
  // Increments per second of the counter's own CPU time, over at least
  // 100 ms of it (or 3 s of wall time): what a leftover trap or a slowed
  // target changes, and what a busy neighbour (CI runs two tests at once on
  // 2 CPUs) does not, as a wall-clock rate would. A target that got no CPU
  // in the window (stopped) rates 0.
  double rate() const {
    const int64_t a = value();
    const double c0 = cpuSeconds(pid());
    const auto t0 = std::chrono::steady_clock::now();
    double used = 0;
    do {
      std::this_thread::sleep_for(50ms);
      used = cpuSeconds(pid()) - c0;
    } while (used < 0.1 && std::chrono::steady_clock::now() - t0 < 3s);
    const int64_t b = value();
    return used > 0.005 ? (b - a) / used : 0;
  }
  // The function's bytes in memory equal the file's.
  bool codeIntact(const ElfFile::Symbol& fn) const {
    auto file = elf->readVaddr(fn.value, fn.size);
    auto mem = readMem(pid(), fn.value, fn.size);
    return file && mem.size() == fn.size && std::equal(mem.begin(), mem.end(), file->begin());
  }
  bool addrIntact(uint64_t addr) const {
    auto file = elf->readVaddr(addr, 1);
    auto mem = readMem(pid(), addr, 1);
    return file && mem.size() == 1 && mem[0] == (*file)[0];
  }
  // The N of the next "counter: N (R ops/s)" line, -1 if none in time.
  int64_t nextReport(int timeoutMs = 3000) {
    std::string line;
    if (!child.readLine(line, timeoutMs) || line.rfind("counter: ", 0) != 0) return -1;
    return std::stoll(line.substr(9));
  }
  // Drops the report lines already printed, so the next one is fresh.
  void drainReports() {
    std::string line;
    while (child.readLine(line, 5)) {
    }
  }
};

// The end of every counter test: the fixture runs on, unharmed, at speed.
inline void checkUnharmed(Counter& c, double rateBefore, const std::vector<uint64_t>& bpAddrs = {}) {
  REQUIRE(alive(c.pid()));
  CHECK_MESSAGE(waitUntraced(c.pid(), 20s), "a dlv is still attached to the fixture");
  CHECK(c.codeIntact(c.doWork));
  CHECK(c.codeIntact(c.mainMain));
  for (auto a : bpAddrs) CHECK(c.addrIntact(a));
  CHECK(textDifference(c.pid(), *c.elf) == 0);
  std::this_thread::sleep_for(300ms);  // let it recover from any stop
  double after = c.rate();
  MESSAGE("counter rate before " << rateBefore / 1e6 << " M/s, after " << after / 1e6 << " M/s");
  CHECK(after > 0.25 * rateBefore);  // per CPU second (rate()): a leftover trap costs it many times over
  std::string line;  // its own report still flows
  CHECK(c.child.readLine(line, 3000));
  CHECK(line.rfind("counter: ", 0) == 0);
  CHECK(c.child.alive());
}

}  // namespace goscope::test
