// The ModelRelease controller's metrics (docs/observability.md): gate stage
// results and durations, promotions, rollbacks by reason, the canary step
// and weight of each release in prod, and (the Model controller's) whether
// each model's prod is Ready and Degraded. An interface (a fake in tests) and the
// Prometheus one. Thread-safety: safe for concurrent use.
#pragma once

#include <memory>
#include <string>

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace lockstep::controllers {

class ReleaseMetrics {
 public:
  virtual ~ReleaseMetrics() = default;
  virtual void stageResult(const std::string& stage, const std::string& result,
                           double durationSeconds) = 0;
  virtual void promotion(const std::string& model) = 0;
  virtual void rollback(const std::string& model, const std::string& reason) = 0;
  // A release in its prod stage is at canary step `step` (index) whose target
  // weight is `weight` percent; forgetRelease drops its series once it is
  // finished (Promoted, RolledBack, Superseded, Failed) or deleted.
  virtual void canaryStep(const std::string& ns, const std::string& release,
                          const std::string& model, int step, int weight) = 0;
  virtual void forgetRelease(const std::string& ns, const std::string& release) = 0;
  // The Model controller (model_controller.h): whether model `model`'s prod is
  // Ready and Degraded (its conditions); forgetModel drops its series once the
  // Model is gone or being deleted.
  virtual void modelState(const std::string& ns, const std::string& model, bool ready,
                          bool degraded) = 0;
  virtual void forgetModel(const std::string& ns, const std::string& model) = 0;
};

// lockstep_release_* families on `registry`.
std::shared_ptr<ReleaseMetrics> makePrometheusReleaseMetrics(::prometheus::Registry& registry);

}  // namespace lockstep::controllers
