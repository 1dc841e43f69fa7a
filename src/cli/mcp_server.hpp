// `goscope mcp`: a Model Context Protocol server over stdio (JSON-RPC 2.0,
// one message per line). Requests are read on the main thread; each
// tools/call runs on a thread of its own as a goscope subcommand in a child
// process (cli/goscope_child.hpp), so calls run side by side, a cancelled
// call (notifications/cancelled) ends as Ctrl-C ends the command line, and
// nothing a call meets can end the server. Which tools, and their limits:
// cli/mcp_tools.hpp. The protocol: docs/commands/mcp.md.
#pragma once

#include <boost/json.hpp>
#include <atomic>
#include <csignal>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/mcp_tools.hpp"

namespace goscope::cli::mcp {

class Server {
 public:
  Server(Limits limits, size_t maxCalls);
  ~Server();
  // Serves until stdin closes, stdout's reader goes away, or `stop` is set
  // (SIGINT, SIGTERM); then interrupts every running call, waits for them
  // and returns.
  void run(const volatile std::sig_atomic_t& stop);

  struct Call;

 private:
  void handle(const boost::json::value& message);
  void send(const boost::json::object& message);
  void reply(const boost::json::value& id, boost::json::value result);
  void replyError(const boost::json::value& id, int code, const std::string& message);
  void startCall(const boost::json::value& id, const boost::json::object& params);
  void runCall(const std::shared_ptr<Call>& call);
  void reapFinished();

  Limits limits_;
  size_t maxCalls_;
  std::mutex sendMu_;
  std::mutex callsMu_;
  std::vector<std::shared_ptr<Call>> calls_;
};

}  // namespace goscope::cli::mcp
