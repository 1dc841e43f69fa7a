// The replay driver of the normal (gcc) build: runs a fuzz target's
// LLVMFuzzerTestOneInput once on every file under the directories (or files)
// given, so that the seed corpus and every crash ever found and fixed
// (tests/fuzz/<name>/regressions/) are regression tests on every CI run, with
// no clang and no libFuzzer. A crash or a sanitizer report kills the process,
// which fails the test; the file being run is printed first so the culprit is
// named.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; i++) {
    fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());  // a stable order, so a failure reproduces
  if (files.empty()) {
    // An empty corpus would make the test pass while testing nothing.
    std::fprintf(stderr, "replay: no inputs found\n");
    return 2;
  }
  for (const auto& f : files) {
    std::fprintf(stderr, "replay: %s\n", f.c_str());
    std::ifstream in(f, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replay: %zu inputs ran\n", files.size());
  return 0;
}
