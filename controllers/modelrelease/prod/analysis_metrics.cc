#include "controllers/modelrelease/prod/analysis_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace lockstep::controllers {
namespace {

class PrometheusAnalysisMetrics final : public AnalysisMetrics {
 public:
  explicit PrometheusAnalysisMetrics(::prometheus::Registry& registry)
      : queries_(::prometheus::BuildCounter()
                     .Name("lockstep_analysis_queries_total")
                     .Help("Canary analysis queries answered, by AnalysisProvider and result "
                           "(ok, error, timeout)")
                     .Register(registry)),
        depth_(::prometheus::BuildGauge()
                   .Name("lockstep_analysis_queue_depth")
                   .Help("Canary analysis queries waiting for a free slot of their "
                         "AnalysisProvider (maxConcurrentQueries)")
                   .Register(registry)) {}

  void queries(const std::string& provider, const std::string& result, int64_t n) override {
    queries_.Add({{"provider", provider}, {"result", result}}).Increment(static_cast<double>(n));
  }
  void queueDepth(const std::string& provider, int queued) override {
    depth_.Add({{"provider", provider}}).Set(queued);
  }

 private:
  ::prometheus::Family<::prometheus::Counter>& queries_;
  ::prometheus::Family<::prometheus::Gauge>& depth_;
};

}  // namespace

std::shared_ptr<AnalysisMetrics> makePrometheusAnalysisMetrics(::prometheus::Registry& registry) {
  return std::make_shared<PrometheusAnalysisMetrics>(registry);
}

void QueryStatsReporter::report(const QueryStats& now) {
  if (!metrics_) return;
  const int64_t ok = now.succeeded - last_.succeeded;
  const int64_t timeouts = now.timedOut - last_.timedOut;
  const int64_t errors = (now.failed - now.timedOut) - (last_.failed - last_.timedOut);
  if (ok > 0) metrics_->queries(provider_, "ok", ok);
  if (errors > 0) metrics_->queries(provider_, "error", errors);
  if (timeouts > 0) metrics_->queries(provider_, "timeout", timeouts);
  if (!reportedDepth_ || now.queued != last_.queued) metrics_->queueDepth(provider_, now.queued);
  reportedDepth_ = true;
  last_ = now;
}

}  // namespace lockstep::controllers
