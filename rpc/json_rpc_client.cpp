#include "rpc/json_rpc_client.hpp"

#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

namespace goscope::rpc {

namespace asio = boost::asio;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

JsonRpcClient::JsonRpcClient() : socket_(io_), interruptFd_(io_) {}

JsonRpcClient::~JsonRpcClient() {
  close();
  // Handlers still queued are destroyed, never run, with io_ (declared first,
  // destroyed last): none of them can touch this object after it is gone.
}

Result<std::unique_ptr<JsonRpcClient>> JsonRpcClient::connect(uint16_t port, Millis timeout) {
  std::unique_ptr<JsonRpcClient> c(new JsonRpcClient());
  int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return fail(ErrorKind::Internal, "eventfd failed");
  c->interruptFd_.assign(efd);
  c->interruptRaw_.store(efd);

  const asio::ip::tcp::endpoint ep(asio::ip::address_v4::loopback(), port);
  boost::system::error_code result = asio::error::would_block;
  c->socket_.async_connect(ep, [&](const boost::system::error_code& ec) { result = ec; });
  c->io_.run_for(timeout);
  if (result == asio::error::would_block) {
    return fail(ErrorKind::External,
                "could not connect to dlv at 127.0.0.1:" + std::to_string(port) + " within " +
                    std::to_string(timeout.count()) + " ms");
  }
  if (result) {
    return fail(ErrorKind::External,
                "could not connect to dlv at 127.0.0.1:" + std::to_string(port) + ": " + result.message());
  }
  c->io_.restart();
  // Requests are small and each one is awaited: do not let Nagle hold one
  // back behind an unacknowledged predecessor (halt right after continue).
  c->socket_.set_option(asio::ip::tcp::no_delay(true));
  c->connected_ = true;
  c->startRead();
  c->startInterruptWatch();
  return c;
}

void JsonRpcClient::close() {
  boost::system::error_code ignored;
  if (socket_.is_open()) {
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }
  interruptRaw_.store(-1);  // before the close: a late interrupt() must not write to a reused fd number
  if (interruptFd_.is_open()) interruptFd_.close(ignored);
  if (connected_) onDisconnect("closed by goscope");
}

void JsonRpcClient::interrupt() {
  interruptPending_.store(true);
  int fd = interruptRaw_.load();
  if (fd >= 0) {
    uint64_t one = 1;
    ssize_t ignored = ::write(fd, &one, sizeof one);  // only wakes the loop
    (void)ignored;
  }
}

void JsonRpcClient::startInterruptWatch() {
  interruptFd_.async_read_some(asio::buffer(&interruptBuf_, sizeof interruptBuf_),
                               [this](const boost::system::error_code& ec, size_t) {
                                 if (ec == asio::error::operation_aborted || !interruptFd_.is_open()) return;
                                 startInterruptWatch();  // wait() reads the flag
                               });
}

void JsonRpcClient::startRead() {
  socket_.async_read_some(asio::buffer(readBuf_), [this](const boost::system::error_code& ec, size_t n) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      onDisconnect(ec == asio::error::eof ? "dlv closed the connection" : ec.message());
      return;
    }
    onBytes(readBuf_, n);
    if (connected_) startRead();
  });
}

// Go's jsonrpc writes each reply with a json.Encoder: values back to back,
// usually newline-separated; a value may span reads, a read may hold several.
void JsonRpcClient::onBytes(const char* data, size_t n) {
  while (n > 0 && connected_) {
    boost::system::error_code ec;
    size_t used = parser_.write_some(data, n, ec);
    if (ec) {
      onDisconnect("dlv sent malformed JSON: " + ec.message());
      return;
    }
    data += used;
    n -= used;
    if (parser_.done()) {
      json::value v = parser_.release();
      parser_.reset();
      onMessage(std::move(v));
    } else if (used == 0) {
      break;
    }
  }
}

void JsonRpcClient::onMessage(json::value msg) {
  const json::object* o = msg.if_object();
  const json::value* idv = o ? o->if_contains("id") : nullptr;
  uint64_t id = 0;
  if (idv && idv->is_uint64()) id = idv->get_uint64();
  else if (idv && idv->is_int64() && idv->get_int64() >= 0) id = static_cast<uint64_t>(idv->get_int64());
  else {
    spdlog::debug("rpc: dropping a message without an id: {}", json::serialize(msg).substr(0, 200));
    return;
  }
  if (!pending_.erase(id)) {
    spdlog::debug("rpc: dropping the reply to request {} (given up on)", id);
    methods_.erase(id);
    return;
  }
  RpcReply r;
  if (const json::value* e = o->if_contains("error"); e && !e->is_null()) {
    r.error = e->is_string() ? std::string(e->get_string()) : json::serialize(*e);
  } else if (const json::value* res = o->if_contains("result")) {
    r.result = *res;
  }
  arrived_.emplace(id, std::move(r));
}

void JsonRpcClient::onDisconnect(const std::string& why) {
  if (!connected_) return;
  connected_ = false;
  disconnectReason_ = why;
  spdlog::debug("rpc: disconnected: {}", why);
  boost::system::error_code ignored;
  socket_.close(ignored);
}

Result<uint64_t> JsonRpcClient::send(std::string_view method, const json::value& params) {
  if (!connected_) return failWith(RpcFailure::Disconnected, ErrorKind::External, "not connected to dlv: " + disconnectReason_);
  const uint64_t id = nextId_++;
  json::object req;
  req["method"] = method;
  req["params"] = json::array{params};
  req["id"] = id;
  const std::string text = json::serialize(req);
  spdlog::trace("rpc -> {}", text.substr(0, 500));
  boost::system::error_code ec;
  asio::write(socket_, asio::buffer(text), ec);
  if (ec) {
    onDisconnect(ec.message());
    return failWith(RpcFailure::Disconnected, ErrorKind::External,
                    "lost the connection to dlv while sending " + std::string(method) + ": " + ec.message());
  }
  pending_.insert(id);
  methods_[id] = std::string(method);
  return id;
}

bool JsonRpcClient::ready(uint64_t id) {
  if (io_.stopped()) io_.restart();
  io_.poll();
  return arrived_.count(id) != 0;
}

void JsonRpcClient::forget(uint64_t id) {
  pending_.erase(id);
  arrived_.erase(id);
  methods_.erase(id);
}

Result<RpcReply> JsonRpcClient::wait(uint64_t id, Millis timeout, bool interruptible) {
  const std::string method = methods_.count(id) ? methods_[id] : "request " + std::to_string(id);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto it = arrived_.find(id); it != arrived_.end()) {
      RpcReply r = std::move(it->second);
      arrived_.erase(it);
      methods_.erase(id);
      lastFailure_ = RpcFailure::None;
      return r;
    }
    if (!pending_.count(id)) return failWith(RpcFailure::Protocol, ErrorKind::Internal, "no request " + std::to_string(id) + " is pending");
    if (!connected_) {
      return failWith(RpcFailure::Disconnected, ErrorKind::External,
                      "lost the connection to dlv waiting for " + method + " (" + disconnectReason_ + ")");
    }
    if (interruptible && interruptPending_.exchange(false)) {
      return failWith(RpcFailure::Interrupted, ErrorKind::Internal, "interrupted waiting for " + method);
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return failWith(RpcFailure::Timeout, ErrorKind::External,
                      "dlv did not answer " + method + " within " + std::to_string(timeout.count()) + " ms");
    }
    if (io_.stopped()) io_.restart();
    io_.run_one_for(deadline - now);
  }
}

Result<RpcReply> JsonRpcClient::call(std::string_view method, const json::value& params, Millis timeout,
                                     bool interruptible) {
  auto id = send(method, params);
  if (!id) return id.failure();
  return wait(*id, timeout, interruptible);
}

Failure JsonRpcClient::failWith(RpcFailure kind, ErrorKind ek, std::string message, std::string hint) {
  lastFailure_ = kind;
  return fail(ek, std::move(message), std::move(hint));
}

}  // namespace goscope::rpc
