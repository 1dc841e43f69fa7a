// One target from the analysis to the attach (docs/security.md): the file a
// `-b PATH` analysis read is the file the probes go into, whatever is
// renamed or linked over PATH meanwhile, and a `-p PID` whose process dies
// during start-up never hands its plan to the process that takes the PID
// next. Each race runs 20 rounds (GOSCOPE_IDENTITY_ROUNDS), as root and, for
// -b, as uid 65534 with a setcap copy of goscope against root's process.
// The process that is not the analysed one must never be probed: it stays
// alive and its code equals its file at every sample during the session.
#include <doctest/doctest.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "support/goscope_process.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"
#include "support/unprivileged.hpp"

using namespace goscope::test;
using goscope::ElfFile;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// This file's scratch folders: /tmp/goscope-identity-TAG-PID.
struct Dir : ScratchDir {
  explicit Dir(const std::string& tag) : ScratchDir("identity-" + tag) {}
};

std::string copyOf(const std::string& from, const std::string& to, uid_t owner = 0) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  ::chmod(to.c_str(), 0755);
  if (owner) REQUIRE(::chown(to.c_str(), owner, owner) == 0);
  return to;
}

// Whether process `pid` holds an fd on the file with `st`'s device and inode.
bool holdsFile(pid_t pid, const struct stat& want) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    struct stat st{};
    if (e->d_name[0] != '.' && ::stat((dir + "/" + e->d_name).c_str(), &st) == 0 && st.st_ino == want.st_ino &&
        st.st_dev == want.st_dev) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

struct RaceCounts {
  int refused = 0;   // exit 8, "changed on disk": the swap came before the attach
  int attached = 0;  // exit 0: the swap came after the attach (the probes in the analysed file)
  int early = 0;     // goscope ended before the swap could be aimed
};

// Rounds of `PREFIX GOSCOPE count -b LINK 'main.*'`, LINK naming `analysed`
// until goscope holds that file open; then, 0-300 ms later, LINK is made to
// name `other` (a rename of a hard link over it, or of a new symlink), which
// `victim` runs. The victim is sampled all along.
RaceCounts raceBinarySwap(const std::string& prefix, const std::string& goscope, const std::string& dir,
                          const std::string& analysed, const std::string& other, pid_t victim, bool symlinks,
                          long rounds, uid_t linkOwner) {
  auto otherElf = ElfFile::open(other);
  REQUIRE(otherElf);
  struct stat analysedSt{};
  REQUIRE(::stat(analysed.c_str(), &analysedSt) == 0);
  const std::string link = dir + "/target", tmp = dir + "/target.new";
  std::mt19937 rng(std::random_device{}());
  RaceCounts c;
  for (long r = 0; r < rounds; r++) {
    ::unlink(link.c_str());
    if (symlinks) REQUIRE(::symlink(analysed.c_str(), link.c_str()) == 0);
    else REQUIRE(::link(analysed.c_str(), link.c_str()) == 0);
    if (linkOwner) ::lchown(link.c_str(), linkOwner, linkOwner);
    const std::string err = dir + "/err." + std::to_string(r);
    Child g({"/bin/sh", "-c",
             "exec env GOSCOPE_NO_CALIBRATION=1 " + prefix + goscope + " count -b " + link + " 'main.*' -d 0.6 >/dev/null 2>" + err});
    std::atomic<bool> done{false};
    std::atomic<uint64_t> harmedAt{0};
    std::thread sampler([&] {
      while (!done) {
        if (uint64_t d = textDifference(victim, **otherElf)) harmedAt = d;
        std::this_thread::sleep_for(10ms);
      }
    });
    const bool held = waitUntil([&] { return holdsFile(g.pid(), analysedSt) || !g.alive(); }, 30s) && g.alive();
    if (held) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
      ::unlink(tmp.c_str());
      if (symlinks) REQUIRE(::symlink(other.c_str(), tmp.c_str()) == 0);
      else REQUIRE(::link(other.c_str(), tmp.c_str()) == 0);
      if (linkOwner) ::lchown(tmp.c_str(), linkOwner, linkOwner);
      REQUIRE(::rename(tmp.c_str(), link.c_str()) == 0);
    }
    const int status = g.waitExit(120000);
    done = true;
    sampler.join();
    const std::string text = slurpFile(err);
    INFO("round " << r << ", goscope's stderr: " << text);
    CHECK_MESSAGE(harmedAt == 0, "the other file's process was probed: its code differs at " << harmedAt);
    REQUIRE_MESSAGE(alive(victim), "the other file's process died");
    REQUIRE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    if (!held) {
      c.early++;
      continue;
    }
    if (code == 8) {
      CHECK(text.find("changed on disk while goscope analysed it: another file") != std::string::npos);
      CHECK(text.find("nothing was attached") != std::string::npos);
      c.refused++;
    } else {
      CHECK_MESSAGE(code == 0, "exit " << code);
      c.attached++;
    }
  }
  return c;
}

}  // namespace

TEST_CASE("identity: a -b file renamed or its symlink swapped during start-up: only the analysed file is probed") {
  const long rounds = envNumber("GOSCOPE_IDENTITY_ROUNDS", 20);
  Dir d("root");
  const std::string analysed = copyOf(fixture("counter"), d.path + "/analysed");
  const std::string other = copyOf(fixture("zoo"), d.path + "/other");
  Child victim({other});
  REQUIRE(waitUntil([&] { return cpuSeconds(victim.pid()) > 0.01; }, 10s));
  RaceCounts c{};
  for (bool symlinks : {false, true}) {
    auto one = raceBinarySwap("", cliPath(), d.path, analysed, other, victim.pid(), symlinks, rounds / 2, 0);
    c.refused += one.refused, c.attached += one.attached, c.early += one.early;
  }
  MESSAGE(c.refused << " rounds refused (the swap before the attach), " << c.attached << " attached first, " << c.early
                    << " ended early");
  CHECK(c.refused + c.attached >= rounds * 3 / 4);
  CHECK(c.refused > 0);  // the race is aimed at start-up: some swaps land before the attach
  CHECK(textDifference(victim.pid(), **ElfFile::open(other)) == 0);
}

TEST_CASE("identity: as uid 65534 with a setcap copy, a swapped symlink never places a probe in root's process") {
  if (::geteuid() != 0 || run(std::string(kAsNobody) + "true").exitCode != 0) {
    MESSAGE("needs root and a working setpriv (util-linux): skipped");
    return;
  }
  const long rounds = envNumber("GOSCOPE_IDENTITY_ROUNDS", 20);
  Dir d("nobody");
  const std::string goscope = copyOf(cliPath(), d.path + "/gsid" + std::to_string(::getpid()));
  REQUIRE_MESSAGE(setBpfPerfmonCaps(goscope), "setting file capabilities failed");
  // uid 65534's own directory, its own copy of a program, and a symlink to it.
  const std::string mine = d.path + "/mine";
  fs::create_directories(mine);
  REQUIRE(::chown(mine.c_str(), 65534, 65534) == 0);
  const std::string analysed = copyOf(fixture("counter"), mine + "/analysed", 65534);
  // Root's program, run by root.
  const std::string rootsProgram = copyOf(fixture("zoo"), d.path + "/roots");
  Child victim({rootsProgram});
  REQUIRE(waitUntil([&] { return cpuSeconds(victim.pid()) > 0.01; }, 10s));
  auto c = raceBinarySwap(kAsNobody, goscope, mine, analysed, rootsProgram, victim.pid(), true, rounds, 65534);
  MESSAGE(c.refused << " rounds refused, " << c.attached << " attached first, " << c.early << " ended early");
  CHECK(c.refused + c.attached >= rounds * 3 / 4);
  CHECK(c.refused > 0);
  CHECK(textDifference(victim.pid(), **ElfFile::open(rootsProgram)) == 0);
}

// In a PID namespace of its own, where PIDs are handed out in order and
// /proc/sys/kernel/ns_last_pid says which comes next: the analysed process
// is killed during goscope's start-up and another program is started at
// its PID.
TEST_CASE("identity: a PID reused during start-up gets no probe, and goscope says the process exited, not exec") {
  if (::geteuid() != 0 || run("unshare --pid --fork --mount-proc true").exitCode != 0) {
    MESSAGE("needs root and unshare (util-linux): skipped");
    return;
  }
  const long rounds = envNumber("GOSCOPE_IDENTITY_ROUNDS", 20);
  Dir d("pid");
  const std::string analysed = copyOf(fixture("counter"), d.path + "/analysed");
  const std::string other = copyOf(fixture("zoo"), d.path + "/other");
  auto elf = ElfFile::open(other);
  REQUIRE(elf);
  const auto* text = (*elf)->section(".text");
  REQUIRE(text);
  const std::string script = d.path + "/race.sh";
  {
    std::ofstream s(script);
    // $1 goscope, $2 analysed, $3 other, $4 rounds, $5 .text address,
    // $6 its file offset, $7 its size, $8 a directory for outputs.
    s << R"SH(set -u
g=$1; a=$2; o=$3; rounds=$4; addr=$5; off=$6; size=$7; out=$8
reused=0; tries=0
# goscope ends within -d 0.8 plus its start-up and detach; one that has not
# after 120 s is hung: its state, every thread's kernel stack and its
# children are printed (the test fails on "hung"), then it is killed.
bounded_wait() {
  local until=$((SECONDS + 120))
  while kill -0 $gs 2>/dev/null; do
    [ -n "${1:-}" ] && $1
    if [ $SECONDS -ge $until ]; then
      echo "hung: goscope $gs still running after 120 s: $(tr '\n' ' ' < "$out/err")"
      echo "hung status: $(grep -E '^(State|Threads|TracerPid)' /proc/$gs/status | tr '\n' ' ')"
      for th in /proc/$gs/task/*; do
        echo "hung thread ${th##*/} $(cat $th/comm) $(cat $th/wchan): $(tr '\n' ' ' < $th/stack 2>/dev/null)"
      done
      ps -o pid,ppid,stat,wchan:32,args --ppid $gs | sed 's/^/hung child /'
      kill -9 $gs
      break
    fi
    sleep 0.02
  done
  wait $gs
}
dd if="$o" of="$out/text" iflag=skip_bytes,count_bytes skip=$off count=$size status=none
while [ $reused -lt $rounds ] && [ $tries -lt $((rounds * 4)) ]; do
  tries=$((tries + 1))
  "$a" > /dev/null & t=$!
  sleep 0.3
  GOSCOPE_NO_CALIBRATION=1 "$g" count -p $t 'main.*' -d 0.8 > /dev/null 2> "$out/err" & gs=$!
  # Until goscope holds the target's executable open (its analysis has begun).
  n=0
  until ls -l /proc/$gs/fd 2>/dev/null | grep -q " $a\$"; do
    n=$((n + 1)); [ $n -gt 3000 ] && break; sleep 0.01
  done
  sleep 0.0$((RANDOM % 30))
  kill -9 $t; wait $t 2>/dev/null
  echo $((t - 1)) > /proc/sys/kernel/ns_last_pid
  "$o" > /dev/null & p=$!
  if [ $p -ne $t ]; then
    kill -9 $p; wait $p 2>/dev/null; bounded_wait 2>/dev/null
    echo "try $tries: the PID went to another task ($p, not $t)"
    continue
  fi
  reused=$((reused + 1))
  # The new process's text, compared whenever it can be read whole: until
  # its exec has mapped it, /proc/PID/mem is the forking shell's (in CI a
  # look that early read nothing and was counted as a difference).
  same=yes; looks=0
  look() {
    if dd if=/proc/$p/mem of="$out/mem" iflag=skip_bytes,count_bytes skip=$addr count=$size status=none 2>/dev/null &&
       [ "$(stat -c %s "$out/mem")" = "$size" ]; then
      looks=$((looks + 1)); cmp -s "$out/mem" "$out/text" || same=no
    fi
  }
  bounded_wait look; code=$?
  look  # and once goscope has ended
  [ $looks -eq 0 ] && same=unread
  alive=no; kill -0 $p 2>/dev/null && alive=yes
  echo "round $reused: pid $t exit $code alive $alive text $same err $(tr '\n' ' ' < "$out/err")"
  kill -9 $p; wait $p 2>/dev/null
done
echo "reused $reused tries $tries"
)SH";
  }
  auto r = run("unshare --pid --fork --mount-proc bash " + script + " " + cliPath() + " " + analysed + " " + other +
               " " + std::to_string(rounds) + " " + std::to_string(text->addr) + " " + std::to_string(text->offset) +
               " " + std::to_string(text->size) + " " + d.path);
  INFO(r.out << r.err);
  int reusedRounds = 0, saidExited = 0;
  for (const auto& line : splitLines(r.out)) {
    CHECK_MESSAGE(line.rfind("hung", 0) != 0, line);  // never a hang, whatever the PID names
    if (line.rfind("round ", 0) != 0) continue;
    reusedRounds++;
    INFO(line);
    CHECK(line.find(" alive yes ") != std::string::npos);
    CHECK(line.find(" text yes ") != std::string::npos);
    CHECK(line.find("replaced its program") == std::string::npos);  // it did not exec: it died
    const bool refused = line.find(" exit 8 ") != std::string::npos;
    const bool endedWithIt = line.find(" exit 0 ") != std::string::npos;
    CHECK_MESSAGE((refused || endedWithIt), "goscope exits 8 (refused before the attach) or 0 (the target exited)");
    if (refused) {
      CHECK(line.find("exited before the probes were attached") != std::string::npos);
      CHECK(line.find("now names another process") != std::string::npos);
      saidExited++;
    }
  }
  MESSAGE(reusedRounds << " rounds with the PID reused; " << saidExited << " refused before the attach");
  CHECK(reusedRounds >= rounds * 3 / 4);
  CHECK(saidExited > 0);
}
