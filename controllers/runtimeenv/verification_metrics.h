// The RuntimeEnv controller's verification metric (docs/observability.md):
// lockstep_runtime_verification_total{result="passed"|"failed"}, one count per
// finished verification run. An interface (a fake in tests) and the Prometheus
// one. Thread-safety: safe for concurrent use.
#pragma once

#include <memory>
#include <string>

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace lockstep::controllers {

class VerificationMetrics {
 public:
  virtual ~VerificationMetrics() = default;
  virtual void runFinished(const std::string& result) = 0;
};

std::shared_ptr<VerificationMetrics> makePrometheusVerificationMetrics(
    ::prometheus::Registry& registry);

}  // namespace lockstep::controllers
