// `--prometheus ADDR`: an HTTP endpoint (Boost.Beast, on a thread of its own)
// that serves GET and HEAD /metrics in Prometheus' text format
// (output/prometheus_text.hpp) while a count or latency session runs. Each
// scrape takes a fresh snapshot through the function the session gives
// (api::AggregateSession::snapshot() is safe from any thread), so the
// counts are those of the moment of the scrape. Every other path is 404.
//
// A client cannot hold the session up: the server runs on its own thread
// (the session never waits for it), a request must arrive whole within
// kRequestTimeout and be at most kMaxRequestBytes, a response must be taken
// within kWriteTimeout, and at most kMaxConnections are open at once: a new
// one beyond them closes the connection that has waited longest for a
// request, so idle or trickling clients can never keep a scrape out (it is
// refused only while every open connection is being sent a response).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "api/goscope.hpp"
#include "output/prometheus_text.hpp"
#include "util/result.hpp"

namespace goscope::output {

class PrometheusExporter {
 public:
  using SnapshotSource = std::function<Result<api::CountSnapshot>()>;

  static constexpr auto kRequestTimeout = std::chrono::seconds(10);
  static constexpr auto kWriteTimeout = std::chrono::seconds(10);
  static constexpr size_t kMaxRequestBytes = 16 * 1024;
  static constexpr int kMaxConnections = 32;

  // Parses ADDR (HOST:PORT, [IPV6]:PORT, :PORT for every interface; port 0
  // picks a free one), binds and listens; nothing is served before serve().
  // Done before the target is touched, so a taken port costs no attach.
  // Errors (docs/errors.md, "Prometheus exporter"): a malformed ADDR or a
  // host that does not resolve is Usage; no such address on this host is
  // NotFound; a port in use is BadTarget; a port below 1024 without
  // CAP_NET_BIND_SERVICE is Permission.
  static Result<std::unique_ptr<PrometheusExporter>> listen(const std::string& addr);
  ~PrometheusExporter();  // stop()
  PrometheusExporter(const PrometheusExporter&) = delete;
  PrometheusExporter& operator=(const PrometheusExporter&) = delete;

  // http://HOST:PORT/metrics, with the port actually bound.
  std::string url() const;
  // Starts answering on the server's thread: each scrape renders
  // `snapshot()` with `labels`; a failed snapshot is a 503 with its message.
  void serve(SnapshotSource snapshot, PrometheusLabels labels);
  // Closes the port and every connection; joins the thread. Idempotent.
  void stop();

  struct Impl;  // the server (Beast stays out of this header)

 private:
  explicit PrometheusExporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace goscope::output
