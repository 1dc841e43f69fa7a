#include "output/prometheus_exporter.hpp"

#include <signal.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

namespace goscope::output {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct PrometheusExporter::Impl {
  // Declared before the io_context: the connections still queued in it when
  // it is destroyed count themselves out of `connections` as they go.
  SnapshotSource snapshot;
  PrometheusLabels labels;
  int connections = 0;  // open now; touched on the server's thread only
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer acceptRetry{ioc};
  std::string host;  // as given (names stay names in url())
  unsigned short port = 0;
  std::thread thread;

  void accept();
  void respond(const http::request<http::empty_body>& req, http::response<http::string_body>& res) const;
};

namespace {

// One client connection: read a request (whole within the timeout, bounded
// in size), answer it, and read the next while the client keeps it alive.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, PrometheusExporter::Impl& server)
      : stream_(std::move(socket)), buffer_(PrometheusExporter::kMaxRequestBytes), server_(server) {
    server_.connections++;
  }
  ~Connection() { server_.connections--; }

  void readRequest() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(PrometheusExporter::kMaxRequestBytes));
    // The deadline covers the whole request, not each read: a client that
    // trickles a byte at a time is cut off all the same.
    stream_.expires_after(PrometheusExporter::kRequestTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

 private:
  void onRead(beast::error_code ec) {
    // A timeout, a closed connection, a request too large or malformed (a
    // body on a GET included): nothing worth answering, the connection goes.
    if (ec) return close();
    const auto& req = parser_->get();
    res_ = {};
    server_.respond(req, res_);
    res_.keep_alive(req.keep_alive());
    stream_.expires_after(PrometheusExporter::kWriteTimeout);
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec || !self->res_.keep_alive()) return self->close();
      self->readRequest();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;  // its maximum size bounds the request
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> res_;
  PrometheusExporter::Impl& server_;
};

std::string portText(unsigned short p) { return std::to_string(p); }

Failure malformed(const std::string& addr) {
  return fail(ErrorKind::Usage,
              "--prometheus wants HOST:PORT with a port from 0 to 65535, e.g. 127.0.0.1:9464, not '" + addr + "'");
}

}  // namespace

void PrometheusExporter::Impl::respond(const http::request<http::empty_body>& req,
                                       http::response<http::string_body>& res) const {
  res.version(req.version());
  res.set(http::field::server, "goscope/" GOSCOPE_VERSION);
  std::string_view target(req.target().data(), req.target().size());
  std::string_view path = target.substr(0, target.find('?'));  // Prometheus may add ?params: ignored
  const bool head = req.method() == http::verb::head;
  auto plain = [&](http::status status, std::string body) {
    res.result(status);
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = std::move(body);
  };
  if (path != "/metrics") {
    plain(http::status::not_found, "not found: goscope serves /metrics\n");
  } else if (req.method() != http::verb::get && !head) {
    plain(http::status::method_not_allowed, "/metrics takes GET or HEAD\n");
    res.set(http::field::allow, "GET, HEAD");
  } else if (auto snap = snapshot ? snapshot() : Result<api::CountSnapshot>(fail(ErrorKind::Internal, "not serving yet")); !snap) {
    plain(http::status::service_unavailable, "goscope cannot read its counts: " + snap.error().message + "\n");
  } else {
    res.result(http::status::ok);
    res.set(http::field::content_type, kPrometheusContentType);
    res.body() = prometheusText(*snap, labels);
  }
  res.prepare_payload();
  // HEAD: the headers GET would send (Content-Length included), no body.
  if (head) {
    const auto length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }
}

void PrometheusExporter::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;  // stop()
    if (ec) {
      // Out of file descriptors, say: try again shortly rather than spin.
      acceptRetry.expires_after(std::chrono::milliseconds(100));
      acceptRetry.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    if (connections < kMaxConnections) std::make_shared<Connection>(std::move(socket), *this)->readRequest();
    // else: `socket` closes as it goes out of scope
    accept();
  });
}

PrometheusExporter::PrometheusExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PrometheusExporter::~PrometheusExporter() { stop(); }

Result<std::unique_ptr<PrometheusExporter>> PrometheusExporter::listen(const std::string& addr) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos) return malformed(addr);
  std::string host = addr.substr(0, colon);
  const std::string portStr = addr.substr(colon + 1);
  if (portStr.empty() || portStr.size() > 5 || portStr.find_first_not_of("0123456789") != std::string::npos)
    return malformed(addr);
  const unsigned long portNum = std::stoul(portStr);
  if (portNum > 65535) return malformed(addr);
  const auto port = static_cast<unsigned short>(portNum);
  std::string bareHost = host;
  if (host.starts_with("[")) {
    if (!host.ends_with("]") || host.size() < 3) return malformed(addr);
    bareHost = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return malformed(addr);  // an IPv6 address without its brackets: which colon is the port's?
  }

  auto impl = std::make_unique<Impl>();
  impl->host = host.empty() ? "0.0.0.0" : host;
  tcp::endpoint endpoint;
  if (bareHost.empty()) {
    endpoint = tcp::endpoint(tcp::v4(), port);  // ":PORT": every interface, as Prometheus' own flags read it
  } else {
    beast::error_code ec;
    auto ip = asio::ip::make_address(bareHost, ec);
    if (!ec) {
      endpoint = tcp::endpoint(ip, port);
    } else {
      tcp::resolver resolver(impl->ioc);
      auto found = resolver.resolve(bareHost, portStr, tcp::resolver::numeric_service, ec);
      if (ec || found.empty())
        return fail(ErrorKind::Usage, "--prometheus " + addr + ": cannot resolve the host '" + bareHost + "': " + ec.message());
      endpoint = found.begin()->endpoint();
    }
  }

  beast::error_code ec;
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);  // a restart within TIME_WAIT binds
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    const std::string p = portText(port);
    if (ec == asio::error::address_in_use)
      return fail(ErrorKind::BadTarget, "--prometheus " + addr + ": the address is already in use",
                  "another program listens on port " + p + ": pick another port, or see which: ss -ltnp 'sport = :" + p + "'");
    if (ec.value() == EADDRNOTAVAIL)
      return fail(ErrorKind::NotFound, "--prometheus " + addr + ": " + bareHost + " is not an address of this host",
                  "listen on one of its addresses (ip -brief address), 127.0.0.1, or :" + p + " for every interface");
    // A link-local IPv6 address without its interface (bind: EINVAL), IPv6
    // turned off (EAFNOSUPPORT): no address of this host either, as said.
    if (endpoint.address().is_v6() && endpoint.address().to_v6().is_link_local() &&
        endpoint.address().to_v6().scope_id() == 0)
      return fail(ErrorKind::NotFound,
                  "--prometheus " + addr + ": " + bareHost + " is a link-local address, which needs its interface",
                  "name it: [" + bareHost + "%eth0]:" + p + " (ip -brief address lists them)");
    if (ec.value() == EAFNOSUPPORT || ec.value() == EINVAL)
      return fail(ErrorKind::NotFound, "--prometheus " + addr + ": cannot listen on " + bareHost + ": " + ec.message(),
                  "listen on one of this host's addresses (ip -brief address), 127.0.0.1, or :" + p +
                      " for every interface");
    if (ec == asio::error::access_denied)
      return fail(ErrorKind::Permission, "--prometheus " + addr + ": listening on port " + p + " needs CAP_NET_BIND_SERVICE",
                  "pick a port from 1024 up, e.g. 9464");
    return fail(ErrorKind::Internal, "--prometheus " + addr + ": cannot listen: " + ec.message());
  }
  impl->port = impl->acceptor.local_endpoint().port();
  return std::unique_ptr<PrometheusExporter>(new PrometheusExporter(std::move(impl)));
}

std::string PrometheusExporter::url() const {
  return "http://" + impl_->host + ":" + portText(impl_->port) + "/metrics";
}

void PrometheusExporter::serve(SnapshotSource snapshot, PrometheusLabels labels) {
  if (impl_->thread.joinable()) return;
  impl_->snapshot = std::move(snapshot);
  impl_->labels = std::move(labels);
  impl_->accept();
  // The server's thread takes no stop signal: Ctrl-C and SIGTERM belong to the
  // session's thread, which holds them back while it prints a report
  // (util/stop_signals.hpp); the new thread inherits the mask set here.
  sigset_t stopSignals, old;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stopSignals, &old);
  impl_->thread = std::thread([impl = impl_.get()] {
    for (;;) {
      try {
        impl->ioc.run();
        return;
      } catch (const std::exception& e) {
        // A scrape that failed (out of memory, say) must not end the session.
        spdlog::warn("prometheus exporter: {}", e.what());
      }
    }
  });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void PrometheusExporter::stop() {
  if (!impl_) return;
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

}  // namespace goscope::output
