// PrometheusWorld: a real Prometheus (Debian's package) scraping the test
// exporter (a simulated model server, model_server.h), started by
// tests/cluster/prometheus.sh in a private directory for one test and stopped
// when the object goes (or, should the test binary crash, by the script's
// watcher of this process).
// Thread-safety: use from one test thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace lockstep::testing {

class PrometheusWorld {
 public:
  struct Options {
    bool tls = false;  // https with a certificate for 127.0.0.1 from a test CA (caFile())
    // Extra http /metrics endpoints ("127.0.0.1:PORT", e.g. a running operator's
    // metrics port) scraped as job "lockstep"; start() waits for their first scrape.
    std::vector<std::string> scrapeTargets;
    // Non-empty: those targets are scraped over https with this bearer token
    // (the operator's metrics endpoint authorises each scrape).
    std::string scrapeToken;
    // Prometheus' scrape interval ("" = the script's default, 5s).
    std::string scrapeInterval;
    // Non-empty: the exporter watches this cluster's serving pods (in `ns`, or all).
    std::string kubeconfig;
    std::string ns;
    // Always-Ready simulated pods "NAMESPACE/POD/RELEASE/TRACK" (no cluster needed).
    std::vector<std::string> pods;
  };

  // Starts both processes and waits for readiness and the first scrape.
  // nullptr, with the script's output in `error`, when they do not start.
  static std::unique_ptr<PrometheusWorld> start(const Options& options, std::string& error);
  ~PrometheusWorld();
  PrometheusWorld(const PrometheusWorld&) = delete;
  PrometheusWorld& operator=(const PrometheusWorld&) = delete;

  const std::string& url() const { return url_; }  // http(s)://127.0.0.1:PORT
  const std::string& exporterUrl() const { return exporterUrl_; }
  const std::string& caFile() const { return caFile_; }  // with tls
  const std::string& dir() const { return dir_; }

  // The error ratio (0..1) of a release's pods and, when rps >= 0, their
  // request rate per pod, from now on.
  bool setRate(const std::string& release, double errors, double rps = -1);
  bool stopPrometheus();
  bool startPrometheus();

 private:
  PrometheusWorld() = default;
  bool script(const std::vector<std::string>& args, std::string* out = nullptr);

  std::string dir_, url_, exporterUrl_, caFile_;
};

}  // namespace lockstep::testing
