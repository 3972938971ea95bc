#include "controllers/fleet/rollout_status.h"

#include "api/v1alpha1/conditions.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

constexpr size_t kMaxIgnored = 100;

}  // namespace

json rolloutStatus(const RolloutObserved& o) {
  json status = o.status.is_object() ? o.status : json::object();
  json conditions = status.value("conditions", json::array());
  kube::Condition ready{v1::kConditionReady, v1::kStatusFalse, "", ""};
  kube::Condition stalled{v1::kConditionStalled, v1::kStatusFalse, "", ""};
  if (o.plan && !o.registryError) {
    // Everything the planner says replaces what stood; the rest is ours.
    for (const auto& [key, value] : o.plan->status.items()) status[key] = value;
    const std::string& phase = o.plan->phase;
    const std::string message = o.plan->status.value("message", "");
    ready.reason = stalled.reason = phase;
    ready.message = message;
    if (phase == kRolloutSucceeded) ready.status = v1::kStatusTrue;
    if (phase == kRolloutAborted) {
      stalled.status = v1::kStatusTrue;
      stalled.message = message;
    }
    json ignored = json::array();
    for (const IgnoredStatement& i : o.ignored) {
      if (ignored.size() == kMaxIgnored) break;
      json entry{{"referrer", i.referrer}, {"reason", i.reason}};
      if (!i.predicateType.empty()) entry["predicateType"] = i.predicateType;
      ignored.push_back(std::move(entry));
    }
    if (ignored.empty()) {
      status.erase("ignored");
    } else {
      status["ignored"] = std::move(ignored);
    }
  }
  if (o.problem) {
    ready = {v1::kConditionReady, v1::kStatusFalse, o.problem->reason, o.problem->message};
    stalled = {v1::kConditionStalled, v1::kStatusTrue, o.problem->reason, o.problem->message};
    status["message"] = o.problem->message;
  } else if (o.registryError) {
    status["phase"] = kRolloutWaitingForRegistry;
    status["message"] = *o.registryError;
    ready.reason = stalled.reason = kRolloutWaitingForRegistry;
    ready.message = *o.registryError;
    stalled.message = "retrying with back-off";
  }
  kube::setCondition(conditions, ready, o.generation, o.now);
  kube::setCondition(conditions, stalled, o.generation, o.now);
  status["conditions"] = std::move(conditions);
  status["observedGeneration"] = o.generation;
  return status;
}

}  // namespace lockstep::controllers
