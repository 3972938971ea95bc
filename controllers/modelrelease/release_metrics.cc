#include "controllers/modelrelease/release_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <mutex>
#include <utility>

namespace lockstep::controllers {
namespace {

class PrometheusReleaseMetrics final : public ReleaseMetrics {
 public:
  explicit PrometheusReleaseMetrics(::prometheus::Registry& registry)
      : results_(::prometheus::BuildCounter()
                     .Name("lockstep_release_stage_results_total")
                     .Help("Gate stage results by stage and result "
                           "(succeeded, failed, timed_out, aborted)")
                     .Register(registry)),
        durations_(::prometheus::BuildHistogram()
                       .Name("lockstep_release_stage_duration_seconds")
                       .Help("Time from a gate stage's start to its result")
                       .Register(registry)),
        promotions_(::prometheus::BuildCounter()
                        .Name("lockstep_release_promotions_total")
                        .Help("Releases promoted to prod, by model")
                        .Register(registry)),
        rollbacks_(::prometheus::BuildCounter()
                       .Name("lockstep_release_rollbacks_total")
                       .Help("Canary rollbacks by model and reason (docs/rollouts.md)")
                       .Register(registry)),
        canarySteps_(::prometheus::BuildGauge()
                         .Name("lockstep_release_canary_step")
                         .Help("Canary step (index into canary.steps) of each release in prod")
                         .Register(registry)),
        canaryWeights_(::prometheus::BuildGauge()
                           .Name("lockstep_release_canary_weight")
                           .Help("Target weight (percent) of each release's current canary step")
                           .Register(registry)),
        modelReady_(::prometheus::BuildGauge()
                        .Name("lockstep_model_ready")
                        .Help("1 when the model's prod serves what its Model records (the "
                              "Model's Ready condition), else 0")
                        .Register(registry)),
        modelDegraded_(::prometheus::BuildGauge()
                           .Name("lockstep_model_degraded")
                           .Help("1 when the model's prod is recorded, not Ready, and nothing in "
                                 "flight explains it (the Model's Degraded condition), else 0")
                           .Register(registry)) {}

  void modelState(const std::string& ns, const std::string& model, bool ready,
                  bool degraded) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto& [readyGauge, degradedGauge] = models_[ns + "/" + model];
    if (readyGauge == nullptr) {
      const ::prometheus::Labels labels{{"namespace", ns}, {"model", model}};
      readyGauge = &modelReady_.Add(labels);
      degradedGauge = &modelDegraded_.Add(labels);
    }
    readyGauge->Set(ready ? 1 : 0);
    degradedGauge->Set(degraded ? 1 : 0);
  }
  void forgetModel(const std::string& ns, const std::string& model) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(ns + "/" + model);
    if (it == models_.end()) return;
    modelReady_.Remove(it->second.first);
    modelDegraded_.Remove(it->second.second);
    models_.erase(it);
  }

  void canaryStep(const std::string& ns, const std::string& release, const std::string& model,
                  int step, int weight) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ::prometheus::Labels labels{{"namespace", ns}, {"release", release}, {"model", model}};
    auto& [stepGauge, weightGauge] = canary_[ns + "/" + release];
    stepGauge = &canarySteps_.Add(labels);
    weightGauge = &canaryWeights_.Add(labels);
    stepGauge->Set(step);
    weightGauge->Set(weight);
  }
  void forgetRelease(const std::string& ns, const std::string& release) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = canary_.find(ns + "/" + release);
    if (it == canary_.end()) return;
    canarySteps_.Remove(it->second.first);
    canaryWeights_.Remove(it->second.second);
    canary_.erase(it);
  }

  void promotion(const std::string& model) override {
    promotions_.Add({{"model", model}}).Increment();
  }
  void rollback(const std::string& model, const std::string& reason) override {
    rollbacks_.Add({{"model", model}, {"reason", reason}}).Increment();
  }

  void stageResult(const std::string& stage, const std::string& result, double seconds) override {
    results_.Add({{"stage", stage}, {"result", result}}).Increment();
    static const ::prometheus::Histogram::BucketBoundaries kBuckets = {
        5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400};
    durations_.Add({{"stage", stage}}, kBuckets).Observe(seconds);
  }

 private:
  ::prometheus::Family<::prometheus::Counter>& results_;
  ::prometheus::Family<::prometheus::Histogram>& durations_;
  ::prometheus::Family<::prometheus::Counter>& promotions_;
  ::prometheus::Family<::prometheus::Counter>& rollbacks_;
  ::prometheus::Family<::prometheus::Gauge>& canarySteps_;
  ::prometheus::Family<::prometheus::Gauge>& canaryWeights_;
  ::prometheus::Family<::prometheus::Gauge>& modelReady_;
  ::prometheus::Family<::prometheus::Gauge>& modelDegraded_;
  std::mutex mu_;  // guards canary_ and models_
  std::map<std::string, std::pair<::prometheus::Gauge*, ::prometheus::Gauge*>> canary_;
  // "<namespace>/<model>": its ready and degraded gauges.
  std::map<std::string, std::pair<::prometheus::Gauge*, ::prometheus::Gauge*>> models_;
};

}  // namespace

std::shared_ptr<ReleaseMetrics> makePrometheusReleaseMetrics(::prometheus::Registry& registry) {
  return std::make_shared<PrometheusReleaseMetrics>(registry);
}

}  // namespace lockstep::controllers
