#include "controllers/modelrelease/prod/analysis.h"

#include <algorithm>
#include <cmath>

#include "api/v1alpha1/conditions.h"
#include "controllers/modelrelease/timestamps.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;

int effectiveCount(const CanaryStep& step) {
  if (!step.analysis) return 0;
  if (step.analysis->count > 0) return step.analysis->count;
  // One per interval over the part of the pause after the initial delay.
  if (step.pause == CanaryStep::Pause::kDuration && step.analysis->intervalSeconds > 0)
    return static_cast<int>(std::max<int64_t>(
        1,
        (step.pauseSeconds - step.analysis->initialDelaySeconds) / step.analysis->intervalSeconds));
  return 1;
}

void recordMeasurement(AnalysisCounters& c, const PrometheusAnalysis& a, const Measurement& m) {
  c.lastAtUnix = m.atUnix;
  bool error = !m.error.empty() || !m.value || !std::isfinite(*m.value);
  c.lastWasError = error;
  if (error) {
    ++c.errors;
    ++c.consecutiveErrors;
    return;  // Argo: an error is not a measurement of the metric; Count does not move
  }
  c.consecutiveErrors = 0;
  ++c.count;
  double v = *m.value;
  bool failed = (a.min && v < *a.min) || (a.max && v > *a.max);
  if (failed) {
    ++c.failed;
  } else {
    ++c.successful;
  }
}

AnalysisVerdict assessAnalysis(const AnalysisCounters& c, const PrometheusAnalysis& a, int count,
                               int64_t startUnix) {
  AnalysisVerdict v;
  if (c.failed > a.failureLimit) {
    v.phase = AnalysisPhase::kFailed;
    v.reason = v1::kReasonAnalysisFailed;
    v.message = "failed (" + std::to_string(c.failed) + ") > failureLimit (" +
                std::to_string(a.failureLimit) + ")";
    return v;
  }
  if (c.consecutiveErrors > a.consecutiveErrorLimit) {
    v.phase = AnalysisPhase::kFailed;
    v.reason = v1::kReasonAnalysisError;
    v.message = "consecutiveErrors (" + std::to_string(c.consecutiveErrors) +
                ") > consecutiveErrorLimit (" + std::to_string(a.consecutiveErrorLimit) + ")";
    return v;
  }
  if (c.count >= count) {
    v.phase = AnalysisPhase::kPassed;
    v.message = std::to_string(c.successful) + " of " + std::to_string(c.count) +
                " measurements within bounds (failureLimit " + std::to_string(a.failureLimit) + ")";
    return v;
  }
  if (c.count == 0 && c.errors == 0) {
    v.nextMeasurementAtUnix = startUnix;
  } else {
    v.nextMeasurementAtUnix =
        c.lastAtUnix +
        (c.lastWasError ? std::min(kErrorRetrySeconds, a.intervalSeconds) : a.intervalSeconds);
  }
  v.message = std::to_string(c.count) + " of " + std::to_string(count) + " measurements (" +
              std::to_string(c.failed) + " failed, " + std::to_string(c.consecutiveErrors) +
              " consecutive errors)";
  return v;
}

AnalysisCounters countersFrom(const v1::CanaryAnalysisStatus& a) {
  AnalysisCounters c;
  c.count = static_cast<int>(a.count.value_or(0));
  c.successful = static_cast<int>(a.successful.value_or(0));
  c.failed = static_cast<int>(a.failed.value_or(0));
  c.errors = static_cast<int>(a.errors.value_or(0));
  c.consecutiveErrors = static_cast<int>(a.consecutiveErrors.value_or(0));
  c.lastAtUnix = parseRfc3339(a.lastMeasuredAt.value_or("")).value_or(0);
  c.lastWasError = a.lastWasError.value_or(false);
  return c;
}

void countersTo(const AnalysisCounters& c, v1::CanaryAnalysisStatus& a) {
  a.count = c.count;
  a.successful = c.successful;
  a.failed = c.failed;
  a.errors = c.errors;
  a.consecutiveErrors = c.consecutiveErrors;
  if (c.lastAtUnix > 0) a.lastMeasuredAt = formatRfc3339(c.lastAtUnix);
  a.lastWasError = c.lastWasError;
}
}  // namespace lockstep::controllers
