// --prometheus ADDR on count and latency: the exporter is bound before the
// target is touched (a taken port costs no attach), then serves the
// session's counts until the session ends (output/prometheus_exporter.hpp).
#pragma once

#include <memory>

#include "api/goscope.hpp"
#include "cli/args.hpp"
#include "output/prometheus_exporter.hpp"

namespace goscope::cli {

OptionSpec prometheusOptionSpec();

// The bound exporter when --prometheus is given, else nullptr. Throws
// FatalError with the exporter's error (docs/errors.md).
std::unique_ptr<output::PrometheusExporter> listenIfAsked(const Args& args);

// Serves `session`'s snapshots, labelled with its target, for its own
// lifetime, and says where on stderr. Declare it after the session: it must
// stop serving before the session goes.
class PrometheusServing {
 public:
  PrometheusServing(output::PrometheusExporter* exporter, api::AggregateSession& session);
  ~PrometheusServing();
  PrometheusServing(const PrometheusServing&) = delete;
  PrometheusServing& operator=(const PrometheusServing&) = delete;

 private:
  output::PrometheusExporter* exporter_;
};

}  // namespace goscope::cli
