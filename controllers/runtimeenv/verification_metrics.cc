#include "controllers/runtimeenv/verification_metrics.h"

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
                        .Register(registry)) {
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

 private:
  ::prometheus::Family<::prometheus::Counter>& runs_;
  ::prometheus::Family<::prometheus::Gauge>& advisories_;
};

}  // namespace

std::shared_ptr<VerificationMetrics> makePrometheusVerificationMetrics(
    ::prometheus::Registry& registry) {
  return std::make_shared<PrometheusVerificationMetrics>(registry);
}

}  // namespace lockstep::controllers
