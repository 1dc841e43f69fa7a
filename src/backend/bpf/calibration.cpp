#include "backend/bpf/calibration.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "backend/bpf/bpf_engine.hpp"
#include "util/unique_fd.hpp"

// The calibration target's three functions, one per placement. Written in
// assembly so that their first instructions are known exactly: `push %rbp`
// (the kernel emulates it), `mov %rdi,%rax` (single-stepped out of line) and
// the RET of the third (single-stepped too).
asm(R"(
  .text
  .p2align 4
  .globl goscope_calibration_emulated
  .type goscope_calibration_emulated,@function
goscope_calibration_emulated:
  push %rbp
  pop %rbp
  ret
  .size goscope_calibration_emulated, .-goscope_calibration_emulated

  .p2align 4
  .globl goscope_calibration_stepped
  .type goscope_calibration_stepped,@function
goscope_calibration_stepped:
  mov %rdi, %rax
  ret
  .size goscope_calibration_stepped, .-goscope_calibration_stepped

  .p2align 4
  .globl goscope_calibration_return
  .type goscope_calibration_return,@function
goscope_calibration_return:
  mov %rdi, %rax
goscope_calibration_return_ret:
  ret
  .size goscope_calibration_return, .-goscope_calibration_return
  .globl goscope_calibration_return_ret
)");

extern "C" {
uint64_t goscope_calibration_emulated(uint64_t);
uint64_t goscope_calibration_stepped(uint64_t);
uint64_t goscope_calibration_return(uint64_t);
void goscope_calibration_return_ret();
}

namespace goscope::bpf {

namespace {

using Fn = uint64_t (*)(uint64_t);
Fn const kFunctions[3] = {goscope_calibration_emulated, goscope_calibration_stepped, goscope_calibration_return};

uint64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The child: for each command byte i (0-2) read from `cmd`, calls function i
// `hits` times and writes the nanoseconds it took to `res`. System calls
// only (a fork of a possibly threaded process).
[[noreturn]] void serve(int cmd, int res, const int hits[3]) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::sigaction(sig, &ign, nullptr);
  ::setpgid(0, 0);
  volatile uint64_t sink = 0;
  for (unsigned char which; ::read(cmd, &which, 1) == 1 && which < 3;) {
    Fn volatile fn = kFunctions[which];
    uint64_t t0 = nowNs();
    for (int i = 0; i < hits[which]; i++) sink = sink + fn(static_cast<uint64_t>(i));
    uint64_t took = nowNs() - t0;
    if (::write(res, &took, sizeof took) != sizeof took) break;
  }
  ::_exit(0);
}

// The file offset of `addr` in this process's executable, from /proc/self/maps.
Result<uint64_t> fileOffsetOf(const void* addr) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<uint64_t>(addr);
  for (std::string line; std::getline(maps, line);) {
    uint64_t start = 0, end = 0, off = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx", &start, &end, perms, &off) != 4) continue;
    if (a >= start && a < end && perms[2] == 'x') return a - start + off;
  }
  return fail(ErrorKind::Internal, "calibration: goscope's own code is not in /proc/self/maps");
}

struct Child {
  pid_t pid = -1;
  UniqueFd cmd, res;
  ~Child() {
    cmd.reset();  // EOF: the child exits
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  Result<uint64_t> run(unsigned char which) {
    if (::write(cmd.get(), &which, 1) != 1) return fail(ErrorKind::Internal, "calibration: the target went away");
    uint64_t took = 0;
    if (::read(res.get(), &took, sizeof took) != sizeof took) return fail(ErrorKind::Internal, "calibration: the target went away");
    return took;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

Result<Calibrated> calibrate(const CalibrationOptions& o) {
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return fail(ErrorKind::Internal, "calibration: cannot read /proc/self/exe");
  exe[n] = '\0';
  auto offEmulated = fileOffsetOf(reinterpret_cast<const void*>(goscope_calibration_emulated));
  auto offStepped = fileOffsetOf(reinterpret_cast<const void*>(goscope_calibration_stepped));
  auto offRet = fileOffsetOf(reinterpret_cast<const void*>(goscope_calibration_return_ret));
  if (!offEmulated || !offStepped || !offRet) return fail(ErrorKind::Internal, "calibration: cannot place its probes");

  int cmd[2], res[2];
  if (::pipe2(cmd, O_CLOEXEC) != 0) return fail(ErrorKind::Internal, "calibration: pipe failed");
  if (::pipe2(res, O_CLOEXEC) != 0) {
    ::close(cmd[0]);
    ::close(cmd[1]);
    return fail(ErrorKind::Internal, "calibration: pipe failed");
  }
  const int hits[3] = {o.hits, std::max(1, o.hits / 5), std::max(1, o.hits / 5)};
  Child child;
  child.cmd.reset(cmd[1]);
  child.res.reset(res[0]);
  child.pid = ::fork();
  if (child.pid == 0) {
    ::close(cmd[1]);
    ::close(res[0]);
    serve(cmd[0], res[1], hits);
  }
  ::close(cmd[0]);
  ::close(res[1]);
  if (child.pid < 0) return fail(ErrorKind::Internal, "calibration: fork failed");

  auto engine = Engine::load({.maxProbes = 64});
  if (!engine) return engine.failure();
  for (uint32_t id = 0; id < 3; id++)
    if (auto c = (*engine)->configureProbe(id, ProbeConfig{.count = true}); !c) return c.failure();

  // Rounds alternate without and with the probes (A B A B), so a change in
  // the machine's load hits both sides alike.
  std::vector<double> perHit[3];
  for (int round = 0; round < o.rounds; round++) {
    uint64_t base[3];
    for (unsigned char i = 0; i < 3; i++) {
      auto t = child.run(i);
      if (!t) return t.failure();
      base[i] = *t;
    }
    auto stats = (*engine)->attach(exe, child.pid,
                                   {{*offEmulated, 0, SiteKind::Entry}, {*offStepped, 1, SiteKind::Entry}, {*offRet, 2, SiteKind::Return}});
    if (!stats) return stats.failure();
    uint64_t probed[3];
    for (unsigned char i = 0; i < 3; i++) {
      auto t = child.run(i);
      if (!t) return t.failure();
      probed[i] = *t;
    }
    auto counts = (*engine)->counts();
    (*engine)->detachAll();
    if (!counts) return counts.failure();
    // The RET probe does not count (counts are kept at entries): the two
    // entry probes must have seen every call, or the figures mean nothing.
    if (counts->size() < 2 || (*counts)[0] < static_cast<uint64_t>(hits[0]) || (*counts)[1] < static_cast<uint64_t>(hits[1]))
      return fail(ErrorKind::Internal, "calibration: the probes did not fire on every call");
    for (int i = 0; i < 3; i++)
      perHit[i].push_back(std::max(1.0, static_cast<double>(probed[i]) - static_cast<double>(base[i])) / hits[i]);
    for (uint32_t id = 0; id < 3; id++) (void)(*engine)->configureProbe(id, ProbeConfig{.count = true});  // zero the counts
  }
  return Calibrated{median(perHit[0]), median(perHit[1]), median(perHit[2])};
}

}  // namespace goscope::bpf
