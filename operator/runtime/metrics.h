// Metrics: the operator's Prometheus registry, exposed on /metrics by
// prometheus-cpp's Exposer. Names carry the `lockstep_` prefix and base units:
//   lockstep_workqueue_depth{name}                 gauge
//   lockstep_workqueue_adds_total{name}            counter
//   lockstep_workqueue_retries_total{name}         counter
//   lockstep_reconcile_total{controller,result}    counter (success|error|requeue|requeue_after)
//   lockstep_reconcile_errors_total{controller}    counter
//   lockstep_reconcile_duration_seconds{controller} histogram
//   lockstep_leader_election_is_leader{lease}      gauge (0/1)
// Other packages add their own families to registry().
// Thread-safety: safe for concurrent use.
#pragma once

#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "common/status.h"
#include "operator/runtime/controller.h"
#include "operator/runtime/work_queue.h"

namespace prometheus {
class Exposer;
}

namespace lockstep::runtime {

class Metrics {
 public:
  Metrics();
  ~Metrics();
  std::shared_ptr<prometheus::Registry> registry() { return registry_; }
  std::shared_ptr<QueueMetrics> queueMetrics(const std::string& queueName);
  std::shared_ptr<ReconcileMetrics> reconcileMetrics(const std::string& controller);
  void setLeader(const std::string& lease, bool leading);

  // Serves /metrics on "host:port" (port 0 picks a free port).
  Status serve(const std::string& address);
  int port() const { return port_; }
  // The text exposition of the registry (what /metrics returns).
  std::string scrape() const;
  // The text exposition of any registry.
  static std::string serialize(prometheus::Registry& registry);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& depth_;
  prometheus::Family<prometheus::Counter>& adds_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Counter>& reconciles_;
  prometheus::Family<prometheus::Counter>& errors_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Gauge>& leader_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace lockstep::runtime
