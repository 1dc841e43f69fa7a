#include "cli/prometheus_option.hpp"
#include "output/stderr_lines.hpp"

#include <cstdio>
#include <filesystem>

namespace goscope::cli {

namespace {

// The labels of every series: the process for -p and -c (none for -b, which
// counts every process running the file) and the executable's path.
output::PrometheusLabels labelsOf(const TracedTarget& target) {
  output::PrometheusLabels l;
  if (!target.isBinaryWide()) l.pid = target.pidFilter();
  if (const Process* p = target.process()) {
    l.binary = p->exePath();
  } else {
    std::error_code ec;
    auto path = std::filesystem::weakly_canonical(target.filePath(), ec);
    l.binary = ec ? target.filePath() : path.string();
  }
  return l;
}

}  // namespace

OptionSpec prometheusOptionSpec() {
  return {"prometheus", 0, true,
          "serve /metrics for Prometheus on ADDR (e.g. 127.0.0.1:9464) while the session runs, until Ctrl-C or -d"};
}

std::unique_ptr<output::PrometheusExporter> listenIfAsked(const Args& args) {
  auto addr = args.get("prometheus");
  if (!addr) return nullptr;
  return orRaise(output::PrometheusExporter::listen(*addr));
}

PrometheusServing::PrometheusServing(output::PrometheusExporter* exporter, api::AggregateSession& session)
    : exporter_(exporter) {
  if (!exporter_) return;
  exporter_->serve([&session] { return session.snapshot(); }, labelsOf(session.target()));
  output::toStderr("goscope: Prometheus metrics at %s\n", exporter_->url().c_str());
}

PrometheusServing::~PrometheusServing() {
  if (exporter_) exporter_->stop();
}

}  // namespace goscope::cli
