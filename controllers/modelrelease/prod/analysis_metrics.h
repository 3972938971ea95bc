// Metrics of the analysis providers' query queues (docs/observability.md):
//   lockstep_analysis_queries_total{provider,result}  answered queries, result
//                                                     ok | error | timeout
//   lockstep_analysis_queue_depth{provider}           queries waiting for a free slot
// `provider` is the AnalysisProvider's name; the queues of release-chosen
// addresses (--allow-release-prometheus-address) share the one label value
// kReleaseAddressProvider, so a release can never add series.
// An interface (a fake in tests) and the Prometheus one, and the reporter that
// turns one queue's QueryStats into those updates.
// Thread-safety: the metrics are safe for concurrent use; a QueryStatsReporter
// is used under its executor's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "controllers/modelrelease/prod/query_scheduler.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace lockstep::controllers {

inline constexpr const char* kReleaseAddressProvider = "release-address";

class AnalysisMetrics {
 public:
  virtual ~AnalysisMetrics() = default;
  // `n` more queries of `provider` answered with `result` (ok, error, timeout).
  virtual void queries(const std::string& provider, const std::string& result, int64_t n) = 0;
  virtual void queueDepth(const std::string& provider, int queued) = 0;
};

// lockstep_analysis_* families on `registry`.
std::shared_ptr<AnalysisMetrics> makePrometheusAnalysisMetrics(::prometheus::Registry& registry);

// One queue's counts since the last report: a timeout is a `timeout`, any
// other failure (the provider's error, a refused ask of a full queue) an
// `error`, a value `ok`. A queue re-created for the same provider starts a new
// reporter and the counters go on.
class QueryStatsReporter {
 public:
  QueryStatsReporter(std::shared_ptr<AnalysisMetrics> metrics, std::string provider)
      : metrics_(std::move(metrics)), provider_(std::move(provider)) {}
  void report(const QueryStats& now);

 private:
  std::shared_ptr<AnalysisMetrics> metrics_;
  std::string provider_;
  QueryStats last_;
  bool reportedDepth_ = false;
};

}  // namespace lockstep::controllers
