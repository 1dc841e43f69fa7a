// A Go executable cut short (a copy that stopped early) is named as such,
// with what is missing, and never read as a smaller program: its first
// megabyte was "not a Go program", and a copy without its last 100 KB was
// exit 0, "go version: unknown", with every inlined body silently gone.
// `info` and `list` show what is left after a warning that says what is lost;
// every subcommand that probes or reads refuses the file (docs/errors.md).
// On the fixtures (built at test time) and, when $GOSCOPE_GO_SAMPLES is set,
// on the prebuilt Go programs of other releases.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>

#include "support/go_samples.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;
namespace fs = std::filesystem;

namespace {

// A copy of `from`'s first `bytes` bytes, executable, in a directory of this test's.
std::string cutCopy(const std::string& from, uint64_t bytes, const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("goscope-truncated-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string to = (dir / name).string();
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  std::vector<char> buf(1 << 16);
  uint64_t left = bytes;
  while (left > 0 && in) {
    in.read(buf.data(), static_cast<std::streamsize>(std::min<uint64_t>(left, buf.size())));
    out.write(buf.data(), in.gcount());
    left -= static_cast<uint64_t>(in.gcount());
  }
  out.close();
  ::chmod(to.c_str(), 0755);
  return to;
}

size_t inlinedRows(const std::string& listJson) {
  size_t n = 0;
  for (auto& o : jsonObjects(listJson)) n += o.contains("inlined_into");
  return n;
}

void checkTruncated(const std::string& whole, const std::string& tag) {
  CAPTURE(whole);
  const uint64_t size = fs::file_size(whole);
  REQUIRE(size > 400 * 1024);

  // The first megabyte (half of a small fixture): the function table is in
  // the part that is gone.
  const uint64_t headBytes = std::min<uint64_t>(1u << 20, size / 2);
  const std::string head = cutCopy(whole, headBytes, tag + "-head");
  auto h = runCli("info -b " + head);
  CHECK(h.exitCode == 4);
  CHECK(h.err.find(head + " is truncated: it has " + std::to_string(headBytes) + " bytes where its ELF headers describe ") !=
        std::string::npos);
  CHECK(h.err.find("no whole Go function table in what is left") != std::string::npos);
  CHECK(h.err.find("not a Go program") == std::string::npos);  // was: "not a Go program (no .gopclntab)"

  // Without its last 100 KB: the table is there, what the end held is not.
  const std::string tail = cutCopy(whole, size - 100 * 1024, tag + "-minus100k");
  auto wholeInfo = runCli("info --json -b " + whole);
  REQUIRE_MESSAGE(wholeInfo.exitCode == 0, wholeInfo.err);
  auto wi = jsonObjects(wholeInfo.out).at(0);
  CHECK_FALSE(wi.contains("truncated"));  // a whole file says nothing of the kind
  CHECK(wholeInfo.err.find("truncated") == std::string::npos);

  auto info = runCli("info --json -b " + tail);
  REQUIRE_MESSAGE(info.exitCode == 0, info.err);
  auto ti = jsonObjects(info.out).at(0);
  REQUIRE(ti.contains("truncated"));
  auto& cut = ti["truncated"].as_object();
  CHECK(cut["file_bytes"].to_number<uint64_t>() == size - 100 * 1024);
  // What the headers describe: more than is left, at most the whole file (a
  // stripped file may end in padding they do not describe).
  const uint64_t described = cut["described_bytes"].to_number<uint64_t>();
  CHECK(described > size - 100 * 1024);
  CHECK(described <= size);
  CHECK(h.err.find(" bytes where its ELF headers describe " + std::to_string(described) + " (missing: ") !=
        std::string::npos);
  const std::string warning = "goscope: warning: " + tail + " is truncated: it has " +
                              std::to_string(size - 100 * 1024) + " bytes where its ELF headers describe " +
                              std::to_string(described) + " (missing: ";
  CHECK(info.err.find(warning) != std::string::npos);
  CHECK_FALSE(cut["missing"].as_array().empty());
  // What it says is lost is what the reading lost, against the whole file.
  auto lost = [&](const char* what) {
    for (auto& l : cut["lost"].as_array())
      if (std::string(l.as_string()).find(what) != std::string::npos) return true;
    return false;
  };
  const bool versionLost = ti["go_version"].is_null() && !wi["go_version"].is_null();
  CHECK(lost("the Go build info") == versionLost);
  CHECK((info.err.find("the Go build info") != std::string::npos) == versionLost);

  auto wholeList = runCli("list --json -b " + whole);
  auto tailList = runCli("list --json -b " + tail);
  REQUIRE_MESSAGE(wholeList.exitCode == 0, wholeList.err);
  REQUIRE_MESSAGE(tailList.exitCode == 0, tailList.err);
  CHECK(tailList.err.find(warning) != std::string::npos);
  CHECK(tailList.err.find("(list shows what is left)") != std::string::npos);
  const size_t inlinedWhole = inlinedRows(wholeList.out), inlinedTail = inlinedRows(tailList.out);
  MESSAGE(tag << ": inlined bodies listed " << inlinedWhole << " whole, " << inlinedTail << " truncated; lost: "
              << boost::json::serialize(cut["lost"]));
  if (inlinedTail < inlinedWhole) CHECK(lost("every inlined body"));  // was: gone without a word
  else CHECK_FALSE(lost("every inlined body"));

  // What probes or reads refuses it, -c before running it.
  for (const std::string& cmd : {"count -b " + tail + " main.main -d 0.1", "trace -b " + tail + " main.main -d 0.1",
                                "count -c " + tail + " main.main -d 0.1", "list -b " + head}) {
    CAPTURE(cmd);
    auto r = runCli(cmd);
    CHECK(r.exitCode == 4);
    CHECK(r.err.find("is truncated: it has ") != std::string::npos);
  }
  auto refused = runCli("count -b " + tail + " main.main -d 0.1");
  CHECK(refused.err.find("(hint: goscope probes and reads only a whole executable") != std::string::npos);
}

}  // namespace

TEST_CASE("truncated binary: named with what is missing, shown by info and list with a warning, refused by the rest") {
  for (const auto& v : kVariants) checkTruncated(fixture("zoo", v), "zoo-" + v);
  if (auto samples = goSamples())
    for (const auto& s : *samples) checkTruncated(s.string(), s.filename().string());
  std::error_code ec;
  fs::remove_all(fs::temp_directory_path() / ("goscope-truncated-" + std::to_string(::getpid())), ec);
}
