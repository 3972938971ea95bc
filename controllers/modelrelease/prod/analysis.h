// The canary's analysis bookkeeping (pure): Prometheus measurements counted
// as Argo Rollouts' AnalysisRun does (analysis/analysis.go) — successes,
// failures against failureLimit, errors against consecutiveErrorLimit — and
// kept in status.canary.analysis so a restarted operator goes on counting.
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/model_release.h"

namespace lockstep::controllers {

using api::v1alpha1::CanaryStep;
using api::v1alpha1::PrometheusAnalysis;

// Measurements a step takes when it has analysis but no `count`: one per
// interval over a duration pause, else one.
int effectiveCount(const CanaryStep& step);

// The canary's reason when the analysis' provider refuses the release's
// namespace or its free-form query (docs/rollouts.md "Providers scoped to tenants").
inline constexpr const char* kReasonAnalysisRefused = "AnalysisRefused";

// One Prometheus measurement as the shell took it: a value, or an error (query
// error, HTTP failure, an empty vector, a NaN).
struct Measurement {
  int64_t atUnix = 0;
  std::optional<double> value;
  std::string error;
  // The provider refuses this release (its namespace is not served, or a
  // free-form query on a templates-only provider): no retry can fix it, so
  // the step fails at once (kReasonAnalysisRefused), never after the error limit.
  bool refused = false;
};

enum class AnalysisPhase { kRunning, kPassed, kFailed };

struct AnalysisVerdict {
  AnalysisPhase phase = AnalysisPhase::kRunning;
  std::string reason;                 // kReasonAnalysisFailed | kReasonAnalysisError when failed
  std::string message;                // e.g. "failed (2) > failureLimit (1)"
  int64_t nextMeasurementAtUnix = 0;  // when running
};

// Counters of `status.canary.analysis` (Argo's MetricResult).
struct AnalysisCounters {
  int count = 0;  // successful + failed (errors do not count, as in Argo)
  int successful = 0;
  int failed = 0;
  int errors = 0;
  int consecutiveErrors = 0;
  int64_t lastAtUnix = 0;
  bool lastWasError = false;
};

// Adds a measurement: outside [min, max] is a failure, an error is an error.
void recordMeasurement(AnalysisCounters& c, const PrometheusAnalysis& a, const Measurement& m);

// Assesses the counters; `startUnix` is when the first measurement is due
// (weightReachedAt + initialDelay).
AnalysisVerdict assessAnalysis(const AnalysisCounters& c, const PrometheusAnalysis& a, int count,
                               int64_t startUnix);

// Argo Rollouts' DefaultErrorRetryInterval: the next try after an error.
inline constexpr int64_t kErrorRetrySeconds = 10;

// The counters as status.canary.analysis records them, and back.
AnalysisCounters countersFrom(const api::v1alpha1::CanaryAnalysisStatus& analysis);
void countersTo(const AnalysisCounters& c, api::v1alpha1::CanaryAnalysisStatus& analysis);

}  // namespace lockstep::controllers
