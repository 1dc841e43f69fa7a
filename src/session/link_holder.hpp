// The BPF link holder's entry point for the CLI (src/main.cpp): the holder is
// the goscope executable run again with a hidden first argument
// (backend/bpf/link_holder.hpp says what it is for). Kept apart from
// goscope.hpp: nothing of the backend in the public API.
#pragma once

namespace goscope::session {

// Call first thing in main(). When argv[1] is the holder's hidden command,
// runs the holder and returns its exit code; otherwise registers this
// executable (/proc/self/exe) as the one to run holders with and returns -1.
int linkHolderMain(int argc, char** argv);

}  // namespace goscope::session
