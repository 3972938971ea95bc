// The RuntimeEnv controller's metrics (docs/observability.md):
// lockstep_runtime_verification_total{result="passed"|"failed"}, one count per
// finished verification run; the advisories and the mirror check's. An interface (a fake in tests)
// and the Prometheus one. Thread-safety: safe for concurrent use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace lockstep::controllers {

class VerificationMetrics {
 public:
  virtual ~VerificationMetrics() = default;
  virtual void runFinished(const std::string& result) = 0;
  // lockstep_runtime_advisories{namespace,runtimeenv,severity}: the advisories of the
  // RuntimeEnv's current revision by severity (status.advisories.bySeverity; an empty
  // object zeroes every series of it).
  virtual void advisories(const std::string& /*ns*/, const std::string& /*name*/,
                          const nlohmann::json& /*bySeverity*/) {}
  // lockstep_runtime_pinned_advisories{namespace,runtimeenv,severity}: the distinct
  // advisories (one per vulnerability and package) of the revisions releases or a
  // Model's prod pin, by severity.
  virtual void pinnedAdvisories(const std::string& /*ns*/, const std::string& /*name*/,
                                const nlohmann::json& /*bySeverity*/) {}
  // lockstep_runtime_mirror_missing_artifacts{namespace,runtimeenv}: the files of the
  // current revision the last check did not find in spec.mirror.repository; a negative
  // count removes the series (no spec.mirror).
  virtual void mirrorMissing(const std::string& /*ns*/, const std::string& /*name*/,
                             int64_t /*missing*/) {}
  // lockstep_runtime_mirror_checks_total{result="complete"|"missing"|"unreachable"}.
  virtual void mirrorChecked(const std::string& /*result*/) {}
};

std::shared_ptr<VerificationMetrics> makePrometheusVerificationMetrics(
    ::prometheus::Registry& registry);

}  // namespace lockstep::controllers
