#include "controllers/modelrelease/prod/fold.h"

#include <algorithm>

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/conditions.h"
#include "controllers/modelrelease/release_status.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): phases and reasons
using nlohmann::json;

json& stageOf(json& status, const std::string& name) {
  json& stages = status["stages"];
  if (!stages.is_array()) stages = json::array();
  return stageStatus(stages, name);
}

void setAll(json& status, int64_t generation, const std::string& now, bool ready, bool reconciling,
            const std::string& reason, const std::string& message,
            const std::string& stalledReason) {
  ReleaseSummary sum;
  sum.ready = ready;
  sum.reconciling = reconciling;
  sum.readyReason = reason;
  sum.readyMessage = message;
  sum.stalledReason = stalledReason;
  sum.stalledMessage = message;
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  setReleaseConditions(conditions, sum, generation, now);
}

}  // namespace

void foldCanaryPlan(ReleasePlan& plan, const CanaryPlan& canary, const json& previousStatus,
                    int64_t generation, const std::string& now) {
  json& status = plan.status;
  const std::string stage = plan.prod ? plan.prod->stage : status.value("currentStage", "");
  json& st = stageOf(status, stage);
  status["canary"] = canary.status;
  // What it records, typed (nothing when the planner kept an unreadable one as written).
  const CanaryStatusRead next = readCanaryStatus(canary.status);
  if (next.get() != nullptr && next.get()->step) status["canaryStep"] = *next.get()->step;

  switch (canary.action) {
    case CanaryAction::kPromoted:
      status["phase"] = kPhasePromoted;
      st["phase"] = kStageSucceeded;
      st["message"] = canary.message;
      if (!st.contains("finishedAt")) st["finishedAt"] = now;
      status.erase("currentStage");
      setAll(status, generation, now, true, false, kReasonPromoted, canary.message, "");
      {
        // The planner saw N Ready stable pods of this release; from now on the
        // release's plan keeps Degraded up to date (release_plan.cc observeProd).
        const std::string n = std::to_string(canary.replicas.stable);
        json& conditions = status["conditions"];
        kube::setCondition(conditions,
                           {kConditionDegraded, kStatusFalse, kReasonStablePodsReady,
                            n + "/" + n + " stable pods Ready"},
                           generation, now);
      }
      break;
    case CanaryAction::kRolledBack: {
      status["phase"] = kPhaseRolledBack;
      st["phase"] = kStageFailed;
      st["message"] = canary.message;
      if (!st.contains("finishedAt")) st["finishedAt"] = now;
      // The rollback's cause (status.canary.reason), not the RollingBack step it went through.
      std::string reason =
          next.get() != nullptr && next.get()->reason ? *next.get()->reason : canary.reason;
      if (reason.empty() || reason == kReasonRollingBack) reason = kReasonRolledBack;
      setAll(status, generation, now, false, false, reason, canary.message, reason);
      break;
    }
    default:
      status["phase"] = kPhaseCanary;
      st["phase"] = kStageRunning;
      st["message"] = canary.message;
      setAll(status, generation, now, false, true,
             canary.reason.empty() ? std::string(kReasonCanaryProgressing) : canary.reason,
             canary.message, "");
      break;
  }
  for (const ReleaseEvent& e : canary.events) plan.events.push_back(e);
  if (canary.requeueAfterSeconds > 0) {
    plan.requeueAfterSeconds = plan.requeueAfterSeconds == 0
                                   ? canary.requeueAfterSeconds
                                   : std::min(plan.requeueAfterSeconds, canary.requeueAfterSeconds);
  }
  plan.statusChanged = status != previousStatus;
}

void failProdStage(ReleasePlan& plan, const std::string& message, const json& previousStatus,
                   int64_t generation, const std::string& now) {
  json& status = plan.status;
  const std::string stage = plan.prod ? plan.prod->stage : status.value("currentStage", "");
  json& st = stageOf(status, stage);
  st["phase"] = kStageFailed;
  st["message"] = message;
  status["phase"] = kPhaseFailed;
  setAll(status, generation, now, false, false, kReasonInvalidSpec, message, kReasonInvalidSpec);
  plan.events.push_back({"Warning", kReasonInvalidSpec, message});
  plan.prod.reset();
  plan.statusChanged = status != previousStatus;
}

namespace {

// Whether `conditions` already say Stalled=True with `reason` and `message`.
bool stalledWith(const json& conditions, const std::string& reason, const std::string& message) {
  for (const json& c : conditions.is_array() ? conditions : json::array()) {
    if (c.value("type", "") == kConditionStalled)
      return c.value("status", "") == kStatusTrue && c.value("reason", "") == reason &&
             c.value("message", "") == message;
  }
  return false;
}

}  // namespace

void stallProdStage(ReleasePlan& plan, const std::string& reason, const std::string& message,
                    const json& previousStatus, int64_t generation, const std::string& now,
                    int64_t requeueSeconds) {
  json& status = plan.status;
  const std::string stage = plan.prod ? plan.prod->stage : status.value("currentStage", "");
  json& st = stageOf(status, stage);
  st["message"] = message;
  status["phase"] = kPhaseCanary;
  if (previousStatus.contains("canary")) status["canary"] = previousStatus["canary"];
  const bool known =
      stalledWith(previousStatus.value("conditions", json::array()), reason, message);
  setAll(status, generation, now, false, false, reason, message, reason);
  if (!known) plan.events.push_back({"Warning", reason, message});
  plan.requeueAfterSeconds = plan.requeueAfterSeconds == 0
                                 ? requeueSeconds
                                 : std::min(plan.requeueAfterSeconds, requeueSeconds);
  plan.statusChanged = status != previousStatus;
}

json servingWriteFailedStatus(const json& previousStatus, const std::string& message,
                              int64_t generation, const std::string& now) {
  json status = previousStatus.is_object() ? previousStatus : json::object();
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  kube::setCondition(conditions,
                     {kConditionReady, kStatusFalse, kReasonServingApplyFailed, message},
                     generation, now);
  kube::setCondition(conditions,
                     {kConditionStalled, kStatusTrue, kReasonServingApplyFailed, message},
                     generation, now);
  return status;
}

}  // namespace lockstep::controllers
