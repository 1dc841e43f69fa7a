#include "session/doctor.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "backend/bpf/live_uprobes.hpp"
#include "process/exe_text.hpp"
#include "process/ptrace_privileges.hpp"
#include "process/target.hpp"
#include "process/text_restore.hpp"

namespace goscope::session {

namespace {

// The uprobe links placed on `pid`'s executable, by file offset.
Result<std::map<uint64_t, uint32_t>> uprobeOffsets(pid_t pid, std::vector<uint32_t>& links) {
  std::map<uint64_t, uint32_t> out;
  struct stat exe {};
  if (::stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &exe) != 0) return out;
  auto all = bpf::liveUprobeLinks();
  if (!all) return all.failure();
  for (const auto& l : *all) {
    struct stat st {};
    if (::stat(l.path.c_str(), &st) != 0 || st.st_ino != exe.st_ino || st.st_dev != exe.st_dev) continue;
    if (l.pid != 0 && static_cast<pid_t>(l.pid) != pid) continue;
    links.push_back(l.id);
    for (uint64_t off : l.offsets) out.emplace(off, l.id);
  }
  return out;
}

}  // namespace

Result<DoctorReport> doctor(pid_t pid, bool fix) {
  auto target = openProcessTarget(pid);
  // Not a Go program (or unreadable as one): still compared, without names.
  if (!target && target.error().kind != ErrorKind::BadTarget) return target.failure();
  auto maps = exeTextMappings(pid);
  if (!maps) return maps.failure();
  DoctorReport r;
  r.pid = pid;
  r.fix = fix;
  std::error_code ec;
  r.exe = target ? target->process->exePath()
                 : std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
  r.mappings = maps->size();
  for (const auto& m : *maps) r.bytesCompared += m.end - m.start;
  auto diffs = compareExeText(pid, *maps);
  if (!diffs) return diffs.failure();
  r.differing = diffs->size();
  // A live debugger's breakpoints are not leftovers: read before the
  // bytes are judged, and again before any write.
  auto tracerNow = [&]() -> pid_t {
    auto facts = readPtraceFacts(pid);
    return facts ? facts->targetTracer : 0;
  };
  r.tracer = tracerNow();
  if (r.tracer) r.tracerName = processName(r.tracer);

  auto uprobes = uprobeOffsets(pid, r.uprobeLinks);
  if (!uprobes && fix && !diffs->empty()) return uprobes.failure();
  const std::map<uint64_t, uint32_t> none;
  const auto& live = uprobes ? *uprobes : none;

  std::vector<TextPatch> patches;
  for (const auto& d : *diffs) {
    DoctorByte b;
    b.addr = d.addr;
    b.fileOffset = d.fileOffset;
    b.memory = d.memory;
    b.file = d.file;
    b.int3 = d.memory == 0xCC;
    if (auto it = live.find(d.fileOffset); it != live.end()) {
      b.uprobeLink = it->second;
      ++r.liveUprobe;
    } else if (b.int3 && r.tracer) {
      b.tracerOwned = true;
      ++r.tracerInt3;
    } else if (b.int3) {
      ++r.int3;
      patches.push_back(TextPatch{d.addr, d.file, 0xCC});
    }
    std::string name = "?";
    uint64_t entry = 0;
    if (target) {
      const uint64_t link = d.addr - target->loadBias;
      if (const GoFunction* fn = target->binary->pclntab().functionAt(link)) {
        name = fn->name;
        entry = fn->entry + target->loadBias;
      }
    }
    if (r.functions.empty() || r.functions.back().name != name || r.functions.back().entry != entry)
      r.functions.push_back(DoctorFunction{name, entry, {}});
    r.functions.back().bytes.push_back(b);
  }

  // A debugger that attached since the bytes were read: its breakpoints
  // could be among them; nothing is written.
  if (fix && !patches.empty() && (r.tracer = tracerNow())) {
    r.tracerName = processName(r.tracer);
    for (auto& f : r.functions)
      for (auto& b : f.bytes)
        if (b.int3 && !b.uprobeLink && !b.tracerOwned) {
          b.tracerOwned = true;
          ++r.tracerInt3;
          --r.int3;
        }
    patches.clear();
  }
  if (fix && !patches.empty()) {
    const bool stoppedBefore = processStopped(pid);
    auto done = restoreText(pid, patches.data(), static_cast<int>(patches.size()), stoppedBefore, 0, 0);
    if (done.gone) return fail(ErrorKind::TargetGone, "PID " + std::to_string(pid) + " exited before its code was restored");
    r.stopped = done.stopped;
    // What the code holds now, byte by byte.
    auto after = compareExeText(pid, *maps);
    if (!after) return after.failure();
    std::vector<uint64_t> still;
    for (const auto& d : *after) still.push_back(d.addr);
    std::sort(still.begin(), still.end());
    for (auto& f : r.functions)
      for (auto& b : f.bytes)
        if (b.int3 && !b.uprobeLink && !std::binary_search(still.begin(), still.end(), b.addr)) {
          b.restored = true;
          ++r.restored;
        }
  }
  return r;
}

}  // namespace goscope::session
