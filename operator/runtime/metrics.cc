#include "operator/runtime/metrics.h"

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

namespace lockstep::runtime {
namespace {

class PrometheusQueueMetrics final : public QueueMetrics {
 public:
  PrometheusQueueMetrics(prometheus::Gauge& depth, prometheus::Counter& adds,
                         prometheus::Counter& retries)
      : depth_(depth), adds_(adds), retries_(retries) {}
  void added() override { adds_.Increment(); }
  void depth(size_t n) override { depth_.Set(static_cast<double>(n)); }
  void retried() override { retries_.Increment(); }

 private:
  prometheus::Gauge& depth_;
  prometheus::Counter& adds_;
  prometheus::Counter& retries_;
};

class PrometheusReconcileMetrics final : public ReconcileMetrics {
 public:
  PrometheusReconcileMetrics(prometheus::Family<prometheus::Counter>& total,
                             prometheus::Counter& errors, prometheus::Histogram& duration,
                             std::string controller)
      : total_(total), errors_(errors), duration_(duration), controller_(std::move(controller)) {}
  void observe(const std::string& result, double seconds) override {
    total_.Add({{"controller", controller_}, {"result", result}}).Increment();
    if (result == "error") errors_.Increment();
    duration_.Observe(seconds);
  }

 private:
  prometheus::Family<prometheus::Counter>& total_;
  prometheus::Counter& errors_;
  prometheus::Histogram& duration_;
  std::string controller_;
};

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      depth_(prometheus::BuildGauge()
                 .Name("lockstep_workqueue_depth")
                 .Help("Items ready in the work queue")
                 .Register(*registry_)),
      adds_(prometheus::BuildCounter()
                .Name("lockstep_workqueue_adds_total")
                .Help("Items added to the work queue")
                .Register(*registry_)),
      retries_(prometheus::BuildCounter()
                   .Name("lockstep_workqueue_retries_total")
                   .Help("Rate-limited re-adds to the work queue")
                   .Register(*registry_)),
      reconciles_(prometheus::BuildCounter()
                      .Name("lockstep_reconcile_total")
                      .Help("Reconciles by controller and result")
                      .Register(*registry_)),
      errors_(prometheus::BuildCounter()
                  .Name("lockstep_reconcile_errors_total")
                  .Help("Reconciles that returned an error")
                  .Register(*registry_)),
      duration_(prometheus::BuildHistogram()
                    .Name("lockstep_reconcile_duration_seconds")
                    .Help("Time spent in one reconcile")
                    .Register(*registry_)),
      leader_(prometheus::BuildGauge()
                  .Name("lockstep_leader_election_is_leader")
                  .Help("1 while this process holds the lease")
                  .Register(*registry_)) {}

Metrics::~Metrics() = default;

std::shared_ptr<QueueMetrics> Metrics::queueMetrics(const std::string& queueName) {
  return std::make_shared<PrometheusQueueMetrics>(depth_.Add({{"name", queueName}}),
                                                  adds_.Add({{"name", queueName}}),
                                                  retries_.Add({{"name", queueName}}));
}

std::shared_ptr<ReconcileMetrics> Metrics::reconcileMetrics(const std::string& controller) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  for (const char* result : {"success", "error", "requeue", "requeue_after"}) {
    reconciles_.Add({{"controller", controller}, {"result", result}});
  }
  return std::make_shared<PrometheusReconcileMetrics>(
      reconciles_, errors_.Add({{"controller", controller}}),
      duration_.Add({{"controller", controller}}, kBuckets), controller);
}

void Metrics::setLeader(const std::string& lease, bool leading) {
  leader_.Add({{"lease", lease}}).Set(leading ? 1 : 0);
}

Status Metrics::serve(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
    exposer_->RegisterCollectable(registry_);
    auto ports = exposer_->GetListeningPorts();
    port_ = ports.empty() ? 0 : ports.front();
  } catch (const std::exception& e) {
    return invalidArgument("metrics server on " + address + ": " + e.what());
  }
  return Status::ok();
}

std::string Metrics::scrape() const { return serialize(*registry_); }

std::string Metrics::serialize(prometheus::Registry& registry) {
  prometheus::TextSerializer s;
  return s.Serialize(registry.Collect());
}

}  // namespace lockstep::runtime
