#include "session/link_holder.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "backend/bpf/link_holder.hpp"

namespace goscope::session {

int linkHolderMain(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], bpf::kLinkHolderCommand) == 0)
    return bpf::runLinkHolder(std::atoi(argv[2]));
  // The resolved path, so that the holder's argv[0] and name are goscope's.
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  bpf::setLinkHolderProgram(n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string("/proc/self/exe"));
  return -1;
}

}  // namespace goscope::session
