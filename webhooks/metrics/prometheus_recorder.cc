#include "webhooks/metrics/prometheus_recorder.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace lockstep::webhooks {

PrometheusRecorder::PrometheusRecorder(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("lockstep_admission_requests_total")
                    .Help("Admission requests by webhook, operation and decision "
                          "(allowed|denied|warned|audited|error).")
                    .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("lockstep_admission_duration_seconds")
                    .Help("Time to decode, validate and encode one admission request.")
                    .Register(registry)) {}

void PrometheusRecorder::record(const AdmissionOutcome& o) {
  // Label values come from bounded sets only (never from request content).
  requests_
      .Add({{"webhook", o.webhook},
            {"operation", std::string(operationName(o.operation))},
            {"decision", std::string(decisionName(o.decision))}})
      .Increment();
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
  duration_.Add({{"webhook", o.webhook}}, kBuckets)
      .Observe(std::chrono::duration<double>(o.duration).count());
}

void LogRecorder::record(const AdmissionOutcome& o) {
  auto level = spdlog::level::info;
  switch (o.decision) {
    case Decision::kAllowed:
      level = spdlog::level::debug;
      break;
    case Decision::kError:
      level = spdlog::level::warn;
      break;
    default:
      break;
  }
  if (!spdlog::should_log(level)) return;
  std::string detail = o.message;
  for (const auto& w : o.warnings) detail += (detail.empty() ? "" : " | ") + w;
  spdlog::log(level,
              "admission webhook={} operation={} decision={} namespace={} name={} uid={} user={} "
              "dry_run={} checked={} duration_us={} message={:?}",
              o.webhook, operationName(o.operation), decisionName(o.decision), o.ns, o.name, o.uid,
              o.userName, o.dryRun, o.checked,
              std::chrono::duration_cast<std::chrono::microseconds>(o.duration).count(), detail);
}

}  // namespace lockstep::webhooks
