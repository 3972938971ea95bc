#include "controllers/modelrelease/release_status.h"

#include "api/v1alpha1/conditions.h"
#include "controllers/modelrelease/timestamps.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;
using nlohmann::json;

void setReleaseConditions(json& conditions, const ReleaseSummary& sum, int64_t generation,
                          const std::string& now) {
  kube::setCondition(conditions,
                     {v1::kConditionReady, sum.ready ? v1::kStatusTrue : v1::kStatusFalse,
                      sum.readyReason, sum.readyMessage},
                     generation, now);
  kube::setCondition(
      conditions,
      {v1::kConditionReconciling, sum.reconciling ? v1::kStatusTrue : v1::kStatusFalse,
       sum.reconciling ? sum.readyReason : "Idle",
       sum.reconciling ? sum.readyMessage : "nothing in progress"},
      generation, now);
  const bool stalled = !sum.stalledReason.empty();
  kube::setCondition(conditions,
                     {v1::kConditionStalled, stalled ? v1::kStatusTrue : v1::kStatusFalse,
                      stalled ? sum.stalledReason : "Progressing",
                      stalled ? sum.stalledMessage : "the release can make progress"},
                     generation, now);
}

json& stageStatus(json& stages, const std::string& name) {
  for (json& s : stages) {
    if (s.value("name", "") == name) return s;
  }
  stages.push_back({{"name", name}, {"phase", v1::kStagePending}});
  return stages.back();
}

bool isTerminalPhase(const std::string& p) {
  return p == v1::kPhaseValidated || p == v1::kPhaseFailed || p == v1::kPhasePromoted ||
         p == v1::kPhaseRolledBack || p == v1::kPhaseSuperseded;
}

double stageDurationSeconds(const json& st, int64_t nowUnix) {
  auto start = parseRfc3339(st.value("startedAt", ""));
  if (!start) return 0;
  auto end = parseRfc3339(st.value("finishedAt", ""));
  return static_cast<double>(end.value_or(nowUnix) - *start);
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

}  // namespace lockstep::controllers
