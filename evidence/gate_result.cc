#include "evidence/gate_result.h"

#include <algorithm>

namespace lockstep::evidence {

bool MetricResult::passed() const { return (!min || value >= *min) && (!max || value <= *max); }

bool GateResult::passed() const {
  return std::all_of(metrics.begin(), metrics.end(),
                     [](const MetricResult& m) { return m.passed(); });
}

}  // namespace lockstep::evidence
