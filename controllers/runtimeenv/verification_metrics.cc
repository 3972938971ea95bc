#include "controllers/runtimeenv/verification_metrics.h"

#include <map>
#include <mutex>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace lockstep::controllers {
namespace {

class PrometheusVerificationMetrics final : public VerificationMetrics {
 public:
  explicit PrometheusVerificationMetrics(::prometheus::Registry& registry)
      : runs_(::prometheus::BuildCounter()
                  .Name("lockstep_runtime_verification_total")
                  .Help("Finished scheduled runtime verification runs by result (passed, failed)")
                  .Register(registry)),
        advisories_(::prometheus::BuildGauge()
                        .Name("lockstep_runtime_advisories")
                        .Help("OSV advisories affecting a RuntimeEnv's current revision, by "
                              "severity (docs/supply-chain.md)")
                        .Register(registry)),
        pinnedAdvisories_(::prometheus::BuildGauge()
                              .Name("lockstep_runtime_pinned_advisories")
                              .Help("OSV advisories affecting the revisions of a RuntimeEnv that "
                                    "releases or prod pin, by severity (docs/supply-chain.md)")
                              .Register(registry)),
        mirrorMissing_(::prometheus::BuildGauge()
                           .Name("lockstep_runtime_mirror_missing_artifacts")
                           .Help("Locked artifacts of a RuntimeEnv's current revision its last "
                                 "mirror check did not find (docs/supply-chain.md)")
                           .Register(registry)),
        mirrorChecks_(::prometheus::BuildCounter()
                          .Name("lockstep_runtime_mirror_checks_total")
                          .Help("Finished mirror checks by result (complete, missing, "
                                "unreachable)")
                          .Register(registry)) {
    for (const char* r : {"complete", "missing", "unreachable"}) mirrorChecks_.Add({{"result", r}});
    // Both series exist from the start, so rate() and alerts see a zero, not nothing.
    runs_.Add({{"result", "passed"}});
    runs_.Add({{"result", "failed"}});
  }
  void runFinished(const std::string& result) override {
    runs_.Add({{"result", result}}).Increment();
  }
  void advisories(const std::string& ns, const std::string& name,
                  const nlohmann::json& bySeverity) override {
    for (const char* severity : {"critical", "high", "medium", "low", "none", "unknown"}) {
      const double n = bySeverity.is_object() ? bySeverity.value(severity, 0) : 0;
      advisories_.Add({{"namespace", ns}, {"runtimeenv", name}, {"severity", severity}}).Set(n);
    }
  }
  void pinnedAdvisories(const std::string& ns, const std::string& name,
                        const nlohmann::json& bySeverity) override {
    for (const char* severity : {"critical", "high", "medium", "low", "none", "unknown"}) {
      const double n = bySeverity.is_object() ? bySeverity.value(severity, 0) : 0;
      pinnedAdvisories_.Add({{"namespace", ns}, {"runtimeenv", name}, {"severity", severity}})
          .Set(n);
    }
  }

  void mirrorMissing(const std::string& ns, const std::string& name, int64_t missing) override {
    const std::map<std::string, std::string> labels = {{"namespace", ns}, {"runtimeenv", name}};
    if (missing < 0) {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = mirrorSeries_.find(ns + "/" + name); it != mirrorSeries_.end()) {
        mirrorMissing_.Remove(it->second);
        mirrorSeries_.erase(it);
      }
      return;
    }
    ::prometheus::Gauge& g = mirrorMissing_.Add(labels);
    g.Set(static_cast<double>(missing));
    std::lock_guard<std::mutex> lock(mu_);
    mirrorSeries_[ns + "/" + name] = &g;
  }
  void mirrorChecked(const std::string& result) override {
    mirrorChecks_.Add({{"result", result}}).Increment();
  }

 private:
  ::prometheus::Family<::prometheus::Counter>& runs_;
  ::prometheus::Family<::prometheus::Gauge>& advisories_;
  ::prometheus::Family<::prometheus::Gauge>& pinnedAdvisories_;
  ::prometheus::Family<::prometheus::Gauge>& mirrorMissing_;
  ::prometheus::Family<::prometheus::Counter>& mirrorChecks_;
  std::mutex mu_;
  std::map<std::string, ::prometheus::Gauge*> mirrorSeries_;  // to remove a series
};

}  // namespace

std::shared_ptr<VerificationMetrics> makePrometheusVerificationMetrics(
    ::prometheus::Registry& registry) {
  return std::make_shared<PrometheusVerificationMetrics>(registry);
}

}  // namespace lockstep::controllers
