// The subcommand table: one file per subcommand under src/cli/, each exposing
// only its run function. main.cpp dispatches; nothing else knows the list.
#pragma once

#include <string>
#include <vector>

namespace goscope::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // throws FatalError on user errors
};

const std::vector<Command>& commands();

int runList(const std::vector<std::string>& args);
int runInfo(const std::vector<std::string>& args);
int runDoctor(const std::vector<std::string>& args);
int runCalibrate(const std::vector<std::string>& args);
int runCount(const std::vector<std::string>& args);
int runLatency(const std::vector<std::string>& args);
int runOverhead(const std::vector<std::string>& args);
int runTrace(const std::vector<std::string>& args);

// The Delve path (src/cli/read.cpp, sample.cpp, break.cpp, set.cpp).
int runRead(const std::vector<std::string>& args);
int runSample(const std::vector<std::string>& args);
int runBreak(const std::vector<std::string>& args);
int runSet(const std::vector<std::string>& args);

// For agents: an MCP server on stdio (src/cli/mcp.cpp).
int runMcp(const std::vector<std::string>& args);

// For people at a terminal: a live view over count and latency (src/cli/top.cpp).
int runTop(const std::vector<std::string>& args);

}  // namespace goscope::cli
