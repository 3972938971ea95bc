// AdmissionRecorder backed by prometheus-cpp:
//   lockstep_admission_requests_total{webhook,operation,decision}
//   lockstep_admission_duration_seconds{webhook} (histogram)
// and LogRecorder, one structured spdlog line per denial/warning/audit/error
// (allowed requests at debug). Neither ever logs object content.
// Thread-safety: both are safe for concurrent record() calls.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <initializer_list>
#include <vector>

#include "webhooks/admission/recorder.h"

namespace lockstep::webhooks {

class PrometheusRecorder final : public AdmissionRecorder {
 public:
  explicit PrometheusRecorder(prometheus::Registry& registry);
  void record(const AdmissionOutcome& outcome) override;

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
};

class LogRecorder final : public AdmissionRecorder {
 public:
  void record(const AdmissionOutcome& outcome) override;
};

// Forwards to several recorders (e.g. Prometheus + logs).
class FanoutRecorder final : public AdmissionRecorder {
 public:
  FanoutRecorder(std::initializer_list<AdmissionRecorder*> recorders) : recorders_(recorders) {}
  void record(const AdmissionOutcome& outcome) override {
    for (AdmissionRecorder* r : recorders_) r->record(outcome);
  }

 private:
  std::vector<AdmissionRecorder*> recorders_;
};

}  // namespace lockstep::webhooks
