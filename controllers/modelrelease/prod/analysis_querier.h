// The canary's analysis measurements, the one side effect of the analysis:
// an interface (a fake with knobs in tests) and the Prometheus one
// (operator/prometheus/client.h, one client per address).
// Thread-safety: measure() is safe for concurrent use.
#pragma once

#include <cstdint>
#include <memory>

#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/prod/analysis.h"

namespace lockstep::controllers {

// Takes one canary analysis measurement. Never throws: failures are Measurement errors.
class AnalysisQuerier {
 public:
  virtual ~AnalysisQuerier() = default;
  virtual Measurement measure(const PrometheusAnalysis& analysis, int64_t nowUnix) = 0;
};

// Queries Prometheus (operator/prometheus/client.h), one client per address.
std::shared_ptr<AnalysisQuerier> makePrometheusQuerier();

}  // namespace lockstep::controllers
