// JSON-RPC 1.0 over TCP, as Go's net/rpc/jsonrpc speaks it (and so dlv):
// requests {"method":"RPCServer.X","params":[{...}],"id":N}, replies
// {"id":N,"result":...,"error":null|"message"} written back to back as a
// stream of JSON values. Replies are matched by id: dlv answers Command and
// State from goroutines, so a halt's reply can overtake a continue's.
//
// Threading: the io_context runs on the calling thread, only inside wait().
// A Delve session is driven by one controller thread that sends a request
// and then waits for its reply; running the loop there needs no locks, no
// extra thread to stop on every exit path (or to lose across fork() in a
// test), and every handler finishes before the call that started it
// returns. The one thing another thread or a signal handler may need,
// cutting a long wait short, goes through interrupt(): an eventfd write,
// which is async-signal-safe, watched by the same loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace goscope::rpc {

using Millis = std::chrono::milliseconds;

// One reply: Go's jsonrpc sets either a result or an error message.
struct RpcReply {
  boost::json::value result;         // null when error is set
  std::optional<std::string> error;  // the server's error string
};

// Why a wait() failed, besides a server error (which is a successful reply).
enum class RpcFailure { None, Timeout, Disconnected, Interrupted, Protocol };

class JsonRpcClient {
 public:
  // Connects to 127.0.0.1:port within `timeout`.
  static Result<std::unique_ptr<JsonRpcClient>> connect(uint16_t port, Millis timeout);
  ~JsonRpcClient();
  JsonRpcClient(const JsonRpcClient&) = delete;
  JsonRpcClient& operator=(const JsonRpcClient&) = delete;

  // Writes one request and returns its id, without waiting for the reply.
  Result<uint64_t> send(std::string_view method, const boost::json::value& params);
  // Waits up to `timeout` for the reply to `id` (it may be here already).
  // An interruptible wait returns early after interrupt(); waits that must
  // finish (a detach) pass interruptible=false.
  Result<RpcReply> wait(uint64_t id, Millis timeout, bool interruptible = true);
  // send() then wait().
  Result<RpcReply> call(std::string_view method, const boost::json::value& params, Millis timeout,
                        bool interruptible = true);
  // Reads whatever has arrived, without blocking; true when id's reply is in.
  bool ready(uint64_t id);
  // Gives up on `id`: its reply, if it ever comes, is dropped.
  void forget(uint64_t id);

  bool connected() const { return connected_; }
  // The socket, for handing a duplicate to another process (the guardian).
  int nativeHandle() { return socket_.native_handle(); }
  // Why the last wait() failed.
  RpcFailure lastFailure() const { return lastFailure_; }
  void close();

  // Async-signal-safe: makes the wait in progress, or the next interruptible
  // one, return an "interrupted" error once.
  void interrupt();

 private:
  JsonRpcClient();
  void startRead();
  void startInterruptWatch();
  void onBytes(const char* data, size_t n);
  void onMessage(boost::json::value msg);
  void onDisconnect(const std::string& why);
  Failure failWith(RpcFailure kind, ErrorKind ek, std::string message, std::string hint = {});

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::posix::stream_descriptor interruptFd_;  // an eventfd
  std::atomic<int> interruptRaw_{-1};                  // the same fd, for interrupt()
  std::atomic<bool> interruptPending_{false};
  uint64_t interruptBuf_ = 0;

  boost::json::stream_parser parser_;
  char readBuf_[64 * 1024];
  uint64_t nextId_ = 1;
  std::set<uint64_t> pending_;            // sent, reply not yet in
  std::map<uint64_t, RpcReply> arrived_;  // reply in, not yet collected
  std::map<uint64_t, std::string> methods_;  // for error messages
  bool connected_ = false;
  std::string disconnectReason_;
  RpcFailure lastFailure_ = RpcFailure::None;
};

}  // namespace goscope::rpc
