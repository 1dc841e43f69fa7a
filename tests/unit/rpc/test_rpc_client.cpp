// The JSON-RPC transport against a scripted in-process server: replies out of
// order, back to back without separators, split across writes; timeouts,
// a dropped connection and interrupts.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "rpc/json_rpc_client.hpp"

namespace json = boost::json;
using namespace goscope;
using namespace goscope::rpc;
using namespace std::chrono_literals;

namespace {

// Accepts one connection on 127.0.0.1:0 and runs `script` on it in a thread.
class FakeServer {
 public:
  explicit FakeServer(std::function<void(FakeServer&)> script) {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listenFd_, 1);
    socklen_t len = sizeof a;
    ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, script] {
      conn_ = ::accept(listenFd_, nullptr, nullptr);
      script(*this);
    });
  }
  ~FakeServer() {
    thread_.join();
    if (conn_ >= 0) ::close(conn_);
    ::close(listenFd_);
  }
  uint16_t port() const { return port_; }

  // Reads one request (the client sends one JSON object per request).
  json::value readRequest() {
    json::stream_parser p;
    char c;
    while (!p.done() && ::read(conn_, &c, 1) == 1) p.write_some(&c, 1);
    return p.done() ? p.release() : json::value();
  }
  void write(const std::string& s) { (void)!::write(conn_, s.data(), s.size()); }
  void closeConnection() {
    ::close(conn_);
    conn_ = -1;
  }

 private:
  int listenFd_ = -1, conn_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

std::string reply(uint64_t id, const std::string& result) {
  return R"({"id":)" + std::to_string(id) + R"(,"result":)" + result + R"(,"error":null})";
}

}  // namespace

TEST_CASE("requests are framed like Go's jsonrpc client frames them") {
  json::value seen;
  {
    FakeServer server([&](FakeServer& s) {
      seen = s.readRequest();
      s.write(reply(seen.at("id").to_number<uint64_t>(), "{}") + "\n");
    });
    auto c = JsonRpcClient::connect(server.port(), 2s);
    REQUIRE(c);
    auto r = (*c)->call("RPCServer.State", json::object{{"NonBlocking", true}}, 2s);
    REQUIRE(r);
    CHECK_FALSE(r->error);
  }
  CHECK(seen.at("method") == "RPCServer.State");
  CHECK(seen.at("params").as_array().size() == 1);
  CHECK(seen.at("params").at(0).at("NonBlocking") == true);
  CHECK(seen.at("id").is_number());
}

TEST_CASE("replies are matched by id, whatever their order and framing") {
  FakeServer server([](FakeServer& s) {
    auto a = s.readRequest().at("id").to_number<uint64_t>();
    auto b = s.readRequest().at("id").to_number<uint64_t>();
    auto c = s.readRequest().at("id").to_number<uint64_t>();
    // b first, then a and c back to back with no separator, c split in two
    std::string all = reply(b, R"({"who":"b"})") + "\n" + reply(a, R"({"who":"a"})") +
                      R"({"id":)" + std::to_string(c) + R"(,"result":null,"error":"boom"})";
    s.write(all.substr(0, all.size() - 10));
    std::this_thread::sleep_for(50ms);
    s.write(all.substr(all.size() - 10));
  });
  auto c = JsonRpcClient::connect(server.port(), 2s);
  REQUIRE(c);
  auto& rpc = **c;
  auto a = rpc.send("RPCServer.A", json::object{});
  auto b = rpc.send("RPCServer.B", json::object{});
  auto x = rpc.send("RPCServer.C", json::object{});
  REQUIRE((a && b && x));
  auto rc = rpc.wait(*x, 2s);
  REQUIRE(rc);
  CHECK(rc->error == std::optional<std::string>("boom"));
  auto ra = rpc.wait(*a, 2s);
  REQUIRE(ra);
  CHECK(ra->result.at("who") == "a");
  auto rb = rpc.wait(*b, 2s);
  REQUIRE(rb);
  CHECK(rb->result.at("who") == "b");
}

TEST_CASE("a timeout leaves the call pending — its late reply can still be collected") {
  FakeServer server([](FakeServer& s) {
    auto id = s.readRequest().at("id").to_number<uint64_t>();
    std::this_thread::sleep_for(300ms);
    s.write(reply(id, "7"));
    s.write("\n");
  });
  auto c = JsonRpcClient::connect(server.port(), 2s);
  REQUIRE(c);
  auto id = (*c)->send("RPCServer.Slow", json::object{});
  REQUIRE(id);
  auto t0 = std::chrono::steady_clock::now();
  auto r = (*c)->wait(*id, 100ms);
  CHECK_FALSE(r);
  CHECK((*c)->lastFailure() == RpcFailure::Timeout);
  CHECK(std::chrono::steady_clock::now() - t0 < 250ms);
  CHECK_FALSE((*c)->ready(*id));
  auto late = (*c)->wait(*id, 2s);
  REQUIRE(late);
  CHECK(late->result == 7);
}

TEST_CASE("a dropped connection fails every wait at once") {
  FakeServer server([](FakeServer& s) {
    s.readRequest();
    s.closeConnection();
  });
  auto c = JsonRpcClient::connect(server.port(), 2s);
  REQUIRE(c);
  auto t0 = std::chrono::steady_clock::now();
  auto r = (*c)->call("RPCServer.Command", json::object{}, 5s);
  REQUIRE_FALSE(r);
  CHECK((*c)->lastFailure() == RpcFailure::Disconnected);
  CHECK(r.error().kind == ErrorKind::External);
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  CHECK_FALSE((*c)->connected());
  CHECK_FALSE((*c)->send("RPCServer.State", json::object{}));
}

TEST_CASE("interrupt() cuts an interruptible wait short, once") {
  FakeServer server([](FakeServer& s) {
    auto id = s.readRequest().at("id").to_number<uint64_t>();
    auto id2 = s.readRequest().at("id").to_number<uint64_t>();
    std::this_thread::sleep_for(400ms);
    s.write(reply(id, "1") + reply(id2, "2"));
  });
  auto c = JsonRpcClient::connect(server.port(), 2s);
  REQUIRE(c);
  auto& rpc = **c;
  auto id = rpc.send("RPCServer.Command", json::object{});
  auto id2 = rpc.send("RPCServer.Detach", json::object{});
  REQUIRE((id && id2));
  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    rpc.interrupt();
  });
  auto r = rpc.wait(*id, 5s);
  t.join();
  REQUIRE_FALSE(r);
  CHECK(rpc.lastFailure() == RpcFailure::Interrupted);
  rpc.interrupt();  // a second signal does not stop a wait that must finish
  auto d = rpc.wait(*id2, 5s, /*interruptible=*/false);
  REQUIRE(d);
  CHECK(d->result == 2);
  auto again = rpc.wait(*id, 5s, false);
  REQUIRE(again);
  CHECK(again->result == 1);
}

TEST_CASE("connecting to a closed port fails with External") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);  // a port nobody listens on
  auto c = JsonRpcClient::connect(ntohs(a.sin_port), 1s);
  REQUIRE_FALSE(c);
  CHECK(c.error().kind == ErrorKind::External);
}
